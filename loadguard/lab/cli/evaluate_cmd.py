"""``loadguard evaluate``: the evaluation harness and the plant suites (thin: the flags and
the output; the modes are ``loadguard.lab.evaluate.modes``)."""

from __future__ import annotations

import logging
import sys
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
from loadguard.lab.cli.options import layout_option
from loadguard.lab.evaluate import modes
from loadguard.lab.evaluate.schemes import SCHEMES
from loadguard.lab.evaluate.targets import TARGETS
from loadguard.signals import interrupt_on_signals


def _command_line() -> str:
    """How this evaluation was started, for the report."""
    if sys.argv[1:2] == ["evaluate"]:
        return " ".join(["loadguard", *sys.argv[1:]])
    return " ".join([".venv/bin/python", "benchmarks/evaluate.py", *sys.argv[1:]])


def _progress(message: str) -> None:
    click.echo(message, err=True)


def _stop_everything_on_sigterm() -> None:
    # SIGTERM unwinds like Ctrl-C, so every target and JMeter started is stopped.
    click.get_current_context().with_resource(interrupt_on_signals())


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
    "11-16 only when named).",
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
@click.option(
    "--repetitions",
    type=int,
    help="Runs per scheme (default 5; quick 1); --suite --real: rounds of the policies, the "
    "order reversed every other round (default 1).",
)
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
      loadguard evaluate --schemes FFA,tally --repetitions 1 --duration 60s
      loadguard evaluate --suite --quick --doc docs/controller.md
      loadguard evaluate --suite --plants cliff,6 --policies tally,threezone
      loadguard evaluate --suite --policies tally --seeds 101,102,103 --violation-budget 1%
      loadguard evaluate --suite --policies tally --plants 11,12,13,14,15,16   # the holdout plants
      loadguard evaluate --suite --real --plants mm8,teastore --duration 240s
      loadguard evaluate --suite --real --plants teastore --policies tally,threezone \\
                         --repetitions 2    # tally first, then threezone first
      loadguard evaluate --repetitions 2 --duration 180s --out runs/ --doc docs/evaluation.md \\
                         --render-only    # report again from runs/, nothing re-run
    """
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr, force=True
    )
    modes.check_mode(
        suite=suite, real=real, target=target_kind, seeds=seeds, violation_budget=violation_budget
    )
    if suite and real:
        _stop_everything_on_sigterm()
        real_cfg = modes.real_suite_config(
            policies=policies, duration_s=duration, out=out, repetitions=repetitions
        )
        if render_only:
            doc_path, json_path = modes.rerender_real_suite(plants, doc)
            click.echo(f"report: {doc_path} again from {json_path}", err=True)
            return
        found = modes.run_real_plant_suite(
            real_cfg, plants, doc=doc, command=_command_line(), progress=_progress
        )
        click.echo(
            f"goal met in {found.met} of {found.total} runs; report: {found.doc}; "
            f"data: {found.data}; runs: {real_cfg.out_dir}",
            err=True,
        )
        return
    if suite:
        suite_cfg = modes.suite_config(
            quick=quick, policies=policies, repetitions=repetitions, seeds=seeds,
            violation_budget=violation_budget, duration_s=duration,
        )  # fmt: skip
        found = modes.run_plant_suite(
            suite_cfg, plants, baseline=baseline, doc=doc, out=out, command=_command_line(),
            progress=_progress,
        )  # fmt: skip
        click.echo(
            f"goal met on {found.met} of {found.total} plant x policy pairs (over seeds "
            f"{','.join(map(str, suite_cfg.seeds))}, B = {suite_cfg.violation_budget:.1%}); "
            f"report: {found.doc}; data: {found.data}",
            err=True,
        )
        return
    cfg = modes.harness_config(
        quick=quick, target=target_kind, layout=layout, teastore_reset=teastore_reset,
        schemes=schemes, repetitions=repetitions, duration_s=duration,
        steady_after_s=steady_after, seed=seed, sweep_rates=sweep_rates,
        sweep_duration_s=sweep_duration, out=out, command=_command_line(),
    )  # fmt: skip
    _stop_everything_on_sigterm()
    result = modes.run_harness(
        cfg, doc, force=force, render_only=render_only, out_given=out is not None
    )
    lam = "-" if result.lambda_star.rps is None else f"{result.lambda_star.rps:.1f} req/s"
    click.echo(f"lambda* measured {lam}; {len(result.rows)} runs", err=True)
    click.echo(f"report: {result.doc}  runs: {result.csv}", err=True)
