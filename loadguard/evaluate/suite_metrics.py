r"""The goal figures of one run on a suite plant, pure.

Inputs: every sample (send time, end time, success), the commanded rate at each tick,
the plant's λ*(t) (a step function, 0 in an outage), its p95 SLO d, window W = 10 s.

* **violations**: share of tumbling windows :math:`(kW, (k+1)W]` of completion time with
  kW ≥ 30 s holding at least ``MIN_SAMPLES`` samples whose p95 (linear, as ``Window``)
  exceeds d;
* **errors**: failed / all samples completed in the run;
* **steady efficiency**: successful completions in the steady set S over
  :math:`\int_S λ^*(t)\,dt`, with S = [120 s, D] less [a, b + 60 s] for every event
  (a capacity change, an outage) spanning [a, b];
* **frontier gap**: with the fixed-rate points :math:`(v_i, e_i)` of the plant, the
  frontier :math:`F(v) = \max\{e_i : v_i \le v\}` (0 if none); the gap is
  :math:`F(v) - e` at the run's own (v, e) (positive: below the frontier);
* **time to 90 %**: the first tick whose commanded rate is ≥ 0.9 λ*(t);
* **recovery** (per event ending at b): t - b for the first tick t ≥ b + W whose
  commanded rate is ≥ 0.9 λ*(t) and whose sliding window (t - W, t] meets the SLO
  (p95 ≤ d, errors ≤ 1 %);
* **collapses**: maximal runs of consecutive tumbling windows (whole run) with more than
  10 % errors or a p95 over 5 d.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from loadguard.simulate.steps import step_value

F64 = npt.NDArray[np.float64]
BOOL = npt.NDArray[np.bool_]

MIN_SAMPLES = 5
SKIP_S = 30.0
STEADY_FROM_S = 120.0
SETTLE_AFTER_EVENT_S = 60.0
WINDOW_S = 10.0
COLLAPSE_ERRORS = 0.10
COLLAPSE_P95 = 5.0

#: The plant suite's goal (docs/controller.md, "The plant suite").
GOAL_VIOLATIONS = 0.05
GOAL_ERRORS = 0.005
GOAL_EFFICIENCY = 0.90
GOAL_GAP = 0.03
GOAL_T90_S = 60.0
GOAL_RECOVERY_S = 60.0
GOAL_COLLAPSES = 1


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
) -> SuiteMetrics:
    done = data.end <= data.duration_s
    end, ok = data.end[done], data.ok[done]
    el = elapsed_ms(data)[done]
    rows = window_table(el, end, ok, data.duration_s)
    judged = [r for r in rows if r[0] * WINDOW_S >= SKIP_S and r[1] >= MIN_SAMPLES]
    bad = sum(1 for r in judged if r[2] is not None and r[2] > p95_ms)
    violations = bad / len(judged) if judged else None
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
        if lam > 0 and rate >= 0.9 * lam:
            t90 = t
            break
    recovery = tuple(
        _recovery(data, capacity, el, end, ok, b, p95_ms, error_limit) for _a, b in events
    )
    return SuiteMetrics(
        violations=violations,
        windows=len(judged),
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
) -> float | None:
    for t, rate in data.ticks:
        if t < t_end + WINDOW_S or rate < 0.9 * capacity.at(t):
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


def misses(m: SuiteMetrics, *, has_events: bool, has_cliff: bool) -> list[str]:
    """The goal criteria a run misses, each as a short name."""
    out: list[str] = []
    if m.violations is None or m.violations > GOAL_VIOLATIONS:
        out.append("violations")
    if m.errors is None or m.errors > GOAL_ERRORS:
        out.append("errors")
    if m.steady_efficiency is None or m.steady_efficiency < GOAL_EFFICIENCY:
        out.append("efficiency")
    if m.frontier_gap is not None and m.frontier_gap > GOAL_GAP:
        out.append("frontier")
    if m.time_to_90_s is None or m.time_to_90_s > GOAL_T90_S:
        out.append("t90")
    if has_events and any(r is None or r > GOAL_RECOVERY_S for r in m.recovery_s):
        out.append("recovery")
    if has_cliff and m.collapses > GOAL_COLLAPSES:
        out.append("collapses")
    return out
