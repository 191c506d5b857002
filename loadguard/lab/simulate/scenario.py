r"""A simulator scenario (a value) and its analytic capacity λ*(t).

The target is a G/G/c/K FCFS queue (``FcfsQueue``): ``servers`` c, a service-time
distribution, at most ``queue`` K waiting (an overflowing arrival is an error answered at
once). ``changes`` multiply the server count at given times: ``300s:0.5`` halves it,
:math:`c(t) = \max(1, \mathrm{round}(c_0 \prod_{t_i \le t} f_i))`.

The load generator: the start rate is in force at t = 0; a rate pushed at t takes effect at
t + ``lag_s`` (the Elastic Timer's actuation lag); arrivals are ``poisson`` or ``smooth``
(evenly spaced, the Elastic Timer's pacing); a completed sample reaches the JTL at the next
multiple of ``flush_s`` (JMeter's buffered writer), 0 meaning at once.

λ*(t) is the largest Poisson arrival rate whose response-time p95 meets the p95 SLO with
c(t) servers: Erlang C for exponential service (``loadguard.lab.simulate.mmc``), otherwise
estimated by simulation with common random numbers (``loadguard.lab.target.capacity``).

Plant features for the controller's plant suite (``loadguard.lab.simulate.plants``); λ*(t)
above ignores them (it is the warmed-up, healthy plant's):

* ``service`` may be a ``ShopService``: the shop model's per-endpoint log-normal service
  times drawn in its request mix (``loadguard.lab.target.model``);
* ``warmup`` (``Warmup(k, T)``): a request arriving at t takes
  :math:`m(t) = 1 + (k - 1) \max(0, 1 - t/T)` times its drawn service time (a cold JVM
  k times slower, warm after T);
* ``metastable``: the cliff of ``loadguard.lab.simulate.fcfs.Metastable``;
* ``outages`` (``Outage(t, d)``): the servers hang in [t, t + d) (``FcfsQueue.pause``);
* ``generator_threads``: the load generator's thread bound (``FcfsQueue``).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import numpy as np
import numpy.typing as npt

from loadguard.durations import parse_duration_s
from loadguard.errors import SimulationError, UsageError
from loadguard.lab.simulate import mmc
from loadguard.lab.simulate.fcfs import Metastable
from loadguard.lab.simulate.features import Outage, Warmup
from loadguard.lab.target.capacity import estimate_lambda_star
from loadguard.lab.target.distributions import ServiceDist
from loadguard.lab.target.model import ENDPOINTS, TargetModel, build_model

Arrivals = Literal["poisson", "smooth"]
F64 = npt.NDArray[np.float64]


def one_change(texts: tuple[str, ...]) -> CapacityChange | None:
    """The one capacity change ``loadguard target`` can make (``None``: none given)."""
    if len(texts) > 1:
        raise SimulationError(
            f"loadguard target changes capacity once: got {len(texts)} --capacity-change"
        )
    return CapacityChange.parse(texts[0]) if texts else None


@dataclass(frozen=True, slots=True)
class CapacityChange:
    at_s: float
    factor: float

    @classmethod
    def parse(cls, text: str) -> CapacityChange:
        """``300s:0.5`` -> at 300 s, multiply the servers by 0.5."""
        when, sep, factor = text.partition(":")
        if not sep:
            raise SimulationError(
                f"bad capacity change {text!r}: expected TIME:FACTOR, e.g. 300s:0.5"
            )
        try:
            at_s = parse_duration_s(when, what="capacity change time")
            value = float(factor)
        except ValueError:
            raise SimulationError(f"bad capacity change factor in {text!r}") from None
        except UsageError as exc:
            raise SimulationError(f"bad capacity change {text!r}: {exc}") from None
        if not (math.isfinite(value) and value > 0):
            raise SimulationError(f"capacity change factor must be > 0 in {text!r}")
        return cls(at_s, value)


@dataclass(frozen=True, slots=True)
class ShopService:
    """The shop model's service: endpoint e with probability p_e (its request mix), then
    a draw from e's distribution. E[S] = Σ p_e E[S_e]."""

    base_s: float

    @property
    def model(self) -> TargetModel:
        return build_model("shop", workers=1, queue=0, service_s=self.base_s)

    @property
    def kind(self) -> str:
        return "shop"

    @property
    def mean_s(self) -> float:
        return self.model.mean_service_s

    def sample(self, rng: np.random.Generator, n: int) -> F64:
        return self.model.sample_service(rng, n)


