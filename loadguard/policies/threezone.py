r"""The paper's three-zone rule.

With rate :math:`r_k` in force and the window's zone:

.. math::

    r_{k+1} = \begin{cases}
        r_k + δ \quad (\text{or } r_k (1 + δ) \text{ when multiplicative}) & \text{SAFE} \\
        r_k & \text{NEAR} \\
        β\, r_k & \text{BREACH}
    \end{cases}

Defaults reproduce the paper's behaviour: δ = 10 req/s additive, β = 0.8, NEAR from 80 %
of each threshold (``SloSpec.warn_margin``). NO_DATA holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loadguard.errors import PolicyError
from loadguard.observation import Observation, Zone
from loadguard.policies.base import Decision, decide, hold


@dataclass
class ThreeZonePolicy:
    step: float = 10.0
    step_mode: Literal["add", "mul"] = "add"
    decrease_factor: float = 0.8
    name: str = "threezone"

    def __post_init__(self) -> None:
        if self.step <= 0:
            raise PolicyError(f"threezone step must be > 0, got {self.step}")
        if self.step_mode not in ("add", "mul"):
            raise PolicyError(f"threezone step_mode must be add or mul, got {self.step_mode!r}")
        if not 0 < self.decrease_factor < 1:
            raise PolicyError(
                f"threezone decrease_factor must be in (0, 1), got {self.decrease_factor}"
            )

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        if obs.zone is Zone.SAFE:
            new = rate + self.step if self.step_mode == "add" else rate * (1.0 + self.step)
            return decide(obs, rate, new, "safe")
        if obs.zone is Zone.BREACH:
            return decide(obs, rate, rate * self.decrease_factor, "breach")
        return hold(obs, rate, "near" if obs.zone is Zone.NEAR else "no_data")
