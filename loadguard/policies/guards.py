r"""Guard rails: decorators that wrap any ``Policy`` and keep its decisions sane.

Each guard is a ``Guard``: itself a ``Policy`` that holds the ``inner`` policy it wraps and
answers under its ``name``, so they compose; the order ``build_policy`` uses, outermost
first, is

    Exposure > Bounds > AutoStop > StaleHold > NoDataHold > Settling > GeneratorLimited
             > NoRiseInBreach > StepLimit > policy

Guards see the rate actually in force (``Observation.commanded_rps``), never a policy's
wish, so an override never leaves a policy's state out of step with reality. Their timers (and the
policies') measure elapsed time on ``Observation.timer_ms``, the loop's monotonic clock,
so a wall-clock step neither stretches nor skips a wait.

Settling (the one that matters for control). :math:`t_c` is when the rate in force last
changed and whether it rose, both read from ``Observation.rate_change`` (recorded by the
rate's owner, ``loadguard.rate.RateInForce``, at the tick whose push the engines
acknowledged; a failed push is no change); the guard keeps no rate of its own. A rate
pushed at :math:`t_c` takes effect after the actuation lag L, and the window of length W
keyed on completion time holds only samples sent at the new rate from
:math:`t_c + L + W` on (plus the JTL flush delay, which the caller adds to
``settle_ms``). Judging a window that still mixes the old rate is the classic mistake:
after a decrease, the old rate's slow samples look like a breach at the new rate and the
controller cuts again and again. So until
:math:`t - t_c \ge T_{settle}` the guard HOLDs (reason ``settling``), with one exception:
a BREACH after an *increase* is passed through, because a window mixing the new, higher
rate with the old one can only understate the new rate's latency. A sample completing in
the window :math:`(t - W, t]` started after :math:`t - W - T_{max}` (``max_ms`` of the
window), so a backlog of slow requests sent at the old rate is waited out too: settled
when :math:`t - t_c \ge T_{settle} + \min(T_{max}, \texttt{backlog\_max\_ms})`. Requests
sent at the new rate can still queue behind that backlog: after a decrease, a BREACH window
whose achieved rate exceeds the offered one by ``drain_tolerance`` (more completions than
arrivals: the queue is draining) also holds, up to ``backlog_max_ms`` past the settle time.
A window stretched back for a low rate (``Window(stretch_to=...)``, length
:math:`W' > W`) reaches :math:`W' - W` further into the past, so the wait grows by that
much (``window_ms`` = W). Escalation: a decrease that was enough makes the window's
pressure fall as old samples leave it. A BREACH whose pressure reaches ``escalation``
times the pressure that triggered the last change (the capacity fell under us) is passed
through at once.

Generator-limited. If a window's achieved rate :math:`X` stays below
:math:`ρ_{gen}\,R` of the commanded rate R, raising R more is integrator wind-up: nothing
can deliver it. HOLD (reason ``generator_limited``) and log the threads Little's law says
the generator needs, :math:`N \ge h\,R\,\bar T` (h headroom, :math:`\bar T` the mean
response time).

No rise in a breach. A policy that judges the rate in force by what was *sent* under it
(``tally``, ``budget``) can find that rate within budget while the window the user reads,
keyed on completion, still holds an earlier rate's backlog over the SLO. Rising then
slows the drain, and the decision log would read INCREASE on a BREACH row: HOLD instead
(reason ``breach_hold``) until the window is back within the SLO.

Coordinated omission. ``Exposure`` copies offered vs achieved rate into every decision's
detail and flags ``hidden_queueing`` on a DECREASE made while the shortfall
:math:`1 - X/R` exceeds ``shortfall_flag``: the latency that triggered it excludes the time
requests waited inside the generator.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from loadguard.errors import PolicyError
from loadguard.observation import Action, Observation, Zone
from loadguard.policies.base import Decision, Policy, hold
from loadguard.rate import RateChange


@dataclass
class Guard(ABC):
    """A guard rail: a ``Policy`` that wraps ``inner``, answers under its name and adds one
    concern to its decisions (the decorator pattern of Netflix concurrency-limits, whose
    limiters wrap a delegate limiter the same way)."""

    inner: Policy

    @property
    def name(self) -> str:
        return self.inner.name

    @abstractmethod
    def decide(self, obs: Observation) -> Decision: ...


@dataclass
class Bounds(Guard):
    """Clamp every rate into ``[min_rate, max_rate]`` (reasons ``clamp_min``/``clamp_max``)."""

    min_rate: float
    max_rate: float

    def __post_init__(self) -> None:
        if not 0 < self.min_rate <= self.max_rate:
            raise PolicyError(
                f"need 0 < min_rate <= max_rate, got {self.min_rate}, {self.max_rate}"
            )

    def decide(self, obs: Observation) -> Decision:
        d = self.inner.decide(obs)
        if d.new_rate > self.max_rate:
            return d.with_rate(self.max_rate, "clamp_max")
        if d.new_rate < self.min_rate:
            return d.with_rate(self.min_rate, "clamp_min")
        return d


@dataclass
class StepLimit(Guard):
    """Limit one tick's change to ``[max_down, max_up]`` times the rate (``clamp_step``)."""

    max_up: float = 2.0
    max_down: float = 0.5

    def __post_init__(self) -> None:
        if self.max_up < 1 or not 0 < self.max_down <= 1:
            raise PolicyError("need max_step_up >= 1 and 0 < max_step_down <= 1")

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        d = self.inner.decide(obs)
        if d.new_rate > rate * self.max_up:
            return d.with_rate(rate * self.max_up, "clamp_step")
        if d.new_rate < rate * self.max_down:
            return d.with_rate(rate * self.max_down, "clamp_step")
        return d


