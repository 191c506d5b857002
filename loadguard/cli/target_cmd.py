"""``loadguard target``: the embedded demo target (a TeaStore-like shop with a known knee)."""

from __future__ import annotations

import asyncio
import math
import signal
from collections.abc import Callable

import click

from loadguard.cli.options import p95_option, plant_options, port_option
from loadguard.durations import Seconds, format_duration
from loadguard.errors import UsageError
from loadguard.simulate.features import parse_metastable, parse_outage, parse_warmup
from loadguard.simulate.scenario import one_change
from loadguard.target.capacity import CapacityEstimate
from loadguard.target.distributions import ServiceDist, parse_dist
from loadguard.target.model import ENDPOINTS, build_model
from loadguard.target.pages import BASE
from loadguard.target.process import TargetReady, format_ready_line
from loadguard.target.runner import TargetServer
from loadguard.target.server import EstimateCache

#: The SLO whose lambda_star the target prints without --p95.
DEFAULT_SLO_S = Seconds(0.3)


def _overrides(specs: tuple[str, ...]) -> dict[str, ServiceDist]:
    out: dict[str, ServiceDist] = {}
    for spec in specs:
        name, sep, dist = spec.partition("=")
        if not sep:
            raise UsageError(f"bad --endpoint-service {spec!r}: expected NAME=DIST")
        out[name.strip()] = parse_dist(dist)
    return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _rate(estimate: CapacityEstimate) -> str:
    return f"{estimate.lambda_star_rps:.1f} req/s"


@click.command("target")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@port_option
@click.option(
    "--model",
    "kind",
    type=click.Choice(["shop", "mmc"]),
    default="shop",
    show_default=True,
    help="shop: per-endpoint log-normal service times in TeaStore's browse mix; "
    "mmc: one exponential service class (analytic lambda_star).",
)
@plant_options
@click.option(
    "--endpoint-service",
    multiple=True,
    metavar="NAME=DIST",
    help=f"Shop only: e.g. category=lognormal:80ms:0.6. Endpoints: {', '.join(ENDPOINTS)}.",
)
@click.option("--warmup", help="Service starts FACTOR x slower, warm after DURATION: 3x:90s.")
@click.option(
    "--metastable", help="Once WAITING wait, service FACTOR x slower until drained: 80:4."
)
@click.option("--outage", help="Workers hang from START for DURATION, then recover: 150s:20s.")
@p95_option
@click.option("--access-log", is_flag=True, help="Log every request (costs throughput).")
def target(
    host: str,
    port: int,
    kind: str,
    workers: int,
    queue: int,
    service: Seconds,
    changes: tuple[str, ...],
    seed: int,
    endpoint_service: tuple[str, ...],
    warmup: str | None,
    metastable: str | None,
    outage: str | None,
    p95: Seconds | None,
    access_log: bool,
) -> None:
    """Serve a TeaStore-like shop whose capacity is known: c workers, a K-deep queue.

    Paths live under /tools.descartes.teastore.webui/ (home, login, loginAction, category,
    product, cart, cartAction). Each request waits for one of c workers and sleeps for its
    service time; a full queue answers 503 at once. GET /_loadguard/model?p95=300ms returns
    the model and lambda_star, the largest rate whose p95 meets the SLO (the one printed at
    start is for --p95, default 300ms). One --capacity-change TIME:FACTOR makes the workers
    max(1, round(workers x FACTOR)) at TIME. SIGINT/SIGTERM stop it cleanly.

    \b
    Example:
      loadguard target --port 8080 --model mmc --workers 8 --service 50ms --p95 300ms
      loadguard target --capacity-change 120s:0.5
      loadguard target --model mmc --warmup 3x:90s --p95 500ms   # the suite's plant 4
      loadguard target --model mmc --queue 200 --metastable 80:4  # plant 5, the cliff
      loadguard target --model mmc --queue 100000 --outage 150s:20s  # plant 7
      curl 'http://127.0.0.1:8080/_loadguard/model?p95=300ms'
    """
    if port < 0 or port > 65535:
        raise UsageError(f"--port must be 0..65535, got {port}")
    change = one_change(changes)
    slo_s = DEFAULT_SLO_S if p95 is None else p95
    if slo_s <= 0:
        raise UsageError("--p95 must be > 0")
    model = build_model(
        "mmc" if kind == "mmc" else "shop",
        workers=workers,
        queue=queue,
        service_s=service,
        overrides=_overrides(endpoint_service),
        degrade_at_s=None if change is None else change.at_s,
        degrade_factor=0.5 if change is None else change.factor,
        warmup=parse_warmup(warmup) if warmup else None,
        metastable=parse_metastable(metastable) if metastable else None,
        outage=parse_outage(outage) if outage else None,
    )
    estimates = EstimateCache(model)
    estimates.warm(slo_s)
    now = estimates.get(slo_s, 0.95, model.workers)
    degraded = estimates.get(slo_s, 0.95, model.degraded_workers)
    services = sorted({model.service[name].spec() for name in model.mix_weights()})
    echo = _echo
    echo(
        f"loadguard target: model={model.kind} workers={model.workers} queue={model.queue} "
        f"service={'/'.join(services)} mean={model.mean_service_s * 1000:.1f}ms "
        f"saturation={now.saturation_rps:.1f} req/s"
    )
    echo(
        f"loadguard target: lambda_star={_rate(now)} for p95<={format_duration(slo_s)} "
        f"({now.method}{' M/M/c' if now.method == 'analytic' else ', FcfsQueue'})"
    )
    if model.degrade_at_s is not None:
        echo(
            f"loadguard target: at {format_duration(model.degrade_at_s)} workers become "
            f"{model.degraded_workers}: lambda_star={_rate(degraded)}"
        )
    for feature in ("warmup", "metastable", "outage"):
        value = model.to_json()[feature]
        if value is not None:
            echo(f"loadguard target: {feature} {value} (lambda_star above ignores it)")
    server = TargetServer(
        model,
        host=host,
        port=port,
        seed=seed,
        estimates=estimates,
        access_log=access_log,
        default_slo_s=slo_s,
    )

    def ready(bound: int) -> None:
        echo(
            format_ready_line(
                TargetReady(
                    url=f"http://{host}:{bound}{BASE}/",
                    port=bound,
                    lambda_star_rps=_finite(now.lambda_star_rps),
                    slo_ms=slo_s * 1000.0,
                    quantile=0.95,
                    method=now.method,
                    workers=model.workers,
                    degraded_workers=model.degraded_workers,
                    lambda_star_degraded_rps=_finite(degraded.lambda_star_rps),
                )
            )
        )

    uptime = asyncio.run(_serve_until_signal(server, ready))
    counters = server.counters()
    echo(
        f"loadguard target: stopped after {uptime:.1f}s: served {counters.served}, "
        f"rejected {counters.rejected} (503)"
    )


def _echo(line: str) -> None:
    click.echo(line)  # click.echo flushes: the ready line reaches a parent's pipe at once


async def _serve_until_signal(server: TargetServer, ready: Callable[[int], None]) -> float:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    bound = await server.start()
    started = loop.time()
    ready(bound)
    try:
        await stop.wait()
    finally:
        await server.stop()
    return loop.time() - started
