r"""λ*: the largest Poisson arrival rate whose response-time quantile meets the SLO.

For a response-time SLO "q-quantile of T <= d" (q = 0.95 for a p95 SLO),

.. math::

    λ^* = \sup\{λ : Q_q(T; λ) \le d\}

where Q_q(T; λ) is increasing in λ, so λ* is found by bisection on λ ∈ (0, c/E[S]).

* ``mmc`` model: T is the M/M/c response time and Q_q is analytic
  (``loadguard.lab.simulate.mmc``). The bounded queue K is ignored there, which is exact
  in the limit K → ∞ and negligible when P(queue >= K) at λ* is small (the default K is).
* ``shop`` model (mixture of log-normal service times): Q_q is estimated by running
  ``loadguard.lab.simulate.fcfs.FcfsQueue`` -- the same queue the server schedules its
  requests with -- on ``n`` Poisson arrivals. A rejected request (queue full, a 503)
  counts as a response above the SLO. The first ``warmup`` fraction of requests is
  dropped. Common random numbers: the unit-rate inter-arrival draws E_i and the service
  draws are fixed across the bisection and arrivals are :math:`a_i = \sum_{j\le i} E_j/λ`,
  so the estimate is monotone in λ and the bisection converges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from loadguard.errors import SimulationError
from loadguard.lab.simulate import mmc
from loadguard.lab.simulate.fcfs import FcfsQueue
from loadguard.lab.target.model import TargetModel

Method = Literal["analytic", "simulated"]


@dataclass(frozen=True, slots=True)
class CapacityEstimate:
    """λ* for one SLO and one number of workers."""

    slo_s: float
    quantile: float
    workers: int
    lambda_star_rps: float
    saturation_rps: float
    method: Method

    def to_json(self) -> dict[str, Any]:
        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "slo_ms": self.slo_s * 1000.0,
            "quantile": self.quantile,
            "workers": self.workers,
            "lambda_star": finite(self.lambda_star_rps),
            "saturation_rps": finite(self.saturation_rps),
            "method": self.method,
        }


def is_analytic(model: TargetModel) -> bool:
    """True when every endpoint shares one exponential distribution (M/M/c)."""
    dists = {model.service[name] for name in model.mix_weights()}
    return model.kind == "mmc" and len(dists) == 1 and next(iter(dists)).kind == "exp"


def estimate_lambda_star(
    model: TargetModel,
    slo_s: float,
    *,
    quantile: float = 0.95,
    workers: int | None = None,
    n: int = 40_000,
    seed: int = 20_260_407,
) -> CapacityEstimate:
    """λ* of ``model`` for "quantile of response time <= ``slo_s``" with ``workers``."""
    if not 0.0 < quantile < 1.0:
        raise SimulationError("quantile must be in (0, 1)")
    if slo_s <= 0:
        raise SimulationError("the SLO must be > 0")
    c = model.workers if workers is None else workers
    saturation = model.saturation_rps(c)
    if model.mean_service_s == 0:
        return CapacityEstimate(slo_s, quantile, c, math.inf, math.inf, "analytic")
    if is_analytic(model):
        lam = mmc.lambda_star(c, model.mean_service_s, slo_s, q=quantile)
        return CapacityEstimate(slo_s, quantile, c, lam, saturation, "analytic")
    lam = _simulated_lambda_star(model, slo_s, quantile, c, n, seed)
    return CapacityEstimate(slo_s, quantile, c, lam, saturation, "simulated")


def simulated_quantile(
    model: TargetModel,
    rate_rps: float,
    *,
    quantile: float = 0.95,
    workers: int | None = None,
    n: int = 40_000,
    seed: int = 20_260_407,
) -> float:
    """Simulated response-time quantile (seconds) at Poisson rate ``rate_rps``."""
    draws = _Draws.make(model, n, seed)
    c = model.workers if workers is None else workers
    return draws.quantile(rate_rps, c, model.queue, quantile)


@dataclass(frozen=True)
class _Draws:
    unit_gaps: np.ndarray[Any, np.dtype[np.float64]]
    service_s: np.ndarray[Any, np.dtype[np.float64]]
    warmup: int

    @classmethod
    def make(cls, model: TargetModel, n: int, seed: int) -> _Draws:
        if n < 1000:
            raise SimulationError("simulate at least 1000 requests")
        rng = np.random.default_rng(seed)
        service = model.sample_service(rng, n)
        return cls(rng.exponential(1.0, n), service, n // 10)

    def quantile(self, rate_rps: float, servers: int, queue: int, q: float) -> float:
        arrivals = np.cumsum(self.unit_gaps) / rate_rps
        _start, end, rejected = FcfsQueue(servers, queue).offer(arrivals, self.service_s)
        response = np.where(rejected, np.inf, end - arrivals)[self.warmup :]
        return float(np.quantile(response, q, method="higher"))


def _simulated_lambda_star(
    model: TargetModel, slo_s: float, q: float, servers: int, n: int, seed: int
) -> float:
    draws = _Draws.make(model, n, seed)
    lo, hi = 0.0, model.saturation_rps(servers)
    # Idle system: the service-time quantile alone already misses the SLO.
    if draws.quantile(hi * 1e-6, servers, model.queue, q) > slo_s:
        return 0.0
    # Past saturation the queue is unstable; keep the search below it.
    while hi - lo > 1e-3 * hi:
        mid = 0.5 * (lo + hi)
        if draws.quantile(mid, servers, model.queue, q) <= slo_s:
            lo = mid
        else:
            hi = mid
    return lo