@dataclass
class NoDataHold(Guard):
    """Too few samples in the window: HOLD (reason ``no_data``); the policy is not asked."""

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        if obs.zone is Zone.NO_DATA:
            return hold(obs, rate, "no_data", samples=float(obs.stats.overall.count))
        return self.inner.decide(obs)


@dataclass
class Settling(Guard):
    """HOLD until a full window holds only samples sent at the rate in force."""

    settle_ms: int
    backlog_max_ms: int = 10_000
    drain_tolerance: float = 0.1
    escalation: float = 3.0
    early_near: bool = False
    window_ms: int = 0
    _prev_pressure: float = field(default=0.0, init=False)
    _change_pressure: float = field(default=0.0, init=False)
    _change: RateChange | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.settle_ms < 0 or self.backlog_max_ms < 0:
            raise PolicyError(f"settle_ms must be >= 0, got {self.settle_ms}")

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        change = obs.rate_change
        if change is not None and change != self._change:
            # A new change, pushed on the previous tick's decision: its pressure is the
            # one an escalating breach is measured against.
            self._change, self._change_pressure = change, self._prev_pressure
        self._prev_pressure = obs.pressure or 0.0
        if change is None:  # the start rate: in force from the first sample on
            return self.inner.decide(obs)
        since = change.since_ms(obs.timer_ms)
        # A sample in the window (now - W, now] started after now - W - max elapsed; wait
        # until that is after the change took effect (bounded by backlog_max_ms).
        backlog = min(float(self.backlog_max_ms), obs.stats.overall.max_ms or 0.0)
        # A window stretched for a low rate reaches further back by the stretch.
        stretch = max(0, obs.stats.window_ms - self.window_ms) if self.window_ms else 0
        wait = self.settle_ms + backlog + stretch
        if since < wait:
            early = ""
            if obs.zone is Zone.BREACH and change.rose:
                early = "breach_after_increase"
            elif obs.zone is Zone.NEAR and change.rose and self.early_near:
                early = "near_after_increase"
            elif (
                obs.zone is Zone.BREACH
                and (obs.pressure or 0.0) >= (self.escalation * self._change_pressure) > 0
            ):
                early = "breach_escalating"
            if early:
                d = self.inner.decide(obs)
                if d.action is not Action.INCREASE:  # early judging may only lower the rate
                    return d.with_detail(settling=early)
            return hold(obs, rate, "settling", settle_left_ms=float(wait - since))
        draining = obs.achieved_rps > (1.0 + self.drain_tolerance) * obs.commanded_rps
        if (
            draining
            and not change.rose
            and obs.zone is Zone.BREACH
            and since < self.settle_ms + self.backlog_max_ms
        ):
            # More completions than arrivals: a queue built at the old rate still drains.
            return hold(obs, rate, "settling", draining_rps=obs.achieved_rps - obs.commanded_rps)
        return self.inner.decide(obs)


