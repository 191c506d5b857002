r"""λ* from a fixed-rate step sweep (pure).

Each sweep point is one fixed offered rate held on a fresh target; its *achieved* rate
(samples started per second after the warm-up), steady p95 and error rate are measured.
λ* is the largest achieved rate meeting the SLO (p95 ≤ limit and error rate ≤ limit),
refined by linear interpolation of p95 between it and the next (failing) point:

.. math::  λ^* = λ_a + (λ_b - λ_a)\,\frac{L - p_a}{p_b - p_a}

where a is the last passing point, b the first failing one above it (in offered rate),
L the p95 limit; when b achieved no more than a (an overloaded target collapsing), λ* is
a's achieved rate.
No passing point: ``None``. No failing point above the last pass: that pass (a lower
bound, flagged ``bounded=False``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SweepPoint:
    offered_rps: float
    achieved_rps: float
    p95_ms: float
    error_rate: float
    samples: int


@dataclass(frozen=True)
class LambdaStar:
    rps: float | None
    bounded: bool  # a failing point above the last passing one was seen


def lambda_star_from_sweep(
    points: Sequence[SweepPoint], p95_limit_ms: float, error_limit: float | None
) -> LambdaStar:
    # By offered rate: an overloaded point can achieve *less* than a passing one below it
    # (a collapsing target), and must still count as above it.
    ordered = sorted(points, key=lambda p: p.offered_rps)

    def passes(p: SweepPoint) -> bool:
        return p.p95_ms <= p95_limit_ms and (error_limit is None or p.error_rate <= error_limit)

    best: int | None = None
    for i, p in enumerate(ordered):
        if passes(p):
            best = i
    if best is None:
        return LambdaStar(None, bool(ordered))
    a = ordered[best]
    above = ordered[best + 1 :]
    if not above:
        return LambdaStar(a.achieved_rps, False)
    b = above[0]
    if b.achieved_rps <= a.achieved_rps:
        # b collapsed below a's throughput: no rate between them to interpolate to
        return LambdaStar(a.achieved_rps, True)
    if b.p95_ms <= a.p95_ms or b.p95_ms <= p95_limit_ms:
        # failed on errors only (or p95 not monotone): no p95 crossing to interpolate
        return LambdaStar(a.achieved_rps, True)
    frac = (p95_limit_ms - a.p95_ms) / (b.p95_ms - a.p95_ms)
    return LambdaStar(a.achieved_rps + (b.achieved_rps - a.achieved_rps) * frac, True)
