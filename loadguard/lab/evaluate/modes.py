"""The three modes of ``loadguard evaluate``, as library functions the CLI only calls.

* the harness (``harness_config`` + ``run_harness``): FFA, TSTCTG and LoadGuard's
  policies against fresh targets, quick (``EvalConfig.quick_config``) or full;
* the plant suite in the simulator (``suite_config`` + ``run_plant_suite``);
* the plant suite on real JMeter (``real_suite_config`` + ``run_real_plant_suite``).

Each validates its settings and raises ``UsageError`` (naming the flag the value came
from, as the user typed it) or another ``LoadGuardError``; the CLI defines the flags, wires
signals and logging, and prints the outcome.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from loadguard.errors import UsageError
from loadguard.jmeter.home import find_jmeter_home
from loadguard.lab.evaluate.config import EvalConfig, teastore_overrides
from loadguard.lab.evaluate.harness import EvalResult, evaluate, rerender
from loadguard.lab.evaluate.real_plants import select_real
from loadguard.lab.evaluate.real_report import data_dir, load, merge, write
from loadguard.lab.evaluate.real_report import to_json as real_to_json
from loadguard.lab.evaluate.real_suite import RealPlantResult, RealSuiteConfig, evaluate_real_plant
from loadguard.lab.evaluate.schemes import parse_schemes
from loadguard.lab.evaluate.suite import SuiteConfig, run_suite
from loadguard.lab.evaluate.suite_report import default_out, load_json, to_json
from loadguard.lab.evaluate.suite_report import write as write_suite
from loadguard.lab.simulate.plants import select
from loadguard.policies import DEFAULT_POLICY, POLICIES
from loadguard.slo import SloSpec

Progress = Callable[[str], None]

#: A real run is judged from 30 s on (three windows at least); steady efficiency needs
#: more than 120 s.
MIN_REAL_DURATION_S = 60.0
#: The simulated suite's events happen at 120-170 s.
MIN_SUITE_DURATION_S = 300.0
#: A harness run holds two 10 s windows at least.
MIN_HARNESS_DURATION_S = 20.0


def check_mode(
    *, suite: bool, real: bool, target: str, seeds: str | None, violation_budget: str | None
) -> None:
    """The combinations of mode flags that make sense, or a ``UsageError``."""
    if suite and target != "emulator":
        raise UsageError("--suite runs in the simulator: it takes no --target")
    if real and not suite:
        raise UsageError("--real runs the plant suite: give --suite too")
    if not suite and (seeds is not None or violation_budget is not None):
        raise UsageError("--seeds and --violation-budget: only with --suite")
    if real and (seeds is not None or violation_budget is not None):
        raise UsageError("--seeds and --violation-budget: the simulator's suite only, not --real")


# ------------------------------------------------------------------------ parsers
def parse_rates(text: str) -> tuple[float, ...]:
    """``100,120,140`` -> (100.0, 120.0, 140.0): positive rates in req/s."""
    try:
        rates = tuple(float(r) for r in text.split(",") if r.strip())
    except ValueError as exc:
        raise UsageError(f"--sweep-rates: expected numbers like 100,120,140 ({exc})") from exc
    if not rates or any(r <= 0 for r in rates):
        raise UsageError("--sweep-rates: give positive rates in req/s")
    return rates


def parse_policies(names: tuple[str, ...]) -> tuple[str, ...]:
    """Policy names, each given alone or comma-separated, known and distinct."""
    out: list[str] = []
    for raw in names:
        for name in (n.strip() for n in raw.split(",")):
            if name and name not in POLICIES:
                raise UsageError(
                    f"--policies: unknown policy {name!r} (known: {', '.join(POLICIES)})"
                )
            if name and name not in out:
                out.append(name)
    if not out:
        raise UsageError("--policies: give at least one policy")
    return tuple(out)


def parse_seeds(text: str) -> tuple[int, ...]:
    """``101,102,103`` -> (101, 102, 103): distinct whole numbers >= 0, in the order given."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if not part.isdigit():
            raise UsageError(f"--seeds: expected whole numbers like 101,102,103, got {part!r}")
        if int(part) not in out:
            out.append(int(part))
    if not out:
        raise UsageError("--seeds: give at least one seed, e.g. 101,102,103")
    return tuple(out)


