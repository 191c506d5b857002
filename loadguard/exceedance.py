r"""Exceedance statistics: from counts of samples over a threshold to a predicted share of
violating windows, with confidence bounds (pure maths, no state).

A *criterion* is one SLO that counts: "at most a share a of a window's samples may exceed
T" -- a percentile SLO p_k ≤ T (a = 1 - k/100), ``max`` ≤ T (a = 0), or an error-rate SLO
e ≤ a (the failed samples are the exceedances).

**When does a window violate?** For a percentile, the window's value is the linear
(type 7) percentile of its n sorted samples :math:`x_{(0)} \le \dots \le x_{(n-1)}`:
:math:`h = (n-1)(1-a)`, :math:`f = \lfloor h \rfloor`, :math:`φ = h - f`,
:math:`P = x_{(f)} + φ (x_{(f+1)} - x_{(f)})`. With K samples over T (the top K):

* :math:`K \ge n - f`: :math:`x_{(f)} > T`, so P > T -- a certain violation;
* :math:`K = n - f - 1` and φ > 0: T lies between :math:`x_{(f)}` and :math:`x_{(f+1)}`
  and P > T when T is in the lower φ share of that gap: taken as probability φ (T uniform
  in the gap);
* otherwise P ≤ T.

For an error rate, the window violates when :math:`K > a n`, i.e. :math:`K \ge \lfloor a n
\rfloor + 1`. ``violation_threshold(n, a, percentile)`` returns (D, w): certain from D,
weight w at D - 1.

**How are the counts distributed?** If the n samples of a window were independent with
exceedance probability q, :math:`K \sim \mathrm{Binomial}(n, q)`. Near a queue's knee they
are not: samples in one window share the queue's state, and the variance of K is φ times
the binomial's (φ, the *dispersion*, 4-47 measured on an M/M/8 plant at 0.9 λ*). The
beta-binomial with the same mean and variance,

.. math::

    K \sim \mathrm{BetaBin}(n, α, β), \quad α = q\,(1/ρ - 1), \ β = (1-q)(1/ρ - 1),
    \quad ρ = \frac{φ - 1}{n - 1},

is the model: φ = 1 is the binomial (the floor of the dispersion: sampling alone), φ = n
is a window whose samples all share one fate (K is 0 or n). The predicted share of
violating windows is

.. math::

    V(n, q, φ) = P(K \ge D) + w\,P(K = D - 1).

Whatever the dispersion, Markov's inequality bounds it:
:math:`V \le P(K \ge D - 1) \le n q / (D - 1)` for D > 1 (``markov_bound``).

**Estimating q and φ from windows.** From m windows (or sub-windows) with counts
:math:`(n_i, k_i)`: :math:`\hat q = \sum k_i / \sum n_i`; the Pearson statistic
:math:`X^2 = \sum (k_i - n_i \hat q)^2 / (n_i \hat q (1 - \hat q))` has expectation
≈ (m - 1) φ, and :math:`X^2/φ \approx χ^2_{m-1}`, so at confidence c
(δ = (1 - c)/2 in each tail)

.. math::

    φ_{hi} = \max(1, X^2 / χ^2_{m-1}(δ)), \qquad φ_{lo} = \max(1, X^2 / χ^2_{m-1}(1-δ)).

Counts over sub-windows of length W/s bound the dispersion of whole windows:
:math:`\mathrm{Var}(\sum_{j=1}^s K_j) \le s \sum_j \mathrm{Var}(K_j)` (Cauchy-Schwarz), so
:math:`φ_W \le s\,φ_{W/s}`: a quarter window gives a bound before whole windows exist.

The bounds on q use the effective sample size of an overdispersed count (n/φ samples
carry the information of n independent ones) with the Jeffreys interval:
:math:`q_{hi} = B^{-1}(1-δ;\ K/φ + ½,\ (N-K)/φ + ½)`, :math:`q_{lo}` at δ (0 when K = 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

#: The confidence of every bound here and of the capacity's interval (90 %, the
#: interval the report gives): δ = 5 % in each tail.
CONFIDENCE = 0.90


def _special() -> Any:
    # scipy.special is imported on first use: the CLI's other commands never pay for it.
    import scipy.special  # type: ignore[import-untyped]

    return scipy.special


def violation_threshold(n: int, allowed: float, percentile: bool) -> tuple[int, float]:
    """(D, w): a window of ``n`` samples violates for certain with ``K >= D`` samples
    over the threshold, and with weight ``w`` when ``K = D - 1`` (module doc).

    ``allowed`` is the share a window may hold over T: 0.05 for p95, 0 for max, the
    error-rate limit for errors; ``percentile``: linear interpolation (else a count)."""
    if n <= 0:
        return 1, 0.0
    if not percentile:
        return math.floor(allowed * n + 1e-9) + 1, 0.0
    h = (n - 1) * (1.0 - allowed)
    f = math.floor(h + 1e-9)
    frac = max(0.0, h - f)
    if frac < 1e-9:
        frac = 0.0
    return n - f, frac


def _log_pmf_betabin(k: npt.NDArray[np.float64], n: int, a: float, b: float) -> F64:
    sp = _special()
    out: F64 = (
        sp.gammaln(n + 1)
        - sp.gammaln(k + 1)
        - sp.gammaln(n - k + 1)
        + sp.betaln(k + a, n - k + b)
        - sp.betaln(a, b)
    )
    return out


def _log_pmf_binom(k: npt.NDArray[np.float64], n: int, q: float) -> F64:
    sp = _special()
    out: F64 = (
        sp.gammaln(n + 1)
        - sp.gammaln(k + 1)
        - sp.gammaln(n - k + 1)
        + k * math.log(q)
        + (n - k) * math.log1p(-q)
    )
    return out


def tail(n: int, q: float, phi: float, d: int, w: float) -> float:
    """:math:`P(K \\ge D) + w P(K = D-1)` for K ~ BetaBin(n, q, φ) (φ = 1: binomial)."""
    if n <= 0 or d > n + 1:
        return 0.0
    q = min(max(q, 0.0), 1.0)
    if q <= 0.0:
        return 0.0
    if q >= 1.0:
        return 1.0
    phi = max(1.0, phi)
    lo = max(d - 1, 0)
    k = np.arange(lo, n + 1, dtype=np.float64)
    if phi >= n:  # every sample of a window shares one fate: K is 0 or n
        return q if d <= n else 0.0
    rho = (phi - 1.0) / (n - 1.0) if n > 1 else 0.0
    if rho < 1e-12:
        logp = _log_pmf_binom(k, n, q)
    else:
        s = 1.0 / rho - 1.0
        logp = _log_pmf_betabin(k, n, q * s, (1.0 - q) * s)
    p = np.exp(logp)
    weights = np.ones_like(p)
    if d >= 1 and lo == d - 1:
        weights[0] = w
    return float(min(1.0, max(0.0, float(np.sum(p * weights)))))


def markov_bound(n: int, q: float, d: int) -> float:
    """:math:`P(K \\ge D - 1) \\le nq/(D-1)`: holds for any dispersion (D > 1)."""
    if d <= 1:
        return 1.0
    return min(1.0, n * q / (d - 1))


@lru_cache(maxsize=256)
def chi2_quantile(dof: int, p: float) -> float:
    return float(2.0 * _special().gammaincinv(dof / 2.0, p))


def jeffreys(k: float, n: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """(lo, hi) of the Jeffreys interval for k successes in n trials (k, n may be
    fractional: effective counts); lo = 0 when k = 0, hi = 1 when k = n."""
    if n <= 0:
        return 0.0, 1.0
    k = min(max(k, 0.0), n)
    delta = (1.0 - confidence) / 2.0
    sp = _special()
    lo = 0.0 if k <= 0 else float(sp.betaincinv(k + 0.5, n - k + 0.5, delta))
    hi = 1.0 if k >= n else float(sp.betaincinv(k + 0.5, n - k + 0.5, 1.0 - delta))
    return lo, hi


def exact_lo(k: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The Clopper-Pearson (exact) lower bound of a binomial share, k of n: 0 when k = 0.
    For counts of whole windows, a handful of them: where the Jeffreys bound's k = 1 is
    liberal, this one never claims more than ``confidence`` (one-sided, δ = (1 - c)/2)."""
    if k <= 0 or n <= 0:
        return 0.0
    k = min(k, n)
    delta = (1.0 - confidence) / 2.0
    return float(_special().betaincinv(k, n - k + 1, delta))