@dataclass(frozen=True)
class Scenario:
    servers: int = 8
    service: ServiceDist | ShopService = field(default_factory=lambda: ServiceDist("exp", 0.050))
    queue: int = 200
    duration_s: float = 600.0
    start_rate: float = 5.0
    changes: tuple[CapacityChange, ...] = ()
    lag_s: float = 2.0
    flush_s: float = 0.0
    arrivals: Arrivals = "poisson"
    tick_s: float = 1.0
    seed: int = 1
    warmup: Warmup | None = None
    metastable: Metastable | None = None
    outages: tuple[Outage, ...] = ()
    generator_threads: int | None = None

    def __post_init__(self) -> None:
        if self.servers < 1 or self.queue < 0:
            raise SimulationError("need workers (servers) >= 1 and queue >= 0")
        if self.service.mean_s <= 0:
            raise SimulationError("the mean service time must be > 0")
        if not self.duration_s > 0 or not self.tick_s > 0 or self.tick_s > self.duration_s:
            raise SimulationError("need duration > 0 and 0 < tick <= duration")
        if not self.start_rate > 0:
            raise SimulationError("the start rate must be > 0 (a rate of 0 is never pushed)")
        if self.lag_s < 0 or self.flush_s < 0:
            raise SimulationError("actuation lag and JTL flush delay must be >= 0")
        if self.arrivals not in ("poisson", "smooth"):
            raise SimulationError(f"arrivals must be poisson or smooth, got {self.arrivals!r}")
        if self.generator_threads is not None and self.generator_threads < 1:
            raise SimulationError("generator threads must be >= 1")
        if not re.fullmatch(r"\d+", str(self.seed)):
            raise SimulationError("the seed must be a non-negative integer")

    def servers_at(self, t_s: float) -> int:
        factor = 1.0
        for change in self.changes:
            if change.at_s <= t_s:
                factor *= change.factor
        return max(1, round(self.servers * factor))

    def phases(self) -> list[tuple[float, float, int]]:
        """``(start_s, end_s, servers)`` spans of constant capacity over the run."""
        cuts = sorted(
            {0.0, self.duration_s, *(c.at_s for c in self.changes if c.at_s < self.duration_s)}
        )
        return [(a, b, self.servers_at(a)) for a, b in itertools.pairwise(cuts)]

    def lambda_star(self, servers: int, slo_p95_s: float) -> float:
        return _lambda_star(self.service, servers, self.queue, slo_p95_s)

    def lambda_star_method(self) -> str:
        return "analytic" if self.service.kind == "exp" else "simulated"

    def mean_lambda_star(self, slo_p95_s: float, start_s: float = 0.0) -> float:
        """Time-weighted mean of λ*(t) over ``[start_s, duration]``."""
        total, span = 0.0, self.duration_s - start_s
        if span <= 0:
            raise SimulationError("the averaging span is empty")
        for a, b, c in self.phases():
            lo, hi = max(a, start_s), b
            if hi > lo:
                total += (hi - lo) * self.lambda_star(c, slo_p95_s)
        return total / span


@cache
def _lambda_star(
    service: ServiceDist | ShopService, servers: int, queue: int, slo_s: float
) -> float:
    if isinstance(service, ShopService):
        shop = build_model("shop", workers=servers, queue=queue, service_s=service.base_s)
        return estimate_lambda_star(shop, slo_s).lambda_star_rps
    if service.kind == "exp":
        return mmc.lambda_star(servers, service.mean_s, slo_s)
    model = TargetModel("shop", servers, queue, {name: service for name in ENDPOINTS})
    return estimate_lambda_star(model, slo_s).lambda_star_rps
