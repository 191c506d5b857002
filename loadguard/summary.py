"""Run summary: what a run found, as ``summary.json`` (a public contract).

Two accumulators feed it, both O(1) in the length of the run:

* ``LatencyHistogram`` (``loadguard.histogram``) counts every sample's elapsed time by
  whole millisecond (JMeter records integer ms), so the whole-run mean, p95 and p99 are
  *exact* without keeping the samples.
* ``SummaryBuilder`` takes one ``DecisionRow`` per tick and counts zones, actions and SLO
  violations, and tracks the max SLO-compliant rate with its evidence.

Definitions (docs/decision-log.md):

* *evaluated window*: a tick whose zone is not NO_DATA.
* *violation share* of an SLO: among evaluated windows taken every ``window_ms`` (tumbling,
  so overlapping ticks are not counted twice), the share whose value exceeded the threshold
  (``loadguard.violations``, the one definition; 0.0 where no window was evaluated).
* *max SLO-compliant rate*: the highest achieved rate (window ``rps``) sustained across at
  least two full windows in which every SLO held: the max over spans of compliant ticks at
  least ``window_ms`` long of the smallest ``rps`` in the span.
* *verdict*: PASS when the last ``final_windows`` evaluated windows all met the SLO, or
  when ``max_compliant_rate >= min_capacity``; NO_DATA when nothing was evaluated;
  FAIL otherwise. A PASS whose capacity is only a lower bound (the knee was not reached:
  ``capacity.status == "lower_bound"``), or unknown (no rate held long enough to count:
  a 30 s demo whose cold start held 5 req/s said "PASS: Sustained 5 req/s"), is
  INCONCLUSIVE instead (exit code 5): the run
  says how much load it tried, not how much the system takes. Not where the run met its
  limit at or above the held rate, though: a window over the SLO judged at a rate in
  force at or above it, or a cut the policy made from such a rate (a guard's ``stale``
  or ``clamp_*`` cut is no evidence). Then the limit bound the run before the samples'
  exceedance reached its quantile (the demo target under even pacing: windows over
  250 ms at 143-149 req/s while 95 % of all samples stayed under it; a queue that the
  policy saw forming at 160 req/s), the held rate is the answer, and the capacity stays
  a lower bound whose note says what bound the run.
* *capacity* (``loadguard.capacity``): the rate at which the exceedance of the binding
  SLO reaches its quantile, from every sample counted against the rate in force when it
  was sent, with a 90 % interval; replaces ``max_compliant_rate`` (kept, deprecated).
* *held rate*: over the run's second half, the time-weighted median of the rate in force,
  with the share of tumbling windows of that half over any SLO, beside the budget.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from loadguard.atomic_file import write_file
from loadguard.capacity import UNKNOWN, CapacityEstimate
from loadguard.decisions import DecisionRow
from loadguard.errors import DecisionLogError
from loadguard.histogram import LatencyHistogram
from loadguard.jtl.sample import SampleBatch
from loadguard.stop_reason import StopReason
from loadguard.violations import ViolationTally, over_limits
from loadguard.violations import share as violation_share


@dataclass
class RunAccumulator:
    """Every sample of the run, in O(1) memory."""

    hist: LatencyHistogram = field(default_factory=LatencyHistogram)
    ok: int = 0
    first_start_ms: int | None = None
    last_end_ms: int | None = None

    def add(self, batch: SampleBatch) -> None:
        if len(batch) == 0:
            return
        self.hist.add(batch.elapsed_ms)
        self.ok += int(batch.success.sum())
        first = int(batch.start_ms.min())
        last = int(batch.end_ms.max())
        self.first_start_ms = (
            first if self.first_start_ms is None else min(first, self.first_start_ms)
        )
        self.last_end_ms = last if self.last_end_ms is None else max(last, self.last_end_ms)

    @property
    def duration_s(self) -> float:
        if self.first_start_ms is None or self.last_end_ms is None:
            return 0.0
        return max(0.0, (self.last_end_ms - self.first_start_ms) / 1000.0)


@dataclass(frozen=True)
class Evidence:
    rate_rps: float
    from_epoch_ms: int
    to_epoch_ms: int
    windows: int
    p95_ms: tuple[float | None, ...]
    commanded_rps: tuple[float, ...]


@dataclass(frozen=True)
class Summary:
    verdict: str
    max_compliant_rate: float | None
    max_compliant_evidence: Evidence | None
    final_rate: float | None
    time_in_zone_s: Mapping[str, float]
    violation_share: Mapping[str, float]
    violation_share_p95: float | None
    actions: Mapping[str, int]
    windows_evaluated: int
    samples: int
    duration_s: float
    mean_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    error_rate: float | None
    ok_rps: float | None
    slo: Mapping[str, float | None]
    slo_verdicts: Mapping[str, str]
    stop_reason: StopReason
    violation_budget: float | None = None
    capacity: Mapping[str, Any] | None = None
    held_rate: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop_reason"] = str(self.stop_reason)  # the plain string users' files hold
        return data


SLO_METRICS: tuple[str, ...] = ("p95_ms", "p99_ms", "mean_ms", "error_rate")

#: The verdict of a run that ended before the knee was reached, and its exit code.
INCONCLUSIVE = "INCONCLUSIVE"
INCONCLUSIVE_EXIT = 5
#: The capacity notes of a run whose limit bound it before its samples' exceedance did.
BOUND_BY_WINDOWS = (
    "capacity above {rps:.4g} req/s: the samples' exceedance stayed under the SLO's "
    "allowance there, and windows over the SLO bounded the held rate first"
)
BOUND_BY_CUT = (
    "capacity above {rps:.4g} req/s: the samples' exceedance stayed under the SLO's "
    "allowance there, and the controller backed off from {cut:.4g} req/s on its evidence"
)
#: DECREASE reasons that say nothing of the plant's limit: the guard rails', and the
#: counting policies' cuts that are no verdict on the rate (a cold start, a hang).
GUARD_CUTS = frozenset({"stale", "clamp_max", "clamp_min", "cold_start", "stall"})


class SummaryBuilder:
    """Fold decision rows into a ``Summary``."""

    def __init__(
        self,
        window_ms: int,
        slo: Mapping[str, float | None],
        min_capacity: float | None = None,
        final_windows: int = 2,
        budget: float | None = None,
    ) -> None:
        self.window_ms = window_ms
        self.budget = budget
        #: (epoch ms, rate in force after the tick, a tumbling window's verdict or None)
        self._timeline: list[tuple[int, float, bool | None]] = []
        self.slo = dict(slo)
        self.min_capacity = min_capacity
        self.final_windows = final_windows
        self.zone_ms: Counter[str] = Counter()
        self.actions: Counter[str] = Counter({"INCREASE": 0, "HOLD": 0, "DECREASE": 0})
        #: The tumbling windows' violations; NO_DATA rows never reach it (``add``).
        self.tally = ViolationTally(min_samples=0)
        self.evaluated = 0
        self._last_tumble_ms: int | None = None
        self._last_ms: int | None = None
        self._recent: deque[bool] = deque(maxlen=final_windows)
        self._recent_by_metric: dict[str, deque[bool]] = {
            m: deque(maxlen=final_windows) for m in SLO_METRICS if self.slo.get(m) is not None
        }
        self._span: list[DecisionRow] = []
        self.best: Evidence | None = None
        self.final_rate: float | None = None
        #: the highest rate in force under which an evaluated window broke an SLO
        self.top_violated_rate: float | None = None
        #: the highest rate the policy cut on its own evidence (not a guard's cut)
        self.top_cut_rate: float | None = None

    def _values(self, row: DecisionRow) -> Mapping[str, float | None]:
        return {
            "p95_ms": row.p95_ms,
            "p99_ms": row.p99_ms,
            "mean_ms": row.mean_ms,
            "error_rate": row.error_rate,
        }

    def add(self, row: DecisionRow) -> None:
        if self._last_ms is not None:
            self.zone_ms[row.zone] += max(0, row.epoch_ms - self._last_ms)
        self._last_ms = row.epoch_ms
        self.actions[row.action] += 1
        self.final_rate = row.new_rate
        if row.action == "DECREASE" and row.reason not in GUARD_CUTS:
            self.top_cut_rate = max(self.top_cut_rate or 0.0, row.old_rate)
        if row.zone == "NO_DATA":
            return
        self.evaluated += 1
        violated = over_limits(self._values(row), {m: self.slo.get(m) for m in SLO_METRICS})
        compliant = row.zone != "BREACH" and not violated
        if not compliant:
            self.top_violated_rate = max(self.top_violated_rate or 0.0, row.old_rate)
        self._recent.append(compliant)
        for m, recent in self._recent_by_metric.items():
            recent.append(m not in violated)
        tumbled: bool | None = None
        if self._last_tumble_ms is None or row.epoch_ms - self._last_tumble_ms >= self.window_ms:
            self._last_tumble_ms = row.epoch_ms
            # A BREACH no overall SLO explains is a label's: counted as "label".
            breaches = violated or ({"label"} if row.zone == "BREACH" else set())
            self.tally.add(row.samples, breaches)
            tumbled = bool(breaches)
        self._timeline.append((row.epoch_ms, row.new_rate, tumbled))
        self._track_span(row, compliant)

    @property
    def tumbling(self) -> int:
        """The tumbling windows counted so far."""
        return self.tally.judged

    def held_rate(self) -> dict[str, Any]:
        """The second half of the run: the time-weighted median rate in force and the
        share of its tumbling windows over any SLO."""
        if len(self._timeline) < 2:
            return {"rps": None, "violation_share": None, "windows": 0, "budget": self.budget}
        t0, t1 = self._timeline[0][0], self._timeline[-1][0]
        half = [e for e in self._timeline if e[0] >= t0 + (t1 - t0) / 2]
        weights, rates = [], []
        for (ta, ra, _), (tb, _rb, _) in itertools.pairwise(half):
            weights.append(max(tb - ta, 0))
            rates.append(ra)
        median = None
        if rates and sum(weights) > 0:
            order = sorted(range(len(rates)), key=lambda i: rates[i])
            acc, total = 0, sum(weights)
            for i in order:
                acc += weights[i]
                if acc >= total / 2:
                    median = rates[i]
                    break
        verdicts = [v for _, _, v in half if v is not None]
        share = violation_share(sum(verdicts), len(verdicts))
        return {
            "rps": None if median is None else round(median, 3),
            "violation_share": None if share is None else round(share, 4),
            "windows": len(verdicts),
            "budget": self.budget,
        }

    def _track_span(self, row: DecisionRow, compliant: bool) -> None:
        if not compliant:
            self._span = []
            return
        self._span.append(row)
        # Shrink from the left while the span is still >= one window long without it.
        while (
            len(self._span) > 2
            and self._span[-1].epoch_ms - self._span[1].epoch_ms >= self.window_ms
        ):
            self._span.pop(0)
        if self._span[-1].epoch_ms - self._span[0].epoch_ms < self.window_ms:
            return
        rate = min(r.rps for r in self._span)
        if self.best is None or rate > self.best.rate_rps:
            self.best = Evidence(
                rate_rps=round(rate, 3),
                from_epoch_ms=self._span[0].epoch_ms,
                to_epoch_ms=self._span[-1].epoch_ms,
                windows=len(self._span),
                p95_ms=tuple(r.p95_ms for r in self._span),
                commanded_rps=tuple(r.offered_rps for r in self._span),
            )

    def build(
        self,
        run: RunAccumulator,
        stop_reason: StopReason,
        capacity: CapacityEstimate | None = None,
    ) -> Summary:
        max_rate = self.best.rate_rps if self.best else None
        capacity = capacity if capacity is not None else UNKNOWN
        if self.evaluated == 0:
            verdict = "NO_DATA"
        elif (len(self._recent) == self.final_windows and all(self._recent)) or (
            self.min_capacity is not None and max_rate is not None and max_rate >= self.min_capacity
        ):
            verdict = "PASS"
        else:
            verdict = "FAIL"
        held = self.held_rate()
        open_ended = capacity.status in ("lower_bound", "unknown")
        if verdict == "PASS" and open_ended and self.min_capacity is None:
            bound_by = self._limit_met(held.get("rps"))
            if bound_by is None:
                verdict = INCONCLUSIVE
            elif capacity.status == "lower_bound":
                note = bound_by.format(rps=capacity.rps, cut=self.top_cut_rate)
                capacity = replace(capacity, note=note)
        # summary.json writes 0.0, not null, where no window was judged (its contract).
        shares = {
            m: self.tally.share(m) or 0.0
            for m in (*SLO_METRICS, "label")
            if m == "label" or self.slo.get(m) is not None
        }
        total = run.hist.total
        duration = run.duration_s
        return Summary(
            verdict=verdict,
            max_compliant_rate=max_rate,
            max_compliant_evidence=self.best,
            final_rate=self.final_rate,
            time_in_zone_s={z: ms / 1000.0 for z, ms in sorted(self.zone_ms.items())},
            violation_share=shares,
            violation_share_p95=shares.get("p95_ms"),
            actions=dict(self.actions),
            windows_evaluated=self.evaluated,
            samples=total,
            duration_s=round(duration, 3),
            mean_ms=run.hist.mean(),
            p95_ms=run.hist.quantile(0.95),
            p99_ms=run.hist.quantile(0.99),
            error_rate=(1.0 - run.ok / total) if total else None,
            ok_rps=(run.ok / duration) if duration > 0 else None,
            slo=self.slo,
            slo_verdicts={
                m: ("PASS" if recent and all(recent) else "FAIL" if recent else "NO_DATA")
                for m, recent in self._recent_by_metric.items()
            },
            stop_reason=stop_reason,
            violation_budget=self.budget,
            capacity=capacity.to_json(),
            held_rate=held,
        )

    def _limit_met(self, held_rps: float | None) -> str | None:
        """What bound the run at or above the held rate, as the capacity note's template:
        a window over the SLO, else a cut of the policy's; None if neither did."""
        if held_rps is None:
            return None
        at_least = held_rps * (1 - 1e-9)
        if self.top_violated_rate is not None and self.top_violated_rate >= at_least:
            return BOUND_BY_WINDOWS
        if self.top_cut_rate is not None and self.top_cut_rate >= at_least:
            return BOUND_BY_CUT
        return None


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON through the one atomic writer (``loadguard.atomic_file``): never
    half-written, mode 0644, and a failed write leaves neither a partial file nor the
    temporary one behind."""
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    try:
        write_file(path, text.encode())
    except OSError as exc:
        raise DecisionLogError(f"writing {path} failed: {exc.strerror or exc}") from exc
