"""``loadguard simulate``: run a policy against a simulated queueing target (thin adapter)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from loadguard.cli.options import (
    DURATION,
    duration_option,
    initial_rate_option,
    json_option,
    policy_options,
    rate_bound_options,
    slo_options,
    tick_option,
)
from loadguard.durations import Seconds
from loadguard.lab.cli.options import plant_options
from loadguard.lab.simulate.run import simulate
from loadguard.lab.simulate.scenario import CapacityChange, Scenario
from loadguard.lab.simulate.summary import summarize
from loadguard.lab.target.distributions import ServiceDist
from loadguard.policies import build_policy, parse_params
from loadguard.slo import SloSpec


@click.command("simulate")
@policy_options
@plant_options
@click.option(
    "--service-dist",
    type=click.Choice(["exp", "lognormal", "const"]),
    default="exp",
    show_default=True,
    help="Service-time distribution around --service.",
)
@click.option(
    "--service-sigma", type=float, default=0.5, show_default=True, help="Log-normal shape."
)
@slo_options
@rate_bound_options
@initial_rate_option
@duration_option("600s")
@click.option(
    "--jtl-flush", type=DURATION, default="0s", show_default=True,
    help="JTL flush period (0s: rows at once).",
)  # fmt: skip
@click.option(
    "--arrivals",
    type=click.Choice(["poisson", "smooth"]),
    default="poisson",
    show_default=True,
    help="Arrival process of the load generator.",
)
@tick_option
@json_option
def simulate_cmd(
    policy: str,
    params: tuple[str, ...],
    actuation_lag: Seconds,
    workers: int,
    queue: int,
    service: Seconds,
    changes: tuple[str, ...],
    seed: int,
    service_dist: str,
    service_sigma: float,
    slo_file: Path | None,
    p50: Seconds | None,
    p90: Seconds | None,
    p95: Seconds | None,
    p99: Seconds | None,
    mean: Seconds | None,
    error_rate: str | None,
    window: Seconds | None,
    violation_budget: str | None,
    min_rate: float | None,
    max_rate: float | None,
    initial_rate: float,
    duration: Seconds,
    jtl_flush: Seconds,
    arrivals: str,
    tick: Seconds,
    as_json: bool,
) -> None:
    """Drive a policy against a simulated c-worker FCFS queue and print what it achieved.

    The simulator runs the live sidecar's Window, SloSpec, policy and guard rails on a
    simulated clock, against a load generator with actuation lag and JTL flush delay.
    The summary (docs/controller.md) has violation shares per SLO, successful throughput,
    the analytic lambda_star (M/M/c), efficiency, time to 90% of lambda_star, recovery
    after a capacity change and the action counts. --json prints it as one JSON object.

    \b
    Example:
      loadguard simulate --policy tally --workers 8 --service 50ms --service-dist exp \\
          --queue 200 --p95 250ms --initial-rate 5 --duration 600s \\
          --capacity-change 300s:0.5 --actuation-lag 2s --arrivals poisson --seed 1 --json
    """
    dist = ServiceDist(service_dist, service, service_sigma if service_dist == "lognormal" else 0.0)  # type: ignore[arg-type]
    scenario = Scenario(
        servers=workers,
        service=dist,
        queue=queue,
        duration_s=duration,
        start_rate=initial_rate,
        changes=tuple(CapacityChange.parse(c) for c in changes),
        lag_s=actuation_lag,
        flush_s=jtl_flush,
        arrivals=arrivals,  # type: ignore[arg-type]
        tick_s=tick,
        seed=seed,
    )
    spec = SloSpec.load(
        slo_file, p50=p50, p90=p90, p95=p95, p99=p99, mean=mean, error_rate=error_rate,
        window=window, min_rate=min_rate, max_rate=max_rate,
        violation_budget=violation_budget,
    )  # fmt: skip
    knobs: dict[str, object] = {"lag_ms": actuation_lag * 1000.0, "flush_ms": jtl_flush * 1000.0}
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
