r"""Capacity at the SLO: the rate at which the exceedance reaches the SLO's quantile, with
a 90 % confidence interval, from the counts at every rate visited (pure).

For each countable SLO (``ledger.Criterion``) and each rate :math:`r_i` the run held, the
ledger's pooled counts give :math:`N_i` samples sent at :math:`r_i`, :math:`K_i` over the
threshold, and the dispersion :math:`φ_i` of the windows' counts (``evidence.pool``). The
capacity is the rate where the exceedance probability q(r) reaches the share the SLO
allows, a (5 % for p95, the error-rate limit for errors): at that rate the p95 of every
sample sent equals T, which is how a fixed-rate sweep measures λ*.

* **Rates that count**: those with :math:`N_i a \ge 5` (five exceedances expected at
  the allowance; fewer cannot show q = a).
* **Point estimate.** :math:`\hat q_i = K_i/N_i`, made non-decreasing in r (more load
  never lowers the exceedance of a stationary plant) by the weighted isotonic regression
  (pool-adjacent-violators, weights the effective sizes :math:`N_i/φ_i`: the maximum
  likelihood curve under that order), and the first crossing of a interpolated linearly
  in :math:`(\ln r, \ln q)` between the two rates around it. Not a running maximum: that
  keeps the worst of the noisy low rates, and a plant that warms up (TeaStore's JIT: a
  p95 of 1.4 s at 7 req/s in its first 15 s, then 27 req/s within the SLO) would put the
  capacity at its cold start; the regression pools a low rate's few cold samples with the
  evidence at the rates above it.
* **Rates as received.** Each rate is placed at what was *sent* under it (the samples
  of its sub-windows over their send-time span) where that is below the rate in force
  by more than three Poisson sigmas: a closed generator (JMeter's threads waiting on
  slow responses) sends less than the timer asks, and the plant sees only what is sent
  (the real TeaStore at 48 req/s in force received 36).
* **Interval.** A parametric bootstrap: each draw takes
  :math:`q_i \sim \mathrm{Beta}(K_i/φ_i + ½, (N_i - K_i)/φ_i + ½)` (the Jeffreys posterior
  with the effective sample size :math:`N_i/φ_i`), and repeats the crossing; the 5th and
  95th percentiles of the draws are the 90 % interval. The generator's seed is fixed, so
  the same counts give the same interval (a run is replayable).
* **Status.** ``estimated`` when the point estimate crosses and 95 % of the draws cross
  inside the rates visited; ``lower_bound`` when the knee was not reached: no rate's
  exceedance is shown above a, and the answer is one-sided, "capacity above r", r the
  highest rate held for a whole window (``PARTS`` sub-windows) whose 95 % upper bound
  of q is below a: a shorter hold shows the queue it started from, not the rate's (on
  the demo target a 4 s probe at 160 req/s, cut by the knee watcher, said "above 160"
  for a λ* of 146.5); ``unknown`` with no evidence.
  The binding SLO is the one whose capacity is lowest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from loadguard.evidence import pool
from loadguard.exceedance import CONFIDENCE, jeffreys
from loadguard.ledger import PARTS, Criterion

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Bootstrap draws: the 5 % tails of 1,000 draws hold 50 each.
DRAWS = 1000
#: A rate enters the curve once it holds this many exceedances at the allowance
#: (N a >= 5: the count at q = a is then told from 0, as in a chi-square cell).
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class CapacityEstimate:
    status: str  # "estimated" | "lower_bound" | "unknown"
    rps: float | None
    ci90_rps: tuple[float, float] | None
    metric: str | None
    note: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "rps": None if self.rps is None else round(self.rps, 3),
            "ci90_rps": None
            if self.ci90_rps is None
            else [round(self.ci90_rps[0], 3), round(self.ci90_rps[1], 3)],
            "metric": self.metric,
            "note": self.note,
        }


UNKNOWN = CapacityEstimate("unknown", None, None, None, "no rate was held long enough to judge")


def _isotonic(q: F64, w: F64) -> F64:
    r"""Per row of ``q`` (draws x rates), the non-decreasing fit minimising
    :math:`\sum_i w_i (q_i - f_i)^2` (pool-adjacent-violators, SciPy's: O(rates) per
    row, where the min-max formula's O(rates²) arrays would grow with a long run's
    many rates)."""
    from scipy.optimize import isotonic_regression  # type: ignore[import-untyped]

    return np.array([isotonic_regression(row, weights=w).x for row in q])


def _crossing(rates: F64, q: F64, allowed: float, weights: F64) -> F64:
    """Per row of ``q`` (draws x rates, rates ascending): the rate where the isotonic
    fit of q (``weights``: the rates' effective sizes) first reaches ``allowed``,
    log-log interpolated; NaN where it never does, -inf where the lowest rate already
    does."""
    mono = np.maximum.accumulate(_isotonic(q, weights), axis=1)  # guards the rounding
    over = mono >= allowed
    first = np.argmax(over, axis=1)
    crossed = over.any(axis=1)
    out = np.full(q.shape[0], np.nan)
    ln_r, ln_a = np.log(rates), math.log(allowed)
    for i in np.nonzero(crossed)[0]:
        j = int(first[i])
        if j == 0:
            out[i] = -np.inf
            continue
        q1, q2 = max(mono[i, j - 1], 1e-12), mono[i, j]
        frac = 1.0 if q2 <= q1 else (ln_a - math.log(q1)) / (math.log(q2) - math.log(q1))
        out[i] = math.exp(ln_r[j - 1] + frac * (ln_r[j] - ln_r[j - 1]))
    return out


def _offered(rate: float, sent: Mapping[float, tuple[int, float]] | None) -> float:
    """The rate the plant received under ``rate``: the sent rate x = n/s where it falls
    below the rate in force by more than three Poisson sigmas of n (a closed generator),
    else the rate in force."""
    if sent is None or rate not in sent:
        return rate
    n, span = sent[rate]
    if n <= 0 or span <= 0:
        return rate
    x = n / span
    return x if x < rate * (1.0 - 3.0 / math.sqrt(n)) else rate


def estimate(
    by_rate: Sequence[tuple[float, I64]],
    criteria: tuple[Criterion, ...],
    window_ms: int,
    confidence: float = CONFIDENCE,
    sent: Mapping[float, tuple[int, float]] | None = None,
) -> CapacityEstimate:
    """The capacity from the ledger's ``by_rate`` rows (module doc); ``sent``
    (``ExceedanceLedger.sent_by_rate``) places each rate at what was sent under it."""
    if not by_rate or not criteria:
        return UNKNOWN
    evidence = [pool([rows], criteria, rate, window_ms, confidence) for rate, rows in by_rate]
    kept = [
        (_offered(r, sent), ev)
        for (r, _rows), ev in zip(by_rate, evidence, strict=True)
        if ev.samples
    ]
    if not kept:
        return UNKNOWN
    kept.sort(key=lambda item: item[0])
    rates = np.array([r for r, _ in kept])
    whole = np.array([ev.subwindows >= PARTS for _, ev in kept])  # held a whole window
    rng = np.random.default_rng(20261201)
    best: CapacityEstimate | None = None
    lower: list[tuple[float, str]] = []
    for j, crit in enumerate(criteria):
        # every evidence kept holds samples, so a prediction per criterion (a criterion
        # with none at a rate: no samples there, left out by ``enough`` below)
        preds = [ev.predictions[j] for _, ev in kept]
        n = np.array([p.samples for p in preds], np.float64)
        k = np.array([p.exceed for p in preds], np.float64)
        phi = np.array([p.dispersion.estimate for p in preds])
        a = crit.allowed if crit.allowed > 0 else 0.5 / max(float(n.max()), 1.0)
        # a rate can show q = a only with about 5 exceedances expected there
        enough = n * a >= MIN_EXPECTED
        if not enough.any():
            continue
        rates_j, n, k, phi = rates[enough], n[enough], k[enough], phi[enough]
        eff = n / phi
        point = _crossing(rates_j, (k / n)[None, :], a, eff)[0]
        if math.isnan(point):
            # the knee was not reached: the highest rate held for a whole window and
            # shown under the allowance (a shorter hold shows the queue it started from)
            shown = [
                r for r, ni, ki, fi, w in zip(rates_j, n, k, phi, whole[enough], strict=True)
                if w and jeffreys(ki / fi, ni / fi, confidence)[1] < a
            ]  # fmt: skip
            if shown:
                lower.append((max(shown), crit.metric))
            continue
        draws = rng.beta(
            (k / phi + 0.5)[None, :].repeat(DRAWS, 0),
            ((n - k) / phi + 0.5)[None, :].repeat(DRAWS, 0),
        )
        cross = _crossing(rates_j, draws, a, eff)
        inside = np.isfinite(cross)
        if point == -np.inf:
            cand = CapacityEstimate(
                "estimated", float(rates_j[0]), (0.0, float(rates_j[0])), crit.metric,
                f"over the SLO already at the lowest rate held, {rates_j[0]:.4g} req/s",
            )  # fmt: skip
        else:
            finite = cross[inside]
            delta = (1.0 - confidence) / 2.0
            if inside.mean() < 1.0 - delta or len(finite) == 0:
                lo = float(np.quantile(finite, delta)) if len(finite) else float(point)
                cand = CapacityEstimate(
                    "estimated", float(point), (lo, float(rates_j[-1])), crit.metric,
                    "the interval's top is the highest rate held: the knee is not pinned",
                )  # fmt: skip
            else:
                lo, hi = np.quantile(finite, [delta, 1.0 - delta])
                cand = CapacityEstimate(
                    "estimated", float(point), (float(lo), float(hi)), crit.metric, None
                )
        if best is None or (cand.rps or 0.0) < (best.rps or 0.0):
            best = cand
    if best is not None:
        return best
    if lower:
        # the lowest rate; where SLOs tie (every one shown under its allowance at the
        # same highest rate), the first in the spec's order, latency before errors: a
        # tie broken by the metric's name said "error rate <= 1 %" of a p95 SLO's run
        rate, metric = min(lower, key=lambda item: item[0])
        return CapacityEstimate(
            "lower_bound", float(rate), None, metric,
            f"capacity above {rate:.4g} req/s: the knee was not reached",
        )  # fmt: skip
    return UNKNOWN
