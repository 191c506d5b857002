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

Layout: each added batch becomes a *run* sorted by ``end`` (files are nearly in
completion order, so the stable sort is close to linear). ``stats`` binary-searches every
run for ``(now - W, now]``, drops evicted prefixes, and partitions the window's elapsed
values at the ranks the percentiles need (``np.partition``, linear time): a tick costs
O(runs log n + w) for w samples in the window and a handful of labels.
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

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
BOOL = npt.NDArray[np.bool_]

# Elapsed values are clipped to 0 .. 2^40 - 1 ms (35 years).
_ELAPSED_MASK = (1 << 40) - 1
# Up to this many labels in a window, each label's samples are picked by a comparison.
_MASK_LABELS = 8


def linear_percentiles(sorted_values: npt.NDArray[np.int64], qs: tuple[float, ...]) -> list[float]:
    """Exact percentiles (numpy ``method="linear"``) of an ascending, non-empty array.

    Only ranks ``floor(h)`` and ``floor(h) + 1`` are read, so an array partitioned at
    those ranks (``np.partition``) serves as well as a sorted one.
    """
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
    """Samples held by the window, columnar and sorted by ``end``; ``code`` indexes
    ``Window._labels``. Each added batch becomes one run."""

    end: I64
    elapsed: I64
    ok: BOOL
    code: I64
    overall: BOOL

    def __len__(self) -> int:
        return len(self.end)

    def tail(self, start: int) -> _Run:
        """The run without its first ``start`` samples (evicted)."""
        if start * 2 >= len(self.end):
            # Copy, so that the evicted prefix is freed (amortised O(1) per sample).
            return _Run(
                self.end[start:].copy(),
                self.elapsed[start:].copy(),
                self.ok[start:].copy(),
                self.code[start:].copy(),
                self.overall[start:].copy(),
            )
        return _Run(
            self.end[start:],
            self.elapsed[start:],
            self.ok[start:],
            self.code[start:],
            self.overall[start:],
        )


