"""SloSpec: parsing from options and TOML, one-line errors, zones and pressure."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadguard.errors import SloSpecError
from loadguard.observation import Zone
from loadguard.slo import SloSpec, parse_duration_ms, parse_percent, parse_rate_rps
from loadguard.stats import LabelStats, WindowStats


def stats(
    count: int = 100,
    p95: float | None = 100.0,
    error_rate: float = 0.0,
    mean: float | None = 50.0,
    labels: dict[str, LabelStats] | None = None,
    newest: int | None = 9_000,
) -> WindowStats:
    overall = LabelStats(count, count / 10, count / 10, error_rate, mean, mean, p95, p95, p95, p95)
    return WindowStats(10_000, 10_000, overall, labels or {}, 0, newest)


def label(count: int, p95: float) -> LabelStats:
    return LabelStats(count, count / 10, count / 10, 0.0, p95, p95, p95, p95, p95, p95)


@pytest.mark.parametrize(
    ("text", "ms"), [("250ms", 250.0), ("1s", 1000.0), ("1.5s", 1500.0), (" 20 ms", 20.0)]
)
def test_duration_units(text: str, ms: float) -> None:
    assert parse_duration_ms("p95", text) == ms


@pytest.mark.parametrize(("text", "fraction"), [("1%", 0.01), ("0%", 0.0), ("100%", 1.0)])
def test_percent_units(text: str, fraction: float) -> None:
    assert parse_percent("error_rate", text) == fraction


@pytest.mark.parametrize(("value", "rps"), [(5, 5.0), ("5/s", 5.0), ("600/min", 10.0), (2.5, 2.5)])
def test_rate_units(value: object, rps: float) -> None:
    assert parse_rate_rps("max_rate", value) == rps


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"p95": "250"}, "p95: missing unit"),
        ({"p95": "-5ms"}, "p95: negative"),
        ({"error_rate": "150%"}, "error_rate: percentage over 100"),
        ({"error_rate": "0.01"}, "error_rate: missing unit"),
        ({"p95": "fast"}, "p95: bad duration"),
        ({"p95": "250ms", "warn_margin": "0%"}, "warn_margin"),
        ({"p95": "250ms", "min_rate": "0"}, "min_rate: rate must be > 0"),
        ({"p95": "250ms", "min_rate": "10", "max_rate": "5"}, "min_rate/max_rate"),
        ({"p95": "250ms", "min_samples": "-3"}, "min_samples"),
        ({}, "no SLO given"),
    ],
)
def test_bad_option_is_a_one_line_error_naming_the_key(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(SloSpecError, match=message) as info:
        SloSpec.from_options(**options)
    assert "\n" not in info.value.message


def test_unknown_toml_key_is_named(tmp_path: Path) -> None:
    path = tmp_path / "loadguard.toml"
    path.write_text('[slo]\np95 = "250ms"\np96 = "1s"\n')
    with pytest.raises(SloSpecError, match="unknown key 'p96'"):
        SloSpec.load(path)


def test_toml_file_with_labels_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "loadguard.toml"
    path.write_text(
        "[run]\nanything = 1\n"
        '[slo]\np95 = "250ms"\nerror_rate = "1%"\nwarn_margin = "90%"\nmin_samples = 5\n'
        'window = "5s"\nmin_rate = 2\nmax_rate = "6000/min"\n'
        '[[slo.label]]\npattern = "^/cart"\np95 = "400ms"\n'
    )
    spec = SloSpec.load(path)
    assert spec.threshold("p95_ms") == 250.0
    assert spec.threshold("error_rate") == 0.01
    assert (spec.warn_margin, spec.min_samples, spec.window_ms) == (0.9, 5, 5000)
    assert (spec.min_rate, spec.max_rate) == (2.0, 100.0)
    assert spec.labels[0].pattern == "^/cart"
    assert spec.labels[0].thresholds[0].limit == 400.0


def test_options_override_the_file(tmp_path: Path) -> None:
    path = tmp_path / "loadguard.toml"
    path.write_text('[slo]\np95 = "250ms"\nerror_rate = "1%"\n')
    spec = SloSpec.load(path, p95="300ms", error_rate=None)
    assert spec.threshold("p95_ms") == 300.0
    assert spec.threshold("error_rate") == 0.01


def test_missing_slo_table_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "loadguard.toml"
    path.write_text("[run]\nx = 1\n")
    with pytest.raises(SloSpecError, match=r"no \[slo\] table"):
        SloSpec.load(path)


SPEC = SloSpec.from_options(p95="200ms", error_rate="1%", min_samples="10")


@pytest.mark.parametrize(
    ("window", "zone", "breaches", "near"),
    [
        (stats(p95=100.0), Zone.SAFE, (), ()),
        (stats(p95=170.0), Zone.NEAR, (), ("p95_ms",)),
        (stats(p95=200.0), Zone.NEAR, (), ("p95_ms",)),  # on the threshold is compliant
        (stats(p95=201.0), Zone.BREACH, ("p95_ms",), ()),
        (stats(error_rate=0.02), Zone.BREACH, ("error_rate",), ()),
        (stats(count=9), Zone.NO_DATA, (), ()),
    ],
)
def test_zone_of_a_window(
    window: WindowStats, zone: Zone, breaches: tuple[str, ...], near: tuple[str, ...]
) -> None:
    obs = SPEC.evaluate(window, 10_000, 20.0)
    assert (obs.zone, obs.breaches, obs.near) == (zone, breaches, near)


def test_label_rule_breach_is_named() -> None:
    spec = SloSpec.from_mapping(
        {"p95": "500ms", "min_samples": 10, "label": [{"pattern": "cart", "p95": "100ms"}]}
    )
    window = stats(p95=150.0, labels={"/cart": label(20, 150.0), "/home": label(20, 150.0)})
    obs = spec.evaluate(window, 10_000, 1.0)
    assert obs.zone is Zone.BREACH
    assert obs.breaches == ("label=/cart:p95_ms",)


def test_label_with_too_few_samples_is_not_judged() -> None:
    spec = SloSpec.from_mapping(
        {"p95": "500ms", "min_samples": 10, "label": [{"pattern": "cart", "p95": "100ms"}]}
    )
    window = stats(p95=150.0, labels={"/cart": label(3, 900.0)})
    assert spec.evaluate(window, 10_000, 1.0).zone is Zone.SAFE


def test_pressure_is_the_worst_ratio() -> None:
    obs = SPEC.evaluate(stats(p95=150.0, error_rate=0.005), 10_000, 1.0)
    assert obs.pressure == pytest.approx(0.75)


def test_staleness_and_offered_vs_achieved() -> None:
    obs = SPEC.evaluate(stats(count=100, newest=7_500), 10_000, 20.0)
    assert obs.staleness_ms == 2_500
    assert (obs.offered_rps, obs.achieved_rps) == (20.0, 10.0)
    assert obs.shortfall == pytest.approx(0.5)


def test_log_thresholds_for_the_decision_log() -> None:
    assert SPEC.thresholds() == {
        "p95_ms": 200.0,
        "p99_ms": None,
        "mean_ms": None,
        "error_rate": 0.01,
    }


def test_violation_budget_defaults_to_five_percent() -> None:
    assert SloSpec.from_options(p95="250ms").violation_budget == 0.05


def test_violation_budget_is_read_from_the_toml_table(tmp_path: Path) -> None:
    path = tmp_path / "lg.toml"
    path.write_text('[slo]\np95 = "250ms"\nviolation_budget = "1%"\n')
    assert SloSpec.load(path).violation_budget == 0.01
    assert SloSpec.load(path, violation_budget="10%").violation_budget == 0.10


@pytest.mark.parametrize("text", ["0%", "100%"])
def test_violation_budget_outside_the_open_interval_is_refused(text: str) -> None:
    with pytest.raises(SloSpecError, match="violation_budget"):
        SloSpec.from_options(p95="250ms", violation_budget=text)