@dataclass(frozen=True, slots=True)
class Dispersion:
    """φ at the window's scale: an estimate and its bounds (all ≥ 1)."""

    estimate: float
    lo: float
    hi: float


UNKNOWN_DISPERSION = Dispersion(1.0, 1.0, math.inf)


def pearson_dispersion(
    n: npt.NDArray[np.float64], k: npt.NDArray[np.float64], confidence: float = CONFIDENCE
) -> Dispersion | None:
    """φ of counts ``k`` out of ``n`` per interval (module doc); ``None`` when it cannot be
    told: fewer than 2 intervals with samples, or no exceedance (q̂ = 0) or all (q̂ = 1)."""
    mask = n > 0
    n, k = n[mask], k[mask]
    m = len(n)
    if m < 2:
        return None
    total_n, total_k = float(n.sum()), float(k.sum())
    qhat = total_k / total_n
    if qhat <= 0.0 or qhat >= 1.0:
        return None
    x2 = float(np.sum((k - n * qhat) ** 2 / (n * qhat * (1.0 - qhat))))
    delta = (1.0 - confidence) / 2.0
    dof = m - 1
    est = max(1.0, x2 / dof)
    hi = max(1.0, x2 / chi2_quantile(dof, delta))
    lo = max(1.0, x2 / chi2_quantile(dof, 1.0 - delta))
    return Dispersion(est, lo, hi)


