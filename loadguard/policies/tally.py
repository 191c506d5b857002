r"""The budget kept by tally: ``budget``'s search for the knee, then a stochastic
approximation of the rate whose share of violating windows is the budget B.

**Search.** Until the counting controller's bracket resolves (``budget`` holds
``resolved``: the target below its ceiling is within one resolution of the rate in
force), every decision is ``BudgetPolicy``'s own: the slow
start, the knee watcher, the secant toward :math:`q_B`, the delivery cut -- but for one
verdict taken on the user's own windows. Every W the search keeps the window the SLO
reads if all it completed was sent at the rate in force (it ends a window after the rate
took hold, two after a cut). When k of the n windows kept at r since the evidence's
start violated and their exact (Clopper-Pearson) lower bound at the policy's confidence,
:math:`\mathrm{Beta}^{-1}(δ;\ k,\ n-k+1) > B`, r is over budget, whatever the model
of the counts predicts: no dispersion is assumed, and a rate whose windows' share is B
is called over with a probability of at most δ = 5 %. It matters where the budget is
small: at B = 1 % one violating window in five decides (at B = 5 %, 6 of 43), and near
a heavy tail's knee the model's upper bound is still undecided then.

**Tracking.** From then on the rate is judged once per window W on the window the SLO
reads (the tick's completion window: I = 1 when it breaches, 0 when it is within the
SLO, no verdict on NO_DATA) and moved by the Robbins-Monro step on the indicator,

.. math::

    \ln r_{k+1} = \ln r_k + γ_k (B - I_k), \qquad γ_k = 2 ε(r_k) = 2/\sqrt{r_k W},

so a clean window raises the rate by :math:`γ B` and a violating one cuts it by
:math:`γ (1 - B)`. Summed over the K windows judged, with the step's weights,

.. math::

    \frac{\sum_k γ_k I_k}{\sum_k γ_k} = B - \frac{\ln r_K - \ln r_0}{\sum_k γ_k},

so whatever the plant -- its tail, its dispersion, its sample count -- the weighted
share of violating windows approaches B as the run goes on, and a rate that stays
bounded cannot spend more: the budget holds by construction, not by a model of the
windows. The step is the count's resolution ε (a rate change smaller than one window's
Poisson noise of :math:`1/\sqrt{rW}` is not told apart) doubled; with 3ε the suite
measured the same violations at 2-4 points less efficiency (docs/controller.md, "Ninth
pass"), so the factor 2 is a measured choice, not a derived one.

**Debt.** Windows judged outside the tracker (the search's probes, a drain) spend
budget too: every W the policy counts :math:`D \mathrel{+}= I - B` over them, and when
tracking starts or a drain returns, the rate is cut by :math:`e^{-γ \max(0, D)}` -- the
steps the tracker would have taken had it judged those windows -- and D is settled. A
stall (the target hung: an outage, no verdict on the rate) is not the rate's debt and
is forgiven, and so are the windows before a verdict that the exceedance is the
service's own (``BudgetPolicy._queue_shown``: a cold service, over T at any rate); nor
is the drain after a capacity drop: a delivery cut whose delivered rate
X falls below the confirmed floor f (a rate already shown within budget) by more than
the bin's three Poisson sigmas, :math:`X < f (1 - 3/\sqrt{f s})`, is the plant's change,
not the rate's overshoot, and its drain's windows are not counted. Nor is the debt left
when the search sees the capacity fall without a queue: a rate at or below f shown over
budget, or one below f probably over (``BudgetPolicy._capacity_fell``). The windows
before it were spent on the plant before the fall; charged, they started the tracker
a quarter below the rate the search resolved to after a 120 s dip of a quarter of the
servers (holdout plant 16, seed 1: 101 -> 75 req/s for a restored λ* of 145).

**A capacity that rises while tracking.** The tracker moves by :math:`γB` a window
(0.4 % at 60 req/s), so it cannot follow a service that warms up for minutes (a JIT).
Its evidence is pooled over the tracked rates, which differ by a few γ: the *reference*
is the first two windows' quarters sent a window after tracking starts (taken again
after a drain, and when the rate falls below the reference's lowest rate: lower down, a
lower exceedance says nothing). Every window the last two spans of two windows, all at
or above the reference's rates, are compared with it. When, in both spans, the share
over T has fallen by more than the ceiling was over budget (:math:`\ln q_{lo,ref} - \ln
q_{hi} > \ln(q_c/q_B(c))`: the old ceiling would now be within budget), or the share
over the reference's own p(1-a) (which has counts where T has none) has fallen
significantly -- each pair of 90 % intervals at the sample size the larger of the two
measured dispersions leaves -- the plant got faster. So it did when, in both spans, the
share over the median of the search's samples at lower rates (sent before tracking
began, after the last lift) has fallen significantly: latency does not fall as the rate
rises on a stationary plant, and a reference taken once the plant had warmed cannot show
a warm-up that a collapse's ceiling still reflects. Either way the ceiling is lifted as
``budget`` lifts it (``budget``'s search again, from the rate held, its evidence from
the recent windows) and tracking resumes once that search resolves.

**Events.** While tracking, a breaching window whose delivered rate falls short of the
rate sent (a queue grows: ``BudgetPolicy._overloaded``) takes budget's delivery cut
(past capacity the delivery rate is the capacity, TCP BBR), with the tracker's rate set
to :math:`X e^{-γ (1 - B)}`; a hang takes budget's stall and returns to the tracker's
rate.

Parameters are ``BudgetPolicy``'s: ``budget`` B, ``window_ms`` W, ``lag_ms``,
``min_samples``, ``confidence`` and ``ramp_factor``. Each update ends in budget's
clamp :math:`r' \in [r/ρ, ρ r]`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from loadguard.evidence import Evidence, histogram, pool
from loadguard.exceedance import Prediction, exact_lo, jeffreys
from loadguard.ledger import COL_MAX, COL_N, HIST_BINS, PARTS, Criterion, LedgerView, hist_edge_ms
from loadguard.observation import Observation, Zone
from loadguard.policies.base import Decision, decide, hold
from loadguard.policies.budget import BudgetPolicy, _poisson_band
from loadguard.rate import same_rate

#: The tracker's step in resolutions ε = 1/√(rW) (measured: 2 against 3).
STEP_RESOLUTIONS = 2.0


@dataclass
class TallyPolicy(BudgetPolicy):
    name: str = "tally"

    #: the search is over: the tracker moves the rate
    tracking: bool = field(default=False, init=False)
    #: the tracker's rate (what a drain returns to)
    track_rate: float | None = field(default=None, init=False)
    #: the next tick (``timer_ms``) at which the tracker judges a window
    next_ms: int | None = field(default=None, init=False)
    #: the next tick at which any window is counted (debt)
    count_ms: int | None = field(default=None, init=False)
    #: violations less B over the windows judged outside the tracker, not yet settled
    debt: float = field(default=0.0, init=False)
    #: the drain in progress follows a capacity drop (the plant's, forgiven)
    dropped: bool = field(default=False, init=False)
    judged: int = field(default=0, init=False)
    violated: int = field(default=0, init=False)
    #: the send time from which the tracker's evidence counts
    track_since_ms: int = field(default=0, init=False)
    #: (lowest rate, binding SLO j, tail bin) of the tracker's reference
    track_ref: tuple[float, int, int | None] | None = field(default=None, init=False)
    #: the search's windows judged wholly at one rate: (rate, end ms, violated)
    held: list[tuple[float, int, bool]] = field(default_factory=list, init=False)
    #: the send time at which tracking last began (the search's evidence is older)
    track_began_ms: int = field(default=0, init=False)
    #: the send time of the last ceiling lift (the plant changed: older samples are stale)
    lifted_ms: int = field(default=0, init=False)

    @staticmethod
    def _now_ms(obs: Observation) -> int:
        """The ledger's send-time watermark (the wall clock without one)."""
        view = obs.ledger
        return int(view.watermark_ms or obs.wall_ms) if view is not None else int(obs.wall_ms)

    def _gain(self, rate: float) -> float:
        return STEP_RESOLUTIONS * self._resolution(rate)

    def _settle(self, rate: float) -> float:
        """The rate less the tracker's steps for the debt; the debt settled."""
        out = rate * math.exp(-self._gain(rate) * max(0.0, self.debt))
        self.debt = min(0.0, self.debt)
        return out

    def _count(self, obs: Observation, tracked: bool) -> None:
        """Once per window, in every phase: a window the tracker does not judge is debt."""
        if self.count_ms is None:
            self.count_ms = obs.timer_ms
        if obs.timer_ms < self.count_ms or obs.zone is Zone.NO_DATA:
            return
        self.count_ms = obs.timer_ms + self.window_ms
        if not tracked and not (self.dropped and self.drain_until_ms is not None):
            self.debt += (1.0 if obs.zone is Zone.BREACH else 0.0) - self.budget
        if not tracked and self.drain_until_ms is None:
            self._hold_window(obs)

    def _hold_window(self, obs: Observation) -> None:
        """Keep the search's window if every sample it completed was sent at the rate in
        force: it ends a window after the rate took hold, two after a cut (the first
        still queues behind what the higher rate sent, as ``BudgetPolicy._blocks``)."""
        view = obs.ledger
        cur = view.current() if view is not None else None
        if view is None or cur is None or not same_rate(cur.rate, obs.commanded_rps):
            return
        end = view.watermark_ms if view.watermark_ms is not None else obs.wall_ms
        cut = len(view.epochs) > 1 and view.epochs[-2].rate > cur.rate
        if end - self.window_ms * (2 if cut else 1) >= cur.from_ms:
            self.held.append((cur.rate, end, obs.zone is Zone.BREACH))

    def _windows_over(self, obs: Observation) -> tuple[int, int] | None:
        """(violated, judged) of the search's windows at the rate in force since the
        evidence's start, when they alone show it over budget: the exact lower bound of
        their share above B. The count of the user's own windows needs no model of their
        dispersion, and it can decide while the model's bound cannot (the shop, seed 4,
        B = 1 %: one violating window of one at 160 req/s, share_hi still 0.54)."""
        rate = obs.commanded_rps
        mine = [
            bad for r, end, bad in self.held
            if same_rate(r, rate) and end - self.window_ms >= self.since_ms
        ]  # fmt: skip
        k, n = sum(mine), len(mine)
        if k and exact_lo(k, n, self.confidence) > self.budget * (1 + 1e-9):
            return k, n
        return None

    def _delivery_cut(
        self,
        obs: Observation,
        view: LedgerView,
        rate: float,
        detail: dict[str, float | str],
        x: float | None = None,
    ) -> Decision:
        """budget's cut; a delivered rate below a rate already shown within budget (the
        confirmed floor, by more than three Poisson sigmas of the bin) is the plant's drop,
        not the rate's: the drain's windows are not debt."""
        got = (view.delivered_rps or 0.0) if x is None else x
        if self.floor is not None and self.floor_confirmed and not self.dropped:
            self.dropped = got < self.floor * (1.0 - _poisson_band(self.floor, view.part_ms))
        return super()._delivery_cut(obs, view, rate, detail, x)

    def _service_slow(self) -> None:
        """The windows over the SLO while the service itself was slow (its lone requests
        over T, at any rate) were not the rate's: their debt is forgiven, as a stall's.
        On real JMeter, the demo target four times slower for its first 60 s: held at
        5 req/s through five such verdicts, and the debt of their windows then cut the
        tracker's start from 146.7 to 124.8 req/s, held at 128 for the second half."""
        self.debt = min(0.0, self.debt)

    def _capacity_fell(self) -> None:
        """The windows over the SLO before a fall was seen were another plant's: the
        debt they left is forgiven, as a drain's after a delivered rate below the floor."""
        self.debt = min(0.0, self.debt)

    def _setpoint(self, view: LedgerView, rate: float, peek: bool = False) -> float:
        """Where a drain or a stall returns to: while tracking, the tracker's rate (less
        a drain's debt; a stall's and a capacity drop's are forgiven). ``peek``: the
        search's setpoint, no state changed; while tracking, none (the tracker sets its
        return rate after the cut)."""
        if peek:
            return math.inf if self.tracking else super()._setpoint(view, rate, peek=True)
        dropped, self.dropped = self.dropped, False
        if not self.tracking:
            return super()._setpoint(view, rate)
        back = self.track_rate if self.track_rate is not None else rate
        if self.stall_return is None and not dropped:
            back = self._settle(back)
        else:
            self.debt = min(0.0, self.debt)
        self.stall_return = None
        self.track_rate = back
        return back

    def decide(self, obs: Observation) -> Decision:
        self._count(obs, self.tracking and self.drain_until_ms is None)
        if not self.tracking:
            return self._search(obs)
        rate = obs.commanded_rps
        view = obs.ledger
        if view is None:
            return hold(obs, rate, "no_data")
        self._note_mean(obs)
        if self.drain_until_ms is not None:
            d = super().decide(obs)  # budget's drain, returning to _setpoint
            if self.drain_until_ms is None:
                self.next_ms = obs.timer_ms + self.window_ms
                # the drain's quarters are no reference: start it again after them
                self._restart_reference(view.watermark_ms or obs.wall_ms)
            return d
        if obs.zone is Zone.BREACH and self._overloaded(view, rate):
            if self._stalled(view, rate):
                self.stall_return = self.track_rate
                return self._stall(obs, view, rate, {})
            x = view.delivered_rps or 0.0
            d = self._delivery_cut(obs, view, rate, {})
            base = rate if self.track_rate is None else self.track_rate
            self.track_rate = min(base, x * math.exp(-self._gain(rate) * (1 - self.budget)))
            return d
        assert self.next_ms is not None
        if obs.timer_ms < self.next_ms or obs.zone is Zone.NO_DATA:
            return hold(obs, rate, "tracking")
        self.next_ms = obs.timer_ms + self.window_ms
        if self._faster(view, rate):
            return self._lift_from_tracking(obs, view, rate)
        bad = obs.zone is Zone.BREACH
        self.judged += 1
        self.violated += int(bad)
        gamma = self._gain(rate)
        self.track_rate = rate * math.exp(gamma * (self.budget - float(bad)))
        return decide(
            obs, rate, self.track_rate, "tally_over" if bad else "tally_within",
            step=round(gamma, 5), judged=self.judged, violated=self.violated,
            debt=round(self.debt, 4),
        )  # fmt: skip

    def _quarters(self, view: LedgerView) -> list[tuple[float, np.ndarray]]:
        """(rate, row) of every mature quarter sent since ``track_since_ms``, in order."""
        out = []
        for e in view.epochs:
            for row in e.rows[e.starts_ms >= self.track_since_ms]:
                out.append((e.rate, row))
        return out

    @staticmethod
    def _epoch_blocks(quarters: list[tuple[float, np.ndarray]]) -> list[np.ndarray]:
        """The quarters' rows, one block per epoch: whole windows never straddle two."""
        blocks: list[list[np.ndarray]] = []
        last: float | None = None
        for r, row in quarters:
            if last is None or r != last:
                blocks.append([])
            blocks[-1].append(row)
            last = r
        return [np.vstack(b) for b in blocks]

    def _pool(self, view: LedgerView, quarters: list[tuple[float, np.ndarray]]) -> Evidence:
        return pool(
            self._epoch_blocks(quarters), view.criteria, min(r for r, _ in quarters),
            self.window_ms, self.confidence, min_samples=self.min_samples,
        )  # fmt: skip

    def _counts(
        self, view: LedgerView, quarters: list[tuple[float, np.ndarray]], j: int, b: int | None
    ) -> Prediction | None:
        """The quarters' count over the threshold of criterion j (``b`` None), or of
        their latencies in histogram bins >= b, pooled as an SLO's count is (``pool``:
        its dispersion measured over the windows and quarters)."""
        if b is None:
            crit = view.criteria[j]
            rows = [(r, row[[COL_N, COL_MAX, 2 + 2 * j, 3 + 2 * j]]) for r, row in quarters]
        else:
            h = view.hist_col
            allowed = [c.allowed for c in view.criteria if c.percentile and c.allowed > 0]
            crit = Criterion("tail", max(allowed), hist_edge_ms(b))
            rows = [
                (r, np.array([row[COL_N], row[COL_MAX], row[h : h + HIST_BINS].sum(),
                              row[h + b : h + HIST_BINS].sum()], np.int64))
                for r, row in quarters
            ]  # fmt: skip
        if not rows:
            return None
        ev = pool(
            self._epoch_blocks(rows), (crit,), min(r for r, _ in rows), self.window_ms,
            self.confidence, min_samples=self.min_samples,
        )  # fmt: skip
        return ev.predictions[0] if ev.predictions else None

    def _restart_reference(self, now_ms: int) -> None:
        """The tracker's reference is taken again, from samples sent a window after
        ``now_ms``: the rate was just changed, and the first window after a cut still
        queues behind what the higher rate sent (``BudgetPolicy._blocks``)."""
        self.track_ref = None
        self.track_since_ms = now_ms + self.window_ms

    def _faster(self, view: LedgerView, rate: float) -> bool:
        """Has the plant got faster since the tracker's reference (module doc)?"""
        if self.track_ref is not None and rate < self.track_ref[0] * (1 - 1e-9):
            # lower down, a lower exceedance says nothing: start again
            self._restart_reference(view.watermark_ms or 0)
        if self._faster_since(view, self.track_began_ms):
            return True
        quarters = self._quarters(view)
        span = 2 * PARTS
        if len(quarters) < span:
            return False
        if self.track_ref is None:
            first = quarters[:span]
            j = self._pool(view, first).binding()
            if j is None:
                return False
            b = None
            if any(c.percentile and c.allowed > 0 for c in view.criteria):
                a = max(c.allowed for c in view.criteria if c.percentile and c.allowed > 0)
                hist = histogram(self._epoch_blocks(first), view.hist_col, self.window_ms)
                over = np.cumsum(hist[::-1])[::-1]  # samples in bins >= b
                b = int(np.argmax(over <= a * int(hist.sum())))
            self.track_ref = (min(r for r, _ in first), j, b)
            return False
        low, j, b = self.track_ref
        if len(quarters) < 3 * span:
            return False
        parts = (quarters[-2 * span : -span], quarters[-span:])
        if min(r for part in parts for r, _ in part) < low * (1 - 1e-9):
            return False
        margin = self.ceiling_margin if self.ceiling_margin is not None else 0.0
        # the count over T by more than the ceiling was over budget (the old ceiling
        # would now be within budget); the tail over the reference's p(1-a), which
        # has counts where T has none (far below the knee), by any significant fall
        tests = [(None, margin)] + ([(b, 0.0)] if b is not None else [])
        ref = quarters[:span]
        return any(self._fell(view, ref, quarters, span, j, bin_, m) for bin_, m in tests)

    def _faster_than_below(
        self,
        view: LedgerView,
        quarters: list[tuple[float, np.ndarray]],
        span: int,
        before_ms: int,
    ) -> bool:
        """Latency does not fall as the rate rises on a stationary plant: if the share of
        the last two spans' samples over the median of the samples sent earlier at a
        lower rate (before ``before_ms``, after the last lift, which marks a changed
        plant, and no more than a span before the ceiling was met; the first window
        after a cut left out, as ``_blocks`` does: it queues behind the higher rate's
        backlog) is significantly below that median's one half
        in both spans, the plant got faster since those rates were held. The earlier
        samples are taken pooled, and each epoch of a whole window or more on its own: a
        warm-up's cold epochs are diluted in a pool that later, warm visits dominate
        (the warmup plant, seed 3: a ceiling of 113 req/s set cold at 64 s held the
        tracker under it from 154 to 384 s), and one epoch's median shows them. The
        tracker's own reference cannot show it when the plant had warmed before tracking
        began: on the real TeaStore a cold store's collapse at 80 req/s set a ceiling at
        its delivered 61 req/s, and the warm store then answered at a p95 of 20-30 ms
        under it for 140 s while the tracker climbed by γB a window."""
        low = min(r for r, _ in quarters[-2 * span :])
        # no older than a span before the ceiling was met: a plant that got faster
        # before it did is no stale ceiling (M/M/8 4x slow warm by 60 s, seed 1: a
        # delivery cut at 226 req/s set 154 at 78 s, warm, and the cold start's samples
        # at 3.5 req/s lifted it)
        oldest = max(self.lifted_ms, self._ceiling_met_ms(view) - span * view.part_ms)
        pooled: list[tuple[float, np.ndarray]] = []
        for e, begin in self._settled(view):
            if e.rate < low * (1 - 1e-9):
                keep = (e.starts_ms >= max(begin, oldest)) & (e.starts_ms < before_ms)
                earlier = [(e.rate, row) for row in e.rows[keep]]
                pooled.extend(earlier)
                if len(earlier) >= PARTS and self._below_median(view, earlier, quarters, span):
                    return True
        return len(pooled) >= span and self._below_median(view, pooled, quarters, span)

    def _ceiling_met_ms(self, view: LedgerView) -> int:
        """When the latest epoch at or above the ceiling began (0 without a ceiling)."""
        if self.ceiling is None:
            return 0
        for e in reversed(view.epochs):
            if e.rate >= self.ceiling * (1 - 1e-9):
                return int(e.from_ms)
        return 0

    def _below_median(
        self,
        view: LedgerView,
        earlier: list[tuple[float, np.ndarray]],
        quarters: list[tuple[float, np.ndarray]],
        span: int,
    ) -> bool:
        """Both of the last two spans' shares over the ``earlier`` samples' median
        significantly below its one half (``_fell``; a count over a histogram bin is
        no criterion's, so none is named)."""
        hist = histogram(self._epoch_blocks(earlier), view.hist_col, self.window_ms)
        over = np.cumsum(hist[::-1])[::-1]  # samples in bins >= b
        n = int(hist.sum())
        if n == 0:
            return False
        b = int(np.argmax(over <= 0.5 * n))
        return self._fell(view, earlier, quarters, span, 0, b, 0.0)

    def _fell(
        self,
        view: LedgerView,
        reference: list[tuple[float, np.ndarray]],
        quarters: list[tuple[float, np.ndarray]],
        span: int,
        j: int,
        b: int | None,
        margin: float,
    ) -> bool:
        """The ``reference``'s count (the tracker's first ``span`` quarters, or the
        search's samples at lower rates) against each of the last two spans of
        ``quarters``: the share's 90 % intervals apart by more than ``margin`` (in ln q),
        each at the sample size the larger of the two measured dispersions leaves (a
        quiet spell measures a low one: on the outage plant a span's own estimate of 1
        against the reference's 25 let a fall pass; the dispersion over every quarter
        since the reference is no better, as the change itself inflates it). Both spans
        must show it: near a knee a quiet spell lasts a window or two, and the test runs
        every window."""
        ref = self._counts(view, reference, j, b)
        if ref is None or ref.exceed == 0:
            return False
        for part in (quarters[-2 * span : -span], quarters[-span:]):
            p = self._counts(view, part, j, b)
            if p is None:
                return False
            phi = max(1.0, ref.dispersion.estimate, p.dispersion.estimate)
            lo = jeffreys(ref.exceed / phi, ref.samples / phi, self.confidence)[0]
            hi = jeffreys(p.exceed / phi, p.samples / phi, self.confidence)[1]
            if lo <= 0.0 or math.log(lo) - math.log(hi) <= margin:
                return False
        return True

    def _headroom_changed(self, view: LedgerView, rate: float, ev: Evidence, j: int) -> bool:
        """``budget``'s test at the rate held below the ceiling, or latency over the last
        two spans of two windows sent since the evidence's start (at the rates the search
        held, the first window after a cut left out) below the one at a lower rate sent
        before them (``_faster_than_below``): the search moves every window or two, so a
        test at the rate in force alone waited for the tracker (the real TeaStore, run
        28: warm at 60 s, p95 47-53 ms at 33-43 req/s under a cold collapse's ceiling of
        46.8, lifted at 158 s)."""
        return super()._headroom_changed(view, rate, ev, j) or self._faster_since(view)

    def _faster_since(self, view: LedgerView, until_ms: int | None = None) -> bool:
        """``_faster_than_below`` over the last two spans of two windows of every quarter
        sent since the evidence's start (the first window after a cut left out), against
        the samples sent before them (and before ``until_ms``: while tracking, the
        search's, not the tracker's own windows a few γ apart, which would make every
        window one more comparison on a stationary plant). The search's last spans count
        for the tracker from its start: its own quarters start a window after the
        hand-over (the real TeaStore, run 29, round 2: the search resolved at 90 s
        after 46 s at 50-59 req/s with a p95 of 37-50 ms under a cold collapse's
        ceiling, and the tracker's test lifted it at 146 s)."""
        span = 2 * PARTS
        # the last two spans only, gathered from the newest epoch back (the evidence's
        # start can lie far back while tracking)
        sent: list[tuple[float, int, np.ndarray]] = []
        for e, begin in reversed(list(self._settled(view))):
            keep = e.starts_ms >= max(begin, self.since_ms)
            sent[:0] = zip(itertools.repeat(e.rate), e.starts_ms[keep], e.rows[keep])
            if len(sent) >= 2 * span:
                break
        if len(sent) < 2 * span:
            return False
        sent = sent[-2 * span :]
        before = int(sent[0][1])
        if until_ms is not None:
            before = min(before, until_ms)
        return self._faster_than_below(view, [(r, row) for r, _, row in sent], span, before)

    def _shown_over(self, obs: Observation) -> Decision | None:
        view = obs.ledger
        if view is None or self.drain_until_ms is not None:
            return None
        seen = self._windows_over(obs)
        if seen is None:
            return None
        rate = obs.commanded_rps
        ev = self._evidence(view, rate, self.since_ms, floor=True)
        if ev.samples < self.min_samples or ev.binding() is None:
            return None
        detail = self._detail(ev)
        detail.update(windows_violated=seen[0], windows_judged=seen[1])
        return self._over(obs, rate, ev, view, detail)

    def _lift_from_tracking(self, obs: Observation, view: LedgerView, rate: float) -> Decision:
        """The plant got faster: ``budget``'s lift, and its search from the rate held."""
        self.tracking = False
        self.track_ref = None
        self.lifted_ms = self._now_ms(obs)
        self.lifted = rate if self.ceiling is None else max(self.ceiling, rate)
        self.ceiling = self.ceiling_margin = self.reference = None
        self.knee_seen, self.relifted, self.past_lift = False, True, False
        self.after_lift = True
        self.floor, self.floor_confirmed = rate, True
        self.since_ms = self._recent_from(view, self.track_since_ms)
        return hold(obs, rate, "ceiling_lifted", lifted=round(self.lifted, 3))

    def _search(self, obs: Observation) -> Decision:
        """budget's decisions until its bracket resolves; a rate whose own windows show
        it over budget is (``_windows_over``), whatever the model predicts."""
        d = self._shown_over(obs)
        if d is not None:
            return d
        d = super().decide(obs)
        if d.reason == "ceiling_lifted":
            self.lifted_ms = self._now_ms(obs)
        if d.reason != "resolved":
            return d
        self.tracking = True
        self.track_began_ms = self._now_ms(obs)
        self._restart_reference(self.track_began_ms)
        self.next_ms = obs.timer_ms + self.window_ms
        debt = self.debt
        self.track_rate = self._settle(d.new_rate)
        if self.track_rate < d.new_rate * (1 - 1e-9):
            return d.with_rate(
                self.track_rate, "tally_debt", debt_rate=round(d.new_rate, 3), debt=round(debt, 4)
            )
        return d
