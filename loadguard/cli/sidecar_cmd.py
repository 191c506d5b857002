"""``loadguard attach`` and ``loadguard run``: the sidecar commands (thin)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime
from pathlib import Path

import click

from loadguard.cli.options import (
    engine_option,
    force_option,
    jmeter_home_option,
    jmeter_property_option,
    jtl_option,
    no_dashboard_option,
    out_option,
    remote_option,
    thread_group_option,
)
from loadguard.cli.sidecar_options import (
    LoopOptions,
    engine_max_rate_option,
    loop_options,
    with_remotes,
)
from loadguard.dashboard import dashboard_for_run
from loadguard.errors import UsageError
from loadguard.headline import headline
from loadguard.jmeter.home import find_jmeter_home
from loadguard.jmeter.remote import DEFAULT_SAMPLE_SENDER, SAMPLE_SENDER_MODES
from loadguard.loop import LoopOutcome
from loadguard.sidecar import Paths, RunPlan, attach, run_plan


def headline_line(outcome: LoopOutcome, paths: Paths) -> str:
    """``VERDICT: <headline>``: the sentence summary.json holds (loadguard.headline)."""
    s = outcome.summary
    try:
        text = str(json.loads(paths.summary.read_text())["headline"]["text"])
    except (OSError, ValueError, KeyError, TypeError):
        text = headline(s.to_json()).text
    return f"{s.verdict}: {text}"


def _finish(outcome: LoopOutcome, paths: Paths, dashboard: str | None = None) -> None:
    click.echo(f"stop: {outcome.stop_reason}", err=True)
    if dashboard:
        click.echo(dashboard, err=True)
    click.echo(f"decisions: {paths.decisions}  summary: {paths.summary}", err=True)
    click.echo(headline_line(outcome, paths), err=True)
    sys.exit(outcome.exit_code)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@click.command("attach")
@jtl_option
@engine_option()
@out_option
@remote_option
@engine_max_rate_option
@loop_options
def attach_cmd(
    jtl: Path | None,
    engines: tuple[str, ...],
    out: Path | None,
    remotes: tuple[str, ...],
    engine_max_rate: float | None,
    opts: LoopOptions,
) -> None:
    """Run the control loop beside a JMeter that is already running.

    JMeter must run with -Jbeanshell.server.port=P (LoadGuard talks to P+1) and a plan
    whose Elastic Timer reads ${__P(loadguard.tpm)} (see `loadguard inject`). --out is
    the folder for decisions.csv and summary.json (default: the current folder) and
    holds results.jtl when --jtl is not given.

    \b
    Example:
      jmeter -n -t plan.jmx -l results.jtl -Jbeanshell.server.port=9000 \\
             -Jbeanshell.server.file= -Jjmeter.save.saveservice.autoflush=true &
      loadguard attach --jtl results.jtl -e 127.0.0.1:9001 \\
             --p95 500ms --error-rate 1% --out lg/
      loadguard attach --jtl results.jtl --remote h1:1099,h2:1099 \\
             -e h1:9001 -e h2:9001 --p95 500ms --max-rate 400
    """
    _setup_logging(opts.verbose)
    if jtl is None and out is None:
        raise UsageError("give --jtl (or --out with results.jtl in it)")
    if not engines and not opts.dry_run:
        raise UsageError("give --engine HOST:PORT (the BeanShell session port) or --dry-run")
    paths = opts.paths(out or Path("."), jtl=jtl)
    cfg = with_remotes(opts.config(paths, engines), remotes, engine_max_rate, DEFAULT_SAMPLE_SENDER)
    _finish(attach(cfg), paths)


@click.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("plan", type=click.Path(exists=True, dir_okay=False))
@click.argument("jmeter_args", nargs=-1, type=click.UNPROCESSED)
@out_option
@jmeter_home_option
@jmeter_property_option
@thread_group_option
@click.option("--no-inject", is_flag=True, help="Run the plan as is (it already paces itself).")
@force_option
@no_dashboard_option
@engine_option()
@remote_option
@engine_max_rate_option
@click.option(
    "--sample-sender",
    type=click.Choice(SAMPLE_SENDER_MODES),
    default=DEFAULT_SAMPLE_SENDER,
    show_default=True,
    help="With --remote: the controller's sample sender mode (batch modes get 10 samples/1 s).",
)
@loop_options
def run_cmd(
    plan: str,
    jmeter_args: tuple[str, ...],
    out: Path | None,
    jmeter_home: Path | None,
    properties: tuple[str, ...],
    thread_groups: tuple[str, ...],
    no_inject: bool,
    force: bool,
    no_dashboard: bool,
    engines: tuple[str, ...],
    remotes: tuple[str, ...],
    engine_max_rate: float | None,
    sample_sender: str,
    opts: LoopOptions,
) -> None:
    """Start JMeter on PLAN (non-GUI) with the Elastic Timer, then attach to it.

    Injects the Elastic Timer into a copy of the plan unless it has one, picks free
    BeanShell and UDP ports (the BeanShell console listens on 127.0.0.1 only; see
    docs/security.md), starts JMeter with autoflush, drives the rate, and stops JMeter
    cleanly at the end or on Ctrl-C. Afterwards JMeter's own HTML dashboard is generated
    into RUN/dashboard/ from the CSV JTL (--no-dashboard: not). Arguments after `--` go
    to JMeter unchanged.
    --engine is only for --remote engines: run starts its own JMeter.

    JMeter runs in the current directory, and files the plan names relative to its own
    folder (CSV Data Set, includes) resolve as under `jmeter -n -t PLAN`. --out is the run
    folder (default results/<timestamp>); one that already holds a run is refused unless
    --force replaces it.

    \b
    Example:
      loadguard run plan.jmx --p95 300ms --error-rate 1% --max-rate 800 \\
            --duration 3m --out results/run1 -- -Jhost=127.0.0.1
      loadguard run plan.jmx --remote h1:1099,h2:1099 -e h1:9001 \\
            -e h2:9001 --p95 300ms --max-rate 800 -J threads=200
      loadguard run plan.jmx --p95 300ms --max-rate 800 --application shop \\
            --influx 'http://127.0.0.1:8086/write?db=jmeter' --prometheus-port 9464
    """
    _setup_logging(opts.verbose)
    out_dir = out or Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S")
    paths = opts.paths(out_dir)
    props: dict[str, str] = {}
    for p in properties:
        name, sep, value = p.partition("=")
        if not sep or not name:
            raise UsageError(f"-J {p!r}: expected NAME=VALUE")
        props[name] = value
    if engines and not remotes:
        raise UsageError("--engine is for --remote engines (run starts its own JMeter)")
    cfg = with_remotes(opts.config(paths, engines), remotes, engine_max_rate, sample_sender)
    home = find_jmeter_home(jmeter_home)
    run = RunPlan(
        plan=Path(plan).resolve(),
        jmeter=home,
        out_dir=out_dir,
        properties=props,
        extra_args=jmeter_args,
        inject=not no_inject,
        thread_groups=thread_groups,
        force=force,
    )
    if cfg.remotes:
        from loadguard.distributed import run_remote

        outcome, _code = run_remote(run, cfg)
    else:
        outcome, _code = run_plan(run, cfg)
    # JMeter's own dashboard beside the run; it never fails the run (loadguard.dashboard).
    made = dashboard_for_run(home, out_dir, paths.jtl, paths.summary, enabled=not no_dashboard)
    _finish(outcome, paths, made.line(out_dir))
