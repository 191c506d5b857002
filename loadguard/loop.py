"""The tick loop: the one place that composes the pipeline.

One tick::

    source.poll() -> Window.add -> Window.stats(wall) -> SloSpec.evaluate
        -> Policy.decide (guard rails included) -> Actuator.push (when needed)
        -> decision log, summary, console

The sidecar (``sidecar.drive``, for ``attach``, ``run`` and ``run --remote``) drives it
with a wall clock, a JTL follower and a BeanShell actuator (``EngineSet``, or
``FleetActuator`` for a distributed test); tests drive it with a fake clock and fakes.
The actuator is the only way a rate reaches the engines, and only the loop pushes
through it. The loop never raises for a failed push or a bad row: those are logged
(``applied=false``, ``malformed_rows``) and the loop goes on. Only an unwritable decision
log (``DecisionLogError``) ends it with an exception, because then decisions could no
longer be accounted for; ``drive`` turns that into the stop reason
``decision_log_failed``.

Rate bookkeeping: the loop owns the one ``loadguard.rate.RateInForce`` (``self.rate``):
the rate the engines last acknowledged (what JMeter is really running) and its last
change, stamped with the monotonic ms of the observation whose decision was pushed. The
policy decides from its value, which the observation carries (``commanded_rps``) with its
change (``Observation.rate_change``), from which ``Settling`` and the policies tell a new rate;
none of them keeps a rate of its own. A decision is pushed only when it changes the rate
or the rate is unconfirmed: after a failed push (or an initial push that never landed),
and when the actuator reports that the engines carrying it changed
(``Actuator.membership_changed``: a fleet engine lost or back). Then the next decision
is pushed even if it leaves the rate unchanged, so the rate is re-asserted as soon as the
port comes back (every row logged meanwhile says ``applied=false``) or split over the
engines now live. Neither a failed push nor a re-assertion is a change.

Ending (``run``): a STOP decision (``auto_stop``), ``--duration`` on the monotonic clock,
a stop request (a signal), or the engine probe (``EngineProbe.check``): a JMeter that
exited or failed ends the loop at once, one that merely stopped answering once the JTL
has also been idle for ``idle_exit_ms``. The reasons are ``loadguard.stop_reason``'s
``StopReason``; an engine failure exits with code 3, else the verdict decides (0 PASS,
1 otherwise).

Clocks (``loadguard.clock``): the window's edge and the log's timestamps are wall-clock
epoch ms, as JMeter's rows are; the tick schedule, ``--duration`` and idle exit run on the
monotonic clock, and every observation carries both, so a stepped system clock neither
sleeps for the step nor ends the run early.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from loadguard.actuator.elastic_timer import ELASTIC_TIMER_LAG_MS
from loadguard.actuator.engines import Actuator, EngineAck, PushResult
from loadguard.capacity import estimate as estimate_capacity
from loadguard.clock import Clock, Staleness, WallClock, WallSteps
from loadguard.decisions import DecisionLogWriter, DecisionRow
from loadguard.jtl.sample import SampleSource
from loadguard.ledger import ExceedanceLedger, LedgerView, criteria_of
from loadguard.observation import Action, Observation, wall_staleness
from loadguard.policies.base import Decision, Policy
from loadguard.rate import RateChange, RateInForce
from loadguard.stats import WindowStats
from loadguard.stop_reason import StopReason
from loadguard.summary import (
    INCONCLUSIVE,
    INCONCLUSIVE_EXIT,
    RunAccumulator,
    Summary,
    SummaryBuilder,
)
from loadguard.window import Window

log = logging.getLogger(__name__)


class Evaluator(Protocol):
    def evaluate(
        self,
        stats: WindowStats,
        wall_ms: int,
        commanded_rps: float,
        *,
        mono_ms: int | None = None,
        staleness_ms: int | None = None,
        rate_change: RateChange | None = None,
        ledger: LedgerView | None = None,
    ) -> Observation:
        """The tick's ``Observation``, built once from its whole input (``SloSpec``)."""
        ...

    def log_thresholds(self) -> dict[str, float | None]: ...


