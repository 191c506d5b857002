"""The plant suite at a budget the user sets, on the seeds asked for, and its holdout plants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.lab.evaluate import suite
from loadguard.lab.evaluate.suite import SuiteConfig
from loadguard.lab.evaluate.suite_metrics import Capacity, Goal
from loadguard.lab.simulate.plants import BY_KEY, HOLDOUT, PLANTS, select
from loadguard.policies import build_policy
from loadguard.slo import SloSpec


def test_the_default_plant_set_is_1_to_9_without_the_holdout_plants() -> None:
    assert [p.number for p in select(None)] == list(range(1, 10))
    assert not {p.key for p in HOLDOUT} & {p.key for p in PLANTS}


def test_holdout_plants_are_selected_by_number_or_key() -> None:
    assert [p.key for p in select(["11,12", "lognormal15"])] == ["mm2", "md8", "lognormal15"]


def test_holdout_slos_follow_the_suites_rule() -> None:
    # 5x the mean service for light tails; plant 3's ratio to the service p95 (2.3x) for
    # the log-normal (its service p95: exp(ln 50 ms - 1.5^2/2 + 1.645 * 1.5) = 191 ms).
    assert BY_KEY["mm2"].p95_ms == 5 * 50.0 and BY_KEY["md8"].p95_ms == 5 * 50.0
    assert 2.2 < BY_KEY["lognormal15"].p95_ms / 191.4 < 2.4
    # a warm-up's SLO is plant 4's: the cold idle p95 (2x 50 ms exp: 300 ms) fits under it
    assert BY_KEY["collapse"].p95_ms == BY_KEY["warmup"].p95_ms
    assert BY_KEY["fast8"].p95_ms == 5 * 40.0


def test_the_fast_holdout_puts_the_slow_starts_second_large_step_past_its_knee() -> None:
    # its knee lies between the slow start's steps 160 and 320 req/s (the suite's plants
    # 1-7 have theirs at 140-160): analytic lambda* of M/M/8 at 40 ms for p95 <= 200 ms
    plant = BY_KEY["fast8"]
    lam = plant.nominal_lambda_star(plant.healthy())
    assert 160.0 < lam < 320.0 / 1.5 and [p.key for p in select(["15"])] == ["fast8"]


def test_the_dip_holdout_takes_two_servers_away_during_the_search_and_gives_them_back() -> None:
    plant = BY_KEY["dip"]
    servers = [plant.scenario.servers_at(t) for t in (79.0, 80.0, 199.0, 200.0, 600.0)]
    assert servers == [8, 6, 6, 8, 8] and [p.key for p in select(["16"])] == ["dip"]
    lams = [plant.nominal_lambda_star(ph.variant) for ph in plant.phases() if ph.variant]
    assert lams[0] == lams[2] and 0.6 < lams[1] / lams[0] < 0.75
    assert plant.events == ((80.0, 200.0),)


def test_the_collapse_holdout_is_judged_on_its_collapses() -> None:
    assert [p.key for p in select(["14"])] == ["collapse"] and BY_KEY["collapse"].has_cliff


def test_policy_runs_get_the_suites_violation_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[SloSpec] = []

    def spy(name: str, spec: SloSpec, **params: Any) -> Any:
        seen.append(spec)
        return build_policy(name, spec, **params)

    monkeypatch.setattr(suite, "build_policy", spy)
    plant = BY_KEY["tiny"]
    cfg = SuiteConfig.quick(duration_s=300.0, violation_budget=0.01)
    capacity = Capacity(((0.0, 3.0),))
    suite._policy_run(plant, "tally", 1, cfg, capacity, [], Goal(0.01, None))
    assert [s.violation_budget for s in seen] == [0.01]


@pytest.mark.slow
def test_the_suite_command_runs_the_seeds_and_budget_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "evaluate",
            "--suite",
            "--quick",
            "--plants",
            "tiny",
            "--seeds",
            "101,102",
            "--violation-budget",
            "10%",
            "--duration",
            "300s",
            "--doc",
            str(tmp_path / "c.md"),
            "--out",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "suite.json").read_text(encoding="utf-8"))
    assert data["seeds"] == [101, 102] and data["violation_budget"] == 0.1
    (plant,) = data["plants"]
    assert [r["seed"] for r in plant["runs"]] == [101, 102]
    assert plant["goal"]["budget"] == 0.1
    assert plant["goal"]["max_violations"] == pytest.approx(0.12)
    assert "B=10% plants=8 seeds=101,102" in (tmp_path / "c.md").read_text(encoding="utf-8")
