"""CI check of the controller's goal: ``loadguard evaluate --suite --quick`` (simulator only,
plants 1-9, the default policy, one seed, 600 s runs; ~1-2 min wall on 2 shared cores).

Where the default meets a criterion the goal itself is asserted. Where it does not, the
measured level is asserted (so it cannot get worse unnoticed) and the miss is named with
its cause here and in docs/controller.md. Same seed, same output: the simulator is
deterministic.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.evaluate.suite_metrics import (
    GOAL_COLLAPSES,
    GOAL_EFFICIENCY,
    GOAL_ERRORS,
    GOAL_RECOVERY_S,
    GOAL_T90_S,
    GOAL_VIOLATIONS,
)

pytestmark = pytest.mark.slow

GOAL: dict[str, float] = {
    "violations": GOAL_VIOLATIONS,
    "errors": GOAL_ERRORS,
    "efficiency": GOAL_EFFICIENCY,
    "t90": GOAL_T90_S,
    "recovery": GOAL_RECOVERY_S,
    "collapses": GOAL_COLLAPSES,
}

#: Measured levels where the default (``knee``) misses the goal, with the cause; an empty
#: entry asserts the whole goal.
MISSES: dict[str, dict[str, float]] = {
    "mm8": {},
    # The ramp's P0 read 0.35 (the long-run idle is 0.37), so the setpoint 1.3 P0 = 0.45
    # holds 0.84-0.89 lambda*: efficiency 0.893.
    "shop": {"efficiency": 0.89},
    "heavy_tail": {},
    # Cold start: the ramp's P0 is the cold service's, so the setpoint stays at its cap
    # 0.75 until flat windows well below the hot rate (after ~150 s) lower it to ~0.48;
    # meanwhile x1.25 steps from idle twice overshoot to 1.15-1.3 lambda* (the 6 violating
    # windows, 140-220 s; no fixed rate meets the goal here: frontier infeasible). t90 is
    # the cold service's: 132 s.
    "warmup": {"violations": 0.11, "efficiency": 0.88, "t90": 135.0},
    "cliff": {},
    # After the halving, windows holding the backlog sent before the first cut, with
    # completions matching arrivals, read as the new rate's verdict (flow conservation
    # cannot tell; a window keyed on start time could): 126 -> 63 -> 31.5 req/s, then a
    # momentum climb back to 0.9 lambda* 105 s after the event.
    "halves": {"efficiency": 0.86, "recovery": 110.0},
    # The stall halves the rate (102 -> 51), the drained backlog halves it again (-> 26),
    # and the climb back reaches 0.9 lambda* 149 s after the outage. Violations: the hung
    # requests completing at 170-200 s (3 windows) and one at 0.88 lambda* (no fixed rate
    # meets the goal here: frontier infeasible).
    "outage": {"violations": 0.072, "efficiency": 0.80, "recovery": 150.0},
    # 10 s windows of ~30 samples: a window p95 is noisy at any rate near lambda*; no
    # fixed rate meets <= 5 % violations and >= 90 % efficiency (frontier infeasible).
    "tiny": {"violations": 0.27, "efficiency": 0.86},
    # Eight doublings from 5 to 1500 req/s at one settle time (~13 s) each.
    "large": {"t90": 110.0},
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("suite")
    doc = tmp / "controller.md"
    doc.write_text("# Controller\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        ["evaluate", "--suite", "--quick", "--doc", str(doc), "--out", str(tmp / "out")],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads((tmp / "out" / "suite.json").read_text(encoding="utf-8"))
    data["doc"] = doc.read_text(encoding="utf-8")
    data["pngs"] = sorted(p.name for p in (tmp / "out").glob("*.png"))
    return data


def _figures(run: dict[str, Any]) -> dict[str, float]:
    recovery = [float("inf") if r is None else r for r in run["recovery_s"]]
    return {
        "violations": run["violations"],
        "errors": run["errors"],
        "efficiency": run["steady_efficiency"],
        "t90": float("inf") if run["time_to_90_s"] is None else run["time_to_90_s"],
        "recovery": max(recovery, default=0.0),
        "collapses": run["collapses"],
    }


@pytest.mark.parametrize("plant", list(MISSES))
def test_default_policy_meets_the_goal_or_its_measured_level(
    suite: dict[str, Any], plant: str
) -> None:
    entry = next(p for p in suite["plants"] if p["key"] == plant)
    (run,) = entry["runs"]
    figures = _figures(run)
    for name, value in figures.items():
        if name == "collapses" and not entry["has_cliff"]:
            continue
        level = MISSES[plant].get(name, GOAL[name])
        if name == "efficiency":
            assert value >= level, f"{plant}: {name} {value:.3f} < {level}"
        else:
            assert value <= level, f"{plant}: {name} {value} > {level}"


def test_suite_report_has_a_table_and_a_frontier_chart_per_plant(suite: dict[str, Any]) -> None:
    assert [p["number"] for p in suite["plants"]] == list(range(1, 10))
    assert len(suite["pngs"]) == 9
    assert suite["doc"].count("| policy | violations |") == 9


def test_every_plant_has_a_measured_lambda_star(suite: dict[str, Any]) -> None:
    for plant in suite["plants"]:
        measured = [x["measured"] for x in plant["lambda_star"]]
        assert all(m is not None and m > 0 for m in measured), plant["key"]
