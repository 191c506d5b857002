"""``loadguard inject``: add the Elastic Timer to a plan (thin adapter over ``loadguard.jmx``)."""

from __future__ import annotations

from pathlib import Path

import click

from loadguard.atomic_file import write_file
from loadguard.cli.options import (
    initial_rate_option,
    max_rate_option,
    p95_option,
    thread_group_option,
)
from loadguard.durations import Seconds
from loadguard.errors import JmxError, UsageError
from loadguard.jmx import inject_elastic_timer


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise JmxError(f"cannot read {path}: {exc.strerror or exc}") from None


def _write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder: no half-written plan, ever."""
    try:
        write_file(path, data)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


@click.command("inject")
@click.argument("plan", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("output", type=click.Path(path_type=Path, dir_okay=False))
@thread_group_option
@initial_rate_option
@max_rate_option
@p95_option
def inject(
    plan: Path,
    output: Path,
    thread_groups: tuple[str, ...],
    initial_rate: float,
    max_rate: float | None,
    p95: Seconds | None,
) -> None:
    """Write PLAN with the LoadGuard Elastic Timer in its thread groups to OUTPUT.

    The timer reads property loadguard.tpm (samples/min, the engine's total) that
    `loadguard push` and the controller set at runtime; a push takes hold within a
    fraction of a second. Everything else in the plan is left byte-for-byte as it was:
    the output differs only by the added lines. Warns about throughput timers that
    would fight it, and (with --max-rate and --p95) about too few threads
    (Little's law: threads >= rate x latency). --initial-rate is the rate (req/s per
    engine) while loadguard.tpm is unset. OUTPUT is never PLAN itself.

    \b
    Example:
      loadguard inject plan.jmx plan.elastic.jmx --max-rate 200 --p95 300ms
      loadguard inject plan.jmx out.jmx --thread-group Checkout --initial-rate 5
    """
    if output.resolve() == plan.resolve():
        raise UsageError("OUTPUT must differ from the input PLAN")
    result = inject_elastic_timer(
        _read(plan),
        thread_groups=thread_groups,
        initial_rate_rps=initial_rate,
        max_rate_rps=max_rate,
        latency_ms=None if p95 is None else p95 * 1000.0,
    )
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    _write_atomic(output, result.xml)
    groups = ", ".join(repr(n) for n in result.injected)
    click.echo(f"injected the Elastic Timer into {groups}: {output}")
