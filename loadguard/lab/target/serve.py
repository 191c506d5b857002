"""Serving the demo target in the foreground: the model's banner, the ready line, and
SIGINT/SIGTERM as a clean stop (``loadguard target`` is the thin CLI over ``serve``)."""

from __future__ import annotations

import asyncio
import math
import signal
from collections.abc import Callable
from dataclasses import dataclass

from loadguard.durations import format_duration
from loadguard.lab.target.capacity import CapacityEstimate
from loadguard.lab.target.model import TargetModel
from loadguard.lab.target.pages import BASE
from loadguard.lab.target.process import TargetReady, format_ready_line
from loadguard.lab.target.runner import TargetServer
from loadguard.lab.target.server import EstimateCache

#: The quantile the printed lambda_star is for.
QUANTILE = 0.95
PREFIX = "loadguard target:"


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 0
    seed: int = 1
    slo_s: float = 0.3  # the SLO (p95) of the printed lambda_star
    access_log: bool = False


@dataclass(frozen=True)
class Capacity:
    """lambda_star for the SLO now, and after the model's capacity change."""

    now: CapacityEstimate
    degraded: CapacityEstimate


def capacity(model: TargetModel, estimates: EstimateCache, slo_s: float) -> Capacity:
    estimates.warm(slo_s)
    return Capacity(
        estimates.get(slo_s, QUANTILE, model.workers),
        estimates.get(slo_s, QUANTILE, model.degraded_workers),
    )


def _rate(estimate: CapacityEstimate) -> str:
    return f"{estimate.lambda_star_rps:.1f} req/s"


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def banner(model: TargetModel, cap: Capacity, slo_s: float) -> list[str]:
    """What the target says about itself before it serves."""
    services = sorted({model.service[name].spec() for name in model.mix_weights()})
    now = cap.now
    lines = [
        f"{PREFIX} model={model.kind} workers={model.workers} queue={model.queue} "
        f"service={'/'.join(services)} mean={model.mean_service_s * 1000:.1f}ms "
        f"saturation={now.saturation_rps:.1f} req/s",
        f"{PREFIX} lambda_star={_rate(now)} for p95<={format_duration(slo_s)} "
        f"({now.method}{' M/M/c' if now.method == 'analytic' else ', FcfsQueue'})",
    ]
    if model.degrade_at_s is not None:
        lines.append(
            f"{PREFIX} at {format_duration(model.degrade_at_s)} workers become "
            f"{model.degraded_workers}: lambda_star={_rate(cap.degraded)}"
        )
    for feature in ("warmup", "metastable", "outage"):
        value = model.to_json()[feature]
        if value is not None:
            lines.append(f"{PREFIX} {feature} {value} (lambda_star above ignores it)")
    return lines


def ready_line(model: TargetModel, cap: Capacity, host: str, port: int, slo_s: float) -> str:
    return format_ready_line(
        TargetReady(
            url=f"http://{host}:{port}{BASE}/",
            port=port,
            lambda_star_rps=_finite(cap.now.lambda_star_rps),
            slo_ms=slo_s * 1000.0,
            quantile=QUANTILE,
            method=cap.now.method,
            workers=model.workers,
            degraded_workers=model.degraded_workers,
            lambda_star_degraded_rps=_finite(cap.degraded.lambda_star_rps),
        )
    )


def serve(model: TargetModel, opts: ServeOptions, say: Callable[[str], None]) -> None:
    """Print the banner, serve until SIGINT/SIGTERM (the ready line once bound), then
    what was served. ``say`` must flush: a parent reads the ready line from a pipe."""
    estimates = EstimateCache(model)
    cap = capacity(model, estimates, opts.slo_s)
    for line in banner(model, cap, opts.slo_s):
        say(line)
    server = TargetServer(
        model,
        host=opts.host,
        port=opts.port,
        seed=opts.seed,
        estimates=estimates,
        access_log=opts.access_log,
        default_slo_s=opts.slo_s,
    )
    uptime = asyncio.run(
        serve_until_signal(
            server, lambda bound: say(ready_line(model, cap, opts.host, bound, opts.slo_s))
        )
    )
    counters = server.counters()
    say(
        f"{PREFIX} stopped after {uptime:.1f}s: served {counters.served}, "
        f"rejected {counters.rejected} (503)"
    )


async def serve_until_signal(server: TargetServer, ready: Callable[[int], None]) -> float:
    """Start ``server``, call ``ready(port)``, serve until SIGINT/SIGTERM; the uptime."""
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