def combine_dispersion(
    whole: Dispersion | None, parts: Dispersion | None, parts_per_window: int
) -> Dispersion:
    """φ of whole windows from whole-window counts and from sub-window counts
    (:math:`φ_W \\le s φ_{W/s}` bounds it from above; the binomial, 1, from below)."""
    his = []
    if whole is not None:
        his.append(whole.hi)
    if parts is not None:
        his.append(parts_per_window * parts.hi)
    hi = min(his) if his else math.inf
    lo = whole.lo if whole is not None else 1.0
    est = whole.estimate if whole is not None else (parts.estimate if parts is not None else 1.0)
    est = min(max(est, lo), hi)
    return Dispersion(est, min(lo, hi), hi)


@dataclass(frozen=True, slots=True)
class Prediction:
    """The predicted share of violating windows at one rate, for one criterion."""

    samples: int  # N pooled
    exceed: int  # K pooled
    q: float
    q_lo: float
    q_hi: float
    dispersion: Dispersion
    share: float  # point estimate of V
    share_lo: float
    share_hi: float


def predict(
    total_n: int,
    total_k: int,
    dispersion: Dispersion,
    window_n: int,
    allowed: float,
    percentile: bool,
    confidence: float = CONFIDENCE,
) -> Prediction:
    """V at a rate whose windows hold ``window_n`` samples, from ``total_k`` of
    ``total_n`` pooled samples over T, with its (lo, hi) bounds at ``confidence``.

    With no evidence of the dispersion (φ_hi infinite), the upper bound is Markov's,
    which holds for any φ, at the Jeffreys bound of q with the binomial's sample size
    (the floor); the lower bound uses the binomial floor."""
    d, w = violation_threshold(window_n, allowed, percentile)
    qhat = total_k / total_n if total_n else 0.0
    phi_hi = dispersion.hi
    finite = math.isfinite(phi_hi)
    _, q_hi_floor = jeffreys(total_k, total_n, confidence)
    if finite:
        _, q_hi = jeffreys(total_k / phi_hi, total_n / phi_hi, confidence)
    else:
        q_hi = q_hi_floor
    q_lo, _ = jeffreys(total_k / dispersion.lo, total_n / dispersion.lo, confidence)
    share = tail(window_n, qhat, dispersion.estimate, d, w)
    if total_k == 0:
        # No exceedance yet: no dispersion can be measured here; its lower bound (the
        # binomial, or one measured where it can only be smaller) is the evidence.
        phi0 = max(1.0, dispersion.lo)
        q0 = jeffreys(0, total_n / phi0, confidence)[1]
        share_hi = tail(window_n, q0, phi0, d, w)
    elif finite:
        share_hi = min(tail(window_n, q_hi, phi_hi, d, w), markov_bound(window_n, q_hi, d))
    else:
        share_hi = max(
            tail(window_n, q_hi_floor, 1.0, d, w),
            min(1.0, markov_bound(window_n, q_hi_floor, d)),
        )
    share_lo = tail(window_n, q_lo, dispersion.lo, d, w)
    share = min(max(share, share_lo), share_hi)
    return Prediction(
        total_n, total_k, qhat, q_lo, q_hi, dispersion, share, share_lo, max(share_hi, share)
    )


def q_at_share(
    window_n: int, dispersion: float, allowed: float, percentile: bool, budget: float
) -> float:
    """The exceedance probability q at which V(window_n, q, φ) = ``budget`` (bisection:
    V rises with q)."""
    d, w = violation_threshold(window_n, allowed, percentile)
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2.0
        if tail(window_n, mid, dispersion, d, w) < budget:
            lo = mid
        else:
            hi = mid
    return lo
