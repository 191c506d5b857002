r"""AIMD: additive increase, multiplicative decrease, as in TCP congestion control.

.. math::

    r_{k+1} = \begin{cases}
        r_k + a & \text{SAFE, or NEAR unless } \texttt{hold\_near} \\
        r_k & \text{NEAR with } \texttt{hold\_near} \\
        b\, r_k & \text{BREACH}
    \end{cases}

In a stationary system the rate saw-tooths below the breach point; with breach
probability p per judged window, the mean drift is zero where :math:`(1-p)\,a = p\,(1-b)\,r`,
so a smaller a (or a larger b) buys fewer breaches for a slower climb.
Defaults: a = 5 req/s, b = 0.7, hold_near on.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadguard.errors import PolicyError
from loadguard.observation import Observation, Zone
from loadguard.policies.base import Decision, decide, hold


@dataclass
class AimdPolicy:
    increase: float = 5.0
    decrease_factor: float = 0.7
    hold_near: bool = True
    name: str = "aimd"

    def __post_init__(self) -> None:
        if self.increase <= 0:
            raise PolicyError(f"aimd increase must be > 0, got {self.increase}")
        if not 0 < self.decrease_factor < 1:
            raise PolicyError(f"aimd decrease_factor must be in (0, 1), got {self.decrease_factor}")

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        if obs.zone is Zone.BREACH:
            return decide(obs, rate, rate * self.decrease_factor, "breach")
        if obs.zone is Zone.NEAR and self.hold_near:
            return hold(obs, rate, "near")
        if obs.zone in (Zone.SAFE, Zone.NEAR):
            return decide(obs, rate, rate + self.increase, obs.zone.lower())
        return hold(obs, rate, "no_data")
