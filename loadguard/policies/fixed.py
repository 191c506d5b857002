r"""The open-loop baseline: hold the start rate, :math:`r_{k+1} = r_k`.

With the start rate set by an oracle (a fraction of λ*), it is the reference the closed-loop
policies are measured against in docs/controller.md. Guard rails still apply (bounds, stale
floor, auto-stop), so it is also the ``loadguard run`` of a fixed-rate test.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadguard.observation import Observation
from loadguard.policies.base import Decision, hold


@dataclass
class FixedPolicy:
    name: str = "fixed"

    def decide(self, obs: Observation, rate: float) -> Decision:
        return hold(obs, rate, "fixed")
