r"""The plant suite on real JMeter: each plant served by its real process.

For each plant (``loadguard.lab.evaluate.real_plants``):

1. **λ*, measured on the real stack**: per capacity phase, a short fixed-rate sweep with
   the plan's own Elastic Timer and no controller (``runner.sweep_point``): fractions of
   the nominal λ* chosen by ``real_data.next_fraction`` (0.8, 0.95, 1.1, then up or down
   until a pass and a fail bracket the knee), each point on a fresh ``loadguard target``
   held ``SWEEP_WARMUP_S`` + max(``SWEEP_MIN_S``, ``SWEEP_SAMPLES``/rate) (at most
   ``SWEEP_MAX_S``), measured over the samples started after the warm-up, and
   ``lambda_star_from_sweep`` over the points. The real TeaStore is swept on **one**
   instance (a start takes minutes), warmed first at the sweep's lowest rate for
   ``TEASTORE_WARMUP_S`` until that rate meets the SLO (at most ``TEASTORE_WARMUPS``
   times), then swept from below (``real_data.SWEEP_UP``, to the first
   failing point, so only the last one overloads it), and waited on between points
   until it serves again.
2. **policies**: each through ``loadguard run`` (``runner.run_scheme``) on a fresh
   target (the real TeaStore: the shared one, reset) from 5 req/s, the sidecar's default
   2 s tick, the plant's SLO (its p95, 1 % errors), no rate ceiling but the plan's
   threads; judged by the simulator's own ``suite_metrics.compute`` on
   ``real_data.run_data`` of the JTL and decision log.
   With ``rounds`` > 1 the policies run again, in reversed order every other round: a
   shared store that keeps warming (TeaStore's JIT) favours whichever runs later, so a
   comparison alternates who meets it colder.

The fixed-rate frontier is *not* measured here (each point would be a full-length run):
the frontier gap is left empty, and so is its goal criterion.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.evaluate.config import EvalConfig, TargetSpec
from loadguard.lab.evaluate.lambda_star import LambdaStar, SweepPoint, lambda_star_from_sweep
from loadguard.lab.evaluate.offered import schedule_from_decisions
from loadguard.lab.evaluate.real_data import (
    SWEEP_UP,
    next_fraction,
    point_passes,
    run_data,
    shift_capacity,
    shift_events,
)
from loadguard.lab.evaluate.real_plants import RealPhase, RealPlant
from loadguard.lab.evaluate.runner import read_jtl, run_scheme, sweep_point
from loadguard.lab.evaluate.schemes import Scheme
from loadguard.lab.evaluate.suite_metrics import Goal, SuiteMetrics, compute, misses, t90_exempt
from loadguard.lab.evaluate.targets import Targets
from loadguard.policies import DEFAULT_POLICY
from loadguard.sidecar import Paths
from loadguard.slo import DEFAULT_VIOLATION_BUDGET, SloSpec

log = logging.getLogger(__name__)

SWEEP_WARMUP_S = 10.0
SWEEP_MIN_S = 30.0
SWEEP_SAMPLES = 200
SWEEP_MAX_S = 90.0
TEASTORE_WARMUP_S = 60.0
TEASTORE_WARMUPS = 3


@dataclass(frozen=True)
class RealSuiteConfig:
    out_dir: Path
    duration_s: float = 240.0
    policies: tuple[str, ...] = (DEFAULT_POLICY,)
    seed: int = 1
    tick_ms: int = 2000
    #: The policies' runs, in rounds; every other round in reversed order.
    rounds: int = 1
    #: Run no sweep: λ* of every phase given (plant time order), e.g. by a test.
    lambda_stars: tuple[float, ...] | None = None


@dataclass(frozen=True)
class RealSweep:
    nominal: float
    lam: LambdaStar
    points: tuple[tuple[float, SweepPoint], ...]  # (fraction of nominal, point)
    load: tuple[float, float]  # 1-min load average at its start and end


@dataclass(frozen=True)
class RealRun:
    policy: str
    metrics: SuiteMetrics
    misses: tuple[str, ...]
    offset_s: float  # JMeter's first sample after the target was ready
    covered: bool
    stop_reason: str
    load: tuple[float, float]
    run_dir: Path
    rates: tuple[tuple[float, float], ...] = ()  # (t, rate in force) per tick, run clock
    round: int = 1


@dataclass(frozen=True)
class RealPlantResult:
    plant: RealPlant
    sweeps: tuple[RealSweep | None, ...]  # per phase (None: an outage)
    steps: tuple[tuple[float, float], ...]  # λ*(T), plant time
    runs: tuple[RealRun, ...]
    not_run: str | None = None


def eval_config(plant: RealPlant, cfg: RealSuiteConfig) -> EvalConfig:
    """The evaluation harness's settings for this plant's runs."""
    return EvalConfig(
        out_dir=cfg.out_dir / plant.key,
        schemes=(),
        repetitions=1,
        duration_s=cfg.duration_s,
        seed=cfg.seed,
        target=TargetSpec(p95_ms=plant.p95_ms),
        error_rate=0.01,
        # no ceiling but the spec's default, as the simulator's plant.spec()
        stress_rps=SloSpec.from_options(p95=f"{plant.p95_ms:g}ms", error_rate="1%").max_rate,
        initial_rate=5.0,
        elastic_threads=plant.threads,
        tick_ms=cfg.tick_ms,
        target_kind=plant.kind,
        teastore_layout=plant.run_args[-1] if plant.kind == "teastore" else "single",
        target_args=plant.run_args if plant.kind == "emulator" else (),
        browse_plan=plant.browse_plan,
    )


def _point_config(base: EvalConfig, rate: float, warmup_s: float) -> EvalConfig:
    measure = min(max(SWEEP_MIN_S, SWEEP_SAMPLES / rate), SWEEP_MAX_S)
    return dataclasses.replace(base, sweep_seconds=warmup_s + measure, sweep_warmup_s=warmup_s)


def sweep_phase(
    plant: RealPlant,
    phase: RealPhase,
    index: int,
    cfg: RealSuiteConfig,
    home: JMeterHome,
    say: Callable[[str], None],
) -> RealSweep:
    """λ* of one phase's target (see the module doc)."""
    assert phase.args is not None
    base = dataclasses.replace(
        eval_config(plant, cfg),
        out_dir=cfg.out_dir / plant.key / f"sweep-{index}",
        target_args=phase.args if plant.kind == "emulator" else (),
        share_target=plant.kind == "teastore",
    )
    load0 = os.getloadavg()[0]
    done: list[tuple[float, SweepPoint]] = []
    shared = base.share_target
    with Targets(base) as targets:
        for k in range(TEASTORE_WARMUPS if shared else 0):
            # a cold store is slow at any rate until its JIT has compiled the paths: warm
            # it at the sweep's lowest rate, which overloads no plausible store, until
            # that rate meets the SLO
            warm = dataclasses.replace(
                base,
                out_dir=base.out_dir / f"warmup-{k + 1}",
                sweep_seconds=TEASTORE_WARMUP_S,
                sweep_warmup_s=TEASTORE_WARMUP_S / 2,
            )
            rate = SWEEP_UP[0] * phase.nominal_rps
            point, _ = sweep_point(warm, rate, cfg.seed, home, targets)
            say(f"  warm-up at {point.offered_rps:g}/s: p95 {point.p95_ms:.0f} ms")
            if point_passes(point, plant.p95_ms):
                break
        while (f := next_fraction(done, plant.p95_ms, ascending=shared)) is not None:
            rate = round(f * phase.nominal_rps, 3)
            pcfg = _point_config(base, rate, SWEEP_WARMUP_S)
            point, _ = sweep_point(pcfg, rate, cfg.seed, home, targets)
            done.append((f, point))
            say(
                f"  sweep {rate:g}/s: achieved {point.achieved_rps:.1f}, p95 "
                f"{point.p95_ms:.0f} ms, errors {point.error_rate:.2%}"
            )
    lam = lambda_star_from_sweep([p for _f, p in done], plant.p95_ms, 0.01)
    return RealSweep(phase.nominal_rps, lam, tuple(done), (load0, os.getloadavg()[0]))


