r"""The exceedance ledger: every sample counted against the rate in force when it was sent.

A window keyed on completion time mixes rates: after a change it holds samples sent
under the old rate, and a backlog sent earlier shows up as the new rate's latency. The
ledger keys on the *send* time instead. JMeter's ``timeStamp`` is a sample's start, and
a rate pushed at wall time :math:`t_p` is in force from :math:`t_p + L` (L, the
actuation lag), so the rates form *epochs* :math:`[t_p + L, t_{p'} + L)` and a sample
sent at s belongs to the epoch that holds s. Within an epoch the samples are counted per
*sub-window* of length :math:`w = W/s` (s = ``PARTS``) from the epoch's start: the
sample count n, the count over each criterion's threshold (``Criterion``: a percentile,
max or error-rate SLO, overall or for the labels a ``[[slo.label]]`` rule matches,
pooled), and the largest elapsed time.

A sample is *lone* when it was sent while no other sample was in flight (every sample
sent before it had completed by its send time). Whether a request finds the plant idle
does not depend on how long it then takes, so the lone samples' latencies are an unbiased
draw of the service's own (one that met no queue of ours), whatever the rate: a plant
whose lone requests exceed T is slow, not loaded, and a lower rate cannot make them
faster. Each row also counts, per criterion, the lone samples and those of them over its
threshold (or failed). A sample sent earlier can complete later and be fed later: the
ledger keeps the samples of the last window and T_max and, when a later one shows that
one of them was not lone after all, takes it back from its row.

A sub-window :math:`[a, a + w)` is *mature* once the newest completion seen is past
:math:`a + w + T_{max}`: a sample sent in it has by then either completed or been
running for more than :math:`T_{max}`, so it is over every latency threshold (and is
counted when it completes; a window that fails in flight shows up in the delivered
rate first). Only mature sub-windows are evidence.

Completions are also counted by completion time in bins of w aligned to the first
epoch, with each criterion's counts (the SLO's own windows are keyed on completion, and a
burst of slow samples sent apart can complete together: the dispersion of completion
bins bounds that of the windows the user reads), and the successful ones give the
*delivered* rate (TCP BBR's delivery rate: past capacity it is the capacity; a failure
answered at once by a full queue delivers nothing).

A *hang* is a span in which a request was in flight and nothing completed: in
completion order, from the later of a sample's send time and the previous completion to
its own completion. The ledger keeps those longer than the smallest latency threshold
(a shorter one explains no exceedance); the policy tells a pause of the plant from a gap
of its arrivals (``BudgetPolicy._hang``).

Memory: one row of ``2 + 4C + HIST_BINS`` integers per sub-window of the run (a 10 s
window and 4 parts: 1,440 rows an hour) plus one count per completion bin, O(run length
/ w), and the samples of the last window and T_max; never O(samples). The ledger is fed
by the loop (``add``, ``rate_in_force``) like the ``Window``; the policy reads an
immutable ``LedgerView`` in the observation.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from loadguard.jtl.sample import SampleBatch
from loadguard.rate import same_rate

I64 = npt.NDArray[np.int64]

#: Sub-windows per window. The Pearson dispersion statistic wants about 5 expected counts
#: per cell; at ``min_samples`` = 20 per window (the default) a quarter holds 5.
PARTS = 4

#: Hangs a ledger keeps (the newest): a policy reads those overlapping the evidence at
#: the rate in force, which hangs older than a few windows never do.
MAX_HANGS = 64

#: Columns of a sub-window row before the criteria's counts.
COL_N, COL_MAX = 0, 1

#: A coarse latency histogram per sub-window, after the criteria's columns: bin i holds
#: elapsed times in [R^i, R^(i+1)) ms (bin 0 also 0 ms, the last everything above), so
#: the share over a threshold that no SLO names (the idle p95, for the knee) can be
#: counted later. R = 2^(1/4): a bin is 19 % wide, finer than the rise it must show.
HIST_RATIO = 2.0**0.25
HIST_BINS = 64


def hist_bin(elapsed_ms: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The histogram bin of each elapsed time."""
    safe = np.maximum(elapsed_ms, 1).astype(np.float64)
    out: npt.NDArray[np.int64] = np.clip(
        np.floor(np.log(safe) / math.log(HIST_RATIO)), 0, HIST_BINS - 1
    ).astype(np.int64)
    return out


