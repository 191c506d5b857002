"""The schemes under evaluation: two open-loop baselines and every LoadGuard policy.

Baselines run a stock JMeter plan from ``benchmarks/plans`` on the real jmeter-plugins
(no LoadGuard in the loop). LoadGuard schemes run the minimal elastic plan
(``jmx_templates/elastic_plan.jmx``) under ``loadguard run`` with one policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from loadguard.errors import UsageError
from loadguard.policies import DEFAULT_POLICY
from loadguard.resources import baseline_plan


@dataclass(frozen=True)
class Scheme:
    name: str
    kind: Literal["baseline", "loadguard"]
    label: str
    plan: str | None = None  # baseline plan file in loadguard/data/plans
    policy: str | None = None  # LoadGuard policy name

    @property
    def plan_path(self) -> Path:
        if self.plan is None:
            raise UsageError(f"scheme {self.name} has no baseline plan")
        return baseline_plan(self.plan)


SCHEMES: tuple[Scheme, ...] = (
    Scheme("FFA", "baseline", "FFA (Free-Form Arrivals, 800/s)", plan="ffa_800.jmx"),
    Scheme("TSTCTG", "baseline", "TSTCTG (Throughput Shaping Timer 800/s + CTG)", "tstctg_800.jmx"),
    Scheme("tally", "loadguard", "LoadGuard tally", policy="tally"),
    Scheme("threezone", "loadguard", "LoadGuard threezone (paper)", policy="threezone"),
    Scheme("aimd", "loadguard", "LoadGuard aimd", policy="aimd"),
)
QUICK_SCHEMES: tuple[str, ...] = ("FFA", "TSTCTG", DEFAULT_POLICY)
BY_NAME = {s.name.lower(): s for s in SCHEMES}


def parse_schemes(names: Sequence[str]) -> tuple[Scheme, ...]:
    """Schemes by name (case-insensitive), in the canonical order, each once."""
    wanted: set[str] = set()
    for raw in names:
        for name in (n.strip().lower() for n in raw.split(",")):
            if not name:
                continue
            if name not in BY_NAME:
                known = ", ".join(s.name for s in SCHEMES)
                raise UsageError(f"--schemes: unknown scheme {name!r} (known: {known})")
            wanted.add(name)
    if not wanted:
        raise UsageError("--schemes: give at least one scheme")
    return tuple(s for s in SCHEMES if s.name.lower() in wanted)