class EngineProbe(Protocol):
    """Is the load generator still there? ``None``: running; else why it is gone."""

    def check(self) -> StopReason | None: ...


@dataclass(frozen=True)
class LoopSettings:
    tick_ms: int = 2000
    idle_exit_ms: int = 10_000
    max_duration_ms: int | None = None
    min_capacity: float | None = None
    #: push -> new rate in force: the ledger attributes samples to a rate from then on
    lag_ms: int = ELASTIC_TIMER_LAG_MS


@dataclass(frozen=True)
class TickResult:
    tick: int
    decision: Decision
    push: PushResult
    row: DecisionRow


@dataclass
class LoopOutcome:
    summary: Summary
    stop_reason: StopReason
    exit_code: int
    ticks: int = 0


def format_acks(acks: Sequence[EngineAck]) -> str:
    """The decision log's ``engine_ack``: ``engine=rate`` per engine, ``;``-separated, with
    ``!error`` (80 characters at most) after an engine that did not acknowledge."""
    return ";".join(
        f"{a.engine}={'' if a.rate_rps is None else round(a.rate_rps, 3)}"
        + ("" if a.ok else f"!{(a.error or 'failed').replace(';', ',')[:80]}")
        for a in acks
    )


def row_from(
    decision: Decision, push: PushResult, tick: int, thresholds: dict[str, float | None]
) -> DecisionRow:
    obs = decision.observation
    st = obs.stats.overall
    breached_labels = tuple(
        sorted(
            {b.split("=", 1)[1].rsplit(":", 1)[0] for b in obs.breaches if b.startswith("label=")}
        )
    )
    detail = ";".join(f"{k}={v}" for k, v in sorted(decision.detail.items()))
    return DecisionRow(
        epoch_ms=obs.wall_ms,
        tick=tick,
        action=str(decision.action),
        zone=str(decision.zone),
        reason=decision.reason,
        old_rate=decision.old_rate,
        new_rate=decision.new_rate,
        applied=push.applied,
        engine_ack=format_acks(push.acks),
        samples=st.count,
        rps=st.rps,
        ok_rps=st.ok_rps,
        error_rate=st.error_rate,
        mean_ms=st.mean_ms,
        p50_ms=st.p50_ms,
        p90_ms=st.p90_ms,
        p95_ms=st.p95_ms,
        p99_ms=st.p99_ms,
        max_ms=st.max_ms,
        offered_rps=obs.commanded_rps,
        staleness_ms=obs.staleness_ms,
        slo=thresholds,
        breaches=obs.breaches,
        breached_labels=breached_labels,
        detail=detail,
    )


