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
  so overlapping ticks are not counted twice), the share whose value exceeded the threshold.
* *max SLO-compliant rate*: the highest achieved rate (window ``rps``) sustained across at
  least two full windows in which every SLO held: the max over spans of compliant ticks at
  least ``window_ms`` long of the smallest ``rps`` in the span.
* *verdict*: PASS when the last ``final_windows`` evaluated windows all met the SLO, or
  when ``max_compliant_rate >= min_capacity``; NO_DATA when nothing was evaluated;
  FAIL otherwise.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from loadguard.atomic_file import write_file
from loadguard.decisions import DecisionRow
from loadguard.errors import DecisionLogError
from loadguard.histogram import LatencyHistogram
from loadguard.jtl.sample import SampleBatch
from loadguard.stop_reason import StopReason


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

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop_reason"] = str(self.stop_reason)  # the plain string users' files hold
        return data


SLO_METRICS: tuple[str, ...] = ("p95_ms", "p99_ms", "mean_ms", "error_rate")


class SummaryBuilder:
    """Fold decision rows into a ``Summary``."""

    def __init__(
        self,
        window_ms: int,
        slo: Mapping[str, float | None],
        min_capacity: float | None = None,
        final_windows: int = 2,
    ) -> None:
        self.window_ms = window_ms
        self.slo = dict(slo)
        self.min_capacity = min_capacity
        self.final_windows = final_windows
        self.zone_ms: Counter[str] = Counter()
        self.actions: Counter[str] = Counter({"INCREASE": 0, "HOLD": 0, "DECREASE": 0})
        self.violations: Counter[str] = Counter()
        self.tumbling = 0
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
        if row.zone == "NO_DATA":
            return
        self.evaluated += 1
        values = self._values(row)
        violated = {
            m
            for m in SLO_METRICS
            if self.slo.get(m) is not None
            and values[m] is not None
            and float(values[m] or 0.0) > float(self.slo[m] or 0.0)
        }
        compliant = row.zone != "BREACH" and not violated
        self._recent.append(compliant)
        for m, recent in self._recent_by_metric.items():
            recent.append(m not in violated)
        if self._last_tumble_ms is None or row.epoch_ms - self._last_tumble_ms >= self.window_ms:
            self._last_tumble_ms = row.epoch_ms
            self.tumbling += 1
            for m in violated:
                self.violations[m] += 1
            if row.zone == "BREACH" and not violated:
                self.violations["label"] += 1
        self._track_span(row, compliant)

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

    def build(self, run: RunAccumulator, stop_reason: StopReason) -> Summary:
        max_rate = self.best.rate_rps if self.best else None
        if self.evaluated == 0:
            verdict = "NO_DATA"
        elif (len(self._recent) == self.final_windows and all(self._recent)) or (
            self.min_capacity is not None and max_rate is not None and max_rate >= self.min_capacity
        ):
            verdict = "PASS"
        else:
            verdict = "FAIL"
        shares = {
            m: (self.violations[m] / self.tumbling if self.tumbling else 0.0)
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
        )


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON through the one atomic writer (``loadguard.atomic_file``): never
    half-written, mode 0644, and a failed write leaves neither a partial file nor the
    temporary one behind."""
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    try:
        write_file(path, text.encode())
    except OSError as exc:
        raise DecisionLogError(f"writing {path} failed: {exc.strerror or exc}") from exc
