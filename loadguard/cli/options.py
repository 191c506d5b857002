"""The CLI's one vocabulary: parameter types and the options several commands share.

An option that appears in more than one command is defined here once, so it has the
same name, type, default and help everywhere (``tests/unit/test_cli_vocabulary.py``
checks it). Groups stack click.option decorators onto a command, as sqlite-utils'
``output_options`` do. ``-o/--out`` is always a folder; a command that writes one file
names the file by what it is (``--html``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from loadguard.actuator.elastic_timer import ELASTIC_TIMER_LAG_MS
from loadguard.durations import format_duration, parse_duration_s
from loadguard.errors import LoadGuardError
from loadguard.policies import DEFAULT_POLICY, POLICIES
from loadguard.slo import parse_rate_rps

F = TypeVar("F", bound=Callable[..., Any])


class DurationType(click.ParamType[Any]):
    """``300ms``, ``2s``, ``10m``, ``1h`` -> ``Seconds``; a unit is required."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return parse_duration_s(value, what="duration")
        except LoadGuardError as exc:
            self.fail(exc.message.removeprefix("duration: "), param, ctx)


class RateType(click.ParamType[Any]):
    """``5``, ``5/s`` or ``300/min`` -> req/s (a float > 0)."""

    name = "rate"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            return value
        try:
            return parse_rate_rps("rate", value)
        except LoadGuardError as exc:
            self.fail(exc.message.removeprefix("rate: "), param, ctx)


