"""``loadguard metrics``: replay a finished JTL through the live window code."""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from loadguard.cli.options import (
    DURATION,
    jmeter_property_option,
    json_option,
    jtl_format_options,
    label_options,
    window_option,
)
from loadguard.durations import Seconds
from loadguard.errors import JtlError, UsageError
from loadguard.jtl.columns import (
    JtlFormat,
    format_from_properties,
    parse_columns,
    parse_override,
    read_properties,
)
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.replay import replay
from loadguard.stats import LabelStats, WindowStats
from loadguard.window import Window


def _ms(option: str, seconds: float | None, default_s: float, minimum_ms: int = 1) -> int:
    value = round((default_s if seconds is None else seconds) * 1000)
    if value < minimum_ms:
        raise UsageError(f"{option} must be at least {minimum_ms}ms")
    return value


def build_format(
    jtl_columns: str | None,
    jmeter_properties: tuple[Path, ...],
    overrides: tuple[str, ...],
) -> JtlFormat:
    """The JTL format from ``--jmeter-properties`` / ``-J`` / ``--jtl-columns``."""
    fmt = JtlFormat()
    if jmeter_properties or overrides:
        props = read_properties(list(jmeter_properties), dict(parse_override(o) for o in overrides))
        fmt = format_from_properties(props)
    if jtl_columns:
        fmt = dataclasses.replace(fmt, columns=parse_columns(jtl_columns), columns_given=True)
    return fmt


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table_row(name: str, s: LabelStats) -> str:
    return (
        f"{name:<24.24} {s.count:>7} {s.rps:>8.1f} {s.ok_rps:>8.1f} {s.error_rate * 100:>6.2f}"
        f" {_fmt(s.mean_ms):>8} {_fmt(s.p50_ms):>8} {_fmt(s.p90_ms):>8} {_fmt(s.p95_ms):>8}"
        f" {_fmt(s.p99_ms):>8} {_fmt(s.max_ms, 0):>7}"
    )


_HEADER = (
    f"{'window end (UTC)':<24} {'count':>7} {'rps':>8} {'ok_rps':>8} {'err%':>6} {'mean':>8}"
    f" {'p50':>8} {'p90':>8} {'p95':>8} {'p99':>8} {'max':>7}"
)


def _print_table(stats: WindowStats, per_label: bool) -> None:
    when = datetime.fromtimestamp(stats.window_end_ms / 1000, UTC)
    click.echo(_table_row(when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3], stats.overall))
    if per_label:
        for name, s in sorted(stats.labels.items()):
            click.echo(_table_row("  " + name.replace("\n", " "), s))


@click.command("metrics")
@click.argument("jtl", type=click.Path(dir_okay=False, path_type=Path))
@window_option
@click.option(
    "--step", type=DURATION, default="1s", show_default=True, help="Step between windows."
)
@json_option
@click.option("--per-label", is_flag=True, help="Table: add one row per label under each step.")
@jtl_format_options
@jmeter_property_option
@label_options
@click.option(
    "--reorder-slack",
    type=DURATION,
    default="5s",
    show_default=True,
    help="Report a step once samples this much newer have been read.",
)
def metrics(
    jtl: Path,
    window: Seconds | None,
    step: Seconds,
    as_json: bool,
    per_label: bool,
    jtl_columns: str | None,
    jmeter_properties: tuple[Path, ...],
    transactions: bool,
    properties: tuple[str, ...],
    labels: str | None,
    exclude_labels: str | None,
    reorder_slack: Seconds,
) -> None:
    """Replay a finished JTL (CSV or XML) through the rolling window.

    Prints one line per step: the window ending at that step (epoch-aligned), overall
    and per label: count, rps, ok_rps, error rate, mean, p50/p90/p95/p99 and max (ms).
    Each request counts once: Transaction Controller rows and sub-results are left out
    unless --transactions. Bad rows are counted (malformed_rows) and reported on stderr.
    -J NAME=VALUE overrides a property of --jmeter-properties (the JTL's format). --json
    prints one JSON object per step and line (docs/metrics.md).

    \b
    Example:
      loadguard metrics results.jtl --window 10s --step 1s
      loadguard metrics results.jtl --json --labels '^/api/' > windows.jsonl
      loadguard metrics old.jtl --jtl-columns timeStamp,elapsed,label,responseCode,\\
          responseMessage,threadName,dataType,success,bytes,grpThreads,allThreads,Latency
    """
    window_ms = _ms("--window", window, 10.0)
    step_ms = _ms("--step", step, 1.0)
    slack_ms = _ms("--reorder-slack", reorder_slack, 5.0, minimum_ms=0)
    if not jtl.exists():
        raise JtlError(f"no such JTL: {jtl}")
    fmt = build_format(jtl_columns, jmeter_properties, properties)
    with JtlFollower(
        jtl, fmt=fmt, transactions=transactions, labels=labels, exclude_labels=exclude_labels
    ) as follower:
        win = Window(
            window_ms,
            malformed_rows=lambda: follower.malformed_rows,
            overall_excludes=lambda: follower.transaction_labels if transactions else (),
            illegal_xml_chars=lambda: follower.illegal_xml_chars,
        )
        if not as_json:
            click.echo(_HEADER)
        out = sys.stdout
        for stats in replay(follower.batches(), win, step_ms, reorder_slack_ms=slack_ms):
            if as_json:
                out.write(json.dumps(stats.to_json(), separators=(",", ":")) + "\n")
            else:
                _print_table(stats, per_label)
        status = follower.status()
    for message in status.warnings:
        click.echo(f"warning: {message}", err=True)
    click.echo(
        f"{status.records} records: {status.rows_counted} counted, "
        f"{status.skipped_transactions} transaction rows, {status.skipped_subresults} "
        f"sub-results, {status.filtered} filtered out, {status.malformed_rows} malformed"
        + (f", {status.cut_short_rows} cut short at stop" if status.cut_short_rows else "")
        + (
            f", {status.illegal_xml_chars} illegal XML characters replaced"
            if status.illegal_xml_chars
            else ""
        ),
        err=True,
    )
    for bad in status.bad_rows:
        click.echo(f"  malformed {bad}", err=True)
    if win.late_samples:
        click.echo(
            f"warning: {win.late_samples} samples arrived after their window was printed; "
            "raise --reorder-slack",
            err=True,
        )
