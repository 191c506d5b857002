r"""The target's capacity model: c workers, a wait queue of K, per-endpoint service times.

Two models:

* ``mmc`` -- one class: every endpoint draws its service time from one exponential
  distribution with mean 1/μ. With Poisson arrivals this is M/M/c/K; for a K that is
  large next to the queue at λ* it is M/M/c, and λ* is analytic
  (``loadguard.lab.simulate.mmc.lambda_star``).
* ``shop`` -- each endpoint has its own log-normal service time (``SHOP_SERVICE``,
  means relative to the base ``--service``), and requests arrive in the mix that
  TeaStore's browse profile produces with redirects followed (``BROWSE_MIX``). That is
  M/G/c/K with a mixture service time; λ* is simulated (``loadguard.lab.target.capacity``).

Plant features of the controller's suite (``loadguard.lab.simulate.features``), optional:
``warmup`` scales a request's service draw by m(t) of its arrival time t since start,
``metastable`` slows service once a backlog builds (``FcfsQueue``'s cliff), ``outage``
hangs the workers for a while (requests arriving then wait it out).

Degradation: from ``degrade_at_s`` on the server runs with
``max(1, ⌊c · degrade_factor + ½⌋)`` workers (rounded half up) -- capacity c·μ scales by the factor
(exactly when c·factor is an integer) while a lone request is served as fast as before,
as when half of a service's replicas die.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from loadguard.errors import UsageError
from loadguard.lab.simulate.fcfs import Metastable
from loadguard.lab.simulate.features import Outage, Warmup
from loadguard.lab.target.distributions import ServiceDist

ModelKind = Literal["mmc", "shop"]
F64 = npt.NDArray[np.float64]

# Endpoints of the shop, named after TeaStore's web UI servlets.
ENDPOINTS: tuple[str, ...] = (
    "home",
    "login",
    "loginAction",
    "category",
    "product",
    "cart",
    "cartAction",
)

# HTTP requests per iteration of TeaStore's browse profile with redirects followed:
# Home; Login (POST loginAction -> home); two category pages; one product page;
# two add-to-cart (POST cartAction -> cart); Logout (POST loginAction -> home).
BROWSE_MIX: Mapping[str, float] = MappingProxyType(
    {"home": 3, "loginAction": 2, "category": 2, "product": 1, "cartAction": 2, "cart": 2}
)

# Shop service times: (mean relative to the base service mean, log-normal shape σ).
# Category pages (a catalogue query + images) are the heaviest, redirects the lightest.
SHOP_SERVICE: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "home": (0.6, 0.5),
        "login": (0.4, 0.3),
        "loginAction": (1.2, 0.5),
        "category": (1.5, 0.6),
        "product": (1.0, 0.5),
        "cart": (1.0, 0.5),
        "cartAction": (0.5, 0.4),
    }
)


@dataclass(frozen=True)
class TargetModel:
    """Everything that decides the target's capacity. A value: the server never mutates it."""

    kind: ModelKind
    workers: int
    queue: int
    service: Mapping[str, ServiceDist]
    mix: Mapping[str, float] = field(default_factory=lambda: BROWSE_MIX)
    degrade_at_s: float | None = None
    degrade_factor: float = 0.5
    warmup: Warmup | None = None
    metastable: Metastable | None = None
    outage: Outage | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise UsageError(f"--workers must be >= 1, got {self.workers}")
        if self.queue < 0:
            raise UsageError(f"--queue must be >= 0, got {self.queue}")
        missing = [name for name in ENDPOINTS if name not in self.service]
        if missing:
            raise UsageError(f"no service time for endpoint(s): {', '.join(missing)}")
        if not self.mix or any(w < 0 for w in self.mix.values()) or sum(self.mix.values()) <= 0:
            raise UsageError("the request mix needs non-negative weights with a positive sum")
        if self.degrade_at_s is not None and self.degrade_at_s < 0:
            raise UsageError("--capacity-change: the time must be >= 0")
        if not (math.isfinite(self.degrade_factor) and self.degrade_factor > 0):
            raise UsageError(
                f"--capacity-change: the factor must be > 0, got {self.degrade_factor}"
            )

    @property
    def degraded_workers(self) -> int:
        """Workers after the degradation (equal to ``workers`` when none is configured)."""
        if self.degrade_at_s is None:
            return self.workers
        return max(1, math.floor(self.workers * self.degrade_factor + 0.5))

    def workers_at(self, elapsed_s: float) -> int:
        """Workers in force ``elapsed_s`` seconds after the server started."""
        if self.degrade_at_s is not None and elapsed_s >= self.degrade_at_s:
            return self.degraded_workers
        return self.workers

    def mix_weights(self) -> dict[str, float]:
        """The request mix normalised to fractions that sum to 1."""
        total = float(sum(self.mix.values()))
        return {name: w / total for name, w in self.mix.items() if w > 0}

    def sample_service(self, rng: np.random.Generator, n: int) -> F64:
        """``n`` service times (seconds) of requests drawn from the mix: each request's
        endpoint first (one ``rng.choice``), then every endpoint's draws in mix order."""
        weights = self.mix_weights()
        names = list(weights)
        probs = np.array([weights[name] for name in names])
        which = rng.choice(len(names), size=n, p=probs / probs.sum())
        out = np.empty(n, np.float64)
        for i, name in enumerate(names):
            mask = which == i
            out[mask] = self.service[name].sample(rng, int(mask.sum()))
        return out

    @property
    def mean_service_s(self) -> float:
        """Mix-weighted mean service time E[S] = Σ p_e · E[S_e]."""
        return sum(p * self.service[name].mean_s for name, p in self.mix_weights().items())

    def saturation_rps(self, workers: int | None = None) -> float:
        """c / E[S]: the throughput at 100% utilisation (inf for zero service time)."""
        c = self.workers if workers is None else workers
        mean = self.mean_service_s
        return math.inf if mean == 0 else c / mean

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.kind,
            "workers": self.workers,
            "queue": self.queue,
            "service": {name: self.service[name].spec() for name in ENDPOINTS},
            "mix": self.mix_weights(),
            "mean_service_ms": self.mean_service_s * 1000.0,
            "degrade_at_s": self.degrade_at_s,
            "degrade_factor": self.degrade_factor,
            "degraded_workers": self.degraded_workers,
            "warmup": None
            if self.warmup is None
            else {"factor": self.warmup.factor, "over_s": self.warmup.over_s},
            "metastable": None
            if self.metastable is None
            else {
                "enter_waiting": self.metastable.enter_waiting,
                "factor": self.metastable.factor,
                "exit_waiting": self.metastable.exit_waiting,
            },
            "outage": None
            if self.outage is None
            else {"at_s": self.outage.at_s, "duration_s": self.outage.duration_s},
        }


