"""``loadguard attach`` and ``loadguard run``: the sidecar commands (thin)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from loadguard.actuator.engines import Engine
from loadguard.cli.metrics_cmd import build_format
from loadguard.durations import parse_duration_s
from loadguard.errors import UsageError
from loadguard.jmeter.home import find_jmeter_home
from loadguard.jmeter.remote import DEFAULT_SAMPLE_SENDER, SAMPLE_SENDER_MODES
from loadguard.loop import LoopOutcome
from loadguard.policies import DEFAULT_POLICY, parse_params
from loadguard.sidecar import Paths, RunPlan, SidecarConfig, attach, run_plan
from loadguard.slo import SloSpec, parse_rate_rps

F = TypeVar("F", bound=Callable[..., Any])

POLICIES = ("knee", "threezone", "aimd", "gradient", "search")


def _duration(name: str, value: str | None) -> int | None:
    return None if value is None else round(parse_duration_s(value, what=name) * 1000)


def common_options(f: F) -> F:
    opts = [
        click.option(
            "--slo-file", type=click.Path(dir_okay=False), help="TOML file with an [slo] table."
        ),
        click.option("--p50", help="SLO on p50, e.g. 200ms."),
        click.option("--p90", help="SLO on p90."),
        click.option("--p95", help="SLO on p95, e.g. 500ms."),
        click.option("--p99", help="SLO on p99, e.g. 1s."),
        click.option("--mean", help="SLO on the mean."),
        click.option("--error-rate", help="SLO on the error rate, e.g. 1%."),
        click.option("--window", help="Window length (default 10s or the SLO file's)."),
        click.option("--min-rate", help="Rate floor in req/s (never 0)."),
        click.option("--max-rate", help="Rate ceiling in req/s."),
        click.option(
            "--policy",
            type=click.Choice(POLICIES),
            default=DEFAULT_POLICY,
            show_default=True,
            help="Control policy.",
        ),
        click.option(
            "--param",
            "params",
            multiple=True,
            help="Policy parameter KEY=VALUE (repeat); see docs/controller.md.",
        ),
        click.option("--tick", default="2s", show_default=True, help="Tick interval."),
        click.option(
            "--initial-rate", default="5", show_default=True, help="Starting rate, req/s."
        ),
        click.option("--decisions", type=click.Path(dir_okay=False), help="Decision log CSV path."),
        click.option(
            "--summary", "summary_path", type=click.Path(dir_okay=False), help="summary.json path."
        ),
        click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML verdict."),
        click.option("--duration", help="Stop after this long (e.g. 10m)."),
        click.option(
            "--idle-exit",
            default="10s",
            show_default=True,
            help="End after the JTL is idle this long once JMeter is gone.",
        ),
        click.option(
            "--min-capacity", help="Pass the verdict if this rate (req/s) was sustained within SLO."
        ),
        click.option("--auto-stop", type=int, help="Stop after N consecutive BREACH windows."),
        click.option("--dry-run", is_flag=True, help="Observe mode: log decisions, never push."),
        click.option(
            "--jtl-columns", help="CSV columns when the JTL has no header: timeStamp,elapsed,..."
        ),
        click.option(
            "--jmeter-properties",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            multiple=True,
            help="jmeter.properties / user.properties the JTL is written with (repeatable).",
        ),
        click.option(
            "--transactions", is_flag=True, help="Judge Transaction Controller rows as labels."
        ),
        click.option("--labels", metavar="REGEX", help="Only labels matching REGEX."),
        click.option("--exclude-labels", metavar="REGEX", help="Leave out labels matching REGEX."),
        click.option("-q", "--quiet", is_flag=True, help="No live console."),
        click.option("-v", "--verbose", is_flag=True, help="More detail per tick."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def build_config(paths: Paths, engines: tuple[Engine, ...], **kw: Any) -> SidecarConfig:
    spec = SloSpec.load(
        kw["slo_file"],
        p50=kw["p50"],
        p90=kw["p90"],
        p95=kw["p95"],
        p99=kw["p99"],
        mean=kw["mean"],
        error_rate=kw["error_rate"],
        window=kw["window"],
        min_rate=kw["min_rate"],
        max_rate=kw["max_rate"],
    )
    tick = _duration("--tick", kw["tick"]) or 2000
    if tick < 100:
        raise UsageError("--tick: must be at least 100ms")
    initial = parse_rate_rps("--initial-rate", kw["initial_rate"])
    if initial <= 0:
        raise UsageError("--initial-rate: must be > 0 req/s")
    if kw["auto_stop"] is not None and kw["auto_stop"] < 1:
        raise UsageError("--auto-stop: must be >= 1")
    return SidecarConfig(
        paths=paths,
        spec=spec,
        policy=kw["policy"],
        policy_params=parse_params(kw["params"]),
        engines=engines,
        dry_run=kw["dry_run"],
        tick_ms=tick,
        initial_rate=min(max(initial, spec.min_rate), spec.max_rate),
        idle_exit_ms=_duration("--idle-exit", kw["idle_exit"]) or 10_000,
        duration_ms=_duration("--duration", kw["duration"]),
        min_capacity=None
        if kw["min_capacity"] is None
        else parse_rate_rps("--min-capacity", kw["min_capacity"]),
        auto_stop=kw["auto_stop"],
        follower_options={
            # the JTL format: header, or saveservice settings, or explicit columns
            "fmt": build_format(kw["jtl_columns"], kw["jmeter_properties"], ()),
            "transactions": kw["transactions"],
            "labels": kw["labels"],
            "exclude_labels": kw["exclude_labels"],
        },
        quiet=kw["quiet"],
        verbose=kw["verbose"],
    )


def remote_options(f: F) -> F:
    """``--remote`` and ``--engine-max-rate``: a distributed test (docs/distributed.md)."""
    f = click.option(
        "--engine-max-rate",
        help="Most one remote engine may be given, req/s (its threads' capacity).",
    )(f)
    return click.option(
        "--remote",
        "remotes",
        multiple=True,
        help="Distributed JMeter: the controller's -R engines HOST:RMIPORT[,HOST:RMIPORT...], "
        "in the order of --engine (their threadName prefixes in the JTL).",
    )(f)


def with_remotes(
    cfg: SidecarConfig, remotes: tuple[str, ...], engine_max_rate: str | None, sender: str
) -> SidecarConfig:
    from dataclasses import replace

    from loadguard.jmeter.remote import parse_remotes

    parsed = parse_remotes(remotes)
    if engine_max_rate is not None and not parsed:
        raise UsageError("--engine-max-rate needs --remote")
    cap = None if engine_max_rate is None else parse_rate_rps("--engine-max-rate", engine_max_rate)
    if cap is not None and not cap > 0:
        raise UsageError("--engine-max-rate: must be > 0 req/s")
    if parsed and len(parsed) != len(cfg.engines):
        raise UsageError(
            f"{len(parsed)} --remote engine(s) but {len(cfg.engines)} --engine port(s): give "
            "one --engine HOST:BSHPORT per remote engine, in the same order"
        )
    return replace(cfg, remotes=parsed, engine_max_rate=cap, sample_sender=sender)


def _finish(outcome: LoopOutcome, paths: Paths) -> None:
    s = outcome.summary
    rate = "-" if s.max_compliant_rate is None else f"{s.max_compliant_rate:.1f} req/s"
    p95 = "-" if s.p95_ms is None else f"{s.p95_ms:.0f} ms"
    share = "-" if s.violation_share_p95 is None else f"{s.violation_share_p95:.0%}"
    click.echo(
        f"verdict {s.verdict}: max SLO-compliant rate {rate}, run p95 {p95}, "
        f"p95-violating windows {share}, stop: {outcome.stop_reason}",
        err=True,
    )
    click.echo(f"decisions: {paths.decisions}  summary: {paths.summary}", err=True)
    sys.exit(outcome.exit_code)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@click.command("attach")
@click.option("--jtl", type=click.Path(dir_okay=False), help="The JTL JMeter is writing.")
@click.option(
    "--engine",
    "engines",
    multiple=True,
    help="BeanShell session port HOST:PORT[:WEIGHT] (P+1); repeat for several engines.",
)
@click.option(
    "--out", type=click.Path(file_okay=False), help="Folder for decisions.csv and summary.json."
)
@remote_options
@common_options
def attach_cmd(
    jtl: str | None,
    engines: tuple[str, ...],
    out: str | None,
    remotes: tuple[str, ...],
    engine_max_rate: str | None,
    **kw: Any,
) -> None:
    """Run the control loop beside a JMeter that is already running.

    JMeter must run with -Jbeanshell.server.port=P (LoadGuard talks to P+1) and a plan
    whose Elastic Timer reads ${__P(loadguard.tpm)} (see `loadguard inject`).

    \b
    Example:
      jmeter -n -t plan.jmx -l results.jtl -Jbeanshell.server.port=9000 \\
             -Jbeanshell.server.file= -Jjmeter.save.saveservice.autoflush=true &
      loadguard attach --jtl results.jtl --engine 127.0.0.1:9001 \\
             --p95 500ms --error-rate 1% --out lg/
      loadguard attach --jtl results.jtl --remote h1:1099,h2:1099 \\
             --engine h1:9001 --engine h2:9001 --p95 500ms --max-rate 400
    """
    _setup_logging(kw["verbose"])
    out_dir = Path(out) if out else None
    if jtl is None and out_dir is None:
        raise UsageError("give --jtl (or --out with results.jtl in it)")
    if not engines and not kw["dry_run"]:
        raise UsageError("give --engine HOST:PORT (the BeanShell session port) or --dry-run")
    base = out_dir or Path(".")
    paths = Paths.in_dir(
        base,
        jtl=Path(jtl) if jtl else None,
        decisions=Path(kw["decisions"]) if kw["decisions"] else None,
        summary=Path(kw["summary_path"]) if kw["summary_path"] else None,
        junit=Path(kw["junit"]) if kw["junit"] else None,
    )
    cfg = build_config(paths, tuple(Engine.parse(e) for e in engines), **kw)
    cfg = with_remotes(cfg, remotes, engine_max_rate, cfg.sample_sender)
    _finish(attach(cfg), paths)


@click.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("plan", type=click.Path(exists=True, dir_okay=False))
@click.argument("jmeter_args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Run folder (default results/<timestamp>).",
)
@click.option(
    "--jmeter-home",
    type=click.Path(file_okay=False),
    help="JMeter home (else JMETER_HOME, cache, PATH).",
)
@click.option("-J", "props", multiple=True, help="JMeter property NAME=VALUE (repeat).")
@click.option(
    "--thread-group",
    "thread_groups",
    multiple=True,
    help="Inject the Elastic Timer only into this thread group.",
)
@click.option("--no-inject", is_flag=True, help="Run the plan as is (it already paces itself).")
@click.option("--force", is_flag=True, help="Replace an earlier run in --out instead of refusing.")
@click.option(
    "--engine",
    "engines",
    multiple=True,
    help="With --remote: each engine's BeanShell session port HOST:PORT[:WEIGHT], "
    "in --remote order.",
)
@click.option(
    "--sample-sender",
    type=click.Choice(SAMPLE_SENDER_MODES),
    default=DEFAULT_SAMPLE_SENDER,
    show_default=True,
    help="With --remote: the controller's sample sender mode (batch modes get 10 samples/1 s).",
)
@remote_options
@common_options
def run_cmd(
    plan: str,
    jmeter_args: tuple[str, ...],
    out: str | None,
    jmeter_home: str | None,
    props: tuple[str, ...],
    thread_groups: tuple[str, ...],
    no_inject: bool,
    force: bool,
    engines: tuple[str, ...],
    sample_sender: str,
    remotes: tuple[str, ...],
    engine_max_rate: str | None,
    **kw: Any,
) -> None:
    """Start JMeter on PLAN (non-GUI) with the Elastic Timer, then attach to it.

    Injects the Elastic Timer into a copy of the plan unless it has one, picks free
    BeanShell and UDP ports (the BeanShell console listens on 127.0.0.1 only; see
    docs/security.md), starts JMeter with autoflush, drives the rate, and stops JMeter
    cleanly at the end or on Ctrl-C. Arguments after `--` go to JMeter unchanged.

    JMeter runs in the current directory, and files the plan names relative to its own
    folder (CSV Data Set, includes) resolve as under `jmeter -n -t PLAN`. A --out that
    already holds a run is refused unless --force replaces it.

    \b
    Example:
      loadguard run plan.jmx --p95 300ms --error-rate 1% --max-rate 800 \\
            --duration 3m --out results/run1 -- -Jhost=127.0.0.1
      loadguard run plan.jmx --remote h1:1099,h2:1099 --engine h1:9001 \\
            --engine h2:9001 --p95 300ms --max-rate 800 -J threads=200
    """
    _setup_logging(kw["verbose"])
    from datetime import datetime

    out_dir = Path(out) if out else Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S")
    paths = Paths.in_dir(
        out_dir,
        decisions=Path(kw["decisions"]) if kw["decisions"] else None,
        summary=Path(kw["summary_path"]) if kw["summary_path"] else None,
        junit=Path(kw["junit"]) if kw["junit"] else None,
    )
    properties: dict[str, str] = {}
    for p in props:
        name, sep, value = p.partition("=")
        if not sep or not name:
            raise UsageError(f"-J {p!r}: expected NAME=VALUE")
        properties[name] = value
    if engines and not remotes:
        raise UsageError("--engine is for --remote engines (run starts its own JMeter)")
    cfg = build_config(paths, tuple(Engine.parse(e) for e in engines), **kw)
    cfg = with_remotes(cfg, remotes, engine_max_rate, sample_sender)
    home = find_jmeter_home(jmeter_home)
    run = RunPlan(
        plan=Path(plan).resolve(),
        jmeter=home,
        out_dir=out_dir,
        properties=properties,
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
    _finish(outcome, paths)
