"""Fault 1: JMeter is SIGKILLed under ``loadguard run``.

The sidecar must notice within two ticks, stop with ``engine_lost`` (summary.json and a
log line), write the summary, exit 3, and leave no JMeter behind.

"Noticed" is timed at the ``engine_lost`` log line, read as it is written. The exit comes
later: after it, ``run`` still has JMeter's own HTML dashboard made (a JVM of its own,
1.4 s alone, several seconds beside the other real-JMeter tests), so the exit is only held
to "does not hang".
"""

from __future__ import annotations

import json
import os
import signal
import threading
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

TICK_MS = 1000
# From the kill to the engine_lost line: two ticks, and the slack of a loaded machine.
NOTICE_BOUND_MS = 2 * TICK_MS + 1500
# From the kill to the exit: the wind-down and JMeter's dashboard JVM.
EXIT_BOUND_MS = 30_000


@pytest.fixture()
def target() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=4, queue=200, service_s=0.020)) as t:
        yield t


def test_sigkilled_jmeter_ends_the_run_with_engine_lost_and_exit_3(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    decisions = out / "decisions.csv"
    lines: list[tuple[int, str]] = []  # (epoch ms when read, stderr line)
    with sidecar(run_args(out, target.port, "2m"), tmp_path, str(out)) as proc:
        assert proc.stderr is not None
        stderr = proc.stderr
        reader = threading.Thread(
            target=lambda: lines.extend((int(time.time() * 1000), ln) for ln in stderr),
            daemon=True,
        )
        reader.start()
        assert wait_for(lambda: len(read_decisions(decisions)) >= 4, 60), "no ticks"
        pids = jmeter_pids(str(out))
        assert len(pids) == 1
        killed_ms = int(time.time() * 1000)
        os.kill(pids[0], signal.SIGKILL)
        proc.wait(timeout=EXIT_BOUND_MS / 1000)
        exited_ms = int(time.time() * 1000)
        reader.join(timeout=10)
    err = "".join(ln for _, ln in lines)
    assert proc.returncode == 3, err[-2000:]
    assert "Traceback" not in err
    assert "engine_lost: JMeter" in err and "killed by signal 9" in err
    assert "stop: engine_lost" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "engine_lost"
    rows = read_decisions(decisions)
    after = [r for r in rows if int(r["epoch_ms"]) > killed_ms]
    # Noticed within two ticks: at most two decisions were made after the kill.
    assert len(after) <= 2, after
    noticed_ms = next(t for t, ln in lines if "engine_lost: JMeter" in ln)
    assert noticed_ms - killed_ms < NOTICE_BOUND_MS, (noticed_ms - killed_ms, err[-2000:])
    assert exited_ms - killed_ms < EXIT_BOUND_MS
    assert not jmeter_pids(str(out))
    print(
        f"\nengine_lost: ticks after kill={len(after)}, kill->noticed "
        f"{noticed_ms - killed_ms} ms, kill->exit {exited_ms - killed_ms} ms"
    )
