"""Thinning a series for *drawing* only; reported figures never come from here.

``minmax_downsample`` splits the points into ``max_points // 2`` buckets of consecutive
x and keeps, per bucket, the point with the smallest and the one with the largest y, in
x order. A line drawn through them has the same envelope as the full series at any
width of at most that many pixels: every spike and every dip stays visible, which
plain striding would lose. The global min and max of y are always kept.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

MAX_POINTS = 2000


def minmax_downsample(x: F64, y: F64, max_points: int = MAX_POINTS) -> tuple[F64, F64]:
    """At most ``max_points`` of the points ``(x, y)`` (x ascending), envelope kept.

    NaN y values (gaps) are kept as NaN in their bucket so a drawn line still breaks.
    """
    n = len(x)
    if max_points < 2:
        raise ValueError("max_points must be at least 2")
    if n <= max_points:
        return x, y
    buckets = max_points // 2
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    keep = np.empty(2 * buckets, np.int64)
    filled = np.where(np.isnan(y), np.inf, y)
    lows = np.minimum.reduceat(filled, edges[:-1])
    filled_hi = np.where(np.isnan(y), -np.inf, y)
    highs = np.maximum.reduceat(filled_hi, edges[:-1])
    for b in range(buckets):
        lo, hi = edges[b], edges[b + 1]
        seg_lo = filled[lo:hi]
        seg_hi = filled_hi[lo:hi]
        i = lo + int(np.argmax(seg_lo == lows[b]))
        j = lo + int(np.argmax(seg_hi == highs[b]))
        keep[2 * b], keep[2 * b + 1] = min(i, j), max(i, j)
    keep = np.unique(keep)
    return x[keep], y[keep]
