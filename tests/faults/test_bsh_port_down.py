"""Fault 2: the BeanShell port is unreachable at start, then hangs mid-run.

A TCP proxy sits between ``loadguard attach`` and a real JMeter's session port and is
switched: ``refuse`` (nothing listens) at start, ``forward``, ``hang`` (accepts, never
answers), ``forward``. Decisions keep being logged with ``applied=false`` while the port
is gone, retries back off (not every tick tries), no tick blocks past the push timeout,
and the rate is re-asserted once the port is back: JMeter ends holding the last rate
the sidecar logged as applied.
"""

from __future__ import annotations

import itertools
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadguard.actuator.bsh import BeanShellClient
from loadguard.actuator.elastic_timer import RATE_PROPERTY, TPM_PER_RPS
from loadguard.jmeter.home import JMeterHome
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from tests.faults.helpers import LOADGUARD, TcpProxy, jmeter_engine
from tests.jmeter_runner import read_decisions, wait_for

pytestmark = pytest.mark.jmeter

TICK_MS = 1000
PUSH_TIMEOUT_MS = 2000  # SidecarConfig.push_timeout_s


@pytest.fixture()
def target() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=4, queue=200, service_s=0.020)) as t:
        yield t


def phase_of(epoch_ms: int, marks: list[tuple[str, int]]) -> str:
    current = "refuse"
    for name, at in marks:
        if epoch_ms >= at:
            current = name
    return current


def test_unreachable_then_hung_port_logs_unapplied_backs_off_and_reasserts(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    decisions = tmp_path / "decisions.csv"
    with jmeter_engine(jmeter_home, tmp_path / "engine", target.port, tpm=600) as engine:
        proxy = TcpProxy(("127.0.0.1", engine.bsh_session_port))
        args = [
            *LOADGUARD, "attach", "--jtl", str(engine.jtl),
            "--engine", f"127.0.0.1:{proxy.port}",
            "--p95", "250ms", "--window", "3s", "--tick", "1s",
            "--initial-rate", "6", "--max-rate", "200", "--duration", "90s",
            # the paper's rule: +10 req/s every settled window up to the knee (~180 req/s
            # at 250 ms here), so the rate keeps changing through the 10 s hang
            "--policy", "threezone",
            "--decisions", str(decisions), "--summary", str(tmp_path / "summary.json"), "-q",
        ]  # fmt: skip
        proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        marks: list[tuple[str, int]] = []
        try:
            assert wait_for(lambda: len(read_decisions(decisions)) >= 5, 60)
            marks.append(("forward", int(time.time() * 1000)))
            proxy.set_mode("forward")
            assert wait_for(
                lambda: (
                    sum(
                        r["applied"] == "true" and int(r["epoch_ms"]) > marks[0][1]
                        for r in read_decisions(decisions)
                    )
                    >= 5
                ),
                40,
            )
            marks.append(("hang", int(time.time() * 1000)))
            proxy.set_mode("hang")
            time.sleep(10)
            marks.append(("back", int(time.time() * 1000)))
            proxy.set_mode("forward")
            assert wait_for(
                lambda: (
                    sum(
                        r["applied"] == "true"
                        and r["engine_ack"] != ""
                        and int(r["epoch_ms"]) > marks[2][1]
                        for r in read_decisions(decisions)
                    )
                    >= 1
                ),
                45,
            )
            time.sleep(3)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
            proxy.close()
        assert proc.returncode in (0, 1, 5), err.decode()[-2000:]
        # JMeter holds the last rate the sidecar logged as applied (read past the proxy).
        held = BeanShellClient("127.0.0.1", engine.bsh_session_port).get_property(RATE_PROPERTY)
    rows = read_decisions(decisions)
    for r in rows:
        r["phase"] = phase_of(int(r["epoch_ms"]), marks)
    down = [r for r in rows if r["phase"] in ("refuse", "hang")]
    # 1. While the port is gone, every decision is logged and none claims to be applied
    #    (skip the hang phase's first tick: a push may have completed as it began). A row
    #    with no push to make (the rate unchanged and acknowledged: applied, no ack) can
    #    only come before the phase's first failed push; from that one on, every row
    #    re-asserts the rate and fails.
    refuse = [r for r in rows if r["phase"] == "refuse"]
    hang = [r for r in rows if r["phase"] == "hang"][1:]
    assert len(refuse) >= 5 and len(hang) >= 3
    for phase in (refuse, hang):
        first = next(i for i, r in enumerate(phase) if r["engine_ack"])
        assert all(r["applied"] == "true" and not r["engine_ack"] for r in phase[:first])
        assert all(r["applied"] == "false" for r in phase[first:]), [
            (r["phase"], r["applied"], r["engine_ack"]) for r in phase
        ]
        assert len(phase) - first >= 3
    # 2. Bounded backoff: some ticks skip the engine instead of trying it again.
    backing_off = [r for r in down if "backing off" in r["engine_ack"]]
    tried = [r for r in down if "backing off" not in r["engine_ack"]]
    assert backing_off and len(tried) < len(down)
    # 3. No tick blocks for longer than the push timeout.
    epochs = [int(r["epoch_ms"]) for r in rows]
    gaps = [b - a for a, b in itertools.pairwise(epochs)]
    assert max(gaps) <= TICK_MS + PUSH_TIMEOUT_MS + 700, max(gaps)
    # 4. Re-asserted once back, and JMeter holds what was last applied.
    first_forward = next(
        r for r in rows if r["phase"] == "forward" and r["applied"] == "true" and r["engine_ack"]
    )
    back = next(
        r for r in rows if r["phase"] == "back" and r["applied"] == "true" and r["engine_ack"]
    )
    last_applied = [r for r in rows if r["applied"] == "true"][-1]
    assert held is not None
    assert float(held) / TPM_PER_RPS == pytest.approx(float(last_applied["new_rate"]), rel=1e-6)
    rec_start = int(first_forward["epoch_ms"]) - marks[0][1]
    rec_hang = int(back["epoch_ms"]) - marks[2][1]
    print(
        f"\nbsh down: ticks={len(rows)} refuse={len(refuse)} hang={len(hang)} "
        f"tried={len(tried)} backing_off={len(backing_off)} max_gap={max(gaps)}ms "
        f"recovery after refuse={rec_start}ms after hang={rec_hang}ms"
    )
