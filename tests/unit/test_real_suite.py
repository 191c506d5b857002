"""The real-JMeter plant suite's pure parts: plant -> ``loadguard target`` arguments, the
run's RunData from a JTL and a decision log, the clock shift and the sweep's next point."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from loadguard.durations import format_duration
from loadguard.lab.cli.target_cmd import target as target_cmd
from loadguard.lab.evaluate.lambda_star import SweepPoint
from loadguard.lab.evaluate.offered import schedule_from_decisions
from loadguard.lab.evaluate.real_data import (
    next_fraction,
    run_data,
    shift_capacity,
    shift_events,
)
from loadguard.lab.evaluate.real_plants import (
    REAL_PLANTS,
    NotReproducible,
    from_suite,
    select_real,
    target_args,
)
from loadguard.lab.evaluate.runner import read_jtl
from loadguard.lab.evaluate.suite_metrics import compute
from loadguard.lab.simulate.plants import BY_KEY
from loadguard.lab.simulate.scenario import CapacityChange
from loadguard.lab.target.distributions import parse_dist
from loadguard.lab.target.model import ENDPOINTS
from tests.unit.test_report_render import write_jtl


def parsed(args: tuple[str, ...]) -> dict[str, object]:
    """The options ``loadguard target`` itself reads from ``args``."""
    ctx = target_cmd.make_context("target", list(args))
    return dict(ctx.params)


def test_mm8_is_the_mmc_target_with_the_plants_queue_and_slo() -> None:
    p = parsed(target_args(BY_KEY["mm8"].scenario, 250.0))
    assert (p["kind"], p["workers"], p["queue"], p["service"], p["p95"]) == (
        "mmc", 8, 200, 0.05, 0.25,
    )  # fmt: skip
    assert p["changes"] == () and p["warmup"] is None and p["outage"] is None


def test_heavy_tail_gives_every_endpoint_the_plants_lognormal() -> None:
    plant = BY_KEY["heavy_tail"]
    p = parsed(target_args(plant.scenario, plant.p95_ms))
    assert p["kind"] == "shop"
    overrides = dict(spec.split("=", 1) for spec in p["endpoint_service"])  # type: ignore[attr-defined]
    assert set(overrides) == set(ENDPOINTS)
    assert {parse_dist(d) for d in overrides.values()} == {plant.scenario.service}


def test_event_plants_carry_their_mechanism_and_phases_the_healthy_variants() -> None:
    halves = from_suite(BY_KEY["halves"])
    p = parsed(halves.run_args)
    assert (p["changes"], p["workers"]) == (("120s:0.5",), 8)
    phase_workers = [parsed(ph.args)["workers"] for ph in halves.phases if ph.args]
    assert phase_workers == [8, 4]
    assert [ph.at_s for ph in halves.phases] == [0.0, 120.0]
    assert all(parsed(ph.args)["changes"] == () for ph in halves.phases if ph.args)
    assert halves.phases[0].nominal_rps > 2 * halves.phases[1].nominal_rps > 0

    outage = from_suite(BY_KEY["outage"])
    assert parsed(outage.run_args)["outage"] == "150s:20s"
    assert [ph.args is None for ph in outage.phases] == [False, True, False]
    assert outage.threads == 400 and outage.events == ((150.0, 170.0),)

    warm = from_suite(BY_KEY["warmup"])
    assert parsed(warm.run_args)["warmup"] == "3x:90s"
    assert parsed(warm.phases[0].args or ())["warmup"] is None  # λ* of the warmed plant

    cliff = from_suite(BY_KEY["cliff"])
    assert parsed(cliff.run_args)["metastable"] == "80:4:0" and cliff.has_cliff


def test_shop_uses_the_browse_plan_and_tiny_its_mean() -> None:
    shop = from_suite(BY_KEY["shop"])
    assert shop.browse_plan and parsed(shop.run_args)["kind"] == "shop"
    tiny = parsed(from_suite(BY_KEY["tiny"]).run_args)
    service = tiny["service"]
    assert isinstance(service, float) and format_duration(service) == "166.667ms"
    assert tiny["workers"] == 1 and tiny["p95"] == 1.0


def test_a_mechanism_the_target_lacks_is_reported_not_faked() -> None:
    plant = BY_KEY["halves"]
    twice = dataclasses.replace(
        plant,
        scenario=dataclasses.replace(
            plant.scenario, changes=(CapacityChange(60, 0.5), CapacityChange(120, 0.5))
        ),
    )
    with pytest.raises(NotReproducible, match="once"):
        target_args(twice.scenario, 250.0)
    real = from_suite(twice)
    assert real.not_run is not None and "once" in real.not_run and real.run_args == ()


def test_every_suite_plant_maps_and_10_is_both_teastore_layouts() -> None:
    assert [p.not_run for p in REAL_PLANTS] == [None] * len(REAL_PLANTS)
    ten = select_real(["10"])
    assert [(p.key, p.run_args) for p in ten] == [
        ("teastore", ("--layout", "single")),
        ("teastore-per-service", ("--layout", "per-service")),
    ]
    assert all(p.threads == 100 and p.p95_ms == 500.0 and p.browse_plan for p in ten)
    assert [p.key for p in select_real(["tiny,1"])] == ["mm8", "tiny"]


def _decisions(path: Path, rows: list[tuple[int, float, float, bool]]) -> Path:
    lines = ["epoch_ms,tick,old_rate,new_rate,applied"]
    for i, (ms, old, new, applied) in enumerate(rows, 1):
        lines.append(f"{ms},{i},{old:g},{new:g},{str(applied).lower()}")
    path.write_text("\n".join(lines) + "\n")
    return path


T0 = 1_700_000_000_000


def test_run_data_puts_samples_and_ticks_on_the_first_samples_clock(tmp_path: Path) -> None:
    # 40 s of one sample every 100 ms: 50 ms each, but 400 ms (and failed) in (20 s, 30 s].
    rows = []
    for k in range(400):
        start = T0 + 100 * k
        slow = 20_000 <= 100 * k < 30_000
        rows.append((start, 400 if slow else 50, "home", not slow))
    batch = read_jtl(write_jtl(tmp_path / "results.jtl", rows))
    schedule = schedule_from_decisions(
        _decisions(
            tmp_path / "decisions.csv",
            [
                (T0 - 2000, 5, 5, True),  # before the first sample: dropped
                (T0 + 2000, 5, 10, True),
                (T0 + 4000, 10, 20, False),  # not applied: 10 stays in force
                (T0 + 6000, 10, 9.5, True),
            ],
        ),
        5.0,
    )
    data = run_data(batch, schedule, 40.0)
    assert data.sent[0] == 0.0 and data.sent[-1] == pytest.approx(39.9)
    assert data.end[0] == pytest.approx(0.05) and data.duration_s == 40.0
    assert data.ok.sum() == 300
    assert data.ticks == ((2.0, 10.0), (4.0, 10.0), (6.0, 9.5))

    capacity = shift_capacity([(0.0, 10.0)], 5.0)
    m = compute(data, capacity, 250.0)
    # (30, 40] is the only window judged; samples sent in [20, 30) end in (20.4, 30.4]:
    # (30, 40] holds only 3 slow ones of its 100, so its p95 is 50 ms.
    assert m.windows == 1 and m.violations == 0.0
    assert m.errors == pytest.approx(100 / 400)
    assert m.time_to_90_s == 2.0  # 10 >= 0.9 x 10
    assert m.collapses == 1  # (20, 30]: all failed


def test_run_data_refuses_an_empty_jtl(tmp_path: Path) -> None:
    batch = read_jtl(write_jtl(tmp_path / "results.jtl", []))
    with pytest.raises(ValueError, match="no sample"):
        run_data(batch, schedule_from_decisions(_decisions(tmp_path / "d.csv", []), 5.0), 60.0)


def test_plant_time_is_shifted_to_the_runs_clock() -> None:
    cap = shift_capacity([(0.0, 144.0), (120.0, 65.0)], 4.9)
    assert cap.steps == ((0.0, 144.0), (115.1, 65.0))
    assert cap.at(115.0) == 144.0 and cap.at(116.0) == 65.0
    outage = shift_capacity([(0.0, 144.0), (150.0, 0.0), (170.0, 144.0)], 5.0)
    assert outage.steps == ((0.0, 144.0), (145.0, 0.0), (165.0, 144.0))
    assert shift_events([(150.0, 170.0)], 5.0) == ((145.0, 165.0),)


def _pt(rate: float, p95: float, err: float = 0.0) -> SweepPoint:
    return SweepPoint(rate, rate, p95, err, 1000)


def test_the_sweep_brackets_the_knee_up_or_down() -> None:
    assert next_fraction([], 250.0) == 0.8
    up = [(0.8, _pt(115, 140)), (0.95, _pt(137, 160))]
    assert next_fraction(up, 250.0) == 1.1
    assert next_fraction([*up, (1.1, _pt(158, 338))], 250.0) is None
    unbounded = [*up, (1.1, _pt(158, 200)), (1.3, _pt(180, 210))]
    assert next_fraction(unbounded, 250.0) == 1.6
    down = [(0.8, _pt(115, 900))]
    assert next_fraction(down, 250.0) == 0.6
    assert next_fraction([*down, (0.6, _pt(86, 300, 0.2))], 250.0) == 0.4
    assert next_fraction([*down, (0.6, _pt(86, 100))], 250.0) is None
    never = [(f, _pt(100 * f, 900)) for f in (0.8, 0.6, 0.4, 0.2, 0.1)]
    assert next_fraction(never, 250.0) is None


def test_a_shared_store_is_swept_from_below_to_its_first_failure() -> None:
    assert next_fraction([], 500.0, ascending=True) == 0.1
    low = [(0.1, _pt(12, 330)), (0.2, _pt(24, 420))]
    assert next_fraction(low, 500.0, ascending=True) == 0.4
    # one overload and no more: nothing is tried above or below the first failure
    assert next_fraction([*low, (0.4, _pt(41, 2100))], 500.0, ascending=True) is None
    assert next_fraction([(0.1, _pt(12, 900))], 500.0, ascending=True) is None


def test_rounds_alternate_which_policy_meets_the_shared_store_first() -> None:
    from loadguard.lab.evaluate.real_suite import run_order

    assert run_order(("tally", "threezone"), 3) == [
        (1, "tally"), (1, "threezone"),
        (2, "threezone"), (2, "tally"),
        (3, "tally"), (3, "threezone"),
    ]  # fmt: skip
    assert run_order(("knee",), 2) == [(1, "knee"), (2, "knee")]
