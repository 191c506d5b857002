"""The options ``attach`` and ``run`` share, collected into one ``LoopOptions``.

``loop_options`` stacks the click options onto a command and hands the command one
typed ``LoopOptions`` (``opts``) instead of thirty keyword arguments read by string key.
``LoopOptions.config`` builds the ``SidecarConfig``, which validates itself; its
``ConfigError`` (naming a field, not a flag) is rewritten here with the flag that sets the
field (``config_errors_named_by_flag``, through the one table in ``loadguard.cli.flags``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TypeVar

import click

from loadguard.actuator.engines import Engine
from loadguard.cli.flags import named_by_flag
from loadguard.cli.metrics_cmd import build_format
from loadguard.cli.options import (
    DURATION,
    FILE,
    RATE,
    decisions_option,
    duration_option,
    initial_rate_option,
    jtl_format_options,
    label_options,
    output_options,
    policy_options,
    quiet_option,
    rate_bound_options,
    slo_options,
    stack,
    summary_option,
    tick_option,
)
from loadguard.durations import Seconds
from loadguard.errors import ConfigError, UsageError
from loadguard.outputs import OutputConfig
from loadguard.policies import parse_params
from loadguard.sidecar import Paths, SidecarConfig
from loadguard.slo import SloSpec

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def config_errors_named_by_flag() -> Iterator[None]:
    """Rewrite a ``ConfigError`` raised in the block as the CLI's one-line usage error:
    ``<flag>: <problem> (<what to do>)``, exit 2 as before."""
    try:
        yield
    except ConfigError as exc:
        raise UsageError(named_by_flag(exc)) from None


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


@dataclass(frozen=True)
class LoopOptions:
    slo_file: Path | None
    p50: Seconds | None
    p90: Seconds | None
    p95: Seconds | None
    p99: Seconds | None
    mean: Seconds | None
    error_rate: str | None
    window: Seconds | None
    violation_budget: str | None
    min_rate: float | None
    max_rate: float | None
    policy: str
    params: tuple[str, ...]
    actuation_lag: Seconds
    tick: Seconds
    initial_rate: float
    decisions: Path | None
    summary: Path | None
    junit: Path | None
    duration: Seconds | None
    idle_exit: Seconds
    min_capacity: float | None
    auto_stop: int | None
    dry_run: bool
    jtl_columns: str | None
    jmeter_properties: tuple[Path, ...]
    transactions: bool
    labels: str | None
    exclude_labels: str | None
    influx: str | None
    influx_token_file: Path | None
    influx_required: bool
    application: str | None
    prometheus_port: int | None
    prometheus_host: str | None
    quiet: bool
    verbose: bool

    def paths(self, out_dir: Path, jtl: Path | None = None) -> Paths:
        return Paths.in_dir(
            out_dir, jtl=jtl, decisions=self.decisions, summary=self.summary, junit=self.junit
        )

    def spec(self) -> SloSpec:
        return SloSpec.load(
            self.slo_file, p50=self.p50, p90=self.p90, p95=self.p95, p99=self.p99,
            mean=self.mean, error_rate=self.error_rate, window=self.window,
            min_rate=self.min_rate, max_rate=self.max_rate,
            violation_budget=self.violation_budget,
        )  # fmt: skip

    def config(self, paths: Paths, engines: tuple[str, ...]) -> SidecarConfig:
        spec = self.spec()
        with config_errors_named_by_flag():
            return self._config(spec, paths, engines)

    def _config(self, spec: SloSpec, paths: Paths, engines: tuple[str, ...]) -> SidecarConfig:
        return SidecarConfig(
            paths=paths,
            spec=spec,
            policy=self.policy,
            policy_params=parse_params(self.params),
            engines=tuple(Engine.parse(e) for e in engines),
            dry_run=self.dry_run,
            tick_ms=round(self.tick * 1000),
            initial_rate=min(max(self.initial_rate, spec.min_rate), spec.max_rate),
            idle_exit_ms=round(self.idle_exit * 1000),
            duration_ms=_ms(self.duration),
            min_capacity=self.min_capacity,
            auto_stop=self.auto_stop,
            lag_ms=round(self.actuation_lag * 1000),
            follower_options={
                # the JTL format: header, or saveservice settings, or explicit columns
                "fmt": build_format(self.jtl_columns, self.jmeter_properties, ()),
                "transactions": self.transactions,
                "labels": self.labels,
                "exclude_labels": self.exclude_labels,
            },
            quiet=self.quiet,
            verbose=self.verbose,
            outputs=self.outputs(),
        )

    def outputs(self) -> OutputConfig:
        return OutputConfig.load(
            self.slo_file, influx=self.influx, influx_token_file=self.influx_token_file,
            influx_required=self.influx_required, application=self.application,
            prometheus_port=self.prometheus_port, prometheus_host=self.prometheus_host,
        )  # fmt: skip


def with_remotes(
    cfg: SidecarConfig, remotes: tuple[str, ...], engine_max_rate: float | None, sender: str
) -> SidecarConfig:
    from loadguard.jmeter.remote import parse_remotes

    parsed = parse_remotes(remotes)
    with config_errors_named_by_flag():
        return replace(cfg, remotes=parsed, engine_max_rate=engine_max_rate, sample_sender=sender)


def engine_max_rate_option(f: F) -> F:
    return click.option(
        "--engine-max-rate", type=RATE,
        help="Most one remote engine may be given, req/s (its threads' capacity).",
    )(f)  # fmt: skip


_LOOP_OPTIONS = stack(
    slo_options,
    rate_bound_options,
    policy_options,
    tick_option,
    initial_rate_option,
    decisions_option,
    summary_option,
    click.option("--junit", type=FILE, help="Write a JUnit XML verdict here."),
    duration_option(),
    click.option(
        "--idle-exit", type=DURATION, default="10s", show_default=True,
        help="End after the JTL is idle this long once JMeter is gone.",
    ),
    click.option(
        "--min-capacity", type=RATE,
        help="Pass the verdict if this rate (req/s) was sustained within SLO.",
    ),
    click.option("--auto-stop", type=int, help="Stop after N consecutive BREACH windows."),
    click.option("--dry-run", is_flag=True, help="Observe mode: log decisions, never push."),
    jtl_format_options,
    label_options,
    output_options,
    quiet_option,
    click.option("-v", "--verbose", is_flag=True, help="More detail per tick."),
)  # fmt: skip


def loop_options(f: F) -> F:
    """Add the loop's options; the command receives them as ``opts: LoopOptions``.

    Put it directly above the ``def``: it wraps the function itself."""
    names = [fld.name for fld in fields(LoopOptions)]

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opts = LoopOptions(**{name: kwargs.pop(name) for name in names})
        return f(*args, opts=opts, **kwargs)

    return _LOOP_OPTIONS(wrapper)  # type: ignore[return-value]
