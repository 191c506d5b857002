"""Adapters: one run of a scheme, one sweep point -- target, JMeter and sidecar processes.

Every run starts a **new** target process (an empty queue, fresh seed) and a new JMeter
JVM, and ends both before the next run starts, so runs never overlap on the 2 cores.

* Baselines run their plan under ``JMeterProcess`` with the BeanShell server off
  (``beanshell.server.port=0``). The plan is given ``duration = D + 10 s``; the harness
  stops JMeter once ``t0 + D + 3 s`` has passed (t0: the first sample's
  start), so the stop -- and the "Socket closed" errors it causes -- fall outside the
  measured span. (FFA never ends by itself here: its pooled threads wait forever.)
* LoadGuard runs are ``loadguard run`` (``sidecar.run_plan``) on the elastic plan,
  the sidecar bounded to ``D + startup_margin_s`` (its clock starts before the JVM).
* CPU: JMeter's and the target's CPU seconds come from ``os.times()`` of reaped
  children (each is this process's child and is reaped before the other); the
  sidecar's is this process's own CPU during the run.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from loadguard.errors import EngineError
from loadguard.jmeter.home import JMeterHome
from loadguard.jmeter.launch import JMeterProcess, LaunchSpec, free_udp_port
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.sample import SampleBatch
from loadguard.lab.evaluate.config import EvalConfig
from loadguard.lab.evaluate.lambda_star import SweepPoint
from loadguard.lab.evaluate.offered import OfferedSchedule, schedule_from_decisions
from loadguard.lab.evaluate.run_metrics import (
    RunMetrics,
    WindowPoint,
    run_metrics,
    steady_cutoff_s,
)
from loadguard.lab.evaluate.schemes import Scheme
from loadguard.lab.evaluate.targets import (
    Targets,
    baseline_plan_for,
    elastic_plan_for,
    elastic_props,
    target_props,
)
from loadguard.sidecar import Paths, RunPlan, SidecarConfig, run_plan
from loadguard.slo import SloSpec
from loadguard.stop_reason import StopReason

log = logging.getLogger(__name__)

STOP_TAIL_S = 3.0
FIRST_SAMPLE_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class RunRecord:
    scheme: str
    rep: int
    seed: int
    run_dir: Path
    metrics: RunMetrics
    points: list[WindowPoint]
    lambda_star_analytic: float | None
    jmeter_cpu_s: float
    target_cpu_s: float
    sidecar_cpu_s: float | None
    wall_s: float
    load_start: float
    load_end: float
    covered: bool  # the JTL reaches t0 + D (else the run was cut short)
    actions: Mapping[str, int] = field(default_factory=dict)
    stop_reason: str = ""
    target_ready_ms: int = 0  # epoch ms the run's target reported ready


def slo_spec(cfg: EvalConfig) -> SloSpec:
    return SloSpec.from_options(
        p95=f"{cfg.target.p95_ms:g}ms",
        error_rate=f"{cfg.error_rate * 100:g}%",
        max_rate=str(cfg.stress_rps),
    )


def read_jtl(path: Path) -> SampleBatch:
    if not path.exists():
        raise EngineError(f"JMeter wrote no results file {path}")
    with JtlFollower(path) as follower:
        return SampleBatch.concat(list(follower.batches()))


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _first_start_ms(jtl: Path, proc: JMeterProcess, timeout_s: float) -> int:
    """The first data row's start time, once JMeter has written one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not proc.alive():
            raise EngineError(f"JMeter exited ({proc.poll()}) before any sample; see {jtl}")
        if jtl.exists():
            with jtl.open("rb") as fh:
                fh.readline()  # header
                row = fh.readline()
            if row.endswith(b"\n") and row[:1].isdigit():
                return int(row.split(b",", 1)[0])
        time.sleep(0.2)
    raise EngineError(f"no sample within {timeout_s:g}s of starting JMeter")


