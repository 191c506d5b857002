"""The rate each scheme asked for over time: piecewise constant, integrated exactly.

Baselines ask for a constant rate (800/s from the first sample on). A LoadGuard run asks
for its commanded rate: ``initial`` until the first tick that changed it, then each
tick's ``new_rate`` when the push was applied (``applied``), else the rate already in
force. The offered count over [a, b) is ``∫ r(t) dt``; the achieved count is the number
of samples that *started* in [a, b), so ``offered - achieved`` is the load held back by
timers and thread limits (invisible in JTL latency: coordinated omission).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from loadguard.errors import ReportError

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class OfferedSchedule:
    """r(t) = ``initial`` for t < change_ms[0], ``rate[i]`` on [change_ms[i], change_ms[i+1])."""

    initial: float
    change_ms: I64
    rate: F64

    @classmethod
    def constant(cls, rate: float) -> OfferedSchedule:
        return cls(rate, np.empty(0, np.int64), np.empty(0, np.float64))

    def rate_at(self, t_ms: int) -> float:
        i = int(np.searchsorted(self.change_ms, t_ms, side="right")) - 1
        return self.initial if i < 0 else float(self.rate[i])

    def count(self, a_ms: int, b_ms: int) -> float:
        """Expected requests over [a, b): the integral of r(t) in 1/s over ms / 1000."""
        if b_ms <= a_ms:
            return 0.0
        edges = np.concatenate(
            ([a_ms], self.change_ms[(self.change_ms > a_ms) & (self.change_ms < b_ms)], [b_ms])
        )
        total = 0.0
        for lo, hi in itertools.pairwise(edges):
            total += self.rate_at(int(lo)) * (int(hi) - int(lo)) / 1000.0
        return total


def schedule_from_decisions(path: Path, initial: float) -> OfferedSchedule:
    """The commanded rate in force, from a LoadGuard ``decisions.csv``."""
    try:
        frame = pd.read_csv(path, usecols=["epoch_ms", "new_rate", "old_rate", "applied"])
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read the decision log: {exc}") from exc
    applied = frame["applied"].astype(str).str.lower().eq("true").to_numpy()
    rate = np.where(applied, frame["new_rate"].to_numpy(np.float64), np.nan)
    in_force = np.asarray(pd.Series(rate).ffill().fillna(initial), dtype=np.float64)
    return OfferedSchedule(initial, frame["epoch_ms"].to_numpy(np.int64), in_force)
