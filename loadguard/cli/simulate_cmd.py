"""``loadguard simulate``: run a policy against a simulated queueing target (thin adapter)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from loadguard.durations import parse_duration_s
from loadguard.errors import SimulationError
from loadguard.policies import DEFAULT_POLICY, POLICIES, build_policy, parse_params
from loadguard.simulate.run import simulate
from loadguard.simulate.scenario import CapacityChange, Scenario
from loadguard.simulate.summary import summarize
from loadguard.slo import SloSpec
from loadguard.target.distributions import ServiceDist

#: Actuation lag until the sidecar's measured Elastic Timer lag is adopted here too.
DEFAULT_LAG = "2s"


@click.command("simulate")
@click.option(
    "--policy", type=click.Choice(sorted(POLICIES)), default=DEFAULT_POLICY, show_default=True
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Policy parameter or guard knob (repeatable).",
)
@click.option("--servers", type=int, default=8, show_default=True, help="c: parallel servers.")
@click.option("--service", default="50ms", show_default=True, help="Mean service time.")
@click.option(
    "--service-dist",
    type=click.Choice(["exp", "lognormal", "const"]),
    default="exp",
    show_default=True,
)
@click.option(
    "--service-sigma", type=float, default=0.5, show_default=True, help="Log-normal shape."
)
@click.option(
    "--queue",
    type=int,
    default=200,
    show_default=True,
    help="K: wait-queue bound (overflow = error).",
)
@click.option("--p95", help="SLO: p95 of the window, e.g. 250ms.")
@click.option("--p99", help="SLO: p99, e.g. 1s.")
@click.option("--mean", help="SLO: mean, e.g. 100ms.")
@click.option("--error-rate", help="SLO: error rate, e.g. 1%.")
@click.option(
    "--slo-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML with an [slo] table (options override it).",
)
@click.option("--start-rate", type=float, default=5.0, show_default=True, help="req/s at t=0.")
@click.option("--duration", default="600s", show_default=True)
@click.option(
    "--capacity-change",
    "changes",
    multiple=True,
    metavar="TIME:FACTOR",
    help="Multiply the servers at TIME, e.g. 300s:0.5 (repeatable).",
)
@click.option(
    "--actuation-lag", default=DEFAULT_LAG, show_default=True, help="Push -> new rate in force."
)
@click.option(
    "--jtl-flush", default="0", show_default=True, help="JTL flush period (0: rows at once)."
)
@click.option(
    "--arrivals", type=click.Choice(["poisson", "smooth"]), default="poisson", show_default=True
)
@click.option("--tick", default="1s", show_default=True, help="Controller tick.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def simulate_cmd(
    policy: str,
    params: tuple[str, ...],
    servers: int,
    service: str,
    service_dist: str,
    service_sigma: float,
    queue: int,
    p95: str | None,
    p99: str | None,
    mean: str | None,
    error_rate: str | None,
    slo_file: Path | None,
    start_rate: float,
    duration: str,
    changes: tuple[str, ...],
    actuation_lag: str,
    jtl_flush: str,
    arrivals: str,
    tick: str,
    seed: int,
    as_json: bool,
) -> None:
    """Drive a policy against a simulated c-server FCFS queue and print what it achieved.

    The simulator runs the live sidecar's Window, SloSpec, policy and guard rails on a
    simulated clock, against a load generator with actuation lag and JTL flush delay.
    The summary (docs/controller.md) has violation shares per SLO, successful throughput,
    the analytic lambda_star (M/M/c), efficiency, time to 90% of lambda_star, recovery
    after a capacity change and the action counts.

    \b
    Example:
      loadguard simulate --policy gradient --servers 8 --service 50ms --service-dist exp \\
          --queue 200 --p95 250ms --start-rate 5 --duration 600s \\
          --capacity-change 300s:0.5 --actuation-lag 2s --arrivals poisson --seed 1 --json
    """
    mean_s = parse_duration_s(service, what="--service")
    dist = ServiceDist(service_dist, mean_s, service_sigma if service_dist == "lognormal" else 0.0)  # type: ignore[arg-type]
    lag_s = parse_duration_s(actuation_lag, what="--actuation-lag")
    flush_s = parse_duration_s(jtl_flush, what="--jtl-flush")
    if not math.isfinite(start_rate):
        raise SimulationError("--start-rate must be a finite number")
    scenario = Scenario(
        servers=servers,
        service=dist,
        queue=queue,
        duration_s=parse_duration_s(duration, what="--duration"),
        start_rate=start_rate,
        changes=tuple(CapacityChange.parse(c) for c in changes),
        lag_s=lag_s,
        flush_s=flush_s,
        arrivals=arrivals,  # type: ignore[arg-type]
        tick_s=parse_duration_s(tick, what="--tick"),
        seed=seed,
    )
    spec = SloSpec.load(slo_file, p95=p95, p99=p99, mean=mean, error_rate=error_rate)
    knobs: dict[str, object] = {"lag_ms": lag_s * 1000.0, "flush_ms": flush_s * 1000.0}
    knobs.update(parse_params(params))
    guarded = build_policy(policy, spec, **knobs)
    summary = summarize(simulate(scenario, spec, guarded)).to_json()
    if as_json:
        click.echo(json.dumps(summary, sort_keys=False))
        return
    for key, value in summary.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        click.echo(f"{key}: {'-' if value is None else value}")
