"""Validation lives in the library: configs refuse bad values with domain errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadguard.actuator.engines import Engine
from loadguard.errors import ConfigError, PolicyError, SimulationError, UsageError
from loadguard.jmeter.remote import parse_remotes
from loadguard.lab.simulate.scenario import one_change
from loadguard.policies import parse_params
from loadguard.sidecar import Paths, SidecarConfig
from loadguard.slo import SloSpec

SPEC = SloSpec.from_options(p95="300ms")


def _config(**kw: object) -> SidecarConfig:
    return SidecarConfig(paths=Paths.in_dir(Path("out")), spec=SPEC, **kw)  # type: ignore[arg-type]


def test_a_good_config_passes() -> None:
    assert _config(tick_ms=100, initial_rate=1.0, auto_stop=1).tick_ms == 100


@pytest.mark.parametrize(
    ("kw", "setting", "needle"),
    [
        ({"tick_ms": 50}, "tick_ms", "at least 100ms, got 50ms"),
        ({"initial_rate": 0.0}, "initial_rate", "must be > 0"),
        ({"auto_stop": 0}, "auto_stop", "got 0"),
        ({"lag_ms": -1}, "lag_ms", "must be >= 0"),
        ({"idle_exit_ms": 0}, "idle_exit_ms", "must be > 0"),
        ({"duration_ms": 0}, "duration_ms", "must be > 0"),
        ({"policy_params": {"lag_ms": "500"}}, "policy_params.lag_ms", "not a policy parameter"),
        ({"engine_max_rate": 10.0}, "engine_max_rate.remotes", "needs remote engines"),
        (
            {"remotes": tuple(parse_remotes(("h1:1099,h2:1099",))),
             "engines": (Engine.parse("h1:9001"),)},
            "remotes", "2 remote engine(s) but 1 BeanShell engine port(s)",
        ),
    ],
)  # fmt: skip
def test_a_bad_config_raises_a_config_error_naming_the_field_not_a_flag(
    kw: dict[str, object], setting: str, needle: str
) -> None:
    with pytest.raises(ConfigError) as info:
        _config(**kw)
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2
    assert info.value.setting == setting
    message = str(info.value)
    assert needle in message
    assert "\n" not in message and "--" not in message  # flags are the CLI's to name


def test_param_refuses_a_knob_that_has_its_own_option() -> None:
    with pytest.raises(PolicyError, match="has a setting of its own") as refused:
        parse_params(["lag_ms=500"])
    assert refused.value.setting == "policy_params.lag_ms"  # the CLI: --actuation-lag
    assert parse_params(["step=5"]) == {"step": "5"}


def test_the_target_changes_capacity_once() -> None:
    assert one_change(()) is None
    change = one_change(("120s:0.5",))
    assert change is not None and (change.at_s, change.factor) == (120.0, 0.5)
    with pytest.raises(SimulationError, match="once"):
        one_change(("10s:0.5", "20s:2"))