@dataclass
class StaleHold(Guard):
    """No new sample for ``stale_ms``: HOLD (``stale``); for ``floor_after_ms`` more: go to
    ``floor_rate`` (``stale``, a DECREASE) and stay there while stale.

    Before the first sample ever, staleness counts from the first tick less
    ``startup_grace_ms``: JMeter's JVM start and Groovy compile took up to ~15 s on a
    loaded 2-core host, and cutting the rate before the test has begun helps no one. A test
    that never produces a sample (target frozen from the start) is still floored."""

    stale_ms: int
    floor_after_ms: int
    floor_rate: float
    startup_grace_ms: int = 30_000
    _first_now: int | None = field(default=None, init=False)

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        if self._first_now is None:
            self._first_now = obs.timer_ms
        staleness = obs.staleness_ms
        if staleness is None:  # nothing seen since the start
            staleness = max(0, obs.timer_ms - self._first_now - self.startup_grace_ms)
        if staleness <= self.stale_ms:
            return self.inner.decide(obs)
        if staleness <= self.stale_ms + self.floor_after_ms or rate <= self.floor_rate:
            return hold(obs, rate, "stale", staleness_ms=float(staleness))
        d = hold(obs, rate, "stale", staleness_ms=float(staleness))
        return d.with_rate(self.floor_rate, "stale")


@dataclass
class GeneratorLimited(Guard):
    """Do not raise a rate the generator is not delivering (reason ``generator_limited``)."""

    ratio: float = 0.8
    headroom: float = 1.2
    _first_ms: int | None = field(default=None, init=False)

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        d = self.inner.decide(obs)
        if self._first_ms is None:
            self._first_ms = obs.timer_ms
        if d.action is not Action.INCREASE or obs.timer_ms - self._first_ms < obs.stats.window_ms:
            return d  # (the first window is partial: its rate says nothing)
        # Poisson slack: a window expecting n samples scatters by sqrt(n).
        expected = rate * obs.stats.window_ms / 1000.0
        slack = 3.0 / math.sqrt(expected) if expected > 0 else 1.0
        if obs.achieved_rps >= (self.ratio - slack) * rate:
            return d
        mean_ms = obs.stats.overall.mean_ms or 0.0
        threads = max(1, math.ceil(self.headroom * rate * mean_ms / 1000.0))
        return d.with_rate(
            rate,
            "generator_limited",
            achieved_rps=obs.achieved_rps,
            threads_needed=float(threads),
        )


@dataclass
class NoRiseInBreach(Guard):
    """No INCREASE while the window is over the SLO (reason ``breach_hold``)."""

    def decide(self, obs: Observation) -> Decision:
        d = self.inner.decide(obs)
        if d.action is Action.INCREASE and obs.zone is Zone.BREACH:
            return d.with_rate(obs.commanded_rps, "breach_hold")
        return d


@dataclass
class AutoStop(Guard):
    """STOP after BREACH has lasted ``windows`` full windows (like the AutoStop plugin).

    A window too thin to judge (NO_DATA: fewer than ``min_samples``, as at the floor rate
    after the cuts) is no evidence of recovery, so it does not end a breach unless
    ``sparse_zone`` -- the same SLO judged on however few samples there are -- says its
    samples meet the SLO. An empty window (nothing completes: a hung target) does not end
    it either. Without ``sparse_zone`` NO_DATA ends the breach, as SAFE does."""

    windows: int
    window_ms: int
    sparse_zone: Callable[[Observation], Zone] | None = None
    _since: int | None = field(default=None, init=False)

    def _breach_goes_on(self, obs: Observation) -> bool:
        if obs.zone is Zone.BREACH:
            return True
        if obs.zone is not Zone.NO_DATA or self._since is None or self.sparse_zone is None:
            return False
        return self.sparse_zone(obs) in (Zone.BREACH, Zone.NO_DATA)

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        d = self.inner.decide(obs)
        if not self._breach_goes_on(obs):
            self._since = None
            return d
        if self._since is None:
            self._since = obs.timer_ms
        lasted = obs.timer_ms - self._since
        if lasted >= self.windows * self.window_ms:
            return Decision(
                Action.STOP, rate, rate, obs.zone, "auto_stop", obs,
                {"breach_ms": float(lasted), "inner_reason": d.reason},
            )  # fmt: skip
        return d


@dataclass
class Exposure(Guard):
    """Copy offered vs achieved into every decision; flag a DECREASE that hides queueing."""

    shortfall_flag: float = 0.1

    def decide(self, obs: Observation) -> Decision:
        d = self.inner.decide(obs)
        extra: dict[str, float | str] = {
            "offered_rps": obs.offered_rps,
            "achieved_rps": obs.achieved_rps,
            "shortfall": round(obs.shortfall, 6),
        }
        if d.action is Action.DECREASE and obs.shortfall > self.shortfall_flag:
            extra["hidden_queueing"] = "true"
        return d.with_detail(**extra)