def _run_fixed_plan(
    home: JMeterHome,
    plan: Path,
    run_dir: Path,
    properties: Mapping[str, str],
    measure_s: float,
) -> tuple[Path, int]:
    """Run ``plan`` until ``t0 + measure_s + STOP_TAIL_S``, then stop it; returns the JTL."""
    jtl = run_dir / "results.jtl"
    spec = LaunchSpec(
        plan=plan,
        jtl=jtl,
        log=run_dir / "jmeter.log",
        stdout=run_dir / "jmeter.out",
        bsh_port=0,  # no BeanShell server: nothing pushes into a baseline
        udp_port=free_udp_port(),
        properties=dict(properties),
    )
    proc = JMeterProcess(home, spec)
    try:
        t0_ms = _first_start_ms(jtl, proc, FIRST_SAMPLE_TIMEOUT_S)
        # t0 is a JTL (wall-clock) time: turn it into a monotonic deadline once, so a
        # system clock that steps mid-run neither cuts the run short nor stretches it.
        left_s = t0_ms / 1000.0 + measure_s + STOP_TAIL_S - time.time()
        stop_at = time.monotonic() + min(max(left_s, 0.0), measure_s + STOP_TAIL_S)
        while time.monotonic() < stop_at and proc.alive():
            time.sleep(0.25)
    finally:
        code = proc.stop(grace_s=1.0, now_s=5.0)
    return jtl, code


def baseline_props(cfg: EvalConfig, port: int) -> dict[str, str]:
    """A flood's JMeter properties: its target, its length (10 s past the run's, so the
    profile never ends first) and, when ``cfg.baseline_threads`` is set, its thread cap
    (the plans read ``ffa.limit`` and ``tst.max``)."""
    props = target_props(cfg, port) | {"duration": str(int(cfg.duration_s) + 10)}
    if cfg.baseline_threads is not None:
        props["ffa.limit"] = props["tst.max"] = str(cfg.baseline_threads)
    return props


def run_scheme(
    cfg: EvalConfig,
    scheme: Scheme,
    rep: int,
    seed: int,
    home: JMeterHome,
    targets: Targets | None = None,
) -> RunRecord:
    """One run of ``scheme`` on a fresh target (or ``targets``' shared one); the run's
    files land in its own folder."""
    run_dir = cfg.out_dir / "runs" / f"{scheme.name}-{rep}"
    run_dir.mkdir(parents=True, exist_ok=True)
    spec = slo_spec(cfg)
    d = cfg.duration_s
    load_start = os.getloadavg()[0]
    wall0 = time.monotonic()
    cpu_children0 = _children_cpu()
    own0 = _own_cpu()
    actions: dict[str, int] = {}
    stop_reason = ""
    sidecar_cpu: float | None = None
    with (targets or Targets(cfg)).open(seed) as target:
        lam_analytic = target.lambda_star_analytic
        ready_ms = target.ready_ms
        if scheme.kind == "baseline":
            props = baseline_props(cfg, target.port)
            baseline = baseline_plan_for(cfg, scheme, run_dir)
            jtl, _code = _run_fixed_plan(home, baseline, run_dir, props, d)
            offered = OfferedSchedule.constant(cfg.stress_rps)
        else:
            assert scheme.policy is not None
            props = target_props(cfg, target.port) | elastic_props(cfg, d + 60)
            sidecar = SidecarConfig(
                paths=Paths.in_dir(run_dir),
                spec=spec,
                policy=scheme.policy,
                initial_rate=cfg.initial_rate,
                tick_ms=cfg.tick_ms,
                duration_ms=round((d + cfg.startup_margin_s) * 1000),
                quiet=True,
            )
            plan = RunPlan(
                plan=elastic_plan_for(cfg), jmeter=home, out_dir=run_dir, properties=props
            )
            outcome, _code = run_plan(plan, sidecar)
            if outcome.stop_reason is StopReason.SIGNAL:
                # Ctrl-C or SIGTERM met the run's own handler, which ends that run
                # gracefully; the evaluation stops too, closing its targets on the way.
                raise KeyboardInterrupt
            sidecar_cpu = _own_cpu() - own0
            actions = {k: int(v) for k, v in outcome.summary.actions.items()}
            stop_reason = outcome.stop_reason
            jtl = sidecar.paths.jtl
            offered = schedule_from_decisions(sidecar.paths.decisions, cfg.initial_rate)
        jmeter_cpu = _children_cpu() - cpu_children0
    target_cpu = _children_cpu() - cpu_children0 - jmeter_cpu
    wall = time.monotonic() - wall0
    batch = read_jtl(jtl)
    metrics, points = run_metrics(batch, spec, offered, d, steady_cutoff_s(d, cfg.steady_after_s))
    covered = len(batch) > 0 and int(batch.end_ms.max()) >= int(batch.start_ms.min()) + d * 1000
    record = RunRecord(
        scheme=scheme.name,
        rep=rep,
        seed=seed,
        run_dir=run_dir,
        metrics=metrics,
        points=points,
        lambda_star_analytic=lam_analytic,
        jmeter_cpu_s=jmeter_cpu,
        target_cpu_s=target_cpu,
        sidecar_cpu_s=sidecar_cpu,
        wall_s=wall,
        load_start=load_start,
        load_end=os.getloadavg()[0],
        covered=covered,
        actions=actions,
        stop_reason=stop_reason,
        target_ready_ms=ready_ms,
    )
    write_points(run_dir / "windows.csv", points)
    if not covered:
        log.warning("%s run %d: the JTL does not reach t0 + %gs (cut short)", scheme.name, rep, d)
    return record


