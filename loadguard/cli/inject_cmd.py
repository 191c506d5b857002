"""``loadguard inject``: add the Elastic Timer to a plan (thin adapter over ``loadguard.jmx``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from loadguard.actuator.elastic_timer import DEFAULT_INITIAL_RATE_RPS, RATE_PROPERTY
from loadguard.errors import JmxError, UsageError
from loadguard.jmx import inject_elastic_timer
from loadguard.slo import parse_duration_ms, parse_rate_rps


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise JmxError(f"cannot read {path}: {exc.strerror or exc}") from None


def _write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder: no half-written plan, ever."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


@click.command("inject")
@click.argument("plan", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-o", "--out", type=click.Path(path_type=Path, dir_okay=False), required=True,
    help="Plan to write (never the input itself).",
)  # fmt: skip
@click.option(
    "--thread-group", "thread_groups", multiple=True, metavar="NAME",
    help="Only this thread group (repeat). Default: all enabled ones but setUp/tearDown.",
)  # fmt: skip
@click.option(
    "--initial-rate", default=str(DEFAULT_INITIAL_RATE_RPS), show_default=True,
    help=f"Rate (req/s per engine; 5, 5/s, 300/min) while {RATE_PROPERTY} is unset.",
)  # fmt: skip
@click.option("--max-rate", help="Highest rate you will push (req/s): checks thread counts.")
@click.option("--p95", help="SLO latency for the thread-count check, e.g. 300ms.")
def inject(
    plan: Path,
    out: Path,
    thread_groups: tuple[str, ...],
    initial_rate: str,
    max_rate: str | None,
    p95: str | None,
) -> None:
    """Add the LoadGuard Elastic Timer to a JMeter plan's thread groups.

    The timer reads property loadguard.tpm (samples/min, the engine's total) that
    `loadguard push` and the controller set at runtime; a push takes hold within a
    fraction of a second. Everything else in the plan is left byte-for-byte as it was:
    the output differs only by the added lines. Warns about throughput timers that
    would fight it, and (with --max-rate and --p95) about too few threads
    (Little's law: threads >= rate x latency).

    \b
    Example:
      loadguard inject plan.jmx -o plan.elastic.jmx --max-rate 200 --p95 300ms
      loadguard inject plan.jmx -o out.jmx --thread-group Checkout --initial-rate 5
    """
    if out.resolve() == plan.resolve():
        raise UsageError("-o must differ from the input plan")
    result = inject_elastic_timer(
        _read(plan),
        thread_groups=thread_groups,
        initial_rate_rps=parse_rate_rps("--initial-rate", initial_rate),
        max_rate_rps=None if max_rate is None else parse_rate_rps("--max-rate", max_rate),
        latency_ms=None if p95 is None else parse_duration_ms("--p95", p95),
    )
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    _write_atomic(out, result.xml)
    groups = ", ".join(repr(n) for n in result.injected)
    click.echo(f"injected the Elastic Timer into {groups}: {out}")
