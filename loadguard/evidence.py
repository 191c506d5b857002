r"""Evidence at one rate: the ledger's sub-window rows pooled into a prediction per SLO.

For the rows :math:`(n_i, \max_i, k_{i,1..C})` of the mature sub-windows sent at one rate
(``loadguard.ledger``; *stalls*, a sub-window holding a sample that took a whole window
or more, are counted but kept: leaving out the worst quarters would bias the share
down; the policy tells a hung target from its delivered rate): per criterion j, the pooled
:math:`N = \sum n_i`,
:math:`K_j = \sum k_{i,j}`, the dispersion of whole windows from whole-window sums and
from the sub-windows (``exceedance.combine_dispersion``), and the predicted share of
violating windows ``exceedance.predict`` for windows of :math:`n_W = \max(r W, n_{min})`
samples (the window stretches to hold ``min_samples``; the share of them a label rule
matches, for a label rule).

The share over every criterion is bounded by the union bound: :math:`V \le \sum_j V_j`
(upper, and the point estimate); ``dispersion_floor`` (per criterion) raises the
dispersion's lower bound, e.g. to what was measured at lower rates (the queue's memory
grows toward the knee, never the other way); the lower bound is :math:`\max_j V_{j,lo}`. A label
rule is judged on the pooled samples of the labels it matches, its windows holding the
share of the rate those labels carry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loadguard.exceedance import (
    CONFIDENCE,
    UNKNOWN_DISPERSION,
    Dispersion,
    Prediction,
    combine_dispersion,
    pearson_dispersion,
    predict,
)
from loadguard.ledger import COL_MAX, COL_N, HIST_BINS, PARTS, Criterion, rows_to_windows

I64 = npt.NDArray[np.int64]

#: The prediction of a criterion that no sample at the rate is judged by.
NO_SAMPLES = Prediction(0, 0, 0.0, 0.0, 1.0, UNKNOWN_DISPERSION, 0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class Evidence:
    rate: float
    samples: int
    subwindows: int
    stalls: int
    predictions: tuple[Prediction, ...]  # one per criterion, in order (or none at all)

    @property
    def share(self) -> float:
        return min(1.0, sum(p.share for p in self.predictions))

    @property
    def share_hi(self) -> float:
        return min(1.0, sum(p.share_hi for p in self.predictions))

    @property
    def share_lo(self) -> float:
        return max((p.share_lo for p in self.predictions), default=0.0)

    def binding(self) -> int | None:
        """The criterion with the largest predicted share."""
        if not self.predictions:
            return None
        return max(range(len(self.predictions)), key=lambda j: self.predictions[j].share_hi)


def window_samples(rate: float, window_ms: int, min_samples: int = 1) -> int:
    """The samples a window holds at ``rate``: the SLO's window stretches to hold
    ``min_samples`` (``loadguard.window``), and is judged that way."""
    return max(min_samples, round(rate * window_ms / 1000.0))


def pool(
    rows: list[I64],
    criteria: tuple[Criterion, ...],
    rate: float,
    window_ms: int,
    confidence: float = CONFIDENCE,
    parts: int = PARTS,
    dispersion_floor: tuple[float, ...] = (),
    min_samples: int = 1,
) -> Evidence:
    """Pool the sub-window rows of several epochs at ``rate`` (each list element one
    epoch's consecutive rows, so whole windows never straddle two epochs)."""
    kept: list[I64] = []
    stalls = 0
    for block in rows:
        if block.shape[0] == 0:
            continue
        stall = block[:, COL_MAX] >= window_ms
        stalls += int(stall.sum())
        kept.append(block)
    if not kept:
        return Evidence(rate, 0, 0, stalls, ())
    flat = np.vstack(kept)
    total_n = int(flat[:, COL_N].sum())
    if total_n == 0:
        return Evidence(rate, 0, 0, stalls, ())
    window_n = window_samples(rate, window_ms, min_samples)
    wholes = np.vstack([rows_to_windows(b, parts) for b in kept])
    preds: list[Prediction] = []
    for j, crit in enumerate(criteria):
        n_col, k_col = 2 + 2 * j, 3 + 2 * j
        n_total = int(flat[:, n_col].sum())
        k_total = int(flat[:, k_col].sum())
        if n_total == 0:
            # a label rule whose labels carry no sample at this rate: its windows hold
            # none, and none of them can violate; kept, so that predictions[j] is always
            # criteria[j]'s (a gap shifted every later criterion onto the wrong SLO)
            preds.append(NO_SAMPLES)
            continue
        n_f = flat[:, n_col].astype(np.float64)
        k_f = flat[:, k_col].astype(np.float64)
        parts_disp = pearson_dispersion(n_f, k_f, confidence)
        whole_disp = None
        if wholes.shape[0] >= 2:
            whole_disp = pearson_dispersion(
                wholes[:, n_col].astype(np.float64), wholes[:, k_col].astype(np.float64),
                confidence,
            )  # fmt: skip
        disp = combine_dispersion(whole_disp, parts_disp, parts)
        if j < len(dispersion_floor) and dispersion_floor[j] > disp.lo:
            floor = min(dispersion_floor[j], disp.hi)
            disp = Dispersion(max(disp.estimate, floor), floor, disp.hi)
        # a label rule's windows hold the share of the rate that its labels carry
        n_w = max(1, round(window_n * n_total / total_n))
        preds.append(
            predict(n_total, k_total, disp, n_w, crit.allowed, crit.percentile, confidence)
        )
    return Evidence(rate, total_n, int(flat.shape[0]), stalls, tuple(preds))


def histogram(rows: list[I64], hist_col: int, window_ms: int) -> I64:
    """The pooled latency histogram of the rows (stalls left out, as in ``pool``)."""
    total = np.zeros(HIST_BINS, np.int64)
    for block in rows:
        if block.shape[0]:
            keep = block[block[:, COL_MAX] < window_ms]
            total += keep[:, hist_col : hist_col + HIST_BINS].sum(axis=0)
    return total


def completion_dispersion(completions: I64, criteria: int, parts: int = PARTS) -> list[float]:
    """Per criterion, the dispersion estimate of the counts over its threshold in the
    completion bins (``LedgerView.completions``): whole windows of ``parts`` bins where
    two or more exist, else the bins scaled by ``parts`` (``combine_dispersion``); 1
    where nothing can be told."""
    out = [1.0] * criteria
    if completions.shape[0] < 2:
        return out
    for j in range(criteria):
        n = completions[:, 1 + 2 * j].astype(np.float64)
        k = completions[:, 2 + 2 * j].astype(np.float64)
        m = len(n) // parts
        whole = None
        if m >= 2:
            whole = pearson_dispersion(
                n[: m * parts].reshape(m, parts).sum(axis=1),
                k[: m * parts].reshape(m, parts).sum(axis=1),
            )
        part = pearson_dispersion(n, k)
        out[j] = combine_dispersion(whole, part, parts).estimate
    return out
