"""Fault 8: SIGINT / SIGTERM at any moment of ``loadguard run``.

Whatever the moment -- JMeter's JVM just spawned, mid-run, or a second signal while the
sidecar is already stopping -- the sidecar ends cleanly: summary written with
``stop_reason=signal``, JMeter stopped through its own shutdown (its console prints
"... end of run"), nothing left running.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from tests.faults.helpers import run_args, sidecar
from tests.jmeter_runner import jmeter_pids, read_decisions, wait_for

pytestmark = pytest.mark.jmeter


@pytest.fixture()
def target() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=4, queue=200, service_s=0.020)) as t:
        yield t


MOMENTS = [
    ("jvm_spawned", signal.SIGTERM, None),
    ("mid_run", signal.SIGTERM, None),
    ("mid_run", signal.SIGINT, signal.SIGINT),
]


@pytest.mark.parametrize(("moment", "first", "second"), MOMENTS)
def test_signal_stops_jmeter_gracefully_and_writes_the_summary(
    jmeter_home: JMeterHome,
    target: RunningTarget,
    tmp_path: Path,
    moment: str,
    first: signal.Signals,
    second: signal.Signals | None,
) -> None:
    out = tmp_path / "run"
    decisions = out / "decisions.csv"
    with sidecar(run_args(out, target.port, "2m"), tmp_path, str(out)) as proc:
        if moment == "jvm_spawned":
            assert wait_for(lambda: bool(jmeter_pids(str(out))), 30, step_s=0.02)
        else:
            assert wait_for(lambda: len(read_decisions(decisions)) >= 4, 60)
        sent = time.monotonic()
        proc.send_signal(first)
        if second is not None:
            time.sleep(0.3)
            proc.send_signal(second)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    assert proc.returncode in (0, 1, 5), err[-2000:]
    assert "Traceback" not in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "signal"
    assert "... end of run" in (out / "jmeter.out").read_text(errors="replace")
    assert not jmeter_pids(str(out))
    print(f"\n{moment} {first.name}+{second.name if second else '-'}: stopped in {took:.1f}s")
