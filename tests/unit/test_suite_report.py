"""The plant suite report: the goal's figures per plant and across plants, the "before"
rows from the baseline's own default policy, and one block per run configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadguard.lab.evaluate.suite_metrics import Goal
from loadguard.lab.evaluate.suite_report import (
    block_key,
    default_of,
    default_out,
    markdown,
    splice,
    summarise,
)
from loadguard.policies import DEFAULT_POLICY


def run(policy: str, violations: float, seed: int = 1, eff: float = 0.9) -> dict[str, Any]:
    return {
        "policy": policy, "seed": seed, "misses": [], "violations": violations, "windows": 57,
        "errors": 0.0, "steady_efficiency": eff, "frontier_gap": 0.0, "time_to_90_s": 50.0,
        "recovery_s": [], "collapses": 0, "ok_rps": 100.0,
    }  # fmt: skip


GOAL = Goal(0.05, 0.92).to_json()


def result(
    default: str | None,
    policies: list[str],
    runs: list[dict[str, Any]],
    budget: float = 0.05,
    seeds: tuple[int, ...] = (1,),
) -> dict[str, Any]:
    plant = {
        "number": 1, "key": "mm8", "title": "M/M/8", "p95_ms": 250.0, "has_events": False,
        "has_cliff": False, "lambda_star": [{"nominal": 144.0, "measured": 145.0,
        "bounded": True}], "capacity": [[0.0, 145.0]], "frontier": [], "runs": runs,
        "goal": Goal(budget, 0.92).to_json(),
    }  # fmt: skip
    data: dict[str, Any] = {
        "command": "c", "duration_s": 600.0, "seeds": list(seeds), "policies": policies,
        "plants": [plant], "violation_budget": budget, "commit": "abc123",
    }  # fmt: skip
    if default is not None:
        data["default_policy"] = default
    return data


def test_a_baseline_written_before_the_field_takes_its_first_policy_as_its_default() -> None:
    assert default_of(result(None, ["gradient", "threezone"], [])) == "gradient"
    assert default_of(result("knee", ["gradient", "knee"], [])) == "knee"


def test_before_rows_are_the_baseline_default_not_todays() -> None:
    old = result(None, ["gradient", "threezone"], [run("gradient", 0.05), run("threezone", 0.2)])
    new = result(DEFAULT_POLICY, [DEFAULT_POLICY], [run(DEFAULT_POLICY, 0.03)])
    text = markdown(new, old, "charts")
    assert "| before: gradient (seed 1) | 5.00 %" in text
    assert "before: threezone" not in text
    assert f"| {DEFAULT_POLICY} (seed 1) | 3.00 %" in text


def test_summary_gives_the_mean_over_seeds_and_the_gap_to_f_of_b() -> None:
    runs = [run("knee", 0.09, 1, 0.86), run("knee", 0.03, 2, 0.90)]
    (s,) = summarise(runs, Goal.from_json(GOAL))
    assert s["seeds"] == [1, 2]
    assert abs(s["mean_violations"] - 0.06) < 1e-12
    assert abs(s["gap"] - (0.92 - 0.88)) < 1e-12
    assert s["misses"] == []


def test_the_compact_table_has_a_row_per_plant_with_f_of_b() -> None:
    text = markdown(result("knee", ["knee"], [run("knee", 0.08)]), None, "charts")
    assert "| 1 mm8 | 92.0 % | knee | 8.00 % | 90.0 % | +2.0 pt |" in text
    assert text.count("violations |") >= 2  # the compact table and the plant's own


def test_a_block_is_keyed_by_budget_plants_and_seeds() -> None:
    data = result("knee", ["knee"], [], budget=0.01, seeds=(101, 102, 103))
    assert block_key(data) == "B=1% plants=1 seeds=101,102,103"


def test_blocks_of_two_budgets_stand_side_by_side_and_each_is_replaced(tmp_path: Path) -> None:
    doc = tmp_path / "c.md"
    doc.write_text("# head\n", encoding="utf-8")
    at5 = result("knee", ["knee"], [run("knee", 0.03)])
    at1 = result("knee", ["knee"], [run("knee", 0.02)], budget=0.01)
    splice(doc, markdown(at5, None, "x"))
    splice(doc, markdown(at1, None, "x"))
    splice(doc, markdown(result("knee", ["knee"], [run("knee", 0.04)]), None, "x"))
    text = doc.read_text(encoding="utf-8")
    assert text.count("suite:begin") == 2
    assert "4.00 %" in text and "3.00 %" not in text and "2.00 %" in text


def test_runs_other_than_the_suites_own_get_a_folder_of_their_own() -> None:
    data = result("knee", ["knee"], [], budget=0.01)
    out = default_out(Path("docs/controller.md"), data)
    assert out.parent == Path("docs/controller") and out.name == "b1pct_plants1_seeds1"
