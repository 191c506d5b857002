"""How an evaluation runs: schemes, repetitions, run length, the target, the sweep."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loadguard.lab.evaluate.schemes import QUICK_SCHEMES, SCHEMES, Scheme, parse_schemes

#: Target path every plan requests (the demo target's TeaStore-like home page).
TARGET_PATH = "/tools.descartes.teastore.webui/"


@dataclass(frozen=True)
class TargetSpec:
    """The demo target: M/M/c with a K-deep queue (``loadguard target --model mmc``)."""

    workers: int = 8
    service_ms: float = 50.0
    queue: int = 1000
    p95_ms: float = 250.0

    def args(self, seed: int) -> list[str]:
        return [
            "--model", "mmc",
            "--workers", str(self.workers),
            "--service", f"{self.service_ms:g}ms",
            "--queue", str(self.queue),
            "--p95", f"{self.p95_ms:g}ms",
            "--seed", str(seed),
        ]  # fmt: skip


@dataclass(frozen=True)
class EvalConfig:
    out_dir: Path
    schemes: tuple[Scheme, ...] = SCHEMES
    repetitions: int = 5
    duration_s: float = 180.0
    steady_after_s: float = 120.0
    seed: int = 1
    target: TargetSpec = field(default_factory=TargetSpec)
    error_rate: float = 0.01  # error-rate SLO (fraction)
    stress_rps: float = 800.0  # the baselines' rate and LoadGuard's --max-rate
    initial_rate: float = 5.0  # LoadGuard's starting rate, req/s
    elastic_threads: int = 200  # threads of the elastic plan (LoadGuard and the sweep)
    tick_ms: int = 2000
    startup_margin_s: float = 20.0  # LoadGuard: sidecar duration = run + this (JVM start)
    sweep_rates: tuple[float, ...] = (100.0, 120.0, 130.0, 140.0, 150.0, 160.0)
    sweep_seconds: float = 30.0
    sweep_warmup_s: float = 10.0
    quick: bool = False
    command: str = ""  # the command line, for the report
    target_kind: str = "emulator"  # or "teastore" (loadguard.lab.evaluate.targets)
    teastore_layout: str = "single"  # loadguard teastore --layout
    #: One target for every run and sweep point of the evaluation (TeaStore's quick smoke
    #: test: a start takes a minute), instead of a fresh one each time.
    share_target: bool = False
    #: The emulator's whole ``loadguard target`` argument list but ``--seed`` (the plant
    #: suite's plants, ``loadguard.lab.evaluate.real_plants``); empty: ``target.args``.
    target_args: tuple[str, ...] = ()
    #: Drive the emulator with TeaStore's browse plan instead of the one-GET elastic plan
    #: (the suite's shop plant); ``--target teastore`` always uses it.
    browse_plan: bool = False
    #: The floods' thread cap (FFA's ``ffa.limit``, TSTCTG's ``tst.max``); ``None``: the
    #: plans' own ``PLAN_THREADS``. A flood leaves about this many requests queued in the
    #: target when it stops, and a shared target must drain them before the next run.
    baseline_threads: int | None = None

    @property
    def uses_browse_plan(self) -> bool:
        return self.target_kind == "teastore" or self.browse_plan

    @classmethod
    def quick_config(cls, out_dir: Path, **overrides: object) -> EvalConfig:
        """CI smoke test: 3 schemes, 1 repetition, 20 s runs, a 1-point 10 s sweep."""
        base: dict[str, object] = {
            "schemes": parse_schemes(QUICK_SCHEMES),
            "repetitions": 1,
            "duration_s": 20.0,
            "sweep_rates": (140.0,),
            "sweep_seconds": 10.0,
            "sweep_warmup_s": 3.0,
            "startup_margin_s": 8.0,
            "quick": True,
        }
        base.update(overrides)
        return cls(out_dir=out_dir, **base)  # type: ignore[arg-type]


#: The floods' thread cap written in ffa_800.jmx and tstctg_800.jmx (their defaults).
PLAN_THREADS = 1000

#: TeaStore's sweep, samples/s of the browse plan (its λ* on a 2-core machine is tens).
TEASTORE_SWEEP: tuple[float, ...] = (20.0, 40.0, 60.0, 80.0, 100.0, 120.0)
TEASTORE_P95_MS = 500.0


def teastore_overrides(
    layout: str, quick: bool, given: dict[str, object], reset: bool = False
) -> dict[str, object]:
    """What ``--target teastore`` changes: the target, its SLO (p95 <= 500 ms) and, unless
    given, the sweep's rates (quick: one point, 40 samples/s) and, for a full run, 90 s
    sweep points measured after a 60 s warm-up (each point is a fresh, cold TeaStore).
    ``quick`` or ``reset``: one TeaStore shared by the sweep and every run, reset before
    each but the first (``targets.Targets``)."""
    out: dict[str, object] = {
        "target_kind": "teastore",
        "teastore_layout": layout,
        "target": TargetSpec(p95_ms=TEASTORE_P95_MS),
        "elastic_threads": 100,  # TeaStore generates user1..user100 for the plan's logins
    }
    if "sweep_rates" not in given:
        out["sweep_rates"] = (40.0,) if quick else TEASTORE_SWEEP
    if (quick or reset) and "share_target" not in given:
        # One TeaStore, reset before every later run: a smoke test starts once, not four
        # times; --teastore-reset trades the cold start of every run for time.
        out["share_target"] = True
    if quick and "baseline_threads" not in given:
        # The smoke test's floods get the elastic plan's 100 users, not the plans' 1000: a
        # flood leaves its threads' requests queued in the shared TeaStore, and the next run
        # waits until they drain (1,000 at 12 samples/s took 89 s on a 2-core machine; 100
        # drain in seconds). 100 threads still hold most of 800 samples/s back.
        out["baseline_threads"] = out["elastic_threads"]
    if not quick and "sweep_seconds" not in given:
        # A fresh TeaStore per sweep point (or, reset, the first one is): leave its JIT's
        # first minute out.
        out["sweep_seconds"] = 90.0
        out["sweep_warmup_s"] = 60.0
    return out