def write_points(path: Path, points: Sequence[WindowPoint]) -> None:
    """The run's window series (the plots' data) as CSV."""
    fields = [f.name for f in dataclasses.fields(WindowPoint)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(fields)
        for p in points:
            writer.writerow(["" if getattr(p, f) is None else getattr(p, f) for f in fields])


def read_points(path: Path) -> list[WindowPoint]:
    """A run's windows.csv back into its window series."""
    points: list[WindowPoint] = []
    with path.open(newline="", encoding="utf-8") as fh:
        for raw in csv.DictReader(fh):
            points.append(
                WindowPoint(
                    t_s=float(raw["t_s"]),
                    count=int(raw["count"]),
                    rps=float(raw["rps"]),
                    ok_rps=float(raw["ok_rps"]),
                    error_rate=float(raw["error_rate"]),
                    p95_ms=None if raw["p95_ms"] == "" else float(raw["p95_ms"]),
                    offered_rps=float(raw["offered_rps"]),
                    started_rps=float(raw["started_rps"]),
                    tumbling=raw["tumbling"] == "True",
                    zone=raw["zone"],
                )
            )
    return points


def sweep_point(
    cfg: EvalConfig, rate: float, seed: int, home: JMeterHome, targets: Targets | None = None
) -> tuple[SweepPoint, float | None]:
    """Hold ``rate`` on a fresh target (or ``targets``' shared one) with the elastic plan's
    timer (no controller)."""
    run_dir = cfg.out_dir / "sweep" / f"rate-{rate:g}"
    run_dir.mkdir(parents=True, exist_ok=True)
    with (targets or Targets(cfg)).open(seed) as target:
        props = target_props(cfg, target.port)
        props |= elastic_props(cfg, cfg.sweep_seconds + 10)
        props["loadguard.tpm"] = f"{rate * 60:.6g}"
        plan = elastic_plan_for(cfg)
        jtl, _ = _run_fixed_plan(home, plan, run_dir, props, cfg.sweep_seconds)
        analytic = target.lambda_star_analytic
    batch = read_jtl(jtl)
    t0 = int(batch.start_ms.min())
    lo = t0 + round(cfg.sweep_warmup_s * 1000)
    hi = t0 + round(cfg.sweep_seconds * 1000)
    steady = (batch.start_ms >= lo) & (batch.start_ms < hi)
    n = int(steady.sum())
    if n == 0:
        raise EngineError(f"sweep at {rate:g} req/s: no sample in the measured span")
    elapsed = batch.elapsed_ms[steady].astype(np.float64)
    point = SweepPoint(
        offered_rps=rate,
        achieved_rps=n / ((hi - lo) / 1000.0),
        p95_ms=float(np.quantile(elapsed, 0.95)),
        error_rate=float(1.0 - batch.success[steady].mean()),
        samples=n,
    )
    return point, analytic
