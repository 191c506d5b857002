r"""The controller by counting: hold the highest rate whose predicted share of violating
windows stays within the user's violation budget B.

Input: the exceedance ledger's view (``Observation.ledger``): every sample attributed to
the rate in force when it was *sent*, counted per quarter window against each SLO's
threshold. At the rate in force r, ``loadguard.evidence.pool`` turns the mature quarters
sent under r (since the last evidence reset) into a predicted share of violating
windows :math:`V(r)` with bounds :math:`[V_{lo}, V_{hi}]` at 90 % confidence
(``loadguard.exceedance``: the beta-binomial of the counts measured at r, the binomial
its floor). Then, every tick:

* **within budget**, :math:`V_{hi} < B`: r becomes the *floor* f (the highest rate shown
  within budget) and the rate rises. Without a ceiling, by the ramp factor ρ (slow start:
  with nothing over budget yet, no curve says how far the knee is), or less where the
  measured exceedance curve says so (below). With a ceiling c, to the target below c
  (at most the geometric midpoint :math:`\sqrt{rc}`); a rise smaller than the count's own
  noise, :math:`ε = 1/\sqrt{r W}`, is not taken (the bracket is resolved).
* **over budget**, :math:`V_{lo} > B`: r becomes the ceiling c (the lowest rate shown over
  budget; a floor at or above it is dropped: the capacity fell). If a queue grows -- the
  delivered rate X (completions per second over the last quarter, ``LedgerView``) is
  below :math:`r (1 - 3/\sqrt{r w})` (three Poisson sigmas) -- r is past capacity and,
  past capacity, the delivery rate *is* the capacity (TCP BBR): the cut goes to
  :math:`X - Q/W`, Q the backlog by Little's law (:math:`Q = X (R - R_0)`, R the
  window's mean response time, :math:`R_0` the lowest seen), which drains it in about
  one window, and no higher than the setpoint it will return to unless the capacity
  fell below a rate shown within budget (X is the plant's throughput, above its
  capacity at the SLO: a drain between the two keeps the windows over the SLO while it
  lasts); the policy holds that for W + L, and up to two windows more while more
  is delivered than sent (:math:`X > r (1 + 3/\sqrt{r w})`) or the window still breaches
  (the backlog still drains); if a whole completion bin at the drain's rate empties
  the queue slower than within a window (:math:`X - r < Q/W`: the delivered rate the cut
  came from was not the capacity), it cuts again from the X measured then;
  then returns to the setpoint (the target below c). The same cut is taken, from the
  delivered rate pooled over the epoch's whole completion bins, when the window breaches
  and that pooled rate is below :math:`r (1 - 3/\sqrt{r s})` (s their span): a rate
  10 % past capacity is within one quarter's three sigmas but not within a whole
  window's. Otherwise the rate goes down to the target between f and r.
* **probably over**, :math:`V > B` but not shown (over a whole window of evidence, with
  at least five exceedances counted), past the slow start (with nothing over budget and
  the knee watcher silent, the latency distribution is the idle one and a lower rate
  changes nothing), and with the share over T at r significantly above the one pooled
  over the rates below (going down helps only where q rises with the rate: at the same
  q, the fewer samples of a lower rate's windows cross a p95's allowance more often):
  back to the floor if one is shown below r, else down by two resolutions (holding an
  over-budget rate costs violations); r becomes a soft ceiling, lifted on the first
  evidence of headroom (a margin of 0).
* **stalled**: over budget while the target delivers under :math:`r/ρ^2` (less than one
  overshooting ramp step can explain: it hung, an outage, not a capacity): no ceiling is
  set; the rate drops by ρ for the drain, then returns to the floor.
* **cold start**: the start rate's first verdict over budget, no other rate visited, the
  plant keeping up and its later samples no slower than its earlier ones (``_cold_start``:
  a service warming up, not a queue): no ceiling; the rate drops by ρ, the samples that
  judged it are forgotten, and the slow start goes on over the start rate's own
  doublings.
* **slow service**: over budget where the exceedance is not shown to be the queue's:
  some *lone* samples (sent while none of ours was in flight, ``loadguard.ledger``:
  their latency is the service's own, at any rate) exceed T, and the others' share over
  T is not significantly above theirs (``_queue_shown``). A cold service, or an SLO
  under the service's own tail: no lower rate makes a lone request faster. No ceiling
  and no cut; the rate stays and is judged again on the samples sent from then on.
* **hung**: over budget, probably over, or the knee watcher firing, where a *hang*
  ended within the evidence at r (``LedgerView.hangs``: a span with a request in flight
  and nothing completed) longer than the binding SLO's threshold T and than the longest
  gap between completions Poisson arrivals at r leave in a window at confidence c,
  :math:`G > \ln(rW/(1-c))/r` (a queue past capacity completes all along: its servers
  are busy): the exceedance is the hang's, not the rate's. No ceiling, no verdict; the
  rate stays and the evidence restarts a window after the hang ended (what is sent
  meanwhile queues behind its backlog). The real TeaStore, reset before a run, paused
  for a second at 8 s; that one quarter at 10 req/s had set a ceiling that held the run
  at 7 req/s.
* **undecided**: HOLD. Evidence accumulates (pooled over every sample sent at r), the
  bounds narrow, and that is where the time goes near the knee.

**The target.** With :math:`q_B` the exceedance probability at which V = B for windows of
:math:`rW` samples at the measured dispersion (``exceedance.q_at_share``), and
:math:`(r_1, q_1), (r_2, q_2)` two rates' pooled exceedance shares of the binding SLO, the
secant of :math:`\ln q` against :math:`\ln r` gives

.. math::

    \ln r_B = \ln r_1 + \frac{\ln q_B - \ln q_1}{\ln q_2 - \ln q_1} (\ln r_2 - \ln r_1).

Between f and c (interpolation), :math:`\ln q` being convex in :math:`\ln r` near a knee,
the secant lies above the curve, so :math:`r_B` errs low (safe); above the highest rate
measured (extrapolation from the floor's neighbours) it errs high, so a rise is never more
than ρ. A share of 0 counts as half a sample (:math:`q \ge 1/(2N)`).

**No creep on a timer.** The ceiling is lifted only on evidence that the headroom changed:
at the rate held below c, the upper bound of the recent share (the last two windows'
worth of quarters) has fallen below the lower bound of the first whole window's share
measured there by more than c was over budget,
:math:`\ln q_{lo,ref} - \ln q_{hi,recent} > \ln(q_c/q_B(c))` (the curve fell by more
than the margin: a service that warmed up, an outage that ended; a reference with no
exceedance has a lower bound of 0 and shows no fall); or the latency distribution
shifted down, the reference's median now above the recent p75 (a warm-up at a low rate,
where counts over T are too few). Near the knee a quiet spell after a busy reference
window can pass that test on a stationary plant; what bounds the cost of such a lift is
the probe that follows it. The probe that
follows a lift goes at most two resolutions past the old ceiling (a lift on noise costs
one small probe). A lift, a delivery cut and the end of a drain reset the evidence
(older samples described another plant).

**A collapse is not a knee.** A delivery cut that lowers the ceiling by more than a
ramp step (a metastable plant in its slow state, a hang) keeps the ceiling it had
before. Once the queue at the rate held is empty -- the window's mean response time
within three standard errors of the lowest window mean seen (a service time's standard
deviation being about its mean) -- that earlier ceiling is restored, soft (a margin of 0;
with no ceiling before it, the rate that collapsed, judged as the watcher's soft ceiling
is: never shown over budget by the counts), and the climb back to it takes its steps
on the point estimate while the queue stays empty; a capacity that really fell (halves)
queues at the rate held below it, so its ceiling stays.

*Slow start.* Until some rate has been shown over budget, a rise needs only the point
estimate V < B (with at least ``min_samples`` samples at r, in one mature quarter),
predicted for the windows of the rate the step goes to when those of r are over it: far
below the knee the next rate sees the same exceedance q, and its windows, ρ times
larger, cross a percentile's allowance less often on the same q (the demo target's
5 req/s start drew 3 of its first 125 samples over 250 ms: V = 8 % for windows of 50
samples, 4 % for those of 100; on r's own windows the start was held for 42 s). A
step that proves too high costs one cut, and the upper bound at a few dozen samples of a
1 % error SLO (one error in a window of 50 violates it) would hold a 5 req/s start for
minutes. A floor shown
this way is tentative; over budget, only a floor shown by the upper bound survives. The
slow start watches for the knee: the share of samples over the *idle* p95 (from the
ledger's histogram, at the first rate with five samples expected over it) rising
significantly above its idle share. The p95 moves long before the count over T does;
from then on (and once any rate was over budget) the slow start is over: a rise needs
the upper bound over a whole window, as near a ceiling, and steps by at most
:math:`\sqrt{ρ}`. When the watcher fires at the slow start's step r from a tentative
floor f, the policy steps back to :math:`\sqrt{f r}` at once, r a soft ceiling: at
ρ = 1 the count over T takes 10-15 s to show the knee, the share over the idle p95 a
quarter. Not when the delivered rate is below :math:`\sqrt{f r}` (the generator or the
plant limits what is sent: a lower rate in force changes nothing the plant sees). A
latency shift is not always the knee (a heavy-tailed service moves its p95 at half of
λ*): once the climb under that ceiling resolves, the secant through the counts at the
two rates held highest below it puts :math:`q_B` at :math:`r'`; if
:math:`r' \ge r \sqrt{ρ}` (or q does not rise) the ceiling is dropped, r is probed
again on its pooled evidence and, as past a lifted ceiling, one small probe past it
then half steps; no knee was seen, so the slow start's rules and its watcher apply
again. A lifted ceiling restarts the slow start's evidence rules (the plant
changed) up to the probe past the old ceiling, in half steps (a knee was there); past
it, each half step waits for a whole window of evidence. The evidence at r, and the knee
watcher's idle reference with it, restarts at the two windows that showed the change:
the quarters before them describe the plant before it (on the real TeaStore a cold
JIT's 600 ms p95 at 73 req/s made a warm 258 ms at 121 look idle, and the half step
went on to 171 req/s, past a capacity of ~140).

Parameters: ``budget`` B and ``window_ms`` W come from the SLO (``--violation-budget``,
``--window``), ``lag_ms`` L from the actuation lag; ``confidence`` (0.9) is that of the
reported capacity interval; ``ramp_factor`` ρ (2, the guard's largest rise) is the slow
start's step. Each update ends in the clamp :math:`r' \in [r/ρ, ρ r]`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from loadguard.errors import PolicyError
from loadguard.evidence import (
    Evidence,
    completion_dispersion,
    histogram,
    pool,
    window_samples,
)
from loadguard.exceedance import CONFIDENCE, jeffreys, q_at_share
from loadguard.ledger import PARTS, EpochView, LedgerView, hist_bin, hist_edge_ms
from loadguard.observation import Observation, Zone
from loadguard.policies.base import Decision, decide, hold, same_rate
from loadguard.slo import DEFAULT_VIOLATION_BUDGET


@dataclass
class BudgetPolicy:
    #: The ledger attributes samples by send time, so the Settling guard's wait for a
    #: clean completion window is not needed (build_policy leaves it out).
    judges_by_send_time: ClassVar[bool] = True

    budget: float = DEFAULT_VIOLATION_BUDGET
    window_ms: int = 10_000
    lag_ms: int = 2000
    min_samples: int = 20
    confidence: float = CONFIDENCE
    ramp_factor: float = 2.0
    name: str = "budget"

    floor: float | None = field(default=None, init=False)
    #: the floor was shown by the upper bound (else by the slow start's point estimate)
    floor_confirmed: bool = field(default=False, init=False)
    ceiling: float | None = field(default=None, init=False)
    #: ln(q/q_B) at the ceiling when it was set: how far over budget it was
    ceiling_margin: float | None = field(default=None, init=False)
    #: (rate, q) where the policy first held below the ceiling: the reference for a shift
    reference: tuple[float, float] | None = field(default=None, init=False)
    #: the histogram bin of the reference's median latency
    reference_median: int | None = field(default=None, init=False)
    #: the criterion whose share the reference holds
    reference_j: int = field(default=0, init=False)
    #: the ceiling last lifted: the next probe goes at most half a ramp step past it
    lifted: float | None = field(default=None, init=False)
    since_ms: int = field(default=0, init=False)
    drain_target: float | None = field(default=None, init=False)
    #: the drain under way follows a fall of the capacity (``_delivery_cut``)
    drain_fell: bool = field(default=False, init=False)
    _memo_view: LedgerView | None = field(default=None, init=False, repr=False)
    _memo: dict[tuple[int, float, int, bool], Evidence] = field(
        default_factory=dict, init=False, repr=False
    )
    #: the floor to return to after a stall (the target hung: no verdict on the rate)
    stall_return: float | None = field(default=None, init=False)
    knee_seen: bool = field(default=False, init=False)
    #: a ceiling was lifted (the headroom changed): the climb goes in half steps
    relifted: bool = field(default=False, init=False)
    #: the probe past a lifted ceiling was reached: a rise waits for a whole window
    past_lift: bool = field(default=False, init=False)
    #: the climb follows the lift of a ceiling shown over budget (not a watcher's
    #: false knee): past its probe, near a seen knee, it probes by two resolutions
    after_lift: bool = field(default=False, init=False)
    drain_until_ms: int | None = field(default=None, init=False)
    min_mean_ms: float | None = field(default=None, init=False)
    #: the ceiling before a delivery cut lowered it (restored once the queue is empty)
    healthy_ceiling: float | None = field(default=None, init=False)
    #: climbing back to a restored ceiling (until a rate is next over budget)
    restored: bool = field(default=False, init=False)
    #: the soft ceiling the knee watcher set (the rate it fired at, not shown over), or
    #: the rate whose collapse set a ceiling where there was none
    watched: float | None = field(default=None, init=False)
    #: the start rate's first verdict over budget was taken (``_cold_start``)
    start_checked: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.budget < 1.0:
            raise PolicyError(f"budget budget must be in (0, 1), got {self.budget}")
        if not 0.5 <= self.confidence < 1.0:
            raise PolicyError(f"budget confidence must be in [0.5, 1), got {self.confidence}")
        if self.ramp_factor <= 1.0:
            raise PolicyError(f"budget ramp_factor must be > 1, got {self.ramp_factor}")
        if self.window_ms <= 0:
            raise PolicyError("budget window_ms must be > 0")

    # ------------------------------------------------------------------ evidence
    def _settled(self, view: LedgerView) -> Iterator[tuple[EpochView, int]]:
        """Each epoch holding rows, with the send time its samples count from: a window
        after it began when a cut entered it (before, they queue behind the higher
        rate's backlog, which is no verdict on this rate), else 0."""
        prev: float | None = None
        for e in view.epochs:
            if e.rows.shape[0]:
                cut = prev is not None and prev > e.rate
                yield e, (e.from_ms + self.window_ms if cut else 0)
            prev = e.rate

    def _blocks(self, view: LedgerView, rate: float, since_ms: int) -> list[np.ndarray]:
        """The rows sent at ``rate`` since ``since_ms``, of each epoch those it counts
        (``_settled``)."""
        return [
            e.rows[e.starts_ms >= max(since_ms, begin)]
            for e, begin in self._settled(view)
            if same_rate(e.rate, rate)
        ]

    def _evidence(
        self, view: LedgerView, rate: float, since_ms: int, floor: bool = False
    ) -> Evidence:
        """The pooled evidence at ``rate``; with ``floor``, the dispersion is bounded
        below by the largest measured at a lower rate (it grows toward the knee) and by
        the one of the completion bins at this rate (the SLO's windows are keyed on
        completion: slow samples sent apart complete together). Memoised per view: a
        tick asks for the same rates from several places."""
        key = (id(view), rate, since_ms, floor)
        if self._memo_view is not view:
            self._memo_view, self._memo = view, {}
        if key not in self._memo:
            self._memo[key] = self._pooled(view, rate, since_ms, floor)
        return self._memo[key]

    def _pooled(self, view: LedgerView, rate: float, since_ms: int, floor: bool) -> Evidence:
        phis = self._dispersion_floor(view, rate, since_ms) if floor else ()
        return pool(
            self._blocks(view, rate, since_ms), view.criteria, rate, self.window_ms,
            self.confidence, dispersion_floor=phis, min_samples=self.min_samples,
        )  # fmt: skip

    def _dispersion_floor(self, view: LedgerView, rate: float, since_ms: int) -> tuple[float, ...]:
        """Per criterion, the largest dispersion measured at a lower rate and the one of
        the completion bins at ``rate`` (``_evidence``'s ``floor``)."""
        best = [1.0] * len(view.criteria)
        for r in self._rates(view):
            if r < rate * (1 - 1e-9):
                ev = self._evidence(view, r, since_ms)
                for j, p in enumerate(ev.predictions):
                    best[j] = max(best[j], p.dispersion.estimate)
        cur = view.current()
        if cur is not None and same_rate(cur.rate, rate):
            bins = view.completions
            if view.completions_from_ms is not None:
                # the bins completed since the evidence's start: before it, a collapse's
                # backlog drains in bursts of samples over T (the collapse plant, seed
                # 103: a cut to 42 req/s at 46 s kept a dispersion that held the upper
                # bound over B at a share of 0 for 525 s)
                skip = -(-(since_ms - view.completions_from_ms) // view.part_ms)
                bins = bins[max(0, skip) :]
            for j, phi in enumerate(completion_dispersion(bins, len(best))):
                best[j] = max(best[j], phi)
        return tuple(best)

    def _step_share(self, view: LedgerView, rate: float) -> float:
        """The slow start's V: the evidence at ``rate`` predicted for the windows of the
        rate its step goes to (``_under``: ρ r, half steps √ρ r after a lift)."""
        step = rate * (math.sqrt(self.ramp_factor) if self.relifted else self.ramp_factor)
        return pool(
            self._blocks(view, rate, self.since_ms), view.criteria, step, self.window_ms,
            self.confidence, dispersion_floor=self._dispersion_floor(view, rate, self.since_ms),
            min_samples=self.min_samples,
        ).share  # fmt: skip

    @staticmethod
    def _rates(view: LedgerView) -> list[float]:
        rates: list[float] = []
        for e in view.epochs:
            if e.rows.shape[0] and not any(same_rate(r, e.rate) for r in rates):
                rates.append(e.rate)
        return sorted(rates)

    @staticmethod
    def _recent_from(view: LedgerView, since_ms: int) -> int:
        """The send time the recent share (``_recent``: the last two windows' quarters
        at the rate in force) starts from; ``since_ms`` without one."""
        cur = view.current()
        if cur is None:
            return since_ms
        starts = cur.starts_ms[cur.starts_ms >= since_ms][-2 * PARTS :]
        return int(starts[0]) if len(starts) else max(since_ms, cur.from_ms)

    def _recent(self, view: LedgerView, rate: float) -> Evidence:
        cur = view.current()
        if cur is None or not same_rate(cur.rate, rate):
            return Evidence(rate, 0, 0, 0, ())
        rows = cur.rows[cur.starts_ms >= self.since_ms][-2 * PARTS :]
        return pool(
            [rows], view.criteria, rate, self.window_ms, self.confidence,
            min_samples=self.min_samples,
        )  # fmt: skip

    def _curve(self, view: LedgerView, j: int) -> list[tuple[float, float, int]]:
        """(rate, q, N) of criterion j at every rate visited since the evidence reset."""
        out = []
        for r in self._rates(view):
            ev = self._evidence(view, r, self.since_ms)
            if ev.samples and j < len(ev.predictions) and ev.predictions[j].samples:
                p = ev.predictions[j]
                out.append((r, max(p.q, 0.5 / p.samples), p.samples))
        return out

    def _q_budget(self, ev: Evidence, j: int, rate: float, view: LedgerView) -> float:
        p = ev.predictions[j]
        crit = view.criteria[j]
        n_w = window_samples(rate, self.window_ms, self.min_samples)
        return q_at_share(n_w, p.dispersion.estimate, crit.allowed, crit.percentile, self.budget)

    @staticmethod
    def _counted_secant(
        a: tuple[float, float, int], b: tuple[float, float, int], q_b: float
    ) -> float | None:
        """The secant through two curve points (rate, q, N), None when neither counted a
        sample over T: their shares are the floors 1/(2N), and two floors at different N
        make a slope of the sample counts, not of q (on the real TeaStore, run 13, no
        sample over 500 ms at 73 and 77 req/s: the fewer samples at 77 read as a rising
        q, and the watcher's ceiling at 80 req/s held the run under it)."""
        # q N is 1/2 at a floor and at least 1 where a sample was counted
        if a[1] * a[2] < 0.75 and b[1] * b[2] < 0.75:
            return None
        return BudgetPolicy._secant(a[:2], b[:2], q_b)

    @staticmethod
    def _secant(a: tuple[float, float], b: tuple[float, float], q_b: float) -> float | None:
        (r1, q1), (r2, q2) = a, b
        if r2 <= r1 or q2 <= q1:
            return None
        slope = (math.log(q2) - math.log(q1)) / (math.log(r2) - math.log(r1))
        ln_r = math.log(r1) + (math.log(q_b) - math.log(q1)) / slope
        return math.exp(min(ln_r, 700.0))  # a flat secant says "far": no overflow

    # ------------------------------------------------------------------ decide
    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        view = obs.ledger
        if view is None:
            return hold(obs, rate, "no_data")
        self._note_mean(obs)
        now = view.watermark_ms if view.watermark_ms is not None else obs.wall_ms
        if self.drain_until_ms is not None:
            x = view.delivered_rps
            noise = _poisson_band(rate, view.part_ms)
            # the backlog still drains: more delivered than sent, or the (completion)
            # window still breaches with what was queued
            draining = (x is not None and x > rate * (1.0 + noise)) or obs.zone is Zone.BREACH
            if self.drain_target is not None and rate > self.drain_target * (1 + 1e-9):
                # a cut clamped by the largest step: go on down to the drain's rate
                return self._move(obs, rate, self.drain_target, "delivery")
            if (
                obs.zone is Zone.BREACH
                and x is not None
                and self._whole_bin(view)
                and x - rate + rate * noise < self._backlog(obs, x) / (self.window_ms / 1000.0)
            ):
                # a whole bin at the drain's rate empties the queue (Little's law: Q =
                # X (R - R_0)) slower than within a window, or not at all, by more than
                # the bin's count noise (three Poisson sigmas): the delivered rate the
                # cut came from was not the capacity; cut again from this one
                return self._delivery_cut(obs, view, rate, {})
            if now < self.drain_until_ms or (
                draining and now < self.drain_until_ms + 2 * self.window_ms
            ):
                return hold(obs, rate, "drain", drain_until_ms=self.drain_until_ms)
            self.drain_until_ms = None
            self.drain_target = None
            self.since_ms = now
            target = self._setpoint(view, rate)
            return self._move(obs, rate, target, "return")
        if obs.zone is Zone.BREACH and self._overloaded(view, rate):
            # BBR's signal needs no per-rate evidence: fewer delivered than sent while
            # the window breaches (a capacity that fell, or a cut that was not enough)
            if self._stalled(view, rate):
                return self._stall(obs, view, rate, {})
            return self._delivery_cut(obs, view, rate, {})
        ev = self._evidence(view, rate, self.since_ms, floor=True)
        if ev.samples < self.min_samples or not ev.predictions:
            return hold(obs, rate, "settling")
        detail = self._detail(ev)
        if ev.share_lo > self.budget:
            return self._over(obs, rate, ev, view, detail)
        if self.ceiling is not None and rate < self.ceiling and self._recovered(obs, rate):
            # a delivery cut set the ceiling at what a collapsed or hung plant delivered;
            # the queue at r is empty now: back to the ceiling it had before (soft)
            self.ceiling, self.ceiling_margin, self.reference = self.healthy_ceiling, 0.0, None
            self.healthy_ceiling = None
            self.knee_seen, self.restored = True, True
            return hold(obs, rate, "ceiling_restored", **detail)
        if self.ceiling is not None and rate < self.ceiling:
            b = ev.binding()
            if b is not None and self._headroom_changed(view, rate, ev, b):
                # checked while holding too, not only within budget: a warm-up at a low
                # rate leaves the bound undecided for a long time
                self.lifted = self.ceiling
                self.ceiling = None
                self.ceiling_margin = None
                self.reference = None
                # the plant changed: what was known of its knee is stale (the slow
                # start's evidence rules again), but a knee was there: half steps
                self.knee_seen, self.relifted, self.past_lift = False, True, False
                self.after_lift = True
                # evidence from the recent windows that showed the change on: the older
                # quarters at r describe the plant before it (a cold JIT's latencies
                # would be the knee watcher's idle reference, and a warm knee would
                # look idle-like)
                self.since_ms = self._recent_from(view, self.since_ms)
                return hold(obs, rate, "ceiling_lifted", **detail)
        if (
            ev.share > self.budget
            and ev.subwindows >= PARTS
            and (self.knee_seen or self.ceiling is not None)
            and self._telling(ev, view)
            and self._rising(view, rate, ev)
        ):
            # Probably over budget, not yet shown: holding costs violations if it is,
            # so go back to the floor (shown within budget), or half a ramp step down
            # without one; the evidence at r stays pooled for the next visit, and r is
            # no ceiling until it is shown.
            hang = self._hang(view, rate, ev.binding())
            if hang is not None:
                return self._excuse(obs, rate, hang, detail)
            if self.floor is not None and self.floor_confirmed and self.floor < rate:
                back = self.floor
            else:
                if self.floor is not None and self.floor >= rate:
                    if self.floor_confirmed and not same_rate(self.floor, rate):
                        self._capacity_fell()
                    self.floor = None  # a floor above a rate that overruns is stale
                back = rate * (1.0 - 2.0 * self._resolution(rate))
            if self.ceiling is None or rate < self.ceiling:
                # a soft ceiling: not probed again on the same evidence, lifted on the
                # first sign of headroom (a margin of 0)
                self.ceiling, self.ceiling_margin, self.reference = rate, 0.0, None
                self.knee_seen = True
            self.restored = False
            return self._move(obs, rate, back, "likely_over", **detail)
        # Slow start: with no rate over budget yet, a step that proves too high costs
        # one cut, so the point estimate decides; near a ceiling, the upper bound does.
        if self.ceiling is None and self._watch_knee(view, rate):
            hang = self._hang(view, rate, ev.binding())
            if hang is not None:
                self.knee_seen = False  # the shift the watcher saw was the hang's
                return self._excuse(obs, rate, hang, detail)
            mid = self._step_back(view, rate)
            if mid is not None:
                return self._move(obs, rate, mid, "knee_watch", **detail)
        slow = far = self.ceiling is None and not self.knee_seen
        if self.restored and self.ceiling is not None and not far and self._queue_empty(obs):
            # climbing back to a restored ceiling, an empty queue is far from it: the
            # point estimate decides (the upper bound at a few hundred samples per
            # window takes minutes)
            far = True
        within = ev.share if far else ev.share_hi
        if slow and within >= self.budget:
            # the slow start's question is the step's: far below the knee the next rate
            # sees the same exceedance, and its larger windows cross a percentile's
            # allowance less often on it
            within = min(within, self._step_share(view, rate))
        # A rate is left upward only on a whole window of evidence near the knee (the
        # queue there builds over seconds); far below it (the latency distribution still
        # the idle one) one mature quarter holding ``min_samples`` decides: the queue is
        # short and relaxes within milliseconds.
        needed = 1 if far and not self.past_lift else PARTS
        if within < self.budget and ev.subwindows < needed:
            return hold(obs, rate, "evidence", **detail)
        if within < self.budget and self._growing(view, rate):
            return hold(obs, rate, "queue_growing", **detail)
        if within < self.budget:
            return self._under(obs, rate, ev, view, detail)
        return hold(obs, rate, "evidence", **detail)

    def _note_mean(self, obs: Observation) -> None:
        """Keep the lowest window mean response time seen (the empty queue's, R_0)."""
        mean = obs.stats.overall.mean_ms
        if mean is not None and obs.stats.overall.count >= 1:
            self.min_mean_ms = mean if self.min_mean_ms is None else min(self.min_mean_ms, mean)

    def _detail(self, ev: Evidence) -> dict[str, float | str]:
        return {
            "predicted_violation_share": round(ev.share, 5),
            "share_lo": round(ev.share_lo, 5),
            "share_hi": round(ev.share_hi, 5),
            "evidence_samples": ev.samples,
            "floor": -1.0 if self.floor is None else round(self.floor, 3),
            "ceiling": -1.0 if self.ceiling is None else round(self.ceiling, 3),
        }

    def _move(
        self, obs: Observation, rate: float, target: float, reason: str, **detail: float | str
    ) -> Decision:
        new = min(max(target, rate / self.ramp_factor), rate * self.ramp_factor)
        return decide(obs, rate, new, reason, **detail)

    @staticmethod
    def _telling(ev: Evidence, view: LedgerView) -> bool:
        """Enough exceedances for the point estimate to mean something: five at the
        binding SLO (a count of 5 is told from 0 at two Poisson sigmas)."""
        j = ev.binding()
        return j is not None and ev.predictions[j].exceed >= 5

    def _apart(self, k: int, n: int, k0: int, n0: int) -> bool:
        """The share k/n significantly above k0/n0: their 90 % Jeffreys intervals apart."""
        return jeffreys(k, n, self.confidence)[0] > jeffreys(k0, n0, self.confidence)[1]

    def _rising(self, view: LedgerView, rate: float, ev: Evidence) -> bool:
        """Does the exceedance rise with the rate, up to r? The share over T of the
        binding SLO at r significantly above the one pooled over every rate held below
        r since the evidence reset (the 90 % intervals apart), as the knee watcher
        judges its shares. Going down helps only where it does: at the same q a lower
        rate's windows hold fewer samples, and a p95's allowance of fewer samples is
        crossed by fewer exceedances (mm2 at 10.6 req/s, 40 % of λ*: five of 165
        samples over T, its idle q 0.9 %)."""
        j = ev.binding()
        if j is None:
            return False
        k0 = n0 = 0
        for r in self._rates(view):
            if r < rate * (1 - 1e-9):
                e = self._evidence(view, r, self.since_ms)
                if j < len(e.predictions):
                    k0 += e.predictions[j].exceed
                    n0 += e.predictions[j].samples
        if n0 == 0:
            return False
        p = ev.predictions[j]
        return self._apart(p.exceed, p.samples, k0, n0)

    @staticmethod
    def _whole_bin(view: LedgerView) -> bool:
        """The delivered rate's bin lies wholly under the rate in force."""
        cur = view.current()
        at = view.delivered_at_ms
        return cur is not None and at is not None and at - view.part_ms >= cur.from_ms

    def _overloaded(self, view: LedgerView, rate: float) -> bool:
        """A queue grows: the delivered rate over the last quarter, fully under the rate
        in force, is below :math:`r (1 - 3/\\sqrt{r w})` (three Poisson sigmas)."""
        x = view.delivered_rps
        cur = view.current()
        noise = _poisson_band(rate, view.part_ms)
        if x is None or cur is None or view.delivered_at_ms is None:
            return False
        # after a cut, completions of what the higher rate sent only add to X, so a
        # bin that straddles the change still shows a shortfall
        cut = len(view.epochs) > 1 and view.epochs[-2].rate > cur.rate
        return (self._whole_bin(view) or cut) and x < rate * (1.0 - noise)

    @staticmethod
    def _pooled_shortfall(view: LedgerView, rate: float) -> float | None:
        r"""The delivered rate pooled over the current epoch's whole completion bins when it
        is below :math:`r (1 - 3/\sqrt{r s})` (s their span: three Poisson sigmas of the
        pooled count), else None."""
        x, bins = view.delivered_epoch_rps, view.delivered_epoch_bins
        if x is None or bins == 0:
            return None
        return x if x < rate * (1.0 - _poisson_band(rate, bins * view.part_ms)) else None

    def _service_slow(self) -> None:
        """The exceedance so far was the service's own, at any rate (``_queue_shown``).
        Nothing to do here; ``tally`` forgives its debt."""

    def _capacity_fell(self) -> None:
        """The capacity fell: a rate at or below the confirmed floor (shown within
        budget by the upper bound) is now shown over budget, or one below it probably
        over (at the floor's own rate the point estimate only adds to the evidence that
        confirmed it). Nothing to do here; ``tally`` forgives its debt."""

    def _delivery_cut(
        self,
        obs: Observation,
        view: LedgerView,
        rate: float,
        detail: dict[str, float | str],
        x: float | None = None,
    ) -> Decision:
        """Past capacity the delivery rate is the capacity: cut to drain the backlog
        (Little's law) within about one window, hold for the drain, then the setpoint."""
        x = (view.delivered_rps or 0.0) if x is None else x
        backlog = self._backlog(obs, x)
        cut = max(min(x, rate) - backlog / (self.window_ms / 1000.0), x / self.ramp_factor)
        draining = self.drain_until_ms is not None  # a cut again within the drain
        self.drain_until_ms = (view.watermark_ms or obs.wall_ms) + self.window_ms + self.lag_ms
        self.since_ms = self.drain_until_ms
        # the plant delivers less than a rate it was shown to keep within budget: its
        # capacity fell (a cut again within that drain follows the same fall)
        fell = (self.floor is not None and self.floor_confirmed and self.floor >= x) or (
            draining and self.drain_fell
        )
        self.drain_fell = fell
        if self.floor is not None and (
            self.floor >= x or (not self.floor_confirmed and self.floor > cut)
        ):
            self.floor = None
        if self.ceiling is not None and x < self.ceiling:
            self.healthy_ceiling = self.ceiling
        elif self.ceiling is None and x < rate:
            # a step with no ceiling above it (the slow start's, a climb after a lift)
            # collapsed within a quarter: the rate is known over budget by what was
            # delivered, never by the counts, as the watcher's soft ceiling is not;
            # restored once the queue empties if the collapse delivered a ramp step or
            # more below it (``_recovered``), and lifted as the watcher's is when the
            # counts below it do not rise (the real TeaStore, run 15: the cold store
            # delivered 38 req/s at 80 and the warm one then held 34 for 160 s)
            self.healthy_ceiling = self.watched = rate
        self.ceiling = x if self.ceiling is None else min(self.ceiling, x)
        if not fell:
            # the drain goes no higher than the setpoint it returns to: x is the plant's
            # throughput, above its capacity at the SLO, and a drain between the two keeps
            # the windows over the SLO while it lasts. After a fall the drain near x
            # measures the fallen capacity again (the first quarter after a fall
            # straddles it; halves: 87 req/s, then 76 from the drain's whole bin)
            cut = max(min(cut, self._setpoint(view, rate, peek=True)), x / self.ramp_factor)
        self.drain_target = cut
        self.knee_seen = True
        self.lifted = None
        self.restored = False
        return self._move(
            obs, rate, cut, "delivery", delivered_rps=round(x, 3), backlog=round(backlog, 1),
            **detail,
        )  # fmt: skip

    def _backlog(self, obs: Observation, x: float) -> float:
        """Little's law: the requests queued, :math:`Q = X (R - R_0)`, R the mean response
        time of the delivered rate's bin (the window's when it has none: the window's
        lags the queue by up to a window), :math:`R_0` the lowest window mean seen."""
        view = obs.ledger
        mean = view.delivered_mean_ms if view is not None else None
        if mean is None:
            mean = obs.stats.overall.mean_ms
        if mean is None or self.min_mean_ms is None:
            return 0.0
        return x * max(0.0, mean - self.min_mean_ms) / 1000.0

    def _stall(
        self, obs: Observation, view: LedgerView, rate: float, detail: dict[str, float | str]
    ) -> Decision:
        """The target hung (it delivers less than two ramp steps below the rate sent:
        more than one overshooting step can explain): no verdict on the rate. Send less
        while it hangs, and once it drains, return to the floor."""
        if self.stall_return is None:
            self.stall_return = self.floor if self.floor_confirmed else None
        self.drain_target = None
        self.drain_until_ms = (view.watermark_ms or obs.wall_ms) + self.window_ms + self.lag_ms
        self.since_ms = self.drain_until_ms
        return self._move(
            obs, rate, rate / self.ramp_factor, "stall",
            delivered_rps=round(view.delivered_rps or 0.0, 3), **detail,
        )  # fmt: skip

    def _stalled(self, view: LedgerView, rate: float) -> bool:
        x = view.delivered_rps
        return (
            x is not None
            and self._whole_bin(view)
            and x < rate / self.ramp_factor**2
            and self.min_mean_ms is not None
        )

    def _setpoint(self, view: LedgerView, rate: float, peek: bool = False) -> float:
        """The target below the ceiling: the secant from the floor's evidence, else the
        geometric midpoint of floor and ceiling, else the rate in force."""
        if self.stall_return is not None:
            back = self.stall_return
            if not peek:
                self.stall_return = None
            return back
        if self.ceiling is None:
            return rate
        if self.floor is not None and self.floor < self.ceiling:
            return math.sqrt(self.floor * self.ceiling)
        return min(rate, self.ceiling / math.sqrt(self.ramp_factor))

    def _over(
        self,
        obs: Observation,
        rate: float,
        ev: Evidence,
        view: LedgerView,
        detail: dict[str, float | str],
    ) -> Decision:
        j = ev.binding()
        assert j is not None
        q_b = self._q_budget(ev, j, rate, view)
        curve = self._curve(view, j)
        here = (rate, max(ev.predictions[j].q, 0.5 / ev.samples))
        below = [(r, q) for r, q, _n in curve if r < rate * (1 - 1e-9)]
        if self._stalled(view, rate):
            return self._stall(obs, view, rate, detail)
        hang = self._hang(view, rate, j)
        if hang is not None:
            return self._excuse(obs, rate, hang, detail)
        shown = max(range(len(ev.predictions)), key=lambda i: ev.predictions[i].share_lo)
        if not self._queue_shown(view, rate, ev, shown):
            # requests that met no queue of ours exceed T as the others do: the service
            # is slow (a cold JIT, empty caches), not loaded, and no lower rate makes a
            # lone request faster. No ceiling and no cut (the cold start's cut below is
            # for a start rate this cannot tell): the rate stays, judged again on the
            # samples sent from now on (mm8 four times slower, warm after 60 s: cut while
            # cold from 5 to 2.5 and 1.8 req/s, each cut a ceiling, and the warm plant
            # was held at 1.25 req/s, 1 % of its λ*, for the rest of the run)
            self.since_ms = view.watermark_ms if view.watermark_ms is not None else obs.wall_ms
            self._service_slow()
            return hold(obs, rate, "slow_service", **detail)
        if self._cold_start(view, rate):
            # the first verdict, at the start rate, nothing below it and the plant keeping
            # up with what is sent: a cold service (a JIT, empty caches) looks like this,
            # and no rate below says the exceedance rises with the rate. Cut, as a knee
            # would ask, but set no ceiling and forget the samples that judged it: the slow
            # start goes on from the fresh evidence below. By a whole ramp step, so that
            # its doublings visit the rates they would have without the cut: no verdict
            # on the rate moves them (cut by a half step, the demo target's 5 req/s start
            # went on 3.5, 7.1 ... 113, 226 req/s, 1.57 λ*, and the overshoot's windows and
            # their debt held the tracker at 100 req/s for a frontier of 144).
            self.start_checked = True
            self.since_ms = view.watermark_ms if view.watermark_ms is not None else obs.wall_ms
            return self._move(obs, rate, rate / self.ramp_factor, "cold_start", **detail)
        self.start_checked = True
        self.lifted = None
        self.restored = False
        self.knee_seen = True  # a rate over budget: the knee is known to be below it
        if self.ceiling is None or rate < self.ceiling:
            self.ceiling = rate
            self.ceiling_margin = max(0.0, math.log(here[1]) - math.log(max(q_b, 1e-12)))
            self.reference = None
        tentative = None if self.floor_confirmed else self.floor
        if self.floor is not None and (self.floor >= rate * (1 - 1e-9) or not self.floor_confirmed):
            if self.floor_confirmed:
                self._capacity_fell()
            self.floor = None
        if self._overloaded(view, rate):
            return self._delivery_cut(obs, view, rate, detail)
        pooled = self._pooled_shortfall(view, rate)
        if obs.zone is Zone.BREACH and pooled is not None:
            # shown over budget, the window breaching, and the delivered rate pooled over
            # the epoch short of r: past capacity, so cut to it rather than bisect
            return self._delivery_cut(obs, view, rate, detail, x=pooled)
        target = None
        if below:
            target = self._secant(below[-1], here, q_b)
        if target is None or not target < rate:
            target = (
                self._setpoint(view, rate) if self.floor else rate / math.sqrt(self.ramp_factor)
            )
        if self.floor is not None:
            target = max(target, self.floor)
        if tentative is not None and tentative < rate:
            # the slow start's last step overshot: bisect it (a secant from far below
            # the knee, where q is flat, points too low)
            target = max(target, math.sqrt(tentative * rate))
        target = min(target, rate * (1 - self._resolution(rate)))
        return self._move(obs, rate, target, "over_budget", **detail)

    def _hang(self, view: LedgerView, rate: float, j: int | None) -> tuple[int, int] | None:
        r"""The latest hang (``LedgerView.hangs``: a span with a request in flight and no
        completion) that ends within the evidence at r, if it explains an exceedance and is
        no gap of the rate: longer than the binding SLO's threshold T, and than the
        longest of the n gaps between the evidence's completions that a busy plant
        delivering x = min(r, delivered rates: the epoch's pooled, the last quarter's) leaves
        (:math:`P(\max \text{gap} > G) \approx n e^{-xG}`) at the confidence c,
        :math:`G > \ln(n/(1-c))/x`, with n at least rW. A queue past capacity completes at
        its service rate without a pause (a one-server plant's long service is such a
        gap: x, not r, sets its scale); a plant that paused completes nothing."""
        if not view.hangs or j is None:
            return None
        blocks = [b for b in self._blocks(view, rate, self.since_ms) if b.shape[0]]
        starts = [
            int(e.starts_ms[e.starts_ms >= self.since_ms][0])
            for e in view.epochs
            if same_rate(e.rate, rate) and (e.starts_ms >= self.since_ms).any()
        ]
        if not blocks or not starts:
            return None
        t = view.criteria[j].threshold_ms
        # a busy plant completes at the delivered rate, not the sent one (past capacity
        # the gaps are the service's, 1/x apart), and over every completion of the
        # evidence, not one window's
        x = min([rate] + [v for v in (view.delivered_epoch_rps, view.delivered_rps) if v])
        n = max(sum(b.shape[0] for b in blocks), rate * self.window_ms / 1000.0, 1.0)
        g_min = max(t or 0.0, 1000.0 * math.log(n / (1.0 - self.confidence)) / x)
        for a, b in reversed(view.hangs):
            if b > min(starts) and b - a > g_min:
                return a, b
        return None

    def _excuse(
        self, obs: Observation, rate: float, hang: tuple[int, int], detail: dict[str, float | str]
    ) -> Decision:
        """The exceedance at r is a hang's that has ended (its span is known from the
        completion that ended it): no verdict on the rate. The rate stays, and the evidence
        restarts a window after the hang's end, as after a cut: what is sent meanwhile
        queues behind the hang's backlog (``_blocks``)."""
        self.since_ms = max(self.since_ms, hang[1] + self.window_ms)
        return hold(obs, rate, "hang", hang_ms=hang[1] - hang[0], **detail)

    def _cold_start(self, view: LedgerView, rate: float) -> bool:
        """The start rate's first verdict over budget, with no other rate visited, the
        delivered rate keeping up and the latencies not rising: the later half of the
        rate's latest window holds no share over the window's median significantly above
        the earlier half's (their 90 % intervals apart: a service warming up gets faster;
        a queue building from empty moves the whole distribution up, not its tail). At
        the demo target's 5 req/s start two cold samples of 31 were over 250 ms, one in
        each half; "no larger share over the p95" then made the start rate a ceiling the
        run held below for its 45 s. At the median the halves hold counts a dozen samples
        can tell apart (the tiny plant's queue at its 5 req/s start shows there)."""
        if self.start_checked or self.ceiling is not None or self.knee_seen:
            return False
        if any(e.rows.shape[0] and not same_rate(e.rate, rate) for e in view.epochs):
            return False
        if self._overloaded(view, rate) or self._pooled_shortfall(view, rate) is not None:
            return False
        halves = self._halves(view, rate, 0.5)
        return halves is not None and not self._apart(*halves)

    def _queue_shown(self, view: LedgerView, rate: float, ev: Evidence, j: int) -> bool:
        r"""Is the exceedance at r its queue's, not the service's own? The *lone* samples
        sent at r since the evidence began (sent while none of ours was in flight:
        whether a request finds the plant idle does not depend on how long it then
        takes, ``loadguard.ledger``) tell. The exceedance of the SLO shown over budget
        is the service's when lone samples exceed its threshold and either

        * their share's 90 % lower bound (Jeffreys) is above :math:`q_B` of binomial
          windows (φ = 1, the largest any dispersion leaves) at r and at r/ρ, the cut's
          rate: requests that met no queue of ours break the budget by themselves; or
        * at least half the samples are lone (the plant idle of ours at half the sends
          or more), and the others' share over the threshold is not significantly
          above the lone ones' (their 90 % intervals not apart).

        A knee's exceedance is its queue's: past 100 req/s, 34 of mm8's 40,469 samples
        were lone, one of them over 250 ms (a lower bound of 0.15 % against a
        :math:`q_B` of 4 %); at mm2's 28 req/s, 17 of 66 were lone, one over. The tiny
        plant's lone samples are its bare 167 ms service (2 of 537 over 1 s). mm8 four
        times slower at the start: 2 of 8 lone samples over 250 ms at 5 req/s and 5 of
        28 at 2.5 (a :math:`q_B` of 1.6 %); three times slower, warm after 90 s, at
        2.5 req/s: 1 of 18 lone and 2 of the other 10, which had set a ceiling under
        which the upper bound of a 1 % error SLO over windows of 20 samples held the
        warm plant for the rest of the run."""
        col = view.lone_col + 2 * j
        blocks = self._blocks(view, rate, self.since_ms)
        n_l = sum(int(b[:, col].sum()) for b in blocks)
        k_l = sum(int(b[:, col + 1].sum()) for b in blocks)
        if k_l == 0:
            return True
        crit = view.criteria[j]
        q_b = max(
            q_at_share(window_samples(r, self.window_ms, self.min_samples), 1.0,
                       crit.allowed, crit.percentile, self.budget)
            for r in (rate, rate / self.ramp_factor)
        )  # fmt: skip
        if jeffreys(k_l, n_l, self.confidence)[0] > q_b:
            return False
        # the evidence pooled these blocks already: its counts at the SLO shown over
        n, k = ev.predictions[j].samples, ev.predictions[j].exceed
        if 2 * n_l < n:
            return True
        return n > n_l and self._apart(k - k_l, n - n_l, k_l, n_l)

    def _watch_knee(self, view: LedgerView, rate: float) -> bool:
        r"""Slow start's knee detector: the share of samples over the idle p(1-a) (a the
        binding percentile's allowance; idle: every rate below r so far, once they hold
        N a >= 5 samples), significantly higher at r (the 90 % intervals apart); or the
        same for the share over the idle median. The p95 moves long before the count over
        T does; and in the first quarter at a rate past a multi-server knee the queue
        has not yet reached the tail, but most samples already wait (the median moves
        first: mm8 went 160 -> 320 req/s on one quarter at 160, λ* 144). True when it fires
        on this call.

        A shift of the tail counts only once it has gone half way, in scale, to the SLO:
        the p(1-a) at r at least :math:`s = \sqrt{T / q_0}` times the idle one
        :math:`q_0`, T the tightest latency threshold (the stretch that would put the idle
        p(1-a) at T). A queue past a knee stretches the tail that far within a quarter or
        moves the median first (mm8 at 160 req/s: p95 215 ms against a midpoint of
        195 ms); a service whose latency grows smoothly with load moves its tail long
        before (the real TeaStore at 17 req/s: a p95 of ~136 ms, up from ~100 ms, against
        a midpoint of ~250 ms under a 500 ms SLO, and the step back held the run under
        16 req/s for two minutes). The median's shift is not held to s (at the shop's
        knee, 0.99 λ* on seed 101, it moves by less, and that gate cost the step back)
        but counts only once the tail it drags reaches into the SLO's range: the p(1-a)
        at r past :math:`\sqrt{m_0 T}`, the geometric midpoint of the idle median
        :math:`m_0` and T. Past a multi-server knee it is far past that (mm8 at 160
        req/s: p95 215 ms against ~97 ms); a service whose whole distribution drifts with
        load is not near it (the real TeaStore, run 21: the median test fired at 44 req/s
        with a p95 of 54 ms under a 500 ms SLO, against 80-100 ms from idle medians
        of 12-19 ms, and stepped the run back to 38 req/s)."""
        if self.knee_seen:
            return False
        allowed = [c.allowed for c in view.criteria if c.percentile and c.allowed > 0]
        if not allowed:
            return False
        a = max(allowed)
        here: list[np.ndarray] = []
        lower: list[np.ndarray] = []
        for e in view.epochs:
            if not e.rows.shape[0]:
                continue
            rows = e.rows[e.starts_ms >= self.since_ms]
            if same_rate(e.rate, rate):
                here.append(rows)
            elif e.rate < rate:
                lower.append(rows)
        idle = histogram(lower, view.hist_col, self.window_ms)
        n0 = int(idle.sum())
        hist = histogram(here, view.hist_col, self.window_ms)
        n = int(hist.sum())
        if n0 * a < 5 or n == 0:
            return False
        over = np.cumsum(idle[::-1])[::-1]  # idle samples in bins >= b
        limits = [c.threshold_ms for c in view.criteria if c.percentile and c.threshold_ms]
        t = min(limits) if limits else None
        for share in (a, 0.5):
            b = int(np.argmax(over <= share * n0))
            k0, k = int(over[b]), int(hist[b:].sum())
            # either shift counts once the p(1-a) at r is past the geometric midpoint of
            # the idle quantile tested and T (with no threshold: past the idle p(1-a))
            edge = hist_edge_ms(b)
            level = math.sqrt(edge * t) if t else (edge if share == a else 0.0)
            if _moved(hist, level, a) and self._apart(k, n, k0, n0):
                self.knee_seen = True
                return True
        return False

    def _step_back(self, view: LedgerView, rate: float) -> float | None:
        r"""The slow start's last step ends at a knee the watcher has just seen: back to
        :math:`\sqrt{f r}` (f the tentative floor below r), r a soft ceiling, before the
        count over T shows it. Only where the plant receives more than that midpoint (the
        delivered rate x > :math:`\sqrt{f r}`): when x is below it the generator's threads
        or the plant limit what is sent, and a lower rate in force changes nothing the
        plant sees. Not from a floor shown by its upper bound (after a lift): on the
        constant-service holdout the watcher's early latency shift then stepped back after
        every lift, a staircase that doubled the time to 90 % of λ* (98 → 196 s)."""
        if self.floor is None or self.floor_confirmed or self.floor >= rate:
            return None
        mid = math.sqrt(self.floor * rate)
        x = view.delivered_rps
        if x is None or x <= mid:
            return None
        self.ceiling, self.ceiling_margin, self.reference = rate, 0.0, None
        self.watched = rate
        self.restored = False
        return mid

    def _growing(self, view: LedgerView, rate: float) -> bool:
        """Is a queue building at r? Over the rate's latest window of quarters, the share
        over the p(1-a) of those samples (a the largest percentile allowance; from the
        histogram) is significantly higher in the later half than in the earlier one
        (the 90 % intervals apart). Past capacity a queue grows slowly at first (a
        random walk near ρ = 1): the count over T shows it last."""
        halves = self._halves(view, rate)
        return halves is not None and self._apart(*halves)

    def _halves(
        self, view: LedgerView, rate: float, share: float | None = None
    ) -> tuple[int, int, int, int] | None:
        """(k2, n2, k1, n1): over the rate's latest window of quarters, the samples of the
        later half and of the earlier half over the p(1-share) of them all (by default
        the p(1-a), a the largest percentile allowance), and their counts."""
        allowed = [c.allowed for c in view.criteria if c.percentile and c.allowed > 0]
        blocks = [b for b in self._blocks(view, rate, self.since_ms) if b.shape[0]]
        if not allowed or not blocks:
            return None
        level = max(allowed) if share is None else share
        rows = blocks[-1][-PARTS:]
        if rows.shape[0] < 2:
            return None
        half = rows.shape[0] // 2
        early = histogram([rows[:half]], view.hist_col, self.window_ms)
        late = histogram([rows[half:]], view.hist_col, self.window_ms)
        both = early + late
        n = int(both.sum())
        if n == 0 or early.sum() == 0 or late.sum() == 0:
            return None
        over = np.cumsum(both[::-1])[::-1]
        b = int(np.argmax(over <= level * n))
        return int(late[b:].sum()), int(late.sum()), int(early[b:].sum()), int(early.sum())

    def _resolution(self, rate: float) -> float:
        return 1.0 / math.sqrt(max(rate * self.window_ms / 1000.0, 1.0))

    def _under(
        self,
        obs: Observation,
        rate: float,
        ev: Evidence,
        view: LedgerView,
        detail: dict[str, float | str],
    ) -> Decision:
        j = ev.binding()
        assert j is not None
        confirmed = ev.share_hi < self.budget
        if self.floor is None or rate > self.floor or (confirmed and not self.floor_confirmed):
            self.floor, self.floor_confirmed = rate, confirmed
        if self.ceiling is not None and self.floor >= self.ceiling:
            self.floor, self.floor_confirmed = rate, confirmed
        q_b = self._q_budget(ev, j, rate, view)
        here = (rate, max(ev.predictions[j].q, 0.5 / ev.samples))
        point = (*here, ev.samples)  # as ``_curve`` gives the rates visited
        curve = self._curve(view, j)
        if self.ceiling is None:
            half = self.knee_seen or self.relifted
            target = rate * (math.sqrt(self.ramp_factor) if half else self.ramp_factor)
            if self.lifted is not None:
                # up to the old ceiling the climb is the slow start's (the plant got
                # faster: the way there is known); the probe past it goes two
                # resolutions past it, and from there on each half step waits for a
                # whole window (the queue near a knee builds over seconds): a lift on
                # noise costs one small probe, not a slow-start step into the old knee
                cap = self.lifted * (1.0 + 2.0 * self._resolution(self.lifted))
                if rate >= cap * (1 - 1e-9):
                    self.lifted = None
                    self.past_lift = True
                    return hold(obs, rate, "evidence", **detail)
                else:
                    target = min(target, cap)
            elif self.past_lift and self.knee_seen and self.after_lift:
                # past a lifted ceiling the knee is near but where is unknown (a JIT
                # warms for minutes): probe as BBR does, by two of the count's
                # resolutions a window, not by blind half steps
                target = min(target, rate * (1.0 + 2.0 * self._resolution(rate)))
            lower = [p for p in curve if p[0] < rate * (1 - 1e-9)]
            if lower and self.knee_seen:
                guess = self._counted_secant(lower[-1], point, q_b)
                if guess is not None and guess > rate:
                    target = min(target, guess)
            return self._move(obs, rate, target, "within_budget", **detail)
        above = [(r, q) for r, q, _n in curve if r > rate * (1 + 1e-9)]
        target = math.sqrt(rate * self.ceiling)
        if above:
            guess = self._secant(here, above[0], q_b)
            if guess is not None:
                target = min(target, guess)
        if target <= rate * (1 + self._resolution(rate)):
            if self._watched_ceiling() and self._false_knee(curve, rate, point, q_b):
                # the ceiling is the knee watcher's, never shown over budget, and the
                # counts below it put the budget's q a half step past it: the latency
                # shift the watcher saw was not the knee; the pooled evidence at the
                # old ceiling judges it now
                back, self.ceiling, self.watched = self.ceiling, None, None
                self.lifted = back  # past it: one small probe, then half steps
                self.after_lift = False  # no knee was there
                # no knee was seen either: the slow start's rules, and its watcher, again
                # (plant 1 from 6.48 req/s, seed 6: a watcher fired at 25.9 req/s, 0.18
                # lambda*, on a low draw of its idle tail; with the knee still "seen",
                # each half step past it waited for the upper bound, a minute a step at
                # these rates, and the run held 27.6 req/s)
                self.knee_seen = False
                return self._move(obs, rate, back, "within_budget", **detail)
            return hold(obs, rate, "resolved", **detail)
        return self._move(obs, rate, target, "within_budget", **detail)

    def _watched_ceiling(self) -> bool:
        """The ceiling is the knee watcher's (or a collapse's in a climb without one):
        a soft ceiling never shown over budget by the counts."""
        return (
            self.ceiling is not None
            and self.watched is not None
            and same_rate(self.ceiling, self.watched)
        )

    def _false_knee(
        self,
        curve: list[tuple[float, float, int]],
        rate: float,
        here: tuple[float, float, int],
        q_b: float,
    ) -> bool:
        r"""Was the knee watcher's soft ceiling a latency shift, not the knee? The count
        over T at the rates held below it (the secant through the last two, as
        ``_under`` extrapolates) reaches the budget's :math:`q_B` only a half slow-start
        step (:math:`\sqrt{ρ}`) past the ceiling or more, or does not rise at all (none
        counted at either rate: ``_counted_secant``)."""
        below = [p for p in curve if p[0] < rate * (1 - 1e-9)]
        if not below or self.ceiling is None:
            return False
        guess = self._counted_secant(below[-1], here, q_b)
        return guess is None or guess >= self.ceiling * math.sqrt(self.ramp_factor)

    def _recovered(self, obs: Observation, rate: float) -> bool:
        """A ceiling a delivery cut lowered by more than a ramp step is stale once the
        queue at r is empty; a capacity that really fell queues at the rate held below it."""
        old = self.healthy_ceiling
        if old is None or self.ceiling is None or old < self.ceiling * self.ramp_factor:
            return False
        return self._queue_empty(obs)

    def _queue_empty(self, obs: Observation) -> bool:
        """The window's mean response time is the lowest window mean seen to within three
        standard errors (a service time's standard deviation is about its mean)."""
        if self.min_mean_ms is None:
            return False
        mean, n = obs.stats.overall.mean_ms, obs.stats.overall.count
        if mean is None or n < self.min_samples:
            return False
        return mean <= self.min_mean_ms * (1.0 + 3.0 / math.sqrt(n))

    def _headroom_changed(self, view: LedgerView, rate: float, ev: Evidence, j: int) -> bool:
        """The plant got faster at the rate held below the ceiling. Either the exceedance
        curve fell by more than the ceiling was over budget (the recent share's upper
        bound below the reference's lower bound by the ceiling's margin; the reference:
        the first whole window held below the ceiling after it was set, kept while the
        rate is at or above the reference's), or the latency
        distribution shifted down: the reference's median is now above the recent p75
        (upper bound of the recent share over it < 25 %, from the histogram). Counts over
        T are too few at a low rate to show a warm-up; the median shows it in tens of
        samples, and moves by noise far less than from p50 to p75."""
        if self.ceiling is None or self.ceiling_margin is None:
            return False
        # the reference's lower bound, over a whole window at this rate: the floor
        # 0.5/N of a share of 0 is no lower bound (a few hundred samples early on
        # would make any later quiet pair of windows look like a fall)
        q_ref = ev.predictions[j].q_lo
        # kept while the rate rises: at a higher rate a stationary plant's exceedance
        # and latencies can only be higher, so a fall against a reference taken lower
        # down is still a change of the plant (a warm-up that ends during the climb)
        if self.reference is None or rate < self.reference[0] * (1 - 1e-9):
            if ev.subwindows < PARTS:
                return False
            blocks = self._blocks(view, rate, self.since_ms)
            hist = histogram(blocks, view.hist_col, self.window_ms)
            n = int(hist.sum())
            self.reference, self.reference_j = (rate, q_ref), j
            self.reference_median = int(np.argmax(np.cumsum(hist) >= n / 2)) if n else 0
            return False
        recent = self._recent(view, rate)
        # like with like: the binding SLO can change between ticks (a 1 % error SLO's
        # upper bound can pass the p95's), and a reference of one SLO against the recent
        # share of another is no fall (mm8 seed 2 lifted on 0.86 % of p95 against 0 errors)
        j = self.reference_j
        if j >= len(recent.predictions) or recent.predictions[j].samples == 0:
            return False
        p = recent.predictions[j]
        q_recent = max(p.q_hi, 0.5 / p.samples)
        if (
            self.reference[1] > 0.0
            and math.log(self.reference[1]) - math.log(q_recent) > self.ceiling_margin
        ):
            return True
        cur = view.current()
        if cur is None or self.reference_median is None:
            return False
        rows = cur.rows[cur.starts_ms >= self.since_ms][-2 * PARTS :]
        hist = histogram([rows], view.hist_col, self.window_ms)
        n = int(hist.sum())
        if n == 0:
            return False
        over = int(hist[self.reference_median + 1 :].sum())
        return jeffreys(over, n, self.confidence)[1] < 0.25


def _poisson_band(rate: float, span_ms: float) -> float:
    r"""Three Poisson sigmas, relative, of the count sent at ``rate`` over ``span_ms``:
    :math:`3/\sqrt{r s}`."""
    return 3.0 / math.sqrt(max(rate * span_ms / 1000.0, 1.0))


def _moved(hist: np.ndarray, level_ms: float, share: float) -> bool:
    """More than ``share`` of the histogram's samples at or over ``level_ms`` (to its
    bin): the quantile 1 - share at r has reached the level."""
    b = int(hist_bin(np.array([math.ceil(level_ms)], np.int64))[0])
    return int(hist[b:].sum()) > share * int(hist.sum())