_LAG = format_duration(ELASTIC_TIMER_LAG_MS / 1000)
#: The one duration type: every duration option uses it.
DURATION = DurationType()
#: The one rate type (req/s).
RATE = RateType()
OUT_DIR = click.Path(file_okay=False, path_type=Path)
FILE = click.Path(dir_okay=False, path_type=Path)
EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator from several, applied so that help lists them in the given order."""

    def apply(f: F) -> F:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


# ------------------------------------------------------------------ single options
jtl_option = click.option("--jtl", type=FILE, help="The JTL (results file) JMeter writes.")


decisions_option = click.option(
    "--decisions", type=FILE, help="Decision log CSV (default: in the run folder)."
)


summary_option = click.option(
    "--summary", type=FILE, help="summary.json (default: in the run folder)."
)


out_option = click.option(
    "-o", "--out", type=OUT_DIR, metavar="DIR",
    help="Output folder (its default: see the command's help).",
)  # fmt: skip


force_option = click.option(
    "--force", is_flag=True, help="Replace an earlier run in --out instead of refusing."
)


no_dashboard_option = click.option(
    "--no-dashboard",
    is_flag=True,
    help="Do not generate JMeter's HTML dashboard (RUN/dashboard/) after the run.",
)


def duration_option(default: str | None = None) -> Callable[[F], F]:
    """``--duration``: the one option whose default is the command's own (a demo, a
    simulation and a run until JMeter ends differ), so the help says so."""
    return click.option(
        "--duration", type=DURATION, default=default, show_default=default is not None,
        help="How long to run, e.g. 10m.",
    )  # fmt: skip


json_option = click.option(
    "--json", "as_json", is_flag=True,
    help="Print JSON instead of text (the command's help gives its shape).",
)  # fmt: skip


quiet_option = click.option(
    "-q", "--quiet", is_flag=True, help="Print only the result: no live console, no progress."
)


seed_option = click.option(
    "--seed", type=int, default=1, show_default=True, help="Seed of the random draws."
)


tick_option = click.option(
    "--tick", type=DURATION, default="2s", show_default=True,
    help="Controller tick: one decision this often.",
)  # fmt: skip


port_option = click.option(
    "--port",
    type=int,
    default=8080,
    show_default=True,
    help="Port to listen on; 0: a free one.",
)


jmeter_home_option = click.option(
    "--jmeter-home", type=click.Path(file_okay=False, path_type=Path),
    help="JMeter home (else $JMETER_HOME, the LoadGuard cache, jmeter on PATH).",
)  # fmt: skip


thread_group_option = click.option(
    "--thread-group", "thread_groups", multiple=True, metavar="NAME",
    help="Put the Elastic Timer only into this thread group (repeat; default: every "
    "enabled one but setUp/tearDown).",
)  # fmt: skip


initial_rate_option = click.option(
    "--initial-rate", type=RATE, default="5", show_default=True,
    help="Rate at the start, req/s (5, 5/s or 300/min).",
)  # fmt: skip


max_rate_option = click.option(
    "--max-rate", type=RATE, help="Rate ceiling, req/s (5, 5/s or 300/min)."
)


timeout_option = click.option(
    "--timeout", type=DURATION, default="5s", show_default=True,
    help="Wait at most this long for the engines' answers (asked in parallel).",
)  # fmt: skip


def engine_option(*, required: bool = False) -> Callable[[F], F]:
    return click.option(
        "-e", "--engine", "engines", multiple=True, required=required,
        metavar="HOST:PORT[:WEIGHT]",
        help="An engine's BeanShell session port (beanshell.server.port + 1); the command's "
        "help says if it takes several.",
    )  # fmt: skip


remote_option = click.option(
    "--remote", "remotes", multiple=True, metavar="HOST:RMIPORT[,...]",
    help="Distributed JMeter: the engines' RMI registry ports, in --engine order "
    "(docs/distributed.md).",
)  # fmt: skip


jmeter_property_option = click.option(
    "-J", "properties", multiple=True, metavar="NAME=VALUE",
    help="JMeter property (repeat).",
)  # fmt: skip


p95_option = click.option("--p95", type=DURATION, help="SLO on the window's p95, e.g. 500ms.")


error_rate_option = click.option(
    "--error-rate", metavar="PERCENT", help="SLO on the window's error rate, e.g. 1%."
)


#: The SLO's violation budget (``SloSpec.violation_budget``): the sidecar's, and the one
#: the plant suite runs its policies with and judges them against.
violation_budget_option = click.option(
    "--violation-budget", metavar="PERCENT",
    help="Share of windows you accept over the SLO, e.g. 5% (default: the SLO file's if "
    "any, else 5%).",
)  # fmt: skip


rebuild_option = click.option(
    "--rebuild", is_flag=True, help="Build again even if the cache holds a complete one."
)


window_option = click.option(
    "--window", type=DURATION, help="Window length (default: the SLO file's, else 10s)."
)

#: ``--policy``: its choices are the registry's, so every documented one works.
policy_option = click.option(
    "--policy", type=click.Choice(sorted(POLICIES)), default=DEFAULT_POLICY,
    show_default=True, help="Control policy (docs/controller.md).",
)  # fmt: skip


# ------------------------------------------------------------------ groups
#: The SLO: thresholds and window (docs/slo.md); all optional.
slo_options = stack(
    click.option("--slo-file", type=FILE, help="TOML file with an [slo] table."),
    click.option("--p50", type=DURATION, help="SLO on the window's p50, e.g. 200ms."),
    click.option("--p90", type=DURATION, help="SLO on the window's p90, e.g. 300ms."),
    p95_option,
    click.option("--p99", type=DURATION, help="SLO on the window's p99, e.g. 1s."),
    click.option("--mean", type=DURATION, help="SLO on the window's mean, e.g. 100ms."),
    error_rate_option,
    window_option,
    violation_budget_option,
)  # fmt: skip

rate_bound_options = stack(
    click.option("--min-rate", type=RATE, help="Rate floor, req/s (never 0)."),
    max_rate_option,
)

#: ``--policy``, ``--param`` and ``--actuation-lag`` (the guard knob ``lag_ms``).
policy_options = stack(
    policy_option,
    click.option(
        "--param", "params", multiple=True, metavar="KEY=VALUE",
        help="Policy parameter or guard knob (repeat); see docs/controller.md.",
    ),
    click.option(
        "--actuation-lag", type=DURATION, default=_LAG, show_default=True,
        help="Push to new rate in force (the Elastic Timer's measured lag).",
    ),
)  # fmt: skip

#: How to read a JTL: columns of a header-less CSV, the properties it was written with,
#: and whether Transaction Controller rows count.
jtl_format_options = stack(
    click.option(
        "--jtl-columns", metavar="COLUMNS",
        help="Columns of a CSV JTL without a header, comma-separated, in file order.",
    ),
    click.option(
        "--jmeter-properties", type=EXISTING_FILE, multiple=True,
        help="jmeter.properties / user.properties the JTL was written with (repeat; "
        "later files win).",
    ),
    click.option(
        "--transactions", is_flag=True,
        help="Count Transaction Controller rows as labels (kept out of the overall figures).",
    ),
)  # fmt: skip

#: Live outputs of ``run`` and ``attach`` (docs/dashboards.md); also ``[outputs]`` in
#: the --slo-file TOML file (these options override it).
output_options = stack(
    click.option(
        "--influx", metavar="URL",
        help="Write ticks and decisions to InfluxDB: http://HOST:8086/write?db=NAME (1.x) or "
        ".../api/v2/write?org=ORG&bucket=B (2.x); token in $LOADGUARD_INFLUX_TOKEN.",
    ),
    click.option(
        "--influx-token-file", type=FILE,
        help="File whose first line is the InfluxDB token (1.x: user:password).",
    ),
    click.option(
        "--influx-required", is_flag=True,
        help="Refuse to start (exit 2) if InfluxDB cannot be written to.",
    ),
    click.option(
        "--application", metavar="NAME",
        help="The application tag/label of the outputs (default: the plan's name).",
    ),
    click.option(
        "--prometheus-port", type=click.IntRange(0, 65535), metavar="PORT",
        help="Serve /metrics for Prometheus on this port during the run (0: a free one).",
    ),
    click.option(
        "--prometheus-host", metavar="HOST",
        help="Address /metrics binds to (default 127.0.0.1; 0.0.0.0 exposes it).",
    ),
)  # fmt: skip

label_options = stack(
    click.option("--labels", metavar="REGEX", help="Only labels matching REGEX."),
    click.option("--exclude-labels", metavar="REGEX", help="Leave out labels matching REGEX."),
)
