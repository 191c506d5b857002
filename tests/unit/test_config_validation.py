"""Validation lives in the library: configs refuse bad values with domain errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadguard.actuator.engines import Engine
from loadguard.errors import PolicyError, SimulationError, UsageError
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
    ("kw", "error", "needle"),
    [
        ({"tick_ms": 50}, UsageError, "--tick"),
        ({"initial_rate": 0.0}, UsageError, "--initial-rate"),
        ({"auto_stop": 0}, UsageError, "--auto-stop"),
        ({"lag_ms": -1}, UsageError, "--actuation-lag"),
        ({"idle_exit_ms": 0}, UsageError, "--idle-exit"),
        ({"duration_ms": 0}, UsageError, "--duration"),
        ({"policy_params": {"lag_ms": "500"}}, UsageError, "--actuation-lag"),
        ({"engine_max_rate": 10.0}, UsageError, "needs --remote"),
        (
            {"remotes": tuple(parse_remotes(("h1:1099,h2:1099",))),
             "engines": (Engine.parse("h1:9001"),)},
            UsageError, "2 --remote engine(s) but 1 --engine",
        ),
    ],
)  # fmt: skip
def test_a_bad_config_raises_a_domain_error(
    kw: dict[str, object], error: type, needle: str
) -> None:
    with pytest.raises(error) as info:
        _config(**kw)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_param_refuses_a_knob_that_has_its_own_option() -> None:
    with pytest.raises(PolicyError, match="--actuation-lag"):
        parse_params(["lag_ms=500"])
    assert parse_params(["step=5"]) == {"step": "5"}


def test_the_target_changes_capacity_once() -> None:
    assert one_change(()) is None
    change = one_change(("120s:0.5",))
    assert change is not None and (change.at_s, change.factor) == (120.0, 0.5)
    with pytest.raises(SimulationError, match="once"):
        one_change(("10s:0.5", "20s:2"))
