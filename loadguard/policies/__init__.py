"""Policies and the factory the sidecar and the simulator both use.

``build_policy(name, spec, **params)`` returns the named policy wrapped in the guard
rails (``loadguard.policies.guards``), outermost first::

    Exposure > Bounds > AutoStop > StaleHold > NoDataHold > Settling > GeneratorLimited
             > NoRiseInBreach > StepLimit > policy

Guard knobs (all optional; times in ms):

=====================  =======================================  ==========================
knob                   meaning                                  default
=====================  =======================================  ==========================
lag_ms                 actuation lag (push -> new rate)         2000
flush_ms               JTL flush delay                          0
settle_ms              wait after a change before judging       lag + window + flush
max_step_up            largest rise per tick (x)                2.0
max_step_down          largest cut per tick (x)                 0.5
stale_ms               no new sample for this long: HOLD        2 x window
stale_floor_after_ms   ... and this much longer: floor rate     2 x window
auto_stop              STOP after BREACH for N windows          None (off)
generator_ratio        achieved < ratio x commanded: no raise   0.8
thread_headroom        Little's-law headroom for threads_needed 1.2
early_near             judge NEAR right after an increase       the policy's choice
=====================  =======================================  ==========================

Every other keyword is a parameter of the policy itself (see each module's docstring).
Values may be strings (from ``--param k=v``); they are converted to the parameter's type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from loadguard.errors import PolicyError
from loadguard.policies.aimd import AimdPolicy
from loadguard.policies.base import Decision, Policy
from loadguard.policies.budget import BudgetPolicy
from loadguard.policies.fixed import FixedPolicy
from loadguard.policies.guards import (
    AutoStop,
    Bounds,
    Exposure,
    GeneratorLimited,
    NoDataHold,
    NoRiseInBreach,
    Settling,
    StaleHold,
    StepLimit,
)
from loadguard.policies.tally import TallyPolicy
from loadguard.policies.threezone import ThreeZonePolicy
from loadguard.slo import SloSpec

__all__ = [
    "DEFAULT_POLICY", "GUARD_DEFAULTS", "POLICIES", "Decision", "Policy", "build_policy",
    "parse_params",
]  # fmt: skip

POLICIES: dict[str, Callable[..., Policy]] = {
    "threezone": ThreeZonePolicy,
    "aimd": AimdPolicy,
    "fixed": FixedPolicy,
    "budget": BudgetPolicy,
    "tally": TallyPolicy,
}

#: The policy every entry point uses unless told otherwise (docs/controller.md, "The plant
#: suite": it meets the suite's goal on more suite runs than the others, and keeps the
#: violation budget the user sets; ``knee``, ``gradient`` and ``search``, which it beat on
#: every plant, were removed).
DEFAULT_POLICY = "tally"

#: Default actuation lag until the sidecar passes the Elastic Timer's measured one.
DEFAULT_LAG_MS = 2000

GUARD_DEFAULTS: dict[str, float | None] = {
    "lag_ms": DEFAULT_LAG_MS,
    "flush_ms": 0,
    "settle_ms": None,
    "max_step_up": 2.0,
    "max_step_down": 0.5,
    "stale_ms": None,
    "stale_floor_after_ms": None,
    "auto_stop": None,
    "generator_ratio": 0.8,
    "thread_headroom": 1.2,
    "early_near": None,
}


#: Guard knobs that have a setting of their own, so the policy parameters refuse them.
OPTION_KNOBS = frozenset({"lag_ms"})


def parse_params(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``["step=5", "step_mode=mul"]`` -> ``{"step": "5", "step_mode": "mul"}``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PolicyError(f"bad policy parameter {item!r}: expected KEY=VALUE")
        if key.strip() in OPTION_KNOBS:
            raise PolicyError(
                "has a setting of its own: one name per knob",
                setting=f"policy_params.{key.strip()}",
            )
        out[key.strip()] = value.strip()
    return out


def _convert(policy: str, key: str, value: Any, kind: type | str) -> Any:
    if not isinstance(value, str):
        return value
    kind_name = kind if isinstance(kind, str) else kind.__name__
    if kind_name.endswith(" | None"):
        if value.strip().lower() == "none":
            return None
        kind_name = kind_name.removesuffix(" | None")
    try:
        if kind_name == "bool":
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes")
        if kind_name == "int":
            return int(value)
        if kind_name == "float":
            return float(value)
    except ValueError:
        raise PolicyError(
            f"{policy} parameter {key}: expected {kind_name}, got {value!r}"
        ) from None
    return value


def _number(key: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise PolicyError(f"guard knob {key}: expected a number, got {value!r}") from None


def build_policy(name: str, spec: SloSpec, **params: Any) -> Policy:
    """The named policy, wrapped in every guard rail, ready for ``decide(obs)``."""
    if name not in POLICIES:
        raise PolicyError(f"unknown policy {name!r} (known: {', '.join(sorted(POLICIES))})")
    knobs: dict[str, Any] = dict(GUARD_DEFAULTS)
    own: dict[str, Any] = {}
    for key, value in params.items():
        if key in GUARD_DEFAULTS:
            knobs[key] = None if value is None else _number(key, value)
        else:
            own[key] = value
    factory = POLICIES[name]
    fields: Mapping[str, dataclasses.Field[Any]] = {
        f.name: f
        for f in dataclasses.fields(factory)  # type: ignore[arg-type]
        if f.init and f.name != "name"
    }
    if name in ("budget", "tally"):
        own.setdefault("window_ms", spec.window_ms)
    if name in ("budget", "tally"):
        own.setdefault("budget", spec.violation_budget)
        own.setdefault("min_samples", spec.min_samples)
        own.setdefault("lag_ms", round(knobs["lag_ms"]))
    for key in own:
        if key not in fields:
            known = ", ".join([*fields, *GUARD_DEFAULTS])
            raise PolicyError(f"unknown parameter {key!r} for policy {name} (known: {known})")
    converted = {k: _convert(name, k, v, fields[k].type) for k, v in own.items()}
    policy: Policy = factory(**converted)
    by_send_time = bool(getattr(policy, "judges_by_send_time", False))

    if knobs["early_near"] is None:
        knobs["early_near"] = getattr(policy, "judges_near_early", False)
    window = spec.window_ms
    settle = knobs["settle_ms"]
    if settle is None:
        settle = knobs["lag_ms"] + window + knobs["flush_ms"]
    stale = knobs["stale_ms"] if knobs["stale_ms"] is not None else 2 * window
    floor_after = (
        knobs["stale_floor_after_ms"] if knobs["stale_floor_after_ms"] is not None else 2 * window
    )
    policy = StepLimit(policy, knobs["max_step_up"], knobs["max_step_down"])
    policy = NoRiseInBreach(policy)
    policy = GeneratorLimited(policy, knobs["generator_ratio"], knobs["thread_headroom"])
    if not by_send_time:
        policy = Settling(
            policy, round(settle), early_near=bool(knobs["early_near"]), window_ms=window
        )
    policy = NoDataHold(policy)
    policy = StaleHold(policy, round(stale), round(floor_after), spec.min_rate)
    if knobs["auto_stop"]:
        sparse = dataclasses.replace(spec, min_samples=1)
        policy = AutoStop(
            policy,
            round(knobs["auto_stop"]),
            window,
            sparse_zone=lambda o: sparse.evaluate(o.stats, o.wall_ms, o.commanded_rps).zone,
        )
    policy = Bounds(policy, spec.min_rate, spec.max_rate)
    return Exposure(policy)