def parse_budget(text: str) -> float:
    """``5%`` -> 0.05, through the SLO's own parser and limits (an ``SloSpecError`` as the
    sidecar's commands give for the same value)."""
    return SloSpec.from_options(p95="1s", violation_budget=text).violation_budget


# ------------------------------------------------------------------------ the harness
def harness_config(
    *,
    quick: bool,
    target: str,
    layout: str,
    teastore_reset: bool,
    schemes: tuple[str, ...],
    repetitions: int | None,
    duration_s: float | None,
    steady_after_s: float,
    seed: int,
    sweep_rates: str | None,
    sweep_duration_s: float | None,
    out: Path | None,
    command: str,
) -> EvalConfig:
    """The harness's settings: ``EvalConfig.quick_config`` with ``quick``, else the full
    defaults, each given value over them; ``out`` defaults to results/evaluate-<time>."""
    out_dir = out or Path("results") / datetime.now().strftime("evaluate-%Y%m%d-%H%M%S")
    overrides: dict[str, object] = {
        "seed": seed,
        "steady_after_s": steady_after_s,
        "command": command,
    }
    if schemes:
        overrides["schemes"] = parse_schemes(schemes)
    if repetitions is not None:
        if repetitions < 1:
            raise UsageError("--repetitions: must be >= 1")
        overrides["repetitions"] = repetitions
    if duration_s is not None:
        if duration_s < MIN_HARNESS_DURATION_S:
            raise UsageError("--duration: at least 20s (two 10 s windows)")
        overrides["duration_s"] = duration_s
    if sweep_rates is not None:
        overrides["sweep_rates"] = parse_rates(sweep_rates)
    if sweep_duration_s is not None:
        overrides["sweep_seconds"] = sweep_duration_s
    if target == "teastore":
        overrides |= teastore_overrides(layout, quick, overrides, reset=teastore_reset)
    elif teastore_reset:
        raise UsageError("--teastore-reset: only with --target teastore")
    cfg = (
        EvalConfig.quick_config(out_dir, **overrides)
        if quick
        else EvalConfig(out_dir=out_dir, **overrides)  # type: ignore[arg-type]
    )
    if cfg.sweep_warmup_s >= cfg.sweep_seconds:
        raise UsageError("--sweep-duration: must be longer than the 10 s warm-up")
    return cfg


def run_harness(
    cfg: EvalConfig, doc: Path | None, *, force: bool, render_only: bool, out_given: bool
) -> EvalResult:
    """Run the evaluation ``cfg`` describes (or, ``render_only``, write its report again
    from the finished runs in ``cfg.out_dir``, which the user must have named)."""
    if render_only:
        if not out_given:
            raise UsageError("--render-only: give --out, the folder of a finished evaluation")
        return rerender(cfg, doc)
    return evaluate(cfg, doc, force=force)


# ------------------------------------------------------------------------ the simulated suite
@dataclass(frozen=True)
class SuiteOutcome:
    """What a plant suite found: plant x policy pairs (simulated) or runs (real) that met
    the goal, out of how many, and where the report and the data went."""

    met: int
    total: int
    doc: Path
    data: Path


def suite_config(
    *,
    quick: bool,
    policies: tuple[str, ...],
    repetitions: int | None,
    seeds: str | None,
    violation_budget: str | None,
    duration_s: float | None,
) -> SuiteConfig:
    """The simulated suite's settings (quick: the default policy, one seed)."""
    overrides: dict[str, object] = {}
    if policies:
        overrides["policies"] = parse_policies(policies)
    if repetitions is not None and seeds is not None:
        raise UsageError("--seeds and --repetitions: give one of them")
    if repetitions is not None:
        if repetitions < 1:
            raise UsageError("--repetitions: must be >= 1")
        overrides["seeds"] = tuple(range(1, repetitions + 1))
    if seeds is not None:
        overrides["seeds"] = parse_seeds(seeds)
    if violation_budget is not None:
        overrides["violation_budget"] = parse_budget(violation_budget)
    if duration_s is not None:
        if duration_s < MIN_SUITE_DURATION_S:
            raise UsageError("--duration: the suite needs at least 300s (events at 120-170 s)")
        overrides["duration_s"] = duration_s
    return SuiteConfig.quick(**overrides) if quick else SuiteConfig(**overrides)  # type: ignore[arg-type]