class ControlLoop:
    def __init__(
        self,
        *,
        source: SampleSource,
        window: Window,
        evaluator: Evaluator,
        policy: Policy,
        actuator: Actuator,
        writer: DecisionLogWriter,
        summary: SummaryBuilder,
        settings: LoopSettings,
        clock: Clock | None = None,
        probe: EngineProbe | None = None,
        on_tick: Callable[[TickResult], None] | None = None,
    ) -> None:
        self.source = source
        self.window = window
        self.evaluator = evaluator
        self.policy = policy
        self.actuator = actuator
        self.writer = writer
        self.summary = summary
        self.settings = settings
        self.clock: Clock = clock or WallClock()
        self.probe = probe
        self.on_tick = on_tick
        self.run_acc = RunAccumulator()
        self.stop_event = threading.Event()
        self.stop_reason: StopReason | None = None
        # The rate in force: unconfirmed until the engines acknowledge it (and again after
        # a failed push or a change of the engines carrying it); it is then pushed every
        # tick, even a HOLD, until confirmed.
        self.rate = RateInForce()
        # Monotonic ms (``clock.mono_ms``): when the loop started / last read new rows.
        self.started_ms = 0
        self.last_sample_ms: int | None = None
        self.last_growth_ms = 0
        self.staleness = Staleness()
        # Every sample counted against the rate in force when it was sent
        # (``loadguard.ledger``): the counting policies read it, and the summary's
        # capacity estimate comes from it whatever the policy.
        self._capacity_at: int | None = None
        self._capacity: dict[str, float | str] = {}
        self.ledger = ExceedanceLedger(
            criteria_of(evaluator) if hasattr(evaluator, "limits") else (),
            getattr(evaluator, "window_ms", 10_000),
            settings.lag_ms,
        )
        self.wall_steps = WallSteps(getattr(evaluator, "window_ms", 10_000))

    # -- lifecycle ---------------------------------------------------------------

    def request_stop(self, reason: StopReason | str) -> None:
        """End the loop before its next tick; the first reason given is kept."""
        if self.stop_reason is None:
            self.stop_reason = StopReason(reason)
        self.stop_event.set()

    def start(self, initial_rate: float, preset: bool = False) -> PushResult | None:
        """Adopt the engine's rate if it has one, else push ``initial_rate``.

        ``preset``: the engine was started with ``initial_rate`` already set (``run``
        passes it as a -J property), so nothing is read or pushed."""
        self.started_ms = self.clock.mono_ms()
        self.last_growth_ms = self.started_ms
        if preset:
            self.rate.start(initial_rate, confirmed=False)
            self.ledger.rate_in_force(initial_rate, self._steady_now())
            return None
        current = self.actuator.read_rate()
        if current is not None and current > 0:
            self.rate.start(current, confirmed=True)
            self.ledger.rate_in_force(current, self._steady_now())
            log.info("resuming from the engine's rate %.3f req/s", current)
            return None
        push = self.actuator.push(initial_rate)
        self.rate.start(initial_rate, confirmed=push.applied)
        self.ledger.rate_in_force(initial_rate, self._steady_now())
        if not push.applied:
            log.warning("initial push of %.3f req/s not applied yet; will retry", initial_rate)
        return push

    # -- one tick ----------------------------------------------------------------

    def tick(self) -> TickResult:
        batch = self.source.poll()
        wall, mono = self.clock.wall_ms(), self.clock.mono_ms()
        self.wall_steps.observe(wall, mono)
        steady = self.wall_steps.steady(wall)
        if len(batch):
            steady_batch = self.wall_steps.steady_batch(batch, wall)
            self.window.add(steady_batch)
            self.ledger.add(steady_batch)
            self.run_acc.add(batch)
            self.last_growth_ms = mono
        if self.actuator.membership_changed():
            self.rate.reassert()  # an engine lost or back: push the rate over the new set
        stats = self.window.stats(steady)
        staleness = self.staleness.update(wall_staleness(stats, steady), len(batch) > 0, mono)
        obs = self.evaluator.evaluate(
            stats, wall, self.rate.value, mono_ms=mono, staleness_ms=staleness,
            rate_change=self.rate.change, ledger=self.ledger.view(steady),
        )  # fmt: skip
        decision = self.policy.decide(obs)
        decision = self._with_capacity(decision, steady, mono)
        push = self._actuate(decision)
        tick_no = self.writer.next_tick()
        row = row_from(decision, push, tick_no, self.evaluator.log_thresholds())
        self.writer.append(row)
        self.summary.add(row)
        result = TickResult(tick_no, decision, push, row)
        if self.on_tick is not None:
            try:
                self.on_tick(result)
            except Exception:  # a console glitch must never stop the controller
                log.exception("console callback failed")
        if decision.action == Action.STOP:
            self.request_stop(StopReason.AUTO_STOP)
        return result

    def _steady_now(self) -> int:
        """Now on the ledger's steady clock (``loadguard.clock.WallSteps``)."""
        wall = self.clock.wall_ms()
        self.wall_steps.observe(wall, self.clock.mono_ms())
        return self.wall_steps.steady(wall)

    def _with_capacity(self, decision: Decision, steady: int, mono: int) -> Decision:
        """The running capacity estimate in the decision's detail (``capacity_rps``,
        ``capacity_lo_rps``, ``capacity_hi_rps``; the console and the live outputs show
        it), computed once per window (a bootstrap over the rates visited costs tens of
        ms) and carried on the ticks between."""
        if self._capacity_at is None or mono - self._capacity_at >= self.ledger.window_ms:
            self._capacity_at = mono
            est = estimate_capacity(
                self.ledger.by_rate(steady),
                self.ledger.criteria,
                self.ledger.window_ms,
                sent=self.ledger.sent_by_rate(steady),
            )
            self._capacity = {}
            if est.status == "estimated" and est.rps is not None and est.ci90_rps:
                self._capacity = {
                    "capacity_rps": round(est.rps, 3),
                    "capacity_lo_rps": round(est.ci90_rps[0], 3),
                    "capacity_hi_rps": round(est.ci90_rps[1], 3),
                }
        return decision.with_detail(**self._capacity) if self._capacity else decision

    def _actuate(self, decision: Decision) -> PushResult:
        target = decision.new_rate
        if not self.rate.needs_push(target):
            return PushResult(rate_rps=target, applied=True, acks=())
        push = self.actuator.push(target)
        if push.applied:
            self.rate.acknowledged(target, decision.observation.timer_ms)
            self.ledger.rate_in_force(
                self.rate.value, self.wall_steps.steady(decision.observation.wall_ms)
            )
        else:
            # It may still have reached an engine (a reply lost after the write):
            # re-assert whatever is decided next, even an unchanged rate.
            self.rate.push_failed()
        return push

    # -- the loop ----------------------------------------------------------------

    def _check_end(self, mono: int) -> None:
        """``mono``: monotonic ms."""
        s = self.settings
        if s.max_duration_ms is not None and mono - self.started_ms >= s.max_duration_ms:
            self.request_stop(StopReason.DURATION)
            return
        gone = None if self.probe is None else self.probe.check()
        if gone is None:
            return
        # A finished or failed JMeter ends the loop at once; one that merely stopped
        # answering (attach) ends it once the JTL has also been idle long enough.
        gone = StopReason(gone)
        if (
            gone.engine_failure
            or gone is StopReason.JMETER_EXITED
            or mono - self.last_growth_ms >= s.idle_exit_ms
        ):
            self.request_stop(gone)

    def run(
        self,
        initial_rate: float,
        on_end: Callable[[], None] | None = None,
        preset: bool = False,
    ) -> LoopOutcome:
        """Tick until a stop condition; ``on_end`` runs before the final drain (``run``
        stops JMeter there, so samples still in flight are counted in the summary)."""
        self.start(initial_rate, preset)
        ticks = 0
        next_tick = self.clock.mono_ms() + self.settings.tick_ms
        while not self.stop_event.is_set():
            self.clock.wait_ms(next_tick - self.clock.mono_ms(), self.stop_event)
            if self.stop_event.is_set():
                break
            self.tick()
            ticks += 1
            next_tick += self.settings.tick_ms
            mono = self.clock.mono_ms()
            if next_tick < mono:  # a slow tick: skip missed slots, never bunch up
                next_tick = mono + self.settings.tick_ms
            self._check_end(mono)
        reason = self.stop_reason or StopReason.STOPPED
        if on_end is not None:
            try:
                on_end()
            except Exception:  # stopping the generator must not lose the summary
                log.exception("stopping the load generator failed")
        # Drain what JMeter wrote last, so the summary counts every sample.
        last = self.source.poll()
        self.run_acc.add(last)
        wall = self.clock.wall_ms()
        self.wall_steps.observe(wall, self.clock.mono_ms())
        end_ms = self.wall_steps.steady(wall)
        self.ledger.add(self.wall_steps.steady_batch(last, wall))
        capacity = estimate_capacity(
            self.ledger.by_rate(end_ms),
            self.ledger.criteria,
            self.ledger.window_ms,
            sent=self.ledger.sent_by_rate(end_ms),
        )
        summary = self.summary.build(self.run_acc, reason, capacity)
        return LoopOutcome(summary, reason, exit_code_for(summary, reason), ticks)


def exit_code_for(summary: Summary, stop_reason: StopReason) -> int:
    if stop_reason.engine_failure:
        return 3
    if summary.verdict == INCONCLUSIVE:
        return INCONCLUSIVE_EXIT
    return 0 if summary.verdict == "PASS" else 1
