"""The decision value and the policy protocol (pure core).

A policy maps (observation, rate in force) to a ``Decision``. Policies may keep state, but
every internal that shaped a decision goes into ``Decision.detail`` so a run can be replayed
from its decision log. The rate passed in is always the rate actually in force (after the
guard rails), never the policy's own wish: that is what keeps integrators from winding up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from loadguard.observation import Action, Observation, Zone

__all__ = [
    "Action", "Decision", "Detail", "Policy", "Zone", "action_for", "decide", "hold",
    "same_rate",
]  # fmt: skip

Detail = Mapping[str, float | str]

#: Relative change below which a new rate counts as "the same" (HOLD). The one tolerance
#: for "has the rate in force changed?": the loop, the policies and the guards all ask
#: ``same_rate``.
RATE_EPSILON = 1e-9


def same_rate(old_rate: float, new_rate: float) -> bool:
    """``new_rate`` is ``old_rate`` within ``RATE_EPSILON`` (relative to ``old_rate``)."""
    return abs(new_rate - old_rate) <= RATE_EPSILON * abs(old_rate)


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

    def decide(self, obs: Observation, rate: float) -> Decision: ...
