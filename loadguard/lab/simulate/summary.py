r"""The figures of a simulated run (``loadguard simulate --json``; a public contract).

With D the duration, W the SLO window and λ*(t) the scenario's capacity (``Scenario``):

* ``violation_share_<m>``: tumbling windows :math:`(kW, (k+1)W]` of completion time,
  judged by the same ``Window`` and ``SloSpec`` as the controller; the share of the windows
  holding at least ``min_samples`` samples whose metric m exceeded its threshold
  (``p95``, ``p99``, ``mean``, ``error`` ...; ``null`` for an SLO not set): the share
  ``loadguard.violations`` defines, over its ``tumbling_observations`` from 0;
* ``ok_rps``: successful samples completed by D, divided by D;
* ``lambda_star``: time-weighted mean of λ*(t) over [0, D]; ``efficiency`` =
  ``ok_rps / lambda_star``; ``steady_efficiency`` the same over [``steady_from_s``, D]
  (120 s) on both sides;
* ``time_to_90pct_s``: first tick whose commanded rate is >= 0.9 λ*(t) (``null``: never);
* ``recovery_s`` (with a capacity change at :math:`t_c`): :math:`t - t_c` for the first
  tick t >= :math:`t_c + W` whose sliding window :math:`(t - W, t]` meets every SLO
  (``null``: never; W when the change caused no violation at all);
* ``actions`` / ``reasons``: decision counts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from loadguard.jtl.sample import SampleBatch
from loadguard.lab.simulate.run import SimRun
from loadguard.observation import Zone
from loadguard.slo import METRICS, SloSpec
from loadguard.violations import tumbling_tally
from loadguard.window import Window

STEADY_FROM_S = 120.0
_SHORT = {field: key for key, field in METRICS.items()}
_SHORT["error_rate"] = "error"


@dataclass(frozen=True)
class SimSummary:
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.data


def _batch(arrival: np.ndarray[Any, Any], end: np.ndarray[Any, Any], ok: Any) -> SampleBatch:
    start_ms = np.round(arrival * 1000.0).astype(np.int64)
    elapsed_ms = np.round(end * 1000.0).astype(np.int64) - start_ms
    n = len(start_ms)
    return SampleBatch(
        start_ms,
        elapsed_ms,
        np.asarray(ok, np.bool_),
        np.full(n, "sim", dtype=object),
        np.full(n, "", dtype=object),
        np.full(n, -1, np.int32),
    )


def _round(share: float | None) -> float | None:
    return None if share is None else round(share, 4)


def _violations(spec: SloSpec, batch: SampleBatch, duration_s: float) -> dict[str, Any]:
    window = Window(spec.window_ms, by_label=False)
    window.add(batch)
    tally = tumbling_tally(spec, window, 0, int(duration_s * 1000) // spec.window_ms)
    out: dict[str, Any] = {"windows": tally.judged}
    for field, short in _SHORT.items():
        limit = spec.threshold(field)
        out[f"violation_share_{short}"] = None if limit is None else _round(tally.share(field))
    out["violation_share_any"] = _round(tally.share())
    return out


def _recovery(run: SimRun, batch: SampleBatch) -> float | None:
    changes = [c.at_s for c in run.scenario.changes if c.at_s < run.scenario.duration_s]
    if not changes:
        return None
    tc = min(changes)
    spec = run.spec
    window = Window(spec.window_ms, by_label=False)
    window.add(batch)
    tick = run.scenario.tick_s
    k = int(np.ceil((tc + spec.window_ms / 1000.0) / tick - 1e-9))
    while k * tick <= run.scenario.duration_s + 1e-9:
        wall_ms = round(k * tick * 1000.0)
        obs = spec.evaluate(window.stats(wall_ms), wall_ms, 0.0)
        if obs.zone in (Zone.SAFE, Zone.NEAR):
            return round(k * tick - tc, 3)
        k += 1
    return None


def summarize(run: SimRun) -> SimSummary:
    sc, spec = run.scenario, run.spec
    assert run.plant is not None
    arrival, end, ok = run.plant.samples()
    duration = sc.duration_s
    batch = _batch(arrival, end, ok)
    p95 = spec.threshold("p95_ms")
    # No rate meets a 0 ms p95 (every response takes time): no lambda_star, no efficiency.
    slo_s = (p95 / 1000.0) if p95 else None
    data: dict[str, Any] = {"policy": run.policy_name, "seed": sc.seed, "duration_s": duration}
    done = end <= duration
    ok_rps = float(np.count_nonzero(ok & done)) / duration
    steady = done & (end > STEADY_FROM_S)
    steady_ok_rps = (
        float(np.count_nonzero(ok & steady)) / (duration - STEADY_FROM_S)
        if duration > STEADY_FROM_S
        else None
    )
    data["ok_rps"] = round(ok_rps, 3)
    data["samples"] = int(np.count_nonzero(done))
    data["error_rate"] = (
        round(1.0 - float(np.count_nonzero(ok & done)) / data["samples"], 6)
        if data["samples"]
        else None
    )
    data.update(_violations(spec, batch, duration))
    lam = sc.mean_lambda_star(slo_s) if slo_s is not None else None
    data["lambda_star"] = None if lam is None else round(lam, 3)
    data["lambda_star_method"] = sc.lambda_star_method() if lam is not None else None
    data["efficiency"] = round(ok_rps / lam, 4) if lam else None
    if lam and steady_ok_rps is not None and slo_s is not None:
        lam_steady = sc.mean_lambda_star(slo_s, STEADY_FROM_S)
        data["steady_efficiency"] = round(steady_ok_rps / lam_steady, 4) if lam_steady else None
    else:
        data["steady_efficiency"] = None
    data["time_to_90pct_s"] = None
    if slo_s is not None:
        for tick in run.ticks:
            target = 0.9 * sc.lambda_star(sc.servers_at(tick.t_s), slo_s)
            if tick.decision.new_rate >= target:
                data["time_to_90pct_s"] = tick.t_s
                break
    data["recovery_s"] = _recovery(run, batch)
    actions = Counter(str(t.decision.action) for t in run.ticks)
    data["actions"] = {a: actions.get(a, 0) for a in ("INCREASE", "HOLD", "DECREASE", "STOP")}
    data["reasons"] = dict(sorted(Counter(t.decision.reason for t in run.ticks).items()))
    rates = np.array([t.decision.new_rate for t in run.ticks])
    data["final_rate"] = round(float(rates[-1]), 3) if len(rates) else sc.start_rate
    data["mean_commanded_rps"] = round(float(rates.mean()), 3) if len(rates) else None
    data["stopped_at_s"] = run.stopped_at_s
    found = [t.decision.detail for t in run.ticks if "max_compliant_rps" in t.decision.detail]
    if found:
        # The search policy's result with its evidence, as of its last decision.
        data["max_compliant_rps"] = round(float(found[-1]["max_compliant_rps"]), 3)
        data["evidence_windows"] = found[-1].get("evidence_windows")
        data["evidence_p95_ms"] = found[-1].get("evidence_p95_ms")
    return SimSummary(data)
