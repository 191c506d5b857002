"""Fault 9: a bug in the controller mid-run under ``loadguard run``.

The policy raises an unexpected exception on its 4th decision over a window with
samples (injected into the real CLI process). JMeter must still be stopped through its
own shutdown, the decision log and summary.json finished
(``stop_reason=internal_error``), and the user must see one line,
``internal error: ...``, and exit 4 -- no traceback.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from tests.faults.helpers import LOADGUARD, run_args, sidecar
from tests.jmeter_runner import jmeter_pids, read_decisions

pytestmark = pytest.mark.jmeter

# The real CLI, with the sidecar's policy factory wrapped so that the 4th decision over
# a window with samples raises.
INJECT = """
import sys
import loadguard.sidecar.compose as sidecar

real = sidecar.build_policy


class Broken:
    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    @property
    def name(self):
        return self.inner.name

    def decide(self, obs):
        self.calls += obs.stats.overall.count > 0
        if self.calls > 3:
            raise ZeroDivisionError("injected bug")
        return self.inner.decide(obs)


sidecar.build_policy = lambda *a, **k: Broken(real(*a, **k))
from loadguard.cli import main

sys.argv[0] = "loadguard"
main()
"""


@pytest.fixture()
def target() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=4, queue=200, service_s=0.020)) as t:
        yield t


def test_a_bug_mid_run_stops_jmeter_writes_the_summary_and_exits_4(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = run_args(out, target.port, "2m")
    assert args[: len(LOADGUARD)] == LOADGUARD
    args = [sys.executable, "-c", INJECT, *args[len(LOADGUARD) :]]
    with sidecar(args, tmp_path, str(out)) as proc:
        _, err = proc.communicate(timeout=120)
        exited_ms = int(time.time() * 1000)
    assert proc.returncode == 4, err[-2000:]
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "internal error: ZeroDivisionError: injected bug (--debug shows the traceback)"
    )
    rows = read_decisions(out / "decisions.csv")
    assert [r["tick"] for r in rows] == [str(k) for k in range(1, len(rows) + 1)]
    assert sum(int(r["samples"]) > 0 for r in rows) == 3  # the 4th such tick raised
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "internal_error"
    assert summary["internal_error"] == "ZeroDivisionError: injected bug"
    assert summary["samples"] >= max(int(r["samples"]) for r in rows)
    assert "... end of run" in (out / "jmeter.out").read_text(errors="replace")
    assert not jmeter_pids(str(out))
    last_row_to_exit_ms = exited_ms - int(rows[-1]["epoch_ms"])
    print(
        f"\ninternal_error: {len(rows)} rows, {summary['samples']} samples, exit 4, "
        f"{last_row_to_exit_ms} ms from the last row to the exit"
    )
