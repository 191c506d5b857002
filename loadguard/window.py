"""The sliding window: exact rolling statistics over sample completion times (pure core).

A sample belongs to the window ending at ``now`` when its completion time
``end = start_ms + elapsed_ms`` lies in the half-open interval

    (now - W, now]            W = window_ms

so consecutive windows with step ``W`` partition time, and every sample is counted in
exactly one of them.

For the samples ``x_1 .. x_n`` (elapsed ms) of one label, or of all labels, in the window:

    count    = n
    rps      = n / (W / 1000)
    ok_rps   = #{i : success_i} / (W / 1000)
    error    = 1 - #{i : success_i} / n            (0 when n = 0)
    mean     = (1/n) * sum x_i
    max      = max x_i

Percentiles are **exact** and use the linear-interpolation definition (numpy's default
``method="linear"``, Hyndman & Fan type 7). With ``x_(0) <= ... <= x_(n-1)`` sorted:

    h = (n - 1) * q / 100,   k = floor(h)
    P_q = x_(k) + (h - k) * (x_(k+1) - x_(k))        (x_(n) := x_(n-1))

so ``p50`` of ``[10, 20]`` is 15, and any percentile of a single sample is that sample.
No sketch, no histogram, no sampling: the window keeps every sample it covers.

Order: threads finish out of order, and a reader may hand a sample over after a later one.
``add`` takes batches in any order; ``stats(now)`` looks at whatever has been added with
``end <= now``. Samples with ``end > now`` are kept for later calls (replaying steps over a
file read ahead), and samples with ``end <= now - W`` are evicted. Memory is therefore
O(samples with end > now - W), never O(test length).

Layout: each added batch is split by label into *runs* sorted by ``end`` (files are nearly
in completion order, so the stable sorts are close to linear), so a sample is grouped once,
when added, not once per window it falls in. ``stats`` binary-searches every run for
``(now - W, now]``, drops evicted prefixes, sorts each label's elapsed values (numpy's
vectorised sort beats ``np.partition`` at the nine ranks needed) and merges the sorted
labels for the overall figures: a tick costs O(runs log n + w log w) for w samples.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from loadguard.jtl.sample import SampleBatch
from loadguard.stats import LabelStats, WindowStats

PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0)
#: The controller's windows stretch for low rates up to this many window lengths.
STRETCH_WINDOWS = 6

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
BOOL = npt.NDArray[np.bool_]

# Elapsed values are clipped to 0 .. 2^40 - 1 ms (35 years): an upper bound (not a bit
# mask) that keeps a window's int64 sum of them far from overflow for batches built by
# hand; the JTL readers already drop rows over raw_rows.MAX_ELAPSED_MS.
_MAX_ELAPSED_MS = (1 << 40) - 1
# A label with more runs than this has them merged into one (live ticks add one a tick).
_MAX_RUNS = 32
# Label codes are compacted once more than this many are known and most are gone.
_COMPACT_LABELS = 4096


def linear_percentiles(sorted_values: npt.NDArray[np.int64], qs: tuple[float, ...]) -> list[float]:
    """Exact percentiles (numpy ``method="linear"``) of an ascending, non-empty array."""
    n = len(sorted_values)
    out: list[float] = []
    for q in qs:
        h = (n - 1) * q / 100.0
        k = int(np.floor(h))
        lo = float(sorted_values[k])
        if k + 1 >= n:
            out.append(lo)
            continue
        hi = float(sorted_values[k + 1])
        t = h - k
        # Same two-sided lerp as numpy, so results agree to the last bit in practice.
        out.append(lo + (hi - lo) * t if t < 0.5 else hi - (hi - lo) * (1.0 - t))
    return out


@dataclass(slots=True)
class _Run:
    """Samples of one label, columnar and sorted by ``end``: one per label per added batch."""

    end: I64
    elapsed: I64
    ok: BOOL

    def __len__(self) -> int:
        return len(self.end)

    def tail(self, start: int) -> _Run:
        """The run without its first ``start`` samples (evicted)."""
        if start * 2 >= len(self.end):
            # Copy, so that the evicted prefix is freed (amortised O(1) per sample).
            return _Run(
                self.end[start:].copy(), self.elapsed[start:].copy(), self.ok[start:].copy()
            )
        return _Run(self.end[start:], self.elapsed[start:], self.ok[start:])


def _merge(runs: list[_Run]) -> _Run:
    end = np.concatenate([r.end for r in runs])
    order = np.argsort(end, kind="stable")
    return _Run(
        end[order],
        np.concatenate([r.elapsed for r in runs])[order],
        np.concatenate([r.ok for r in runs])[order],
    )


class Window:
    r"""Exact rolling statistics over a sliding window of sample completion times.

    ``malformed_rows`` and ``illegal_xml_chars`` are read at every ``stats`` call (the
    reader's running counts).
    ``overall_excludes`` names labels that get their own per-label statistics but are left
    out of ``overall`` (Transaction Controller rows under ``--transactions``: their
    children are already counted once); it is read at every ``stats`` call too.

    Low rates (``stretch_to`` n, ``max_window_ms`` M): when ``(now - W, now]`` holds fewer
    than n samples (overall), the window stretches back to hold the n newest, at most to
    ``now - M``: :math:`lo = \min(now - W, \max(now - M, e_{(n+1)}))` with
    :math:`e_{(k)}` the k-th newest end (``now - M`` when M holds fewer than n).
    ``WindowStats.window_ms`` is then ``now - lo`` (rates are per that span). A rate below
    n/W can still be judged (it could not be with a fixed W and ``min_samples`` = n).
    Samples are kept for M.
    """

    def __init__(
        self,
        window_ms: int = 10_000,
        *,
        by_label: bool = True,
        malformed_rows: Callable[[], int] | None = None,
        overall_excludes: Callable[[], Collection[str]] | None = None,
        illegal_xml_chars: Callable[[], int] | None = None,
        stretch_to: int | None = None,
        max_window_ms: int | None = None,
    ) -> None:
        if window_ms <= 0:
            raise ValueError("window_ms must be positive")
        if stretch_to is not None and (stretch_to < 1 or (max_window_ms or 0) < window_ms):
            raise ValueError("stretch_to needs n >= 1 and max_window_ms >= window_ms")
        self.window_ms = int(window_ms)
        self.stretch_to = stretch_to
        self.max_window_ms = int(max_window_ms or window_ms)
        self.by_label = by_label
        self._malformed_rows = malformed_rows
        self._illegal_xml_chars = illegal_xml_chars
        self._overall_excludes = overall_excludes
        self._runs: dict[int, list[_Run]] = {}  # label code -> runs
        self._labels: list[str] = []
        self._codes: dict[str, int] = {}
        self._newest: int | None = None
        self._last_now: int | None = None
        self.late_samples = 0
        """Samples added after a ``stats`` call whose window had already passed them."""

    def __len__(self) -> int:
        return sum(len(r) for runs in self._runs.values() for r in runs)

    def _label_codes(self, labels: npt.NDArray[np.object_]) -> I64:
        codes, uniques = pd.factorize(labels)
        table = np.empty(len(uniques) + 1, np.int64)
        for i, name in enumerate(uniques):
            table[i] = self._code_of(str(name))
        if len(codes) and int(codes.min()) < 0:
            table[-1] = self._code_of("")  # a missing label (None) counts as ""
        return table[codes]

    def _code_of(self, key: str) -> int:
        code = self._codes.get(key)
        if code is None:
            code = len(self._labels)
            self._codes[key] = code
            self._labels.append(key)
        return code

    def add(self, batch: SampleBatch) -> None:
        """Take a batch of samples, in any order relative to earlier batches."""
        if len(batch) == 0:
            return
        end = np.asarray(batch.end_ms, np.int64)
        # A negative elapsed is a reader bug or a malformed row; count it as 0 ms.
        elapsed = np.clip(np.asarray(batch.elapsed_ms, np.int64), 0, _MAX_ELAPSED_MS)
        codes = self._label_codes(batch.label)
        ok = np.asarray(batch.success, np.bool_)
        if len(end) > 1 and bool((end[1:] < end[:-1]).any()):
            # Files are nearly in completion order: a stable sort is close to linear.
            order = np.argsort(end, kind="stable")
            end, elapsed, ok, codes = end[order], elapsed[order], ok[order], codes[order]
        top = int(end[-1])
        if self._newest is None or top > self._newest:
            self._newest = top
        if self._last_now is not None and int(end[0]) <= self._last_now:
            self.late_samples += int(np.searchsorted(end, self._last_now, side="right"))
        first = int(codes[0])
        if bool((codes == first).all()):
            self._append(first, _Run(end, elapsed, ok))
            return
        # One run per label: a stable sort by label keeps each label's samples in end order.
        # numpy sorts 16-bit keys stably by radix sort: linear time.
        small = codes.astype(np.int16) if len(self._labels) < 2**15 else codes
        by_label = np.argsort(small, kind="stable")
        grouped = codes[by_label]
        cuts = np.flatnonzero(grouped[1:] != grouped[:-1]) + 1
        starts = np.concatenate(([0], cuts)).tolist()
        stops = [*cuts.tolist(), len(grouped)]
        for a, b in zip(starts, stops, strict=True):
            idx = by_label[a:b]
            self._append(int(grouped[a]), _Run(end[idx], elapsed[idx], ok[idx]))

    def _compact_labels(self) -> None:
        """Forget labels no longer held, so that memory follows the window even when
        labels never repeat (a URL with an id in it)."""
        live = sorted(self._runs)
        self._labels = [self._labels[c] for c in live]
        self._codes = {name: i for i, name in enumerate(self._labels)}
        self._runs = {i: self._runs[c] for i, c in enumerate(live)}

    def _append(self, code: int, run: _Run) -> None:
        runs = self._runs.setdefault(code, [])
        runs.append(run)
        if len(runs) > _MAX_RUNS:
            self._runs[code] = [_merge(runs)]

    def stats(self, wall_ms: int) -> WindowStats:
        """Statistics over samples with ``end`` in ``(wall_ms - window_ms, wall_ms]``."""
        now = int(wall_ms)
        self._last_now = now if self._last_now is None else max(self._last_now, now)
        excluded = self._overall_excludes() if self._overall_excludes is not None else ()
        lo = now - self.window_ms
        evict = lo
        if self.stretch_to is not None:
            evict = now - self.max_window_ms
            lo = self._stretched_start(now, lo, evict, excluded)
        seconds = (now - lo) / 1000.0
        labels: dict[str, LabelStats] = {}
        overall_parts: list[I64] = []
        overall_ok = 0
        empty: list[int] = []
        for code, runs in self._runs.items():
            kept: list[_Run] = []
            parts: list[tuple[_Run, int, int]] = []
            for run in runs:
                first = int(np.searchsorted(run.end, evict, side="right"))  # evict end <= evict
                if first == len(run):
                    continue
                if first:
                    run = run.tail(first)
                kept.append(run)
                begin = int(np.searchsorted(run.end, lo, side="right")) if lo > evict else 0
                stop = int(np.searchsorted(run.end, now, side="right"))  # end <= now
                if stop > begin:
                    parts.append((run, begin, stop))
            if not kept:
                empty.append(code)
                continue
            runs[:] = kept
            if not parts:
                continue
            if len(parts) == 1:
                run, begin, stop = parts[0]
                values = run.elapsed[begin:stop]
                ok_count = int(np.count_nonzero(run.ok[begin:stop]))
            else:
                values = np.concatenate([r.elapsed[b:k] for r, b, k in parts])
                ok_count = sum(int(np.count_nonzero(r.ok[b:k])) for r, b, k in parts)
            name = self._labels[code]
            if self.by_label:
                values = np.sort(values)
                labels[name] = _label_stats(values, ok_count, seconds)
            if name not in excluded:
                overall_parts.append(values)
                overall_ok += ok_count
        for code in empty:
            del self._runs[code]
        if len(self._labels) > _COMPACT_LABELS and len(self._labels) > 4 * len(self._runs):
            self._compact_labels()
        malformed = self._malformed_rows() if self._malformed_rows is not None else 0
        if not overall_parts:
            overall = LabelStats.empty()
        elif len(overall_parts) == 1:
            only = overall_parts[0]
            overall = _label_stats(only if self.by_label else np.sort(only), overall_ok, seconds)
        else:
            # Sorted per-label runs: a stable (merge) sort of their concatenation is cheap.
            merged = np.sort(np.concatenate(overall_parts), kind="stable")
            overall = _label_stats(merged, overall_ok, seconds)
        illegal = self._illegal_xml_chars() if self._illegal_xml_chars is not None else 0
        return WindowStats(now, now - lo, overall, labels, malformed, self._newest, illegal)

    def _stretched_start(self, now: int, lo: int, floor: int, excluded: Collection[str]) -> int:
        """``lo``, moved back to the ``stretch_to``-th newest sample (not before ``floor``)
        when (lo, now] holds fewer."""
        need = self.stretch_to or 0
        count = 0
        tails: list[I64] = []
        for code, runs in self._runs.items():
            if self._labels[code] in excluded:
                continue
            for run in runs:
                stop = int(np.searchsorted(run.end, now, side="right"))
                count += stop - int(np.searchsorted(run.end, lo, side="right"))
                begin = max(int(np.searchsorted(run.end, floor, side="right")), stop - need - 1)
                tails.append(run.end[begin:stop])
        if count >= need or not tails:
            return lo
        ends = np.sort(np.concatenate(tails))
        if len(ends) < need:
            return floor  # fewer than n in the longest window: all of it
        # Back to the (n+1)-th newest end, so the span holds n inter-arrival gaps.
        start = int(ends[-need - 1]) if len(ends) > need else int(ends[-need]) - 1
        return min(lo, max(floor, start))


def _label_stats(sorted_elapsed: I64, ok_count: int, seconds: float) -> LabelStats:
    n = len(sorted_elapsed)
    if n == 0:
        return LabelStats.empty()
    p50, p90, p95, p99 = linear_percentiles(sorted_elapsed, PERCENTILES)
    return LabelStats(
        count=n,
        rps=n / seconds,
        ok_rps=ok_count / seconds,
        error_rate=(n - ok_count) / n,
        mean_ms=float(sorted_elapsed.sum()) / n,
        p50_ms=p50,
        p90_ms=p90,
        p95_ms=p95,
        p99_ms=p99,
        max_ms=float(sorted_elapsed[-1]),
    )
