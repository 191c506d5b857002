"""Issue 22 on the real stack: the default policy holds the demo target at its budget.

A real ``loadguard run`` of ``loadguard.policies.DEFAULT_POLICY`` (whatever it is) with
real JMeter 5.6.3 and the elastic plan against the demo target started as ``loadguard
demo`` starts it (``loadguard.demo.demo_target_args``: M/M/8, 50 ms, p95 <= 250 ms, 1 %
errors, ceiling 800 req/s, from 5 req/s), judged from its summary.json:

* the share of tumbling windows over the SLO in the held half (``held_rate``'s
  ``violation_share``, the run's second half) <= B + 2 points, B = 5 %;
* the held rate (``held_rate.rps``, the time-weighted median rate in force there) within
  10 % of F(5 %)·λ*, the demo target's fixed-rate frontier measured once on real JMeter
  (docs/controller-jmeter.md, "The demo target's fixed-rate frontier on real JMeter";
  the figure is read from docs/controller-jmeter/demo_frontier.json).

Why 380 s: the held half is the run's second half, judged in tumbling windows of at
least 10 s taken at the 2 s ticks; ticks that come a few ms early make most windows 12 s
(a 310 s run held 13 of them). At 240 s the half holds about 10, and a single violating
window (10 %) is already over B + 2 points = 7 %: the test would demand zero violations,
not the budget. 15 windows is the fewest in which one violating window (6.7 %) is within
B + 2; 380 s gives about 16 (the test checks it has 15) and leaves the first 190 s for
the climb from 5 req/s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loadguard.demo import DemoOptions, demo_properties, demo_target_args, elastic_plan
from loadguard.jmeter.home import JMeterHome
from loadguard.policies import DEFAULT_POLICY
from loadguard.target.process import spawn_target
from tests.jmeter_runner import jmeter_pids

pytestmark = [pytest.mark.jmeter, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
FRONTIER = REPO / "docs" / "controller-jmeter" / "demo_frontier.json"
BUDGET = 0.05
VIOLATION_MARGIN = 0.02
RATE_TOLERANCE = 0.10
DURATION_S = 380.0
MIN_HELD_WINDOWS = 15


def frontier_rate() -> float:
    """F(5 %)·λ* of the demo target, req/s, as measured (docs/controller-jmeter.md)."""
    data = json.loads(FRONTIER.read_text())
    assert data["budget"] == BUDGET
    return float(data["F_B_lambda_star_rps"])


def run_command(out: Path, port: int, policy: str, duration_s: float) -> list[str]:
    """The ``loadguard run`` of the demo's scenario on the target at ``port``."""
    opts = DemoOptions(out_dir=out, duration_s=duration_s, policy=policy)
    cmd = [
        sys.executable, "-m", "loadguard", "run", str(elastic_plan()),
        "--out", str(out), "--no-dashboard", "-q",
        "--p95", opts.p95, "--error-rate", opts.error_rate,
        "--violation-budget", f"{BUDGET:.0%}",
        "--max-rate", str(opts.max_rate),
        "--policy", policy, "--initial-rate", f"{opts.initial_rate:g}",
        "--duration", f"{duration_s:g}s",
    ]  # fmt: skip
    for key, value in demo_properties(port, opts).items():
        cmd += ["-J", f"{key}={value}"]
    return cmd


def test_default_policy_holds_the_demo_target_at_its_budget_and_frontier(
    jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    target_opts = DemoOptions(out_dir=out)
    with spawn_target(demo_target_args(target_opts)) as target:
        proc = subprocess.run(
            run_command(out, target.port, DEFAULT_POLICY, DURATION_S),
            capture_output=True,
            text=True,
            timeout=DURATION_S + 180,
            cwd=tmp_path,
        )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in (0, 1, 5), proc.stderr[-3000:]
    assert not jmeter_pids(str(out))
    summary = json.loads((out / "summary.json").read_text())
    held = summary["held_rate"]
    figures = {"policy": DEFAULT_POLICY, "exit": proc.returncode, "held_rate": held}
    assert held["windows"] >= MIN_HELD_WINDOWS, figures
    assert held["violation_share"] is not None, figures
    assert held["violation_share"] <= BUDGET + VIOLATION_MARGIN, figures
    goal = frontier_rate()
    assert held["rps"] is not None, figures
    assert abs(held["rps"] - goal) <= RATE_TOLERANCE * goal, {**figures, "F(B)·λ*": goal}
