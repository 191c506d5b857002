r"""Capacity search: find the max SLO-compliant rate, with evidence, then hold there.

A rate is *compliant* when ``windows`` consecutive full windows at it hold no BREACH
(windows judged ``window_ms`` apart, so they do not overlap); one BREACH makes it
*breaching* at once. With :math:`r_{lo}` the highest compliant rate seen and
:math:`r_{hi}` the lowest breaching one:

1. **ramp**: :math:`r \leftarrow ρ\, r` while compliant (ρ = ``ramp_factor``);
2. **bisect** geometrically, :math:`r \leftarrow \sqrt{r_{lo}\, r_{hi}}`, until
   :math:`r_{hi} / r_{lo} - 1 \le` ``tolerance``; with no compliant rate yet, back off
   :math:`r \leftarrow β\, r`;
3. **hold** at :math:`r_{lo}`; every ``probe_every_ms`` of compliant holding, probe
   :math:`(1 + ``tolerance``)\, r_{lo}`; a compliant probe raises :math:`r_{lo}`. A BREACH
   while holding means the capacity fell: :math:`r_{hi} \leftarrow r`, forget
   :math:`r_{lo}` and back off (step 2).

The result is ``max_compliant_rps`` = :math:`r_{lo}` with its evidence: the number of
windows observed there and their largest p95.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from loadguard.errors import PolicyError
from loadguard.observation import Observation, Zone
from loadguard.policies.base import Decision, decide, hold, same_rate
from loadguard.rate import RateChange


@dataclass
class SearchPolicy:
    window_ms: int = 10_000
    ramp_factor: float = 2.0
    backoff: float = 0.6
    tolerance: float = 0.05
    windows: int = 2
    probe_every_ms: int = 60_000
    name: str = "search"
    phase: str = field(default="ramp", init=False)
    lo: float | None = field(default=None, init=False)
    hi: float | None = field(default=None, init=False)
    evidence_windows: int = field(default=0, init=False)
    evidence_p95_ms: float = field(default=0.0, init=False)
    _change: RateChange | None = field(default=None, init=False)
    _judged: int = field(default=0, init=False)
    _last_judged_ms: int | None = field(default=None, init=False)
    _worst_p95: float = field(default=0.0, init=False)
    _holding_since: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.ramp_factor <= 1 or not 0 < self.backoff < 1:
            raise PolicyError("search needs ramp_factor > 1 and 0 < backoff < 1")
        if self.tolerance <= 0 or self.windows < 1 or self.window_ms < 1:
            raise PolicyError("search needs tolerance > 0, windows >= 1, window_ms >= 1")

    @property
    def max_compliant_rps(self) -> float | None:
        return self.lo

    def _detail(self) -> dict[str, float | str]:
        detail: dict[str, float | str] = {"phase": self.phase}
        if self.lo is not None:
            detail["max_compliant_rps"] = self.lo
            detail["evidence_windows"] = float(self.evidence_windows)
            detail["evidence_p95_ms"] = self.evidence_p95_ms
        if self.hi is not None:
            detail["lowest_breaching_rps"] = self.hi
        return detail

    def _move(self, obs: Observation, rate: float, new: float, reason: str) -> Decision:
        self._judged, self._last_judged_ms, self._worst_p95 = 0, None, 0.0
        return decide(obs, rate, new, reason, **self._detail())

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        if obs.rate_change != self._change:
            # A new rate in force (ours, or set by a guard): start judging it afresh.
            self._change = obs.rate_change
            self._judged, self._last_judged_ms, self._worst_p95 = 0, None, 0.0
        if obs.zone is Zone.NO_DATA:
            return hold(obs, rate, "no_data", **self._detail())
        if obs.zone is Zone.BREACH:
            return self._breaching(obs, rate)
        if (
            self._last_judged_ms is not None
            and obs.timer_ms - self._last_judged_ms < self.window_ms
        ):
            return hold(obs, rate, "observing", **self._detail())
        self._last_judged_ms = obs.timer_ms
        self._judged += 1
        self._worst_p95 = max(self._worst_p95, obs.stats.overall.p95_ms or 0.0)
        if self._judged < self.windows:
            return hold(obs, rate, "observing", **self._detail())
        return self._compliant(obs, rate)

    def _compliant(self, obs: Observation, rate: float) -> Decision:
        if self.lo is None or rate >= self.lo:
            if self.lo is not None and same_rate(self.lo, rate):
                self.evidence_windows += 1
                self.evidence_p95_ms = max(self.evidence_p95_ms, obs.stats.overall.p95_ms or 0.0)
            else:
                self.lo = rate
                self.evidence_windows = self._judged
                self.evidence_p95_ms = self._worst_p95
                if self.hi is not None and self.lo >= self.hi:
                    self.hi = None  # an old breach point the system has since outgrown
        if self.phase == "ramp":
            return self._move(obs, rate, rate * self.ramp_factor, "safe")
        if self.phase == "bisect":
            return self._next_bisect(obs, rate)
        # hold: at lo; probe now and then.
        if self._holding_since is None:
            self._holding_since = obs.timer_ms
        if obs.timer_ms - self._holding_since >= self.probe_every_ms:
            self._holding_since = None
            return self._move(obs, rate, rate * (1.0 + self.tolerance), "probe")
        if not same_rate(self.lo or rate, rate):
            return self._move(obs, rate, self.lo or rate, "hold")
        return hold(obs, rate, "hold", **self._detail())

    def _breaching(self, obs: Observation, rate: float) -> Decision:
        if self.phase == "hold" and self.lo is not None and rate <= self.lo * (1 + 1e-9):
            self.lo = None  # the capacity fell below what we had found
        self.hi = rate if self.hi is None or rate < self.hi else self.hi
        if self.lo is not None and self.lo >= self.hi:
            self.lo = None
        self.phase = "bisect"
        self._holding_since = None
        return self._next_bisect(obs, rate, "breach")

    def _next_bisect(self, obs: Observation, rate: float, reason: str = "safe") -> Decision:
        if self.lo is None:
            return self._move(obs, rate, rate * self.backoff, reason)
        if self.hi is None:
            return self._move(obs, rate, rate * self.ramp_factor, reason)
        if self.hi / self.lo - 1.0 <= self.tolerance:
            self.phase = "hold"
            self._holding_since = obs.timer_ms
            if same_rate(self.lo, rate):
                return hold(obs, rate, "hold", **self._detail())
            return self._move(obs, rate, self.lo, "hold" if reason == "safe" else reason)
        return self._move(obs, rate, math.sqrt(self.lo * self.hi), reason)
