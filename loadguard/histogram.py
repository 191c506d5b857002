"""A latency histogram: exact quantiles of a whole run in constant memory.

JMeter records elapsed time in whole milliseconds, so counting samples per millisecond
keeps every quantile exact without keeping the samples: 65,536 int64 bins (512 KiB),
plus a sorted overflow list for the rare sample slower than 65.5 s. The run summary
(``loadguard.summary``) and the report's JTL digest (``loadguard.report.jtl_digest``)
both count with it.
"""

from __future__ import annotations

import bisect

import numpy as np
import numpy.typing as npt

BINS = 1 << 16


def linear_quantile_from_sorted_counts(
    values: npt.NDArray[np.float64], counts: npt.NDArray[np.int64], q: float
) -> float:
    """numpy's default ('linear') quantile of a multiset given as sorted values + counts.

    With n samples the quantile sits at rank h = (n - 1) q; it interpolates between the
    order statistics x[floor(h)] and x[ceil(h)] (0-based), exactly as ``np.quantile``.
    """
    n = int(counts.sum())
    h = (n - 1) * q
    lo, hi = int(np.floor(h)), int(np.ceil(h))
    cum = np.cumsum(counts)
    x_lo = float(values[int(np.searchsorted(cum, lo, side="right"))])
    x_hi = float(values[int(np.searchsorted(cum, hi, side="right"))])
    return x_lo + (h - lo) * (x_hi - x_lo)


class LatencyHistogram:
    def __init__(self) -> None:
        self.counts = np.zeros(BINS, np.int64)
        self.overflow: list[int] = []
        self.total = 0
        self.sum_ms = 0

    def add(self, elapsed_ms: npt.NDArray[np.int64]) -> None:
        if len(elapsed_ms) == 0:
            return
        clipped = np.clip(elapsed_ms, 0, None)
        small = clipped[clipped < BINS]
        self.counts += np.bincount(small, minlength=BINS)[:BINS]
        for v in clipped[clipped >= BINS]:
            bisect.insort(self.overflow, int(v))
        self.total += len(clipped)
        self.sum_ms += int(clipped.sum())

    def mean(self) -> float | None:
        return self.sum_ms / self.total if self.total else None

    def quantile(self, q: float) -> float | None:
        if not self.total:
            return None
        nz = np.nonzero(self.counts)[0]
        values = nz.astype(np.float64)
        counts = self.counts[nz]
        if self.overflow:
            ov, oc = np.unique(np.asarray(self.overflow, np.int64), return_counts=True)
            values = np.concatenate([values, ov.astype(np.float64)])
            counts = np.concatenate([counts, oc.astype(np.int64)])
        return linear_quantile_from_sorted_counts(values, counts, q)
