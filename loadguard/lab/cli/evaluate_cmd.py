"""``loadguard evaluate``: the evaluation harness (thin; the work is loadguard.evaluate)."""

from __future__ import annotations

import logging
import sys
from datetime import datetime
from pathlib import Path

import click

from loadguard.cli.options import (
    DURATION,
    FILE,
    duration_option,
    force_option,
    out_option,
    seed_option,
    violation_budget_option,
)
from loadguard.durations import Seconds
from loadguard.errors import UsageError
from loadguard.lab.cli.options import layout_option
from loadguard.lab.cli.suite_cmd import run_suite_command
from loadguard.lab.cli.suite_real_cmd import run_real_suite_command
from loadguard.lab.evaluate.config import EvalConfig, teastore_overrides
from loadguard.lab.evaluate.harness import evaluate, rerender
from loadguard.lab.evaluate.schemes import SCHEMES, parse_schemes
from loadguard.lab.evaluate.targets import TARGETS
from loadguard.signals import interrupt_on_signals


def _rates(text: str) -> tuple[float, ...]:
    try:
        rates = tuple(float(r) for r in text.split(",") if r.strip())
    except ValueError as exc:
        raise UsageError(f"--sweep-rates: expected numbers like 100,120,140 ({exc})") from exc
    if not rates or any(r <= 0 for r in rates):
        raise UsageError("--sweep-rates: give positive rates in req/s")
    return rates


def _command_line() -> str:
    """How this evaluation was started, for the report."""
    if sys.argv[1:2] == ["evaluate"]:
        return " ".join(["loadguard", *sys.argv[1:]])
    return " ".join([".venv/bin/python", "benchmarks/evaluate.py", *sys.argv[1:]])