def run_plant_suite(
    cfg: SuiteConfig,
    plants: tuple[str, ...],
    *,
    baseline: Path | None,
    doc: Path | None,
    out: Path | None,
    command: str,
    progress: Progress,
) -> SuiteOutcome:
    """Every chosen plant x policy x seed in the simulator; writes suite.json and the
    report (default docs/controller.md), ``baseline``'s rows shown as 'before'."""
    chosen = select(plants)
    base = load_json(baseline) if baseline is not None else None
    results = run_suite(chosen, cfg, progress=progress)
    data = to_json(results, cfg, command)
    doc_path = doc or Path("docs/controller.md")
    out_dir = out or default_out(doc_path, data)
    write_suite(data, base, doc_path, out_dir)
    met = sum(1 for p in data["plants"] for s in p["summary"] if not s["misses"])
    total = sum(len(p["summary"]) for p in data["plants"])
    return SuiteOutcome(met, total, doc_path, out_dir / "suite.json")


# ------------------------------------------------------------------------ the real suite
def _commit() -> str:
    """The commit of the checkout it runs in (the current folder), ``+dirty`` when a tracked
    file in loadguard/ is changed; ``unknown`` outside a checkout (an installed wheel)."""
    root = Path.cwd()
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "-uno", "--", "loadguard"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M")


def real_suite_config(
    *,
    policies: tuple[str, ...],
    duration_s: float | None,
    out: Path | None,
    repetitions: int | None = None,
) -> RealSuiteConfig:
    """The real suite's settings: 240 s runs of the default policy unless given, one round
    unless ``repetitions`` (rounds, the order reversed every other one)."""
    d = 240.0 if duration_s is None else duration_s
    if d < MIN_REAL_DURATION_S:
        raise UsageError(f"--duration: a real suite run needs at least {MIN_REAL_DURATION_S:g}s")
    if repetitions is not None and repetitions < 1:
        raise UsageError("--repetitions: must be >= 1")
    return RealSuiteConfig(
        out_dir=out or Path("results") / datetime.now().strftime("suite-jmeter-%Y%m%d-%H%M%S"),
        duration_s=d,
        policies=parse_policies(policies) if policies else (DEFAULT_POLICY,),
        rounds=repetitions or 1,
    )


def rerender_real_suite(plants: tuple[str, ...], doc: Path | None) -> tuple[Path, Path]:
    """The real suite's report written again from its suite.json: (report, json);
    ``plants`` are checked as a run would check them."""
    select_real(plants)
    doc_path = doc or Path("docs/controller-jmeter.md")
    return doc_path, write(load(doc_path), doc_path)


def run_real_plant_suite(
    cfg: RealSuiteConfig,
    plants: tuple[str, ...],
    *,
    doc: Path | None,
    command: str,
    progress: Progress,
) -> SuiteOutcome:
    """Every chosen plant on real JMeter, its rows merged into the suite.json beside the
    report (default docs/controller-jmeter.md) after each plant, so a stop keeps them."""
    chosen = select_real(plants)
    doc_path = doc or Path("docs/controller-jmeter.md")
    earlier = load(doc_path) if (data_dir(doc_path) / "suite.json").exists() else None
    home = find_jmeter_home()
    meta = {"command": command, "commit": _commit(), "started": _now(), "finished": ""}
    results: list[RealPlantResult] = []
    for plant in chosen:
        results.append(evaluate_real_plant(plant, cfg, home, progress=progress))
        data = real_to_json(results, cfg, {**meta, "finished": _now()})
        write(merge(earlier, data), doc_path)
    met = sum(1 for r in results for run in r.runs if not run.misses)
    total = sum(len(r.runs) for r in results)
    return SuiteOutcome(met, total, doc_path, data_dir(doc_path))
