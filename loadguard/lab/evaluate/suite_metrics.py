r"""The goal figures of one run on a suite plant, pure.

Inputs: every sample (send time, end time, success), the commanded rate at each tick,
the plant's λ*(t) (a step function, 0 in an outage), its p95 SLO d, window W = 10 s.

* **violations** (the suite's *violation share*, ``violation_share``: the share
  ``loadguard.violations`` defines, over the suite's own windows): the share of the
  judged windows whose p95 exceeds d. The windows are the tumbling
  windows :math:`(kW, (k+1)W]` of *completion* time, W = 10 s; a window is judged when
  kW ≥ 30 s (the first 30 s are the ramp from 5 req/s) and it holds at least
  ``MIN_SAMPLES`` = 5 completed samples; its p95 is numpy's linear percentile of the
  whole-millisecond elapsed times (as ``Window`` computes it); errors do not count here
  (they are the next figure);
* **errors**: failed / all samples completed in the run;
* **steady efficiency**: successful completions in the steady set S over
  :math:`\int_S λ^*(t)\,dt`, with S = [120 s, D] less [a, b + 60 s] for every event
  (a capacity change, an outage) spanning [a, b];
* **frontier gap**: with the fixed-rate points :math:`(v_i, e_i)` of the plant, the
  frontier :math:`F(v) = \max\{e_i : v_i \le v\}` (0 if none); the gap is
  :math:`F(v) - e` at the run's own (v, e) (positive: below the frontier);
* **time to reach** (``time_to_90_s``): the first tick whose commanded rate is
  ≥ r λ*(t), r the goal's reach (0.9 F(B), below; 0.9 when no frontier is known);
* **recovery** (per event ending at b): t - b for the first tick t ≥ b + W whose
  commanded rate is ≥ r λ*(t) and whose sliding window (t - W, t] meets the SLO
  (p95 ≤ d, errors ≤ 1 %);
* **collapses**: maximal runs of consecutive tumbling windows (whole run) with more than
  10 % errors or a p95 over 5 d.

**The goal** (``Goal``, docs/controller.md "The plant suite"), relative to the user's
violation budget B (``SloSpec.violation_budget``) and the plant's
:math:`F(B) = \max\{e_i : v_i \le B\}` over the fixed-rate points (``frontier_at``;
none if no fixed rate keeps B):

* mean violations over the seeds ≤ B + 2 points;
* mean steady efficiency over the seeds ≥ F(B) − 5 points (not judged without an F(B));
* every seed reaches 0.9 F(B) λ*(t) within 60 s, except where λ*·W < 100 samples (the
  smallest positive λ* of the plant; a window too small to judge a p95 quickly);
* every seed recovers within 60 s of each event (to 0.9 F(B) λ*(t));
* at most one collapse on the cliff plant, in every seed;
* errors ≤ 0.5 % in every seed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from loadguard.lab.simulate.steps import step_value
from loadguard.violations import ViolationTally, over_limits

F64 = npt.NDArray[np.float64]
BOOL = npt.NDArray[np.bool_]

MIN_SAMPLES = 5
SKIP_S = 30.0
STEADY_FROM_S = 120.0
SETTLE_AFTER_EVENT_S = 60.0
WINDOW_S = 10.0
COLLAPSE_ERRORS = 0.10
COLLAPSE_P95 = 5.0

#: The plant suite's goal, relative to the budget B (``Goal``; docs/controller.md).
GOAL_VIOLATION_MARGIN = 0.02  # mean violations ≤ B + 2 points
GOAL_EFFICIENCY_MARGIN = 0.05  # mean steady efficiency ≥ F(B) − 5 points
GOAL_REACH = 0.9  # t90 and recovery: a commanded rate ≥ 0.9 F(B) λ*(t)
GOAL_T90_S = 60.0
#: t90 is not judged where λ*·W is below this many samples per window.
GOAL_T90_MIN_WINDOW_SAMPLES = 100.0
GOAL_RECOVERY_S = 60.0
GOAL_COLLAPSES = 1  # on the cliff plant
GOAL_ERRORS = 0.005
#: Where no fixed-rate frontier was measured (the real suite, ``--suite --real``), the
#: efficiency floor and the reach are the suite's former absolute ones: 90 % of λ*.
NO_FRONTIER_EFFICIENCY = 0.90


@dataclass(frozen=True)
class Capacity:
    """λ*(t): ``steps`` is ``(from_s, λ*)`` ascending, the first from 0."""

    steps: tuple[tuple[float, float], ...]

    def at(self, t_s: float) -> float:
        return step_value(self.steps, t_s)

    def integral(self, spans: Sequence[tuple[float, float]]) -> float:
        """:math:`\\int λ^*(t)\\,dt` over disjoint spans."""
        cuts = [at for at, _ in self.steps]
        total = 0.0
        for a, b in spans:
            points = sorted({a, b, *(c for c in cuts if a < c < b)})
            for lo, hi in itertools.pairwise(points):
                total += (hi - lo) * self.at(lo)
        return total


@dataclass(frozen=True)
class RunData:
    sent: F64
    end: F64
    ok: BOOL
    duration_s: float
    ticks: tuple[tuple[float, float], ...]  # (t, commanded rate after the decision)


@dataclass(frozen=True)
class SuiteMetrics:
    violations: float | None
    windows: int
    errors: float | None
    steady_efficiency: float | None
    time_to_90_s: float | None
    recovery_s: tuple[float | None, ...]
    collapses: int
    ok_rps: float
    frontier_gap: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "violations": self.violations,
            "windows": self.windows,
            "errors": self.errors,
            "steady_efficiency": self.steady_efficiency,
            "frontier_gap": self.frontier_gap,
            "time_to_90_s": self.time_to_90_s,
            "recovery_s": list(self.recovery_s),
            "collapses": self.collapses,
            "ok_rps": self.ok_rps,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SuiteMetrics:
        return cls(
            violations=data["violations"],
            windows=int(data["windows"]),
            errors=data["errors"],
            steady_efficiency=data["steady_efficiency"],
            time_to_90_s=data["time_to_90_s"],
            recovery_s=tuple(data["recovery_s"]),
            collapses=int(data["collapses"]),
            ok_rps=float(data["ok_rps"]),
            frontier_gap=data.get("frontier_gap"),
        )


def steady_spans(
    duration_s: float, events: Sequence[tuple[float, float]]
) -> list[tuple[float, float]]:
    """[120 s, D] less [a, b + 60 s] for every event."""
    spans = [(STEADY_FROM_S, duration_s)]
    for a, b in events:
        cut_lo, cut_hi = a, b + SETTLE_AFTER_EVENT_S
        out: list[tuple[float, float]] = []
        for lo, hi in spans:
            if cut_hi <= lo or cut_lo >= hi:
                out.append((lo, hi))
                continue
            if lo < cut_lo:
                out.append((lo, cut_lo))
            if cut_hi < hi:
                out.append((cut_hi, hi))
        spans = out
    return [(a, b) for a, b in spans if b > a]


def window_table(
    elapsed_ms: F64, end: F64, ok: BOOL, duration_s: float
) -> list[tuple[int, int, float | None, float]]:
    """(k, samples, p95 ms, error share) for every tumbling window (kW, (k+1)W] ⊂ [0, D]."""
    n_windows = math.floor(duration_s / WINDOW_S + 1e-9)
    k_of = np.ceil(end / WINDOW_S - 1e-9).astype(np.int64) - 1
    keep = (k_of >= 0) & (k_of < n_windows)
    k_of, el, good = k_of[keep], elapsed_ms[keep], ok[keep]
    order = np.argsort(k_of, kind="stable")
    k_of, el, good = k_of[order], el[order], good[order]
    bounds = np.searchsorted(k_of, np.arange(n_windows + 1))
    rows: list[tuple[int, int, float | None, float]] = []
    for k in range(n_windows):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        n = hi - lo
        if n == 0:
            rows.append((k, 0, None, 0.0))
            continue
        p95 = float(np.percentile(el[lo:hi], 95.0))
        rows.append((k, n, p95, 1.0 - float(np.count_nonzero(good[lo:hi])) / n))
    return rows


def violation_share(
    rows: Sequence[tuple[int, int, float | None, float]], p95_ms: float
) -> tuple[float | None, int]:
    """The suite's violation share, its one definition (module doc, "violations"): of the
    tumbling windows ``rows`` (``window_table``), those from 30 s on holding at least
    ``MIN_SAMPLES`` samples are judged; the share is the judged windows whose p95 exceeds
    ``p95_ms``. Returns (share, judged windows); share ``None`` if none was judged."""
    tally = ViolationTally(MIN_SAMPLES)
    limits = {"p95_ms": p95_ms}
    for k, n, p95, _errors in rows:
        if k * WINDOW_S >= SKIP_S:
            tally.add(n, over_limits({"p95_ms": p95}, limits))
    return tally.share("p95_ms"), tally.judged


def elapsed_ms(data: RunData) -> F64:
    """Elapsed times as the JTL has them: whole milliseconds."""
    start_ms = np.round(data.sent * 1000.0)
    return np.round(data.end * 1000.0) - start_ms


def compute(
    data: RunData,
    capacity: Capacity,
    p95_ms: float,
    events: Sequence[tuple[float, float]] = (),
    error_limit: float = 0.01,
    reach: float = GOAL_REACH,
) -> SuiteMetrics:
    """The run's figures (module doc); ``reach`` is the fraction r of λ*(t) that time to
    reach and recovery wait for (the goal's 0.9 F(B))."""
    done = data.end <= data.duration_s
    end, ok = data.end[done], data.ok[done]
    el = elapsed_ms(data)[done]
    rows = window_table(el, end, ok, data.duration_s)
    violations, judged = violation_share(rows, p95_ms)
    collapses, in_collapse = 0, False
    for _k, n, p95, err in rows:
        hit = n >= MIN_SAMPLES and (
            err > COLLAPSE_ERRORS or (p95 is not None and p95 > COLLAPSE_P95 * p95_ms)
        )
        if hit and not in_collapse:
            collapses += 1
        in_collapse = hit if n >= MIN_SAMPLES else in_collapse
    errors = 1.0 - float(np.count_nonzero(ok)) / len(ok) if len(ok) else None
    spans = steady_spans(data.duration_s, events)
    lam_area = capacity.integral(spans)
    in_steady = np.zeros(len(end), np.bool_)
    for a, b in spans:
        in_steady |= (end > a) & (end <= b)
    steady = float(np.count_nonzero(ok & in_steady)) / lam_area if lam_area > 0 else None
    t90 = None
    for t, rate in data.ticks:
        lam = capacity.at(t)
        if lam > 0 and rate >= reach * lam:
            t90 = t
            break
    recovery = tuple(
        _recovery(data, capacity, el, end, ok, b, p95_ms, error_limit, reach) for _a, b in events
    )
    return SuiteMetrics(
        violations=violations,
        windows=judged,
        errors=errors,
        steady_efficiency=steady,
        time_to_90_s=t90,
        recovery_s=recovery,
        collapses=collapses,
        ok_rps=float(np.count_nonzero(ok)) / data.duration_s,
    )


def _recovery(
    data: RunData,
    capacity: Capacity,
    el: F64,
    end: F64,
    ok: BOOL,
    t_end: float,
    p95_ms: float,
    error_limit: float,
    reach: float,
) -> float | None:
    for t, rate in data.ticks:
        if t < t_end + WINDOW_S or rate < reach * capacity.at(t):
            continue
        mask = (end > t - WINDOW_S) & (end <= t)
        n = int(np.count_nonzero(mask))
        if n < MIN_SAMPLES:
            continue
        p95 = float(np.percentile(el[mask], 95.0))
        err = 1.0 - float(np.count_nonzero(ok[mask])) / n
        if p95 <= p95_ms and err <= error_limit:
            return round(t - t_end, 3)
    return None


def frontier_gap(points: Sequence[tuple[float, float]], violations: float, eff: float) -> float:
    """:math:`F(v) - e` with :math:`F(v) = \\max\\{e_i : v_i \\le v\\}` (0 if none)."""
    best = max((e for v, e in points if v <= violations + 1e-9), default=0.0)
    return best - eff


def frontier_at(points: Sequence[tuple[float, float]], budget: float) -> float | None:
    """F(B): the best steady efficiency of the fixed-rate points (v, e) with v ≤ B;
    ``None`` if no point keeps the budget."""
    kept = [e for v, e in points if v <= budget + 1e-9]
    return max(kept) if kept else None


def t90_exempt(capacity: Capacity, window_s: float = WINDOW_S) -> bool:
    """Is the plant too small for the t90 item: λ*·W < 100 samples, λ* its smallest
    positive λ* (a window of so few samples cannot judge a p95 quickly)?"""
    lams = [lam for _at, lam in capacity.steps if lam > 0]
    return not lams or min(lams) * window_s < GOAL_T90_MIN_WINDOW_SAMPLES


@dataclass(frozen=True)
class Goal:
    """The suite's goal for one plant at the user's budget B (module doc, "The goal")."""

    budget: float
    #: F(B), or ``None``: no fixed rate kept B (then efficiency is not judged and the
    #: reach is 0.9 λ*) -- or no frontier was measured (``measured_frontier`` False).
    frontier: float | None
    has_events: bool = False
    has_cliff: bool = False
    t90_exempt: bool = False
    measured_frontier: bool = True

    @property
    def max_violations(self) -> float:
        return self.budget + GOAL_VIOLATION_MARGIN

    @property
    def min_efficiency(self) -> float | None:
        if not self.measured_frontier:
            return NO_FRONTIER_EFFICIENCY
        return None if self.frontier is None else self.frontier - GOAL_EFFICIENCY_MARGIN

    @property
    def reach(self) -> float:
        """The fraction of λ*(t) that t90 and recovery wait for: 0.9 F(B)."""
        return GOAL_REACH * (self.frontier if self.frontier is not None else 1.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "frontier_at_budget": self.frontier,
            "measured_frontier": self.measured_frontier,
            "max_violations": self.max_violations,
            "min_efficiency": self.min_efficiency,
            "reach": self.reach,
            "t90_s": GOAL_T90_S,
            "t90_exempt": self.t90_exempt,
            "recovery_s": GOAL_RECOVERY_S if self.has_events else None,
            "collapses": GOAL_COLLAPSES if self.has_cliff else None,
            "errors": GOAL_ERRORS,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Goal:
        return cls(
            budget=float(data["budget"]),
            frontier=data["frontier_at_budget"],
            has_events=data["recovery_s"] is not None,
            has_cliff=data["collapses"] is not None,
            t90_exempt=bool(data["t90_exempt"]),
            measured_frontier=bool(data.get("measured_frontier", True)),
        )


def _mean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


def misses(runs: Sequence[SuiteMetrics], goal: Goal) -> list[str]:
    """The goal items that the runs of one policy on one plant (one per seed) miss, each
    as a short name: violations and efficiency on the mean over the runs, the rest on
    every run."""
    out: list[str] = []
    if not runs:
        return ["violations", "efficiency", "t90", "errors"]
    v = _mean([m.violations for m in runs])
    if v is None or v > goal.max_violations + 1e-12:
        out.append("violations")
    floor = goal.min_efficiency
    e = _mean([m.steady_efficiency for m in runs])
    if e is None or (floor is not None and e < floor - 1e-12):
        out.append("efficiency")
    if not goal.t90_exempt and any(
        m.time_to_90_s is None or m.time_to_90_s > GOAL_T90_S for m in runs
    ):
        out.append("t90")
    if goal.has_events and any(
        r is None or r > GOAL_RECOVERY_S for m in runs for r in m.recovery_s
    ):
        out.append("recovery")
    if goal.has_cliff and any(m.collapses > GOAL_COLLAPSES for m in runs):
        out.append("collapses")
    if any(m.errors is None or m.errors > GOAL_ERRORS for m in runs):
        out.append("errors")
    return out
