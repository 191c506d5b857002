"""The actuator against the real JMeter 5.6.3: BeanShell pushes, `push`, UDP `stop`."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadguard.actuator.bsh import BeanShellClient
from loadguard.actuator.elastic_timer import RATE_PROPERTY
from loadguard.cli import cli
from loadguard.jmeter.home import JMeterHome
from tests.elastic_harness import http_ok_server, paced_plan, start_jmeter, wait_for_engine

pytestmark = pytest.mark.jmeter


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _plan(tmp_path: Path, threads: int = 40) -> Path:
    plan = tmp_path / "paced.jmx"
    plan.write_text(paced_plan(threads, "elastic"))
    return plan


def test_client_connects_while_jmeter_starts_and_reads_back(
    jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    with (
        http_ok_server() as port,
        start_jmeter(
            jmeter_home, _plan(tmp_path), tmp_path, {"target.port": port, "duration": 30}
        ) as jm,
    ):
        # Connect retries cover the JVM start and the server starting after the test.
        client = BeanShellClient("127.0.0.1", jm.engine.port, connect_timeout=45.0)
        assert client.get_property(RATE_PROPERTY) is None
        assert client.set_property(RATE_PROPERTY, 1500.0) == 1500.0
        assert client.get_property(RATE_PROPERTY) == "1500.0"
        assert client.get_property("loadguard.never.set") is None


def test_push_and_get_commands_on_a_live_engine(jmeter_home: JMeterHome, tmp_path: Path) -> None:
    with (
        http_ok_server() as port,
        start_jmeter(
            jmeter_home, _plan(tmp_path), tmp_path, {"target.port": port, "duration": 30}
        ) as jm,
    ):
        wait_for_engine(jm.engine)
        spec = f"127.0.0.1:{jm.engine.port}"
        runner = CliRunner()
        pushed = runner.invoke(cli, ["push", "--engine", spec, "--rate", "25"])
        assert pushed.exit_code == 0, pushed.output
        assert f"{spec}: 25 req/s" in pushed.output
        got = runner.invoke(cli, ["push", "-e", spec, "--get"])
        assert got.exit_code == 0, got.output
        assert f"{spec}: 25 req/s" in got.output
        # One live and one dead engine: the live one is set, the command exits 3.
        dead = runner.invoke(
            cli, ["push", "-e", spec, "-e", "127.0.0.1:1", "--rate", "30", "--timeout", "1s"]
        )
        assert dead.exit_code == 3
        assert "127.0.0.1:1: FAILED" in dead.output
        assert "error: 1 of 2 engine(s) failed" in dead.output
        assert BeanShellClient("127.0.0.1", jm.engine.port).get_property(RATE_PROPERTY) == ("900.0")


@pytest.mark.parametrize("now", [False, True])
def test_udp_stop_ends_the_test_and_the_jvm_exits(
    jmeter_home: JMeterHome, tmp_path: Path, now: bool
) -> None:
    udp = _free_udp_port()
    # 120 threads queued at 2 req/s: a graceful Shutdown must unwind the timer's queue.
    with (
        http_ok_server() as port,
        start_jmeter(
            jmeter_home,
            _plan(tmp_path, threads=120),
            tmp_path,
            {"target.port": port, "duration": 120, "loadguard.tpm": 120},
            udp_port=udp,
        ) as jm,
    ):
        wait_for_engine(jm.engine, jm.jtl)
        args = ["stop", "--engine", f"127.0.0.1:{jm.engine.port}", "--udp-port", str(udp)]
        start = time.monotonic()
        result = CliRunner().invoke(cli, [*args, "--now"] if now else args)
        assert result.exit_code == 0, result.output
        assert "stopped" in result.output
        assert jm.proc.wait(timeout=20) == 0
        assert time.monotonic() - start < 15
    out = (tmp_path / "run.out").read_text()
    assert f"{'StopTestNow' if now else 'Shutdown'} received from /127.0.0.1" in out


def test_stop_refuses_a_non_loopback_engine() -> None:
    result = CliRunner().invoke(cli, ["stop", "--engine", "192.0.2.10:9001"])
    assert result.exit_code == 2
    assert "only from loopback" in result.output
    assert len(result.output.strip().splitlines()) == 1
