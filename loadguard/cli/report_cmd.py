"""``loadguard report`` and ``loadguard compare``: thin adapters over ``loadguard.report``."""

from __future__ import annotations

from pathlib import Path

import click

from loadguard.cli.metrics_cmd import build_format
from loadguard.cli.options import (
    FILE,
    decisions_option,
    jmeter_home_option,
    jtl_format_options,
    jtl_option,
    summary_option,
)
from loadguard.dashboard import DashboardResult, dashboard_for_run
from loadguard.errors import DashboardError, ReportError, UsageError
from loadguard.jmeter.home import find_jmeter_home
from loadguard.report import render_compare, render_report, resolve_run

PathArg = click.Path(path_type=Path)

html_option = click.option(
    "--html", type=FILE, help="HTML file to write (default: see the command's help)."
)


@click.command("report")
@click.argument("run_dir", required=False, type=PathArg)
@decisions_option
@jtl_option
@jtl_format_options
@summary_option
@html_option
@click.option(
    "--dashboard",
    is_flag=True,
    help="Also generate JMeter's HTML dashboard into RUN_DIR/dashboard/ (needs RUN_DIR).",
)
@jmeter_home_option
def report(
    run_dir: Path | None,
    decisions: Path | None,
    jtl: Path | None,
    jtl_columns: str | None,
    jmeter_properties: tuple[Path, ...],
    transactions: bool,
    summary: Path | None,
    html: Path | None,
    dashboard: bool,
    jmeter_home: Path | None,
) -> None:
    """Write a self-contained HTML report of a run, plus PNG charts beside it.

    RUN_DIR (as written by `loadguard run`) supplies decisions.csv, and summary.json and
    results.jtl when present; options override them. The page needs no network: charts
    are inline SVG, styles inline, no script. The JTL is read in one streaming pass, so
    hour-long runs render in seconds; per-label p95/p99 are exact over every sample.
    A CSV JTL with a header line, or an XML JTL, needs no format options; a CSV without
    a header needs --jmeter-properties (or --jtl-columns) unless it has JMeter 5.6.3's
    default columns. Each request counts once, as in `loadguard metrics`: Transaction
    Controller rows and sub-results are left out unless --transactions. The page is
    RUN_DIR/report.html unless --html names another file. --dashboard first makes JMeter's
    own HTML dashboard (RUN_DIR/dashboard/, with the provisioned JMeter) from a CSV JTL,
    also for a folder from `loadguard attach`; the report links to it.

    \b
    Example:
      loadguard report results/2026-11-30T05-00-00
      loadguard report --decisions decisions.csv --jtl results.jtl --html report.html
      loadguard report run/ --jtl old.jtl --jmeter-properties bin/user.properties
      loadguard report run/ --transactions
      loadguard report results/2026-11-30T05-00-00 --dashboard
    """
    fmt = (
        build_format(jtl_columns, jmeter_properties, ())
        if jtl_columns or jmeter_properties
        else None
    )
    paths = resolve_run(
        run_dir,
        decisions=decisions,
        jtl=jtl,
        summary=summary,
        jtl_format=fmt,
        transactions=transactions,
    )
    made: DashboardResult | None = None
    if dashboard:
        if paths.run_dir is None or paths.jtl is None:
            raise UsageError("--dashboard needs RUN_DIR holding results.jtl (or --jtl)")
        made = dashboard_for_run(
            find_jmeter_home(jmeter_home), paths.run_dir, paths.jtl, paths.summary
        )
        click.echo(made.line(paths.run_dir))
    written = render_report(paths, html)
    click.echo(f"report: {written}")
    if made is not None and made.status == "skipped":
        raise ReportError(made.line())  # the JTL does not fit JMeter's generator (exit 2)
    if made is not None and made.status == "failed":
        raise DashboardError(made.line())  # JMeter's generator failed (exit 3)


@click.command("compare")
@click.argument("runs", nargs=-1, required=True, type=PathArg)
@html_option
@click.option(
    "--name", "names", multiple=True, help="Legend name of each run, in order (default: dir name)."
)
def compare(runs: tuple[Path, ...], html: Path | None, names: tuple[str, ...]) -> None:
    """Overlay several runs: rate and p95 on shared axes, summary figures side by side.

    Each RUN is a run directory (decisions.csv, optional summary.json and results.jtl)
    or a decision log. Time is measured from each run's own first tick, so runs line up
    at their start. Runs with a JTL get a per-label table of whole-run p95/p99 and errors.
    The page is compare.html in the current folder unless --html names another file.

    \b
    Example:
      loadguard compare results/aimd results/three-zone --html compare.html
      loadguard compare runs/a runs/b --name before --name after
    """
    written = render_compare(
        list(runs), html or Path("compare.html"), list(names) if names else None
    )
    click.echo(f"compare: {written}")
