"""The plant suite report's "before" rows come from the baseline's own default policy."""

from __future__ import annotations

from typing import Any

from loadguard.evaluate.suite_report import default_of, markdown
from loadguard.policies import DEFAULT_POLICY


def run(policy: str, violations: float) -> dict[str, Any]:
    return {
        "policy": policy, "seed": 1, "misses": [], "violations": violations, "windows": 57,
        "errors": 0.0, "steady_efficiency": 0.9, "frontier_gap": 0.0, "time_to_90_s": 50.0,
        "recovery_s": [], "collapses": 0, "ok_rps": 100.0,
    }  # fmt: skip


def result(default: str | None, policies: list[str], runs: list[dict[str, Any]]) -> dict[str, Any]:
    plant = {
        "number": 1, "key": "mm8", "title": "M/M/8", "p95_ms": 250.0, "has_events": False,
        "has_cliff": False, "lambda_star": [{"nominal": 144.0, "measured": 145.0,
        "bounded": True}], "capacity": [[0.0, 145.0]], "frontier": [], "runs": runs,
    }  # fmt: skip
    data: dict[str, Any] = {
        "command": "c", "duration_s": 600.0, "seeds": [1], "policies": policies,
        "plants": [plant],
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
    assert "| before: gradient | 5.0 %" in text
    assert "before: threezone" not in text
    assert f"| {DEFAULT_POLICY} | 3.0 %" in text