class Window:
    """Exact rolling statistics over a sliding window of sample completion times.

    ``malformed_rows`` is read at every ``stats`` call (the reader's running count).
    ``overall_excludes`` names labels that get their own per-label statistics but are left
    out of ``overall`` (Transaction Controller rows under ``--transactions``: their
    children are already counted once).
    """

    def __init__(
        self,
        window_ms: int = 10_000,
        *,
        by_label: bool = True,
        malformed_rows: Callable[[], int] | None = None,
        overall_excludes: Callable[[], Collection[str]] | None = None,
    ) -> None:
        if window_ms <= 0:
            raise ValueError("window_ms must be positive")
        self.window_ms = int(window_ms)
        self.by_label = by_label
        self._malformed_rows = malformed_rows
        self._overall_excludes = overall_excludes
        self._runs: list[_Run] = []
        self._labels: list[str] = []
        self._codes: dict[str, int] = {}
        self._newest: int | None = None
        self._last_now: int | None = None
        self._excluded_seen: frozenset[str] = frozenset()
        self.late_samples = 0
        """Samples added after a ``stats`` call whose window had already passed them."""

    def __len__(self) -> int:
        return sum(len(r) for r in self._runs)

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

    def _overall_mask(self, codes: I64) -> BOOL:
        excluded = self._overall_excludes() if self._overall_excludes is not None else ()
        if not excluded:
            return np.ones(len(codes), np.bool_)
        bad = [self._codes[name] for name in excluded if name in self._codes]
        return ~np.isin(codes, np.asarray(bad, np.int64))

    def add(self, batch: SampleBatch) -> None:
        """Take a batch of samples, in any order relative to earlier batches."""
        if len(batch) == 0:
            return
        end = np.asarray(batch.end_ms, np.int64)
        # A negative elapsed is a reader bug or a malformed row; count it as 0 ms.
        elapsed = np.clip(np.asarray(batch.elapsed_ms, np.int64), 0, _ELAPSED_MASK)
        codes = self._label_codes(batch.label)
        ok = np.asarray(batch.success, np.bool_)
        overall = self._overall_mask(codes)
        if len(end) > 1 and bool((end[1:] < end[:-1]).any()):
            # Files are nearly in completion order: a stable sort is close to linear.
            order = np.argsort(end, kind="stable")
            end, elapsed, ok, codes, overall = (
                end[order],
                elapsed[order],
                ok[order],
                codes[order],
                overall[order],
            )
        self._runs.append(_Run(end, elapsed, ok, codes, overall))
        top = int(end[-1])
        if self._newest is None or top > self._newest:
            self._newest = top
        if self._last_now is not None and int(end[0]) <= self._last_now:
            self.late_samples += int(np.searchsorted(end, self._last_now, side="right"))

    def stats(self, now_ms: int) -> WindowStats:
        """Statistics over samples with ``end`` in ``(now_ms - window_ms, now_ms]``."""
        now = int(now_ms)
        lo = now - self.window_ms
        self._last_now = now if self._last_now is None else max(self._last_now, now)
        runs: list[_Run] = []
        parts: list[tuple[_Run, int]] = []
        for run in self._runs:
            first = int(np.searchsorted(run.end, lo, side="right"))  # evict end <= lo
            if first == len(run):
                continue
            if first:
                run = run.tail(first)
            runs.append(run)
            stop = int(np.searchsorted(run.end, now, side="right"))  # end <= now
            if stop:
                parts.append((run, stop))
        self._runs = runs
        malformed = self._malformed_rows() if self._malformed_rows is not None else 0
        seconds = self.window_ms / 1000.0
        if not parts:
            return WindowStats(now, self.window_ms, LabelStats.empty(), {}, malformed, self._newest)
        if len(parts) == 1:
            run, stop = parts[0]
            elapsed, ok, code, overall = (
                run.elapsed[:stop],
                run.ok[:stop],
                run.code[:stop],
                run.overall[:stop],
            )
        else:
            elapsed = np.concatenate([r.elapsed[:k] for r, k in parts])
            ok = np.concatenate([r.ok[:k] for r, k in parts])
            code = np.concatenate([r.code[:k] for r, k in parts])
            overall = np.concatenate([r.overall[:k] for r, k in parts])
        if overall.all():
            overall_stats = _label_stats(elapsed, int(np.count_nonzero(ok)), seconds)
        else:
            overall_stats = _label_stats(
                elapsed[overall], int(np.count_nonzero(ok[overall])), seconds
            )
        labels: dict[str, LabelStats] = {}
        if self.by_label:
            labels = self._per_label(elapsed, ok, code, seconds)
        return WindowStats(now, self.window_ms, overall_stats, labels, malformed, self._newest)

    def _per_label(
        self, elapsed: I64, ok: BOOL, code: I64, seconds: float
    ) -> dict[str, LabelStats]:
        counts = np.bincount(code, minlength=len(self._labels))
        present = np.flatnonzero(counts)
        oks = np.bincount(code, weights=ok.astype(np.float64), minlength=len(self._labels))
        out: dict[str, LabelStats] = {}
        if len(present) <= _MASK_LABELS:
            # A few labels: one comparison per label beats grouping.
            for c in present.tolist():
                values = elapsed if len(present) == 1 else elapsed[code == c]
                out[self._labels[c]] = _label_stats(values, int(oks[c]), seconds)
            return out
        # Many labels: group once (a stable sort of small integer codes), then select.
        order = np.argsort(code, kind="stable")
        grouped = elapsed[order]
        bounds = np.concatenate(([0], np.cumsum(counts[present])))
        for c, a, b in zip(
            present.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(), strict=True
        ):
            out[self._labels[c]] = _label_stats(grouped[a:b], int(oks[c]), seconds)
        return out


def _order_statistics(values: I64, qs: tuple[float, ...]) -> tuple[I64, list[int]]:
    """``values`` partitioned so that the ranks the percentiles of ``qs`` need (and the
    maximum) sit in their sorted places: O(n) instead of a full sort."""
    n = len(values)
    ranks = {n - 1}
    for q in qs:
        k = int(np.floor((n - 1) * q / 100.0))
        ranks.update((k, min(k + 1, n - 1)))
    kth = sorted(ranks)
    return np.partition(values, kth), kth


def _label_stats(elapsed: I64, ok_count: int, seconds: float) -> LabelStats:
    n = len(elapsed)
    if n == 0:
        return LabelStats.empty()
    part, _ = _order_statistics(elapsed, PERCENTILES)
    # linear_percentiles reads only ranks k and k+1 of each percentile: in place in part.
    p50, p90, p95, p99 = linear_percentiles(part, PERCENTILES)
    return LabelStats(
        count=n,
        rps=n / seconds,
        ok_rps=ok_count / seconds,
        error_rate=(n - ok_count) / n,
        mean_ms=float(elapsed.sum()) / n,
        p50_ms=p50,
        p90_ms=p90,
        p95_ms=p95,
        p99_ms=p99,
        max_ms=float(part[n - 1]),
    )
