"""The decision value and the policy protocol (pure core).

A policy maps (observation, rate in force) to a ``Decision``. Policies may keep state, but
every internal that shaped a decision goes into ``Decision.detail`` so a run can be replayed
from its decision log. The rate passed in is always the rate actually in force (after the
guard rails), never the policy's own wish: that is what keeps integrators from winding up.

The rate in force has one owner, ``loadguard.rate.RateInForce``, kept by the caller (the
loop, the simulator). It passes the value as ``rate`` and its last change as
``obs.rate_change`` (when, which way); a policy that resets on a new rate compares that
change with the one it last saw, never a rate of its own. ``same_rate`` (re-exported from
``loadguard.rate``) is the one tolerance for "the same rate".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from loadguard.observation import Action, Observation, Zone
from loadguard.rate import RATE_EPSILON, same_rate

__all__ = [
    "Action", "Decision", "Detail", "Policy", "Zone", "action_for", "decide", "hold",
    "same_rate",
]  # fmt: skip

Detail = Mapping[str, float | str]


@dataclass(frozen=True)
class Decision:
    action: Action
    old_rate: float
    new_rate: float
    zone: Zone
    reason: str
    observation: Observation
    detail: Detail = field(default_factory=dict)

    def with_rate(self, new_rate: float, reason: str, **detail: float | str) -> Decision:
        """The same decision moved to ``new_rate`` (action recomputed), reason replaced;
        the previous reason is kept in ``detail["inner_reason"]``."""
        merged: dict[str, float | str] = dict(self.detail)
        merged.setdefault("inner_reason", self.reason)
        merged.update(detail)
        action = Action.STOP if self.action is Action.STOP else action_for(self.old_rate, new_rate)
        return replace(self, action=action, new_rate=new_rate, reason=reason, detail=merged)

    def with_detail(self, **detail: float | str) -> Decision:
        merged: dict[str, float | str] = dict(self.detail)
        merged.update(detail)
        return replace(self, detail=merged)


def action_for(old_rate: float, new_rate: float) -> Action:
    if new_rate > old_rate * (1.0 + RATE_EPSILON):
        return Action.INCREASE
    if new_rate < old_rate * (1.0 - RATE_EPSILON):
        return Action.DECREASE
    return Action.HOLD


def decide(
    obs: Observation, old_rate: float, new_rate: float, reason: str, **detail: float | str
) -> Decision:
    """A decision whose action follows from old vs new rate."""
    return Decision(
        action_for(old_rate, new_rate), old_rate, new_rate, obs.zone, reason, obs, detail
    )


def hold(obs: Observation, rate: float, reason: str, **detail: float | str) -> Decision:
    return Decision(Action.HOLD, rate, rate, obs.zone, reason, obs, detail)


class Policy(Protocol):
    @property
    def name(self) -> str: ...

    def decide(self, obs: Observation) -> Decision:
        """Decide from the observation alone: the rate in force is ``obs.commanded_rps``."""
        ...
