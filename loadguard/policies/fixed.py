r"""The open-loop baseline: hold the start rate, :math:`r_{k+1} = r_k`.

With the start rate set to a fraction of λ* it is an oracle to read the closed-loop policies
against (``--policy fixed --start-rate R``; docs/controller.md quotes it for scale). The
plant suite's fixed-rate frontier is not this policy: ``loadguard.lab.evaluate.suite`` drives
those runs with no controller. Guard rails still apply (bounds, stale floor, auto-stop),
so it is also the ``loadguard run`` of a fixed-rate test.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadguard.observation import Observation
from loadguard.policies.base import Decision, hold


@dataclass
class FixedPolicy:
    name: str = "fixed"

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        return hold(obs, rate, "fixed")