def build_model(
    kind: ModelKind,
    *,
    workers: int,
    queue: int,
    service_s: float,
    overrides: Mapping[str, ServiceDist] | None = None,
    degrade_at_s: float | None = None,
    degrade_factor: float = 0.5,
    warmup: Warmup | None = None,
    metastable: Metastable | None = None,
    outage: Outage | None = None,
) -> TargetModel:
    """The model behind ``loadguard target``'s options.

    ``service_s`` is the exponential mean for ``mmc`` and the base mean the shop's
    per-endpoint means are relative to. ``overrides`` replaces single endpoints.
    """
    if service_s < 0:
        raise UsageError("--service must be >= 0")
    if kind == "mmc":
        one = ServiceDist("exp", service_s)
        service = {name: one for name in ENDPOINTS}
    elif kind == "shop":
        service = {
            name: ServiceDist("lognormal", service_s * rel, sigma)
            if service_s > 0
            else ServiceDist("const", 0.0)
            for name, (rel, sigma) in SHOP_SERVICE.items()
        }
    else:
        raise UsageError(f"unknown model {kind!r}: expected mmc or shop")
    if kind == "mmc" and overrides:
        raise UsageError("--endpoint-service needs --model shop (mmc has one service class)")
    for name, dist in (overrides or {}).items():
        if name not in ENDPOINTS:
            raise UsageError(f"unknown endpoint {name!r}: expected one of {', '.join(ENDPOINTS)}")
        service[name] = dist
    return TargetModel(
        kind=kind,
        workers=workers,
        queue=queue,
        service=MappingProxyType(service),
        degrade_at_s=degrade_at_s,
        degrade_factor=degrade_factor,
        warmup=warmup,
        metastable=metastable,
        outage=outage,
    )
