"""The default policy keeps the violation budget on real JMeter, at the demo target's frontier.

A ``loadguard run`` of the default policy, 380 s from 5 req/s, on a fresh demo target
(M/M/8, 50 ms, p95 <= 250 ms: ``loadguard demo``'s target, plan and properties), judged
on its summary.json's ``held_rate`` (the run's second half, docs/decision-log.md):

* its count of violating windows is at most what a policy spending exactly B + 2 points
  shows in 95 % of runs (``allowed``): 3 of 17 windows. Read literally, "a share <= B + 2
  points" is 1 of 17, which a policy spending exactly B fails in 21 % of runs (P(X >= 2),
  X ~ Binomial(17, 0.05)) and one at B + 2 points in 34 %: a test that fails by chance
  that often says nothing of the policy. This one fails a policy at the goal's edge in at
  most 5 % of runs;
* its rate is within 10 % of F(B)·lambda*, the demo target's fixed-rate frontier measured
  once on real JMeter (docs/controller-jmeter.md, "The demo target's fixed-rate frontier";
  the figure is read from docs/controller-jmeter/demo_frontier.json, not restated here).

380 s: the run's second half must hold at least 15 windows of 10 s after JMeter's start
(~10 s), so that one violating window is 5-7 % and two fail the budget. The test runs
alone (``make test``'s third pass): a budget on p95 is a claim about latencies, and
another test's JVM beside it adds windows the target did not cause.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from loadguard.decision_columns import COLUMNS
from loadguard.errors import ReportError
from loadguard.jmeter.home import JMeterHome
from loadguard.lab.demo import DemoOptions, demo_properties, demo_target_args
from loadguard.lab.target.process import spawn_target
from loadguard.report.decision_frame import load_decisions
from loadguard.resources import elastic_plan
from tests.jmeter_runner import jmeter_pids

pytestmark = [pytest.mark.jmeter, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
FRONTIER = REPO / "docs" / "controller-jmeter" / "demo_frontier.json"
DURATION_S = 380
MIN_HELD_WINDOWS = 15


def allowed(n: int, share: float, level: float = 0.95) -> int:
    """The smallest k with P(X <= k) >= level, X ~ Binomial(n, share)."""
    acc = 0.0
    for k in range(n + 1):
        acc += math.comb(n, k) * share**k * (1.0 - share) ** (n - k)
        if acc >= level:
            return k
    return n


def rate_changes(decisions: Path) -> str:
    """Every decision that changed the rate, as "t s: old -> new reason": the run folder
    is a temporary one, so a failure must carry the trajectory that explains it (CI on
    d98ca12 held 100 req/s and left nothing to read but the summary)."""
    if not decisions.exists():
        return "no decision log"
    try:
        frame = load_decisions(decisions)
    except ReportError as exc:
        return str(exc)
    t0 = frame["epoch_ms"].iloc[0]
    moved = frame[frame["old_rate"].notna() & (frame["old_rate"] != frame["new_rate"])]
    return "; ".join(
        f"{(r.epoch_ms - t0) / 1000:.0f} s: {r.old_rate:.1f} -> {r.new_rate:.1f} {r.reason}"
        for r in moved.itertuples()
    )


def test_rate_changes_lists_only_the_decisions_that_moved_the_rate(tmp_path: Path) -> None:
    log = tmp_path / "decisions.csv"
    rows = [
        {"epoch_ms": "1000", "old_rate": "5", "new_rate": "5", "reason": "no_data"},
        {"epoch_ms": "27000", "old_rate": "5", "new_rate": "10", "reason": "within_budget"},
        {"epoch_ms": "49000", "old_rate": "160", "new_rate": "113.137", "reason": "knee_watch"},
    ]
    with log.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    assert rate_changes(log) == ("26 s: 5.0 -> 10.0 within_budget; 48 s: 160.0 -> 113.1 knee_watch")
    assert rate_changes(tmp_path / "none.csv") == "no decision log"


def test_allowed_is_the_binomial_95th_percentile() -> None:
    assert allowed(17, 0.07) == 3 and allowed(17, 0.05) == 3 and allowed(20, 0.0) == 0
    assert allowed(100, 0.05) == 9  # P(X <= 8) = 0.937, P(X <= 9) = 0.972


def test_the_default_policy_holds_the_budget_at_the_demo_targets_frontier(
    jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    frontier = json.loads(FRONTIER.read_text(encoding="utf-8"))
    budget = float(frontier["budget"])
    target_rps = float(frontier["F_B_lambda_star_rps"])
    opts = DemoOptions(out_dir=tmp_path / "run", duration_s=DURATION_S)
    out = opts.out_dir
    with spawn_target(demo_target_args(opts)) as target:
        cmd = [
            sys.executable, "-m", "loadguard", "run", str(elastic_plan()),
            "--out", str(out), "--no-dashboard", "-q",
            "--p95", opts.p95, "--error-rate", opts.error_rate,
            "--max-rate", f"{opts.max_rate:g}", "--initial-rate", f"{opts.initial_rate:g}",
            "--violation-budget", f"{budget:.0%}", "--duration", f"{DURATION_S}s",
        ]  # fmt: skip
        for key, value in demo_properties(target.port, opts).items():
            cmd += ["-J", f"{key}={value}"]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=DURATION_S + 180, cwd=tmp_path
        )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    held = summary["held_rate"]
    facts = (
        f"held {held}, capacity {summary.get('capacity')}, verdict {summary['verdict']}, "
        f"exit {proc.returncode}; rate changes: {rate_changes(out / 'decisions.csv')}"
    )
    assert held["windows"] >= MIN_HELD_WINDOWS, facts
    assert held["budget"] == pytest.approx(budget)
    violated = round(held["violation_share"] * held["windows"])
    assert violated <= allowed(held["windows"], budget + 0.02), facts
    assert abs(held["rps"] / target_rps - 1.0) <= 0.10, facts
    assert not jmeter_pids(str(out))
