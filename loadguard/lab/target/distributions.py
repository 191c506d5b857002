r"""Service-time distributions, one per endpoint.

Spec strings (``--service``, ``--endpoint-service NAME=SPEC``):

* ``exp:50ms`` -- exponential with mean m: :math:`S \sim \mathrm{Exp}(1/m)`, CV = 1;
* ``const:50ms`` (or just ``50ms``) -- deterministic, CV = 0;
* ``lognormal:50ms:0.5`` -- log-normal with *mean* m and shape σ:
  :math:`\ln S \sim N(\ln m - σ^2/2,\ σ^2)`, so :math:`E[S] = m` and
  :math:`CV = \sqrt{e^{σ^2} - 1}` (σ = 0.5 gives CV ≈ 0.53).

All sampling goes through a caller-supplied ``numpy.random.Generator`` so the server and
the λ* simulation can be seeded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from loadguard.durations import format_duration, parse_duration_s
from loadguard.errors import UsageError

DistKind = Literal["const", "exp", "lognormal"]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ServiceDist:
    """A service-time distribution: ``kind``, mean in seconds, and log-normal shape σ."""

    kind: DistKind
    mean_s: float
    sigma: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean_s) and self.mean_s >= 0):
            raise UsageError(f"service mean must be >= 0, got {self.mean_s}")
        if self.kind == "lognormal" and not (math.isfinite(self.sigma) and self.sigma > 0):
            raise UsageError(f"lognormal shape sigma must be > 0, got {self.sigma}")

    def sample(self, rng: np.random.Generator, n: int) -> F64:
        """``n`` independent service times in seconds."""
        if self.mean_s == 0 or self.kind == "const":
            return np.full(n, self.mean_s, dtype=np.float64)
        if self.kind == "exp":
            return rng.exponential(self.mean_s, n)
        mu = math.log(self.mean_s) - 0.5 * self.sigma**2
        return rng.lognormal(mu, self.sigma, n)

    def scaled(self, factor: float) -> ServiceDist:
        """The same shape with the mean multiplied by ``factor``."""
        return ServiceDist(self.kind, self.mean_s * factor, self.sigma)

    @property
    def cv(self) -> float:
        """Coefficient of variation (std / mean)."""
        if self.kind == "const" or self.mean_s == 0:
            return 0.0
        if self.kind == "exp":
            return 1.0
        return math.sqrt(math.expm1(self.sigma**2))

    def spec(self) -> str:
        """The spec string that parses back to this distribution."""
        mean = format_duration(self.mean_s)
        if self.kind == "lognormal":
            return f"lognormal:{mean}:{self.sigma:g}"
        return f"{self.kind}:{mean}"


def parse_dist(spec: str) -> ServiceDist:
    """``exp:50ms`` | ``const:50ms`` | ``50ms`` | ``lognormal:50ms:0.5`` -> ``ServiceDist``."""
    parts = [p.strip() for p in spec.strip().split(":")]
    if len(parts) == 1:
        return ServiceDist("const", parse_duration_s(parts[0], what="service time"))
    kind = parts[0].lower()
    if kind in ("exp", "const") and len(parts) == 2:
        return ServiceDist(kind, parse_duration_s(parts[1], what="service time"))  # type: ignore[arg-type]
    if kind == "lognormal" and len(parts) == 3:
        try:
            sigma = float(parts[2])
        except ValueError:
            raise UsageError(f"bad lognormal shape in {spec!r}: {parts[2]!r}") from None
        return ServiceDist("lognormal", parse_duration_s(parts[1], what="service time"), sigma)
    raise UsageError(
        f"bad service distribution {spec!r}: expected exp:50ms, const:50ms or lognormal:50ms:0.5"
    )
