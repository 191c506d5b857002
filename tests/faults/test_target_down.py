"""Fault 3: the target is down (connection refused: every sample an error).

``loadguard run`` must cut the rate to the floor within the ticks its guard rails allow
(one cut of at most ``max_step_down`` per settle time), never raise it while the error
SLO is breached, and, with ``--auto-stop N``, stop after N breached windows.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from loadguard.actuator.elastic_timer import ELASTIC_TIMER_LAG_MS
from loadguard.durations import parse_duration_s
from loadguard.jmeter.home import JMeterHome
from loadguard.policies import GUARD_DEFAULTS
from tests.faults.helpers import free_port, run_args, sidecar
from tests.jmeter_runner import jmeter_pids, read_decisions

pytestmark = pytest.mark.jmeter

TICK_MS = 1000
# Rows are stamped on the wall clock, auto-stop times on the monotonic one: the two can
# round a millisecond apart.
CLOCKS_MS = 5
WINDOW = "5s"
# Floor 5 req/s keeps >= min_samples (20) in a 5 s window. Floor 1 req/s: a 5 s window
# is too thin (5 samples), so the window stretches back until it holds min_samples (at
# most 6 windows): the floor is still judged, never NO_DATA, and auto-stop still fires.
INITIAL, AUTO_STOP = 20.0, 5
# A loaded machine can take 15 s to get JMeter's first sample out; the stale guard (2
# windows + 2 windows by default) would otherwise floor the rate before the test begins.
STALE = ["--param", "stale_ms=30000"]


@pytest.mark.parametrize("floor", [5.0, 1.0], ids=["judged-floor", "thin-windows"])
def test_target_down_cuts_to_the_floor_never_raises_and_auto_stops(
    floor: float, jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = run_args(
        out,
        free_port(),  # nothing listens: connection refused
        "90s",
        window=WINDOW,
        initial_rate=str(INITIAL),
        extra=["--min-rate", str(floor), "--auto-stop", str(AUTO_STOP), *STALE],
        props=["target.connect_timeout=1000"],
    )
    with sidecar(args, tmp_path, str(out)) as proc:
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-2000:]  # the verdict fails; not an engine failure
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "auto_stop"
    assert not jmeter_pids(str(out))

    rows = read_decisions(out / "decisions.csv")
    breached = [i for i, r in enumerate(rows) if "error_rate" in r["breaches"].split(";")]
    assert breached, "the error SLO never breached"
    assert all(float(rows[i]["error_rate"]) == 1.0 for i in breached)
    # Never a rise while errors breach.
    for i in breached:
        assert float(rows[i]["new_rate"]) <= float(rows[i]["old_rate"]), rows[i]
    window_ms = parse_duration_s(WINDOW) * 1000
    if floor < 4.0:
        # Thin windows are stretched back to min_samples, so even the 1 req/s floor is
        # judged: the breach is continuous (never NO_DATA) for auto-stop all along.
        thin = [i for i, r in enumerate(rows) if r["zone"] == "NO_DATA" and i > breached[0]]
        assert not thin, [(rows[i]["tick"], rows[i]["reason"]) for i in thin]
        assert float(rows[-1]["old_rate"]) < 4.0  # below min_samples / window
        assert all(float(r["new_rate"]) <= float(r["old_rate"]) for r in rows[breached[0] :])
        assert rows[-1]["action"] == "STOP" and rows[-1]["reason"] == "auto_stop"
        breach_ms = int(rows[-1]["epoch_ms"]) - int(rows[breached[0]]["epoch_ms"])
        assert AUTO_STOP * window_ms - CLOCKS_MS <= breach_ms <= AUTO_STOP * window_ms + 2 * TICK_MS
        print(f"\ntarget down, 1 req/s floor judged, stop after {breach_ms} ms")
        return
    # Down to the floor within the ticks the guards allow: while breached, the rate is cut
    # again as soon as the settle time (lag + window) after the last change has passed,
    # never held longer; each cut at most max_step_down.
    settle_ticks = math.ceil((ELASTIC_TIMER_LAG_MS + window_ms) / TICK_MS) + 1
    step_down = GUARD_DEFAULTS["max_step_down"]
    assert step_down is not None
    at_floor = next(i for i, r in enumerate(rows) if float(r["new_rate"]) <= floor)
    cuts = [i for i, r in enumerate(rows) if r["action"] == "DECREASE"]
    assert cuts and cuts[-1] == at_floor
    marks = [breached[0], *cuts]
    gaps = [b - a for a, b in itertools.pairwise(marks)]
    assert max(gaps) <= settle_ticks, (gaps, settle_ticks)
    for i in cuts:
        old, new = float(rows[i]["old_rate"]), float(rows[i]["new_rate"])
        assert new >= max(old * step_down, floor) - 1e-9, rows[i]
    assert all(float(r["new_rate"]) == floor for r in rows[at_floor:])
    took = at_floor - breached[0]
    # Auto-stop: the last row is STOP, after AUTO_STOP windows of continuous breach.
    assert rows[-1]["action"] == "STOP" and rows[-1]["reason"] == "auto_stop"
    breach_ms = int(rows[-1]["epoch_ms"]) - int(rows[breached[0]]["epoch_ms"])
    assert AUTO_STOP * window_ms - CLOCKS_MS <= breach_ms <= AUTO_STOP * window_ms + 2 * TICK_MS
    print(
        f"\ntarget down: first breach at tick {breached[0] + 1}, floor after {took} ticks "
        f"({len(cuts)} cuts, tick gaps {gaps}, settle {settle_ticks}), "
        f"auto-stop after {breach_ms} ms of breach"
    )