def policy_run(
    plant: RealPlant,
    policy: str,
    steps: Sequence[tuple[float, float]],
    cfg: RealSuiteConfig,
    home: JMeterHome,
    round_: int = 1,
) -> RealRun:
    """One policy through ``loadguard run`` on a fresh target, judged like the simulator's."""
    ecfg = eval_config(plant, cfg)
    scheme = Scheme(policy, "loadguard", f"LoadGuard {policy}", policy=policy)
    record = run_scheme(ecfg, scheme, round_, cfg.seed, home)
    paths = Paths.in_dir(record.run_dir)
    batch = read_jtl(paths.jtl)
    data = run_data(
        batch, schedule_from_decisions(paths.decisions, ecfg.initial_rate), cfg.duration_s
    )
    offset = (int(batch.start_ms.min()) - record.target_ready_ms) / 1000.0
    capacity = shift_capacity(steps, offset)
    m = compute(data, capacity, plant.p95_ms, shift_events(plant.events, offset))
    # No fixed-rate frontier is measured on real JMeter: the goal's efficiency floor and
    # reach are the absolute 90 % of λ* (suite_metrics.NO_FRONTIER_EFFICIENCY).
    goal = Goal(
        DEFAULT_VIOLATION_BUDGET,
        None,
        has_events=bool(plant.events),
        has_cliff=plant.has_cliff,
        t90_exempt=t90_exempt(capacity),
        measured_frontier=False,
    )
    miss = misses([m], goal)
    return RealRun(
        policy=policy,
        metrics=m,
        misses=tuple(miss),
        offset_s=offset,
        covered=record.covered,
        stop_reason=record.stop_reason,
        load=(record.load_start, record.load_end),
        run_dir=record.run_dir,
        rates=data.ticks,
        round=round_,
    )


