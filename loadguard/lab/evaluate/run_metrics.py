r"""One run's figures from its JTL, defined identically for every scheme (pure core).

Let :math:`t_0` be the earliest sample start in the JTL, D the run length, W the SLO
window (10 s). Only samples *completing* in :math:`(t_0, t_0 + D]` count; JMeter's
start-up and the stop at the end fall outside.

* **windows**: tumbling windows :math:`(t_0 + kW, t_0 + (k+1)W]` of completion time,
  :math:`k = 0 … \lfloor D/W \rfloor - 1`, each judged by ``loadguard.window.Window``
  and ``SloSpec.evaluate`` -- the code the live sidecar runs. A window with fewer than
  ``min_samples`` samples is NO_DATA and not judged.
* **violation share (p95)**: judged windows whose p95 exceeded the SLO / judged
  windows (the paper's "SLO-violation rate"); ``violation_share_any`` counts a breach
  of any SLO (p95 or error rate); both as ``loadguard.violations`` defines the share,
  over its ``tumbling_observations`` from :math:`t_0`.
* **mean / p95 / p99 / error rate**: over all counted samples (numpy 'linear' quantile,
  as the window uses).
* **ok throughput**: successful counted samples / D. **compliant throughput**: the
  successful samples of the judged windows that breached no SLO / D (what a tester
  can call "load the system served within its SLO").
* **steady ok throughput**: successful samples completing in :math:`(t_0 + S, t_0 + D]`
  / (D − S), S the steady-state cut-off.
* **offered / started**: :math:`\int_{t_0}^{t_0+D} r(t)\,dt` of the scheme's own
  schedule (``offered``) against the samples that started in :math:`[t_0, t_0+D)`;
  **held back** = max(0, offered − started): arrivals dropped (FFA), per-second budget
  never sent (TST), or the Elastic Timer short of threads or still catching up.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from loadguard.jtl.sample import SampleBatch
from loadguard.lab.evaluate.offered import OfferedSchedule
from loadguard.observation import Zone
from loadguard.slo import SloSpec
from loadguard.violations import ViolationTally, tumbling_observations
from loadguard.window import Window

SERIES_STEP_MS = 2_000


@dataclass(frozen=True)
class WindowPoint:
    """The sliding window (t - W, t] at one step, for plots (t in s since t0)."""

    t_s: float
    count: int
    rps: float
    ok_rps: float
    error_rate: float
    p95_ms: float | None
    offered_rps: float
    started_rps: float
    tumbling: bool
    zone: str


@dataclass(frozen=True)
class RunMetrics:
    duration_s: float
    steady_from_s: float
    samples: int
    mean_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    error_rate: float | None
    ok_rps: float
    compliant_ok_rps: float
    steady_ok_rps: float
    windows: int
    windows_judged: int
    windows_violating_p95: int
    violation_share_p95: float | None
    violation_share_any: float | None
    offered_rps: float
    started_rps: float
    held_back: float
    held_back_share: float
    max_threads: int | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run_metrics(
    batch: SampleBatch,
    spec: SloSpec,
    offered: OfferedSchedule,
    duration_s: float,
    steady_from_s: float,
) -> tuple[RunMetrics, list[WindowPoint]]:
    """The figures of one run and its window series (see the module docstring)."""
    if len(batch) == 0:
        raise ValueError("no samples: the run produced an empty JTL")
    duration_ms = round(duration_s * 1000)
    window_ms = spec.window_ms
    t0 = int(batch.start_ms.min())
    end = batch.end_ms
    counted = (end > t0) & (end <= t0 + duration_ms)
    elapsed = batch.elapsed_ms[counted].astype(np.float64)
    ok = batch.success[counted]
    n = int(counted.sum())
    steady_ms = round(steady_from_s * 1000)
    steady_ok = int((ok & (end[counted] > t0 + steady_ms)).sum())
    starts = np.sort(batch.start_ms)
    started = int(np.searchsorted(starts, t0 + duration_ms, side="left"))
    offered_count = offered.count(t0, t0 + duration_ms)

    # Window.stats(now) evicts what ends before now - W, so the tumbling tally and the
    # sliding series each walk their own window from t0.
    tumbling_window = Window(window_ms, by_label=False)
    tumbling_window.add(batch.select(counted))
    window = Window(window_ms, by_label=False)
    window.add(batch.select(counted))
    points: list[WindowPoint] = []
    tally = ViolationTally(spec.min_samples)
    compliant_ok = 0
    for obs in tumbling_observations(spec, tumbling_window, t0, duration_ms // window_ms):
        if tally.add_observation(obs) and obs.zone is not Zone.BREACH:
            compliant_ok += round(obs.stats.overall.ok_rps * window_ms / 1000.0)
    step = SERIES_STEP_MS if window_ms % SERIES_STEP_MS == 0 else window_ms
    for now in range(t0 + window_ms, t0 + duration_ms + 1, step):
        stats = window.stats(now)
        lo = now - window_ms
        commanded = offered.count(lo, now) / (window_ms / 1000.0)
        obs = spec.evaluate(stats, now, commanded)
        tumbling = (now - t0) % window_ms == 0
        n_started = int(
            np.searchsorted(starts, now, "right") - np.searchsorted(starts, lo, "right")
        )
        o = stats.overall
        points.append(
            WindowPoint(
                t_s=(now - t0) / 1000.0,
                count=o.count,
                rps=o.rps,
                ok_rps=o.ok_rps,
                error_rate=o.error_rate,
                p95_ms=o.p95_ms,
                offered_rps=commanded,
                started_rps=n_started / (window_ms / 1000.0),
                tumbling=tumbling,
                zone=str(obs.zone),
            )
        )
    threads = batch.all_threads[batch.all_threads >= 0]
    metrics = RunMetrics(
        duration_s=duration_s,
        steady_from_s=steady_from_s,
        samples=n,
        mean_ms=float(elapsed.mean()) if n else None,
        p95_ms=float(np.quantile(elapsed, 0.95)) if n else None,
        p99_ms=float(np.quantile(elapsed, 0.99)) if n else None,
        error_rate=float(1.0 - ok.mean()) if n else None,
        ok_rps=int(ok.sum()) / duration_s,
        compliant_ok_rps=compliant_ok / duration_s,
        steady_ok_rps=steady_ok / max(duration_s - steady_from_s, 1e-9),
        windows=duration_ms // window_ms,
        windows_judged=tally.judged,
        windows_violating_p95=tally.count("p95_ms"),
        violation_share_p95=tally.share("p95_ms"),
        violation_share_any=tally.share(),
        offered_rps=offered_count / duration_s,
        started_rps=started / duration_s,
        held_back=max(0.0, offered_count - started),
        held_back_share=max(0.0, offered_count - started) / offered_count if offered_count else 0.0,
        max_threads=int(threads.max()) if len(threads) else None,
    )
    return metrics, points


#: The steady-state span must hold at least this many seconds (six 10 s windows).
MIN_STEADY_SPAN_S = 60.0


def steady_cutoff_s(duration_s: float, steady_after_s: float) -> float:
    """The steady-state cut-off: ``steady_after_s`` when at least ``MIN_STEADY_SPAN_S``
    remain after it (180 s runs: 120 s), else half the run (120 s runs: 60 s)."""
    if duration_s - steady_after_s >= MIN_STEADY_SPAN_S:
        return steady_after_s
    return duration_s / 2.0