@click.command("evaluate")
@click.option("--quick", is_flag=True, help="CI smoke test: 3 schemes, 1 run, 20 s runs.")
@click.option(
    "--target",
    "target_kind",
    type=click.Choice(TARGETS),
    default="emulator",
    show_default=True,
    help="emulator: loadguard target (M/M/c); teastore: the real TeaStore (loadguard "
    "teastore, a fresh one per run) with examples/teastore/teastore-browse.jmx, p95 <= 500ms.",
)
@layout_option
@click.option(
    "--teastore-reset",
    is_flag=True,
    help="--target teastore: one TeaStore for the whole evaluation, reset (database, images, "
    "recommender regenerated; the JVMs stay warm) before every run and sweep point after the "
    "first, instead of a fresh one each time (~1 min less per run).",
)
@click.option(
    "--suite",
    is_flag=True,
    help="The controller's plant suite in the simulator instead (every plant x policy vs "
    "the fixed-rate frontier at the violation budget; --doc default docs/controller.md; "
    "quick: default policy, 1 seed).",
)
@click.option(
    "--real",
    is_flag=True,
    help="--suite on real JMeter instead of the simulator: each plant served by loadguard "
    "target (10: loadguard teastore, both layouts), λ* by a short real sweep, 240 s runs of "
    "the default policy unless --policies/--duration; --doc default docs/controller-jmeter.md.",
)
@click.option(
    "--plants",
    multiple=True,
    help="--suite: plants by number or name (default 1-9; --real 1-10; the holdout plants "
    "11-13 only when named).",
)
@click.option("--policies", multiple=True, help="--suite: policies (default all; quick: default).")
@click.option(
    "--seeds",
    metavar="N,N,...",
    help="--suite: the seeds to run, e.g. 101,102,103 (default 1,2,3; quick 1; or 1..N "
    "by --repetitions N).",
)
@violation_budget_option
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="--suite: an earlier suite.json whose rows are shown as 'before'.",
)
@click.option(
    "--schemes",
    multiple=True,
    help="Comma-separated subset of " + ", ".join(s.name for s in SCHEMES) + " (default all).",
)
@click.option("--repetitions", type=int, help="Runs per scheme (default 5; quick 1).")
@duration_option()
@click.option(
    "--steady-after", type=DURATION, default="120s", show_default=True,
    help="Steady-state cut-off.",
)  # fmt: skip
@seed_option
@click.option("--sweep-rates", help="λ* sweep rates, req/s (default 100,120,130,140,150,160).")
@click.option("--sweep-duration", type=DURATION, help="Length of each sweep point (default 30s).")
@out_option
@click.option(
    "--doc",
    type=FILE,
    help="Markdown report to write (default <out>/evaluation.md; PNGs and runs.csv beside "
    "it in a folder of the same name).",
)
@force_option
@click.option(
    "--render-only",
    is_flag=True,
    help="Run nothing: write the PNGs and the report again from the finished runs in --out "
    "(--suite --real: from the suite.json beside --doc).",
)
def evaluate_cmd(
    target_kind: str,
    layout: str,
    teastore_reset: bool,
    suite: bool,
    real: bool,
    plants: tuple[str, ...],
    policies: tuple[str, ...],
    seeds: str | None,
    violation_budget: str | None,
    baseline: Path | None,
    force: bool,
    render_only: bool,
    quick: bool,
    schemes: tuple[str, ...],
    repetitions: int | None,
    duration: Seconds | None,
    steady_after: Seconds,
    seed: int,
    sweep_rates: str | None,
    sweep_duration: Seconds | None,
    out: Path | None,
    doc: Path | None,
) -> None:
    """Run FFA, TSTCTG and LoadGuard's policies against fresh demo targets; report.

    Each scheme runs REPETITIONS times, every run the same length on a new target
    process; λ* is measured first by a fixed-rate step sweep. Writes runs.csv, one PNG
    per scheme and a Markdown report with the table in the paper's shape
    (docs/evaluation.md describes every figure). --duration is every run's length
    (default 180s; quick 20s); --layout applies to --target teastore; --out is the
    folder for the runs (default results/evaluate-<timestamp>); --seed the targets'
    base seed.

    \b
    Example:
      loadguard evaluate --quick
      loadguard evaluate --quick --target teastore --layout per-service
      loadguard evaluate --repetitions 2 --duration 120s --doc docs/evaluation.md
      loadguard evaluate --schemes FFA,gradient --repetitions 1 --duration 60s
      loadguard evaluate --suite --quick --doc docs/controller.md
      loadguard evaluate --suite --plants cliff,6 --policies gradient,threezone
      loadguard evaluate --suite --policies knee --seeds 101,102,103 --violation-budget 1%
      loadguard evaluate --suite --policies knee --plants 11,12,13   # the holdout plants
      loadguard evaluate --suite --real --plants mm8,teastore --duration 240s
      loadguard evaluate --repetitions 2 --duration 180s --out runs/ --doc docs/evaluation.md \\
                         --render-only    # report again from runs/, nothing re-run
    """
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr, force=True
    )
    if suite and target_kind != "emulator":
        raise UsageError("--suite runs in the simulator: it takes no --target")
    if real and not suite:
        raise UsageError("--real runs the plant suite: give --suite too")
    if not suite and (seeds is not None or violation_budget is not None):
        raise UsageError("--seeds and --violation-budget: only with --suite")
    if real and (seeds is not None or violation_budget is not None):
        raise UsageError("--seeds and --violation-budget: the simulator's suite only, not --real")
    if suite and real:
        # SIGTERM unwinds like Ctrl-C, so every target and JMeter started is stopped.
        click.get_current_context().with_resource(interrupt_on_signals())
        run_real_suite_command(
            plants=plants, policies=policies, duration=duration, doc=doc, out=out,
            command=_command_line(), render_only=render_only,
        )  # fmt: skip
        return
    if suite:
        run_suite_command(
            quick=quick, plants=plants, policies=policies, repetitions=repetitions,
            seeds=seeds, violation_budget=violation_budget, duration=duration,
            baseline=baseline, doc=doc, out=out, command=_command_line(),
        )  # fmt: skip
        return
    out_dir = out or Path("results") / datetime.now().strftime("evaluate-%Y%m%d-%H%M%S")
    overrides: dict[str, object] = {
        "seed": seed,
        "steady_after_s": steady_after,
        "command": _command_line(),
    }
    if schemes:
        overrides["schemes"] = parse_schemes(schemes)
    if repetitions is not None:
        if repetitions < 1:
            raise UsageError("--repetitions: must be >= 1")
        overrides["repetitions"] = repetitions
    if duration is not None:
        if duration < 20:
            raise UsageError("--duration: at least 20s (two 10 s windows)")
        overrides["duration_s"] = duration
    if sweep_rates is not None:
        overrides["sweep_rates"] = _rates(sweep_rates)
    if sweep_duration is not None:
        overrides["sweep_seconds"] = sweep_duration
    if target_kind == "teastore":
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
    # SIGTERM unwinds like Ctrl-C, so every target and JMeter started is stopped.
    click.get_current_context().with_resource(interrupt_on_signals())
    if render_only:
        if out is None:
            raise UsageError("--render-only: give --out, the folder of a finished evaluation")
        result = rerender(cfg, doc)
    else:
        result = evaluate(cfg, doc, force=force)
    lam = "-" if result.lambda_star.rps is None else f"{result.lambda_star.rps:.1f} req/s"
    click.echo(f"lambda* measured {lam}; {len(result.rows)} runs", err=True)
    click.echo(f"report: {result.doc}  runs: {result.csv}", err=True)
