r"""Plant features shared by the simulator (``Scenario``) and ``loadguard target``
(``TargetModel``): a warm-up and a hang outage, and the parsers of their CLI specs.

The metastable cliff is ``loadguard.lab.simulate.fcfs.Metastable`` (it lives in the queue).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loadguard.durations import parse_duration_s
from loadguard.errors import SimulationError, UsageError
from loadguard.lab.simulate.fcfs import Metastable

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Warmup:
    """Service starts ``factor`` times slower and is warm after ``over_s`` (linear)."""

    factor: float
    over_s: float

    def __post_init__(self) -> None:
        if not self.factor >= 1 or not self.over_s > 0:
            raise SimulationError("warm-up needs factor >= 1 and a duration > 0")

    def multiplier(self, t_s: F64) -> F64:
        """:math:`m(t) = 1 + (k - 1) \\max(0, 1 - t/T)`."""
        return 1.0 + (self.factor - 1.0) * np.clip(1.0 - t_s / self.over_s, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class Outage:
    """The servers hang from ``at_s`` for ``duration_s``; then full recovery."""

    at_s: float
    duration_s: float

    def __post_init__(self) -> None:
        if self.at_s < 0 or not self.duration_s > 0:
            raise SimulationError("an outage needs a start >= 0 and a duration > 0")

    @property
    def end_s(self) -> float:
        return self.at_s + self.duration_s


def parse_warmup(text: str) -> Warmup:
    """``3x:90s`` -> service 3x slower at the start, warm after 90 s."""
    factor, sep, over = text.partition(":")
    try:
        k = float(factor.strip().lower().removesuffix("x"))
        span = parse_duration_s(over, what="--warmup duration") if sep else math.nan
        return Warmup(k, span)
    except (ValueError, SimulationError):
        raise UsageError(f"bad --warmup {text!r}: expected FACTORx:DURATION, e.g. 3x:90s") from None


def parse_outage(text: str) -> Outage:
    """``150s:20s`` -> the servers hang from 150 s for 20 s."""
    at, sep, length = text.partition(":")
    try:
        if not sep:
            raise ValueError(text)
        return Outage(
            parse_duration_s(at, what="--outage start"),
            parse_duration_s(length, what="--outage duration"),
        )
    except (ValueError, SimulationError):
        raise UsageError(f"bad --outage {text!r}: expected START:DURATION, e.g. 150s:20s") from None


def parse_metastable(text: str) -> Metastable:
    """``80:4`` -> 4x slower service once 80 wait, until the queue is empty;
    ``80:4:10`` recovers once at most 10 wait."""
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3):
            raise ValueError(text)
        exit_waiting = int(parts[2]) if len(parts) == 3 else 0
        return Metastable(int(parts[0]), float(parts[1]), exit_waiting)
    except (ValueError, SimulationError):
        raise UsageError(
            f"bad --metastable {text!r}: expected WAITING:FACTOR[:EXIT], e.g. 80:4"
        ) from None