def hist_edge_ms(b: int) -> float:
    """The lower edge of bin ``b`` (ms)."""
    return float(HIST_RATIO**b)


_PERCENTILE_METRICS = {"p50_ms": 0.50, "p90_ms": 0.90, "p95_ms": 0.95, "p99_ms": 0.99}


@dataclass(frozen=True, slots=True)
class Criterion:
    """A countable SLO: at most ``allowed`` of a window's samples over ``threshold_ms``
    (latency) or failed (``metric == "error_rate"``), for the samples ``pattern``
    matches (``None``: all)."""

    metric: str
    allowed: float
    threshold_ms: float | None
    pattern: str | None = None

    @property
    def percentile(self) -> bool:
        return self.metric != "error_rate"

    @property
    def name(self) -> str:
        return self.metric if self.pattern is None else f"label~{self.pattern}:{self.metric}"


def criteria_of(spec: object) -> tuple[Criterion, ...]:
    """The countable SLOs of an ``SloSpec`` (a mean SLO is not a count: it is left to the
    window's zone)."""
    out: list[Criterion] = []
    scopes: list[tuple[str | None, tuple[object, ...]]] = [(None, tuple(spec.limits))]  # type: ignore[attr-defined]
    for rule in spec.labels:  # type: ignore[attr-defined]
        scopes.append((rule.pattern, tuple(rule.thresholds)))
    for pattern, limits in scopes:
        for t in limits:
            metric, limit = t.metric, t.limit  # type: ignore[attr-defined]
            if metric in _PERCENTILE_METRICS:
                out.append(Criterion(metric, 1.0 - _PERCENTILE_METRICS[metric], limit, pattern))
            elif metric == "max_ms":
                out.append(Criterion(metric, 0.0, limit, pattern))
            elif metric == "error_rate":
                out.append(Criterion(metric, limit, None, pattern))
    return tuple(out)


@dataclass(frozen=True, slots=True, eq=False)
class EpochView:
    """One rate's epoch: ``rows`` holds its mature sub-windows (``COL_N``, ``COL_MAX``,
    then per criterion j the samples it counts, column ``2 + 2j``, and those over its
    threshold, ``3 + 2j``, then the ``HIST_BINS`` histogram), ``starts_ms`` their
    send-time starts; after the histogram, per criterion j the lone samples it counts,
    column ``LedgerView.lone_col + 2j``, and those over its threshold, the next one."""

    rate: float
    from_ms: int
    to_ms: int | None
    rows: I64
    starts_ms: I64


@dataclass(frozen=True, slots=True, eq=False)
class LedgerView:
    """What the policy reads: the epochs (oldest first), the delivered rate over the last
    complete completion bin, and the ledger's geometry."""

    hist_col: int
    criteria: tuple[Criterion, ...]
    epochs: tuple[EpochView, ...]
    window_ms: int
    part_ms: int
    lag_ms: int
    delivered_rps: float | None
    delivered_at_ms: int | None
    watermark_ms: int | None
    #: the current epoch's completion bins (length w, from a T_max after it began):
    #: all completions, then per criterion (counted, over), as the SLO's windows key them
    completions: I64 = field(default_factory=lambda: np.zeros((0, 1), np.int64))
    #: the mean response time (ms) of the delivered rate's bin: what Little's law needs
    #: of the queue now (the window's mean lags it by up to a window)
    delivered_mean_ms: float | None = None
    #: successful completions per second over every completion bin wholly inside the
    #: current epoch, and how many bins that is: the delivered rate pooled at the rate in
    #: force (a quarter's count is too noisy to tell a rate 10 % past capacity)
    delivered_epoch_rps: float | None = None
    delivered_epoch_bins: int = 0
    #: the latest *hangs* (oldest first): spans ``(from_ms, to_ms)`` in which a request
    #: was in flight and nothing completed, longer than the smallest latency threshold
    hangs: tuple[tuple[int, int], ...] = ()
    #: the completion time at which the first of ``completions`` begins
    completions_from_ms: int | None = None

    def current(self) -> EpochView | None:
        return self.epochs[-1] if self.epochs else None

    @property
    def lone_col(self) -> int:
        """The first column of the lone samples' counts (``EpochView``)."""
        return self.hist_col + HIST_BINS


