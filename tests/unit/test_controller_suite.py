"""CI check of the controller's goal: ``loadguard evaluate --suite --quick`` (simulator only,
plants 1-9, the default policy, seed 1, 600 s runs, violation budget B = 5 %).

The goal against the fixed-rate frontier (docs/controller.md, "The plant suite") is
re-derived here from the figures in suite.json, not read from the suite's own verdict:
F(B) from the fixed-rate points, then violations ≤ B + 2 points, steady efficiency
≥ F(B) − 5 points, a commanded rate ≥ 0.9 F(B) λ* within 60 s (unless λ*·W < 100
samples), recovery ≤ 60 s, at most one collapse on the cliff, errors ≤ 0.5 %. No level
is relaxed per plant: a plant whose default run misses any item fails its test case, or,
when listed in ``KNOWN_MISSES``, is a strict xfail (it fails once it meets the goal,
until it is taken off the list). Same seed, same output: the simulator is
deterministic. Measured run time: see docs/controller.md ("The plant suite").
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.lab.evaluate.suite_report import HEAD

pytestmark = pytest.mark.slow

BUDGET = 0.05
PLANTS = ("mm8", "shop", "heavy_tail", "warmup", "cliff", "halves", "outage", "tiny", "large")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("suite")
    doc = tmp / "controller.md"
    doc.write_text("# Controller\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        [
            "evaluate",
            "--suite",
            "--quick",
            "--violation-budget",
            "5%",
            "--doc",
            str(doc),
            "--out",
            str(tmp / "out"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads((tmp / "out" / "suite.json").read_text(encoding="utf-8"))
    data["doc"] = doc.read_text(encoding="utf-8")
    data["pngs"] = sorted(p.name for p in (tmp / "out").glob("*.png"))
    return data


def _goal_misses(plant: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """The goal items ``run`` misses, derived from the plant's fixed-rate points."""
    kept = [
        p["steady_efficiency"]
        for p in plant["frontier"]
        if p["violations"] is not None
        and p["steady_efficiency"] is not None
        and p["violations"] <= BUDGET + 1e-9
    ]
    f_b = max(kept) if kept else None
    lams = [lam for _at, lam in plant["capacity"] if lam > 0]
    out = []
    if run["violations"] is None or run["violations"] > BUDGET + 0.02 + 1e-12:
        out.append("violations")
    eff = run["steady_efficiency"]
    if eff is None or (f_b is not None and eff < f_b - 0.05 - 1e-12):
        out.append("efficiency")
    if min(lams) * 10.0 >= 100.0 and (run["time_to_90_s"] is None or run["time_to_90_s"] > 60):
        out.append("t90")
    if plant["has_events"] and any(r is None or r > 60 for r in run["recovery_s"]):
        out.append("recovery")
    if plant["has_cliff"] and run["collapses"] > 1:
        out.append("collapses")
    if run["errors"] is None or run["errors"] > 0.005:
        out.append("errors")
    return out


def test_the_suite_ran_at_the_budget_with_the_reach_it_implies(suite: dict[str, Any]) -> None:
    assert suite["violation_budget"] == BUDGET and suite["seeds"] == [1]
    for plant in suite["plants"]:
        f_b = plant["goal"]["frontier_at_budget"]
        assert plant["goal"]["reach"] == pytest.approx(0.9 * (1.0 if f_b is None else f_b))


#: Plants where the default (``tally``) measurably misses the goal today (seed 1, 600 s,
#: B = 5 %, measured on this commit's parent). Strict: a plant that starts meeting the
#: goal fails this test until it is taken off the list, so the list can only shrink.
KNOWN_MISSES = {
    "warmup": "violations and t90 (no fixed rate >= 0.5 lambda* keeps 5 %: the cold start)",
    "tiny": "violations over B + 2 pt (lambda* W = 34 samples: a window is one draw)",
}


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(k, marks=pytest.mark.xfail(reason=KNOWN_MISSES[k], strict=True))
        if k in KNOWN_MISSES
        else k
        for k in PLANTS
    ],
)
def test_default_policy_meets_the_goal_at_a_5_percent_budget(
    suite: dict[str, Any], key: str
) -> None:
    plant = next(p for p in suite["plants"] if p["key"] == key)
    (run,) = plant["runs"]
    missed = _goal_misses(plant, run)
    assert missed == run["misses"], "the suite's verdict differs from the goal's"
    f_b = plant["goal"]["frontier_at_budget"]
    assert not missed, (
        f"{key}: misses {missed} (F(B) {f_b}, violations {run['violations']}, efficiency "
        f"{run['steady_efficiency']}, t90 {run['time_to_90_s']}, recovery {run['recovery_s']}, "
        f"collapses {run['collapses']}, errors {run['errors']})"
    )


def test_suite_report_has_a_table_and_a_frontier_chart_per_plant(suite: dict[str, Any]) -> None:
    assert [p["number"] for p in suite["plants"]] == list(range(1, 10))
    assert len(suite["pngs"]) == 9
    assert suite["doc"].count(HEAD) == 9


def test_every_plant_has_a_measured_lambda_star(suite: dict[str, Any]) -> None:
    for plant in suite["plants"]:
        measured = [x["measured"] for x in plant["lambda_star"]]
        assert all(m is not None and m > 0 for m in measured), plant["key"]