def run_order(policies: Sequence[str], rounds: int) -> list[tuple[int, str]]:
    """(round, policy) in the order run: the given order in odd rounds, reversed in even
    ones, so each policy meets the shared store first as often as the others."""
    out: list[tuple[int, str]] = []
    for k in range(1, rounds + 1):
        out += [(k, p) for p in (policies if k % 2 else tuple(reversed(policies)))]
    return out


def evaluate_real_plant(
    plant: RealPlant,
    cfg: RealSuiteConfig,
    home: JMeterHome,
    progress: Callable[[str], None] | None = None,
) -> RealPlantResult:
    say = progress or (lambda _msg: None)
    if plant.not_run is not None:
        say(f"plant {plant.number} {plant.key}: not run ({plant.not_run})")
        return RealPlantResult(plant, (), (), (), plant.not_run)
    sweeps: list[RealSweep | None] = []
    lams: list[float] = []
    given = list(cfg.lambda_stars or ())
    for i, phase in enumerate(plant.phases):
        if phase.args is None:
            sweeps.append(None)
            lams.append(0.0)
        elif given:
            sweeps.append(None)
            lams.append(given.pop(0))
        else:
            sweep = sweep_phase(plant, phase, i, cfg, home, say)
            sweeps.append(sweep)
            lams.append(0.0 if sweep.lam.rps is None else sweep.lam.rps)
    steps = tuple((ph.at_s, lam) for ph, lam in zip(plant.phases, lams, strict=True))
    say(f"plant {plant.number} {plant.key}: lambda* measured {steps}")
    runs: list[RealRun] = []
    for round_, policy in run_order(cfg.policies, cfg.rounds):
        t0 = time.monotonic()
        run = policy_run(plant, policy, steps, cfg, home, round_)
        runs.append(run)
        label = policy if cfg.rounds == 1 else f"{policy}, round {round_}"
        say(
            f"  {label}: {run.misses or 'goal met'} ({time.monotonic() - t0:.0f} s, "
            f"offset {run.offset_s:.1f} s, load {run.load[0]:.2f}-{run.load[1]:.2f})"
        )
    return RealPlantResult(plant, tuple(sweeps), steps, tuple(runs))