@dataclass
class _Epoch:
    rate: float
    from_ms: int
    rows: I64 = field(default_factory=lambda: np.zeros((0, 0), np.int64))


class ExceedanceLedger:
    def __init__(
        self,
        criteria: tuple[Criterion, ...],
        window_ms: int,
        lag_ms: int,
        parts: int = PARTS,
    ) -> None:
        self.criteria = criteria
        self.window_ms = int(window_ms)
        self.part_ms = max(1, round(window_ms / parts))
        self.lag_ms = int(lag_ms)
        latency = [c.threshold_ms for c in criteria if c.threshold_ms is not None]
        self.t_max_ms = max(latency) if latency else 0.0
        self.hist_col = 2 + 2 * len(criteria)
        self.lone_col = self.hist_col + HIST_BINS
        self._cols = self.lone_col + 2 * len(criteria)
        #: the samples fed within the last window and T_max (send, completion, epoch,
        #: sub-window, lone, then per criterion counted and over): a later one sent
        #: before one of them and completed after its send shows it was not lone
        self._kept = np.zeros((0, 5 + 2 * len(criteria)), np.int64)
        self._epochs: list[_Epoch] = []
        self._frozen: dict[int, EpochView] = {}
        self._patterns = [None if c.pattern is None else re.compile(c.pattern) for c in criteria]
        self._origin: int | None = None
        self._bins: dict[int, int] = {}
        #: summed elapsed (ms) of the successful completions per bin: the bin's mean
        #: response time, for the backlog by Little's law
        self._bin_elapsed: dict[int, int] = {}
        #: per completion bin: all completions, then each criterion's (counted, over)
        self._cbins: dict[int, I64] = {}
        self.watermark_ms: int | None = None
        #: the newest completion time fed (for the hangs); spans in flight with no
        #: completion longer than the smallest latency threshold are kept (the last
        #: ``MAX_HANGS``): a hang shorter than every threshold explains no exceedance
        self._last_end_ms: int | None = None
        self._hang_min_ms = min(latency) if latency else None
        self._hangs: list[tuple[int, int]] = []

    # ---------------------------------------------------------------- feeding
    def rate_in_force(self, rate: float, pushed_at_ms: int) -> None:
        """A rate pushed at wall time ``pushed_at_ms`` (the first call: the start rate,
        in force from then). Its epoch starts one actuation lag later."""
        start = int(pushed_at_ms) + (self.lag_ms if self._epochs else 0)
        if self._epochs and same_rate(self._epochs[-1].rate, rate):
            return
        if self._epochs and start <= self._epochs[-1].from_ms:
            # two pushes within one lag: the earlier never took effect
            self._epochs[-1].rate = rate
            return
        self._epochs.append(_Epoch(rate, start, np.zeros((0, self._cols), np.int64)))
        if self._origin is None:
            self._origin = start

    def add(self, batch: SampleBatch) -> None:
        if len(batch) == 0 or not self._epochs:
            return
        start = batch.start_ms.astype(np.int64)
        first = self._epochs[0]
        if first.rows.shape[0] == 0 and len(self._epochs) == 1:
            # the start rate is in force from the first sample on
            first.from_ms = min(first.from_ms, int(start.min()))
            self._origin = first.from_ms
        elapsed = batch.elapsed_ms.astype(np.int64)
        end = start + elapsed
        newest = int(end.max())
        self.watermark_ms = newest if self.watermark_ms is None else max(newest, self.watermark_ms)
        self._note_hangs(start, end)
        # completions by completion time, for the delivered rate
        assert self._origin is not None
        ok_end = end[batch.success]
        ok_bin = (ok_end - self._origin) // self.part_ms
        bins, where, counts = np.unique(ok_bin, return_inverse=True, return_counts=True)
        sums = np.bincount(where, weights=elapsed[batch.success], minlength=len(bins))
        for b, c, e in zip(bins.tolist(), counts.tolist(), sums.tolist(), strict=True):
            self._bins[b] = self._bins.get(b, 0) + c
            self._bin_elapsed[b] = self._bin_elapsed.get(b, 0) + int(e)
        froms = np.array([e.from_ms for e in self._epochs], np.int64)
        which = np.maximum(np.searchsorted(froms, start, side="right") - 1, 0)
        counted = np.ones((len(batch), len(self.criteria)), np.int64)
        exceed = np.zeros((len(batch), len(self.criteria)), np.int64)
        labels = batch.label
        for j, (crit, pattern) in enumerate(zip(self.criteria, self._patterns, strict=True)):
            hit = ~batch.success if crit.threshold_ms is None else elapsed > crit.threshold_ms
            if pattern is not None:
                match = np.fromiter(
                    (pattern.search(str(x)) is not None for x in labels), bool, len(labels)
                )
                counted[:, j] = match
                hit = hit & match
            exceed[:, j] = hit
        cb = (end - self._origin) // self.part_ms
        for b in np.unique(cb).tolist():
            sel_b = cb == b
            row = self._cbins.setdefault(int(b), np.zeros(1 + 2 * len(self.criteria), np.int64))
            row[0] += int(sel_b.sum())
            row[1::2] += counted[sel_b].sum(axis=0)
            row[2::2] += exceed[sel_b].sum(axis=0)
        where_sub = np.zeros(len(batch), np.int64)
        for e_idx in np.unique(which).tolist():
            sel = which == e_idx
            epoch = self._epochs[e_idx]
            sub = (start[sel] - epoch.from_ms) // self.part_ms
            sub = np.maximum(sub, 0)
            size = int(sub.max()) + 1
            if epoch.rows.shape[0] < size:
                grown = np.zeros((size, self._cols), np.int64)
                grown[: epoch.rows.shape[0]] = epoch.rows
                epoch.rows = grown
            np.add.at(epoch.rows[:, COL_N], sub, 1)
            np.maximum.at(epoch.rows[:, COL_MAX], sub, elapsed[sel])
            for j in range(len(self.criteria)):
                np.add.at(epoch.rows[:, 2 + 2 * j], sub, counted[sel, j])
                np.add.at(epoch.rows[:, 3 + 2 * j], sub, exceed[sel, j])
            np.add.at(epoch.rows, (sub, self.hist_col + hist_bin(elapsed[sel])), 1)
            where_sub[sel] = sub
        self._note_lone(start, end, which, where_sub, counted, exceed)

    def _note_lone(
        self, start: I64, end: I64, which: I64, sub: I64, counted: I64, exceed: I64
    ) -> None:
        """Count the batch's lone samples (module doc) and take back those kept that a
        sample of the batch shows were not lone."""
        c = len(self.criteria)
        new = np.column_stack(
            [start, end, which, sub, np.zeros(len(start), np.int64), counted, exceed]
        )
        rows = np.vstack([self._kept, new])
        kept = self._kept.shape[0]
        order = np.argsort(rows[:, 0], kind="stable")
        ends = rows[order, 1]
        before = np.empty_like(ends)
        before[0] = np.iinfo(np.int64).min
        before[1:] = np.maximum.accumulate(ends)[:-1]  # latest completion of those sent earlier
        lone = np.empty(rows.shape[0], bool)
        lone[order] = before <= rows[order, 0]
        was = rows[:kept, 4] == 1
        lost = np.flatnonzero(was & ~lone[:kept])
        gained = kept + np.flatnonzero(lone[kept:])
        cols = self.lone_col + np.arange(2 * c)  # counted, over; counted, over ...
        for idx, sign in ((lost, -1), (gained, 1)):
            # per sample: counted_j and over_j interleaved, as the row's columns are
            vals = np.empty((len(idx), 2 * c), np.int64)
            vals[:, 0::2] = rows[idx, 5 : 5 + c]
            vals[:, 1::2] = rows[idx, 5 + c :]
            for e_idx in np.unique(rows[idx, 2]).tolist():
                sel = rows[idx, 2] == e_idx
                subs = rows[idx[sel], 3]
                np.add.at(
                    self._epochs[e_idx].rows, (subs[:, None], cols[None, :]), sign * vals[sel]
                )
        rows[:, 4] = lone
        horizon = int(self.watermark_ms or 0) - self.window_ms - int(self.t_max_ms)
        self._kept = rows[rows[:, 1] >= horizon]

    def _note_hangs(self, start: I64, end: I64) -> None:
        """In completion order, each sample's *busy gap*: from the later of its send time
        and the previous completion, to its own completion. While a request is in flight a
        plant that serves completes something; a gap in which nothing completes is a hang
        (a pause, a stop-the-world collection) or one long service. The first completion
        fed has no previous one and no gap."""
        if self._hang_min_ms is None:
            return
        order = np.argsort(end, kind="stable")
        e_s, s_s = end[order], start[order]
        prev = np.empty_like(e_s)
        prev[1:] = e_s[:-1]
        prev[0] = e_s[0] if self._last_end_ms is None else self._last_end_ms
        prev = np.maximum.accumulate(prev)
        busy_from = np.maximum(prev, s_s)
        for i in np.flatnonzero(e_s - busy_from > self._hang_min_ms).tolist():
            self._hangs.append((int(busy_from[i]), int(e_s[i])))
        del self._hangs[:-MAX_HANGS]
        newest = int(e_s[-1])
        self._last_end_ms = newest if self._last_end_ms is None else max(self._last_end_ms, newest)

    # ---------------------------------------------------------------- reading
    def mature_before_ms(self) -> int | None:
        """Sub-windows ending at or before this send time are mature."""
        if self.watermark_ms is None:
            return None
        return int(self.watermark_ms - self.t_max_ms)

    def view(self, wall_ms: int) -> LedgerView:
        cut = self.mature_before_ms()
        epochs: list[EpochView] = []
        for i, e in enumerate(self._epochs):
            if i in self._frozen:
                epochs.append(self._frozen[i])
                continue
            to = self._epochs[i + 1].from_ms if i + 1 < len(self._epochs) else None
            starts = e.from_ms + self.part_ms * np.arange(e.rows.shape[0], dtype=np.int64)
            ends = starts + self.part_ms
            if to is not None:
                ends = np.minimum(ends, to)
            keep = np.zeros(len(starts), bool) if cut is None else ends <= cut
            view = EpochView(e.rate, e.from_ms, to, e.rows[keep].copy(), starts[keep])
            if to is not None and cut is not None and to + self.window_ms <= cut:
                # a window past maturity: a later sample of it would have run for a
                # window more than every threshold; the view no longer changes
                self._frozen[i] = view
            epochs.append(view)
        delivered, at, delivered_mean = self._delivered(wall_ms)
        completions = np.zeros((0, 1 + 2 * len(self.criteria)), np.int64)
        completions_from: int | None = None
        if epochs and self._origin is not None and self.watermark_ms is not None:
            # the completion bins wholly inside the current epoch, a T_max after it began
            first = -(-(epochs[-1].from_ms + int(self.t_max_ms) - self._origin) // self.part_ms)
            last = (self.watermark_ms - self._origin) // self.part_ms - 1
            if last >= first:
                empty = np.zeros(1 + 2 * len(self.criteria), np.int64)
                completions = np.array(
                    [self._cbins.get(b, empty) for b in range(int(first), int(last) + 1)]
                )
                completions_from = int(self._origin + first * self.part_ms)
        epoch_x, epoch_bins = self._delivered_epoch(epochs[-1].from_ms if epochs else None)
        return LedgerView(
            self.hist_col,
            self.criteria,
            tuple(epochs),
            self.window_ms,
            self.part_ms,
            self.lag_ms,
            delivered,
            at,
            self.watermark_ms,
            completions,
            delivered_mean,
            epoch_x,
            epoch_bins,
            tuple(self._hangs),
            completions_from,
        )

    def _delivered_epoch(self, from_ms: int | None) -> tuple[float | None, int]:
        """Successful completions per second over the completion bins that lie wholly at
        or after ``from_ms`` and have ended, and their number."""
        if from_ms is None or self._origin is None or self.watermark_ms is None:
            return None, 0
        first = -(-(from_ms - self._origin) // self.part_ms)
        last = (self.watermark_ms - self._origin) // self.part_ms - 1
        if last < first:
            return None, 0
        bins = int(last - first + 1)
        count = sum(self._bins.get(b, 0) for b in range(int(first), int(last) + 1))
        return count / (bins * self.part_ms / 1000.0), bins

    def _delivered(self, wall_ms: int) -> tuple[float | None, int | None, float | None]:
        """Completions per second over the last completion bin that has ended (by the
        newest completion seen), that bin's end, and its completions' mean response
        time (None when it holds none)."""
        if self._origin is None or self.watermark_ms is None:
            return None, None, None
        last = (self.watermark_ms - self._origin) // self.part_ms - 1
        if last < 0:
            return None, None, None
        count = self._bins.get(int(last), 0)
        mean = self._bin_elapsed.get(int(last), 0) / count if count else None
        end = int(self._origin + (last + 1) * self.part_ms)
        return count / (self.part_ms / 1000.0), end, mean

    def sent_by_rate(self, wall_ms: int) -> dict[float, tuple[int, float]]:
        """Per rate (the keys of ``by_rate``): the samples sent in its mature sub-windows
        and their send-time span in seconds (a sub-window cut short by the next epoch
        counts its part): what the generator actually sent, which a closed generator
        (threads waiting on slow responses) keeps below the rate in force."""
        out: dict[float, tuple[int, float]] = {}
        for e in self.view(wall_ms).epochs:
            if e.rows.shape[0] == 0:
                continue
            ends = e.starts_ms + self.part_ms
            if e.to_ms is not None:
                ends = np.minimum(ends, e.to_ms)
            span = float((ends - e.starts_ms).sum()) / 1000.0
            key = next((r for r in out if same_rate(r, e.rate)), e.rate)
            n, s = out.get(key, (0, 0.0))
            out[key] = (n + int(e.rows[:, COL_N].sum()), s + span)
        return out

    def by_rate(self, wall_ms: int) -> list[tuple[float, I64]]:
        """Every mature sub-window row, grouped by rate (ascending): for the capacity
        estimate."""
        groups: dict[float, list[I64]] = {}
        for e in self.view(wall_ms).epochs:
            if e.rows.shape[0] == 0:
                continue
            key = next((r for r in groups if same_rate(r, e.rate)), e.rate)
            groups.setdefault(key, []).append(e.rows)
        return [(r, np.vstack(rows)) for r, rows in sorted(groups.items())]


def rows_to_windows(rows: I64, parts: int) -> I64:
    """Whole windows from consecutive sub-window rows (sums of ``parts`` rows; a partial
    tail group is dropped; the max column takes the max)."""
    m = rows.shape[0] // parts
    if m == 0:
        return np.zeros((0, rows.shape[1]), np.int64)
    cut = rows[: m * parts].reshape(m, parts, rows.shape[1])
    out: I64 = cut.sum(axis=1)
    out[:, COL_MAX] = cut[:, :, COL_MAX].max(axis=1)
    return out
