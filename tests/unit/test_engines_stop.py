"""UDP stop datagrams and the `push` / `stop` commands (loopback sockets, fake engine)."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from loadguard.actuator.udp import (
    SHUTDOWN,
    STOP_TEST_NOW,
    loopback_address,
    send_stop,
    wait_port_closed,
)
from loadguard.cli import cli
from loadguard.errors import UsageError
from tests.bsh_fake import fake_bsh, free_port


@pytest.fixture()
def udp_listener() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(2)
    return sock


@pytest.mark.parametrize(("now", "payload"), [(False, SHUTDOWN), (True, STOP_TEST_NOW)])
def test_send_stop_sends_the_exact_payload(
    udp_listener: socket.socket, now: bool, payload: bytes
) -> None:
    port = udp_listener.getsockname()[1]
    assert send_stop("127.0.0.1", port, now=now) == payload
    data, _ = udp_listener.recvfrom(64)
    assert data == payload  # exact ASCII, no newline
    udp_listener.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.1.2.3"])
def test_loopback_hosts_are_accepted(host: str) -> None:
    assert loopback_address(host).startswith("127.") or loopback_address(host) == "::1"


@pytest.mark.parametrize("host", ["192.0.2.10", "10.1.2.3", "8.8.8.8"])
def test_non_loopback_host_is_refused_with_the_reason(host: str) -> None:
    with pytest.raises(UsageError, match="only from loopback"):
        send_stop(host, 4445)


def test_wait_port_closed_sees_a_closed_and_an_open_port() -> None:
    assert wait_port_closed("127.0.0.1", free_port(), 0.0)
    with fake_bsh() as fake:
        assert not wait_port_closed("127.0.0.1", fake.port, 0.3)


def test_stop_command_reports_an_engine_that_does_not_go_away(
    udp_listener: socket.socket,
) -> None:
    with fake_bsh() as fake:
        result = CliRunner().invoke(
            cli,
            [
                "stop",
                "--engine",
                f"127.0.0.1:{fake.port}",
                "--udp-port",
                str(udp_listener.getsockname()[1]),
                "--now",
                "--wait",
                "500ms",
            ],
        )
    assert result.exit_code == 3
    assert "still answers" in result.output
    assert udp_listener.recvfrom(64)[0] == STOP_TEST_NOW
    udp_listener.close()


def test_push_command_sets_rate_on_fake_engine_and_reads_it() -> None:
    with fake_bsh() as fake:
        spec = f"127.0.0.1:{fake.port}"
        pushed = CliRunner().invoke(cli, ["push", "-e", spec, "-r", "300/min"])
        assert pushed.exit_code == 0, pushed.output
        assert fake.properties == {"loadguard.tpm": "300.0"}
        got = CliRunner().invoke(cli, ["push", "-e", spec, "--get"])
        assert f"{spec}: 5 req/s" in got.output


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["-e", "127.0.0.1:9001"], "give exactly one of --rate R or --get"),
        (["-e", "127.0.0.1:9001", "-r", "5", "--get"], "give exactly one of"),
        (["-e", "127.0.0.1:9001", "-r", "0"], "rate must be > 0"),
        (["-e", "127.0.0.1:9001", "-r", "5);System.exit(0)"], "bad rate"),
        (["-e", "nohostport", "-r", "5"], "bad engine"),
    ],
)
def test_push_command_bad_input_is_exit_2(args: list[str], error: str) -> None:
    result = CliRunner().invoke(cli, ["push", *args])
    assert result.exit_code == 2
    assert error in result.output
    assert len(result.output.strip().splitlines()) == 1
