"""``loadguard target``: the embedded demo target (a TeaStore-like shop with a known knee)."""

from __future__ import annotations

import click

from loadguard.cli.options import p95_option, port_option
from loadguard.durations import Seconds
from loadguard.errors import UsageError
from loadguard.lab.cli.options import plant_options
from loadguard.lab.simulate.features import parse_metastable, parse_outage, parse_warmup
from loadguard.lab.simulate.scenario import one_change
from loadguard.lab.target.distributions import ServiceDist, parse_dist
from loadguard.lab.target.model import ENDPOINTS, build_model
from loadguard.lab.target.serve import ServeOptions, serve

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
    slo_s = DEFAULT_SLO_S if p95 is None else p95
    if slo_s <= 0:
        raise UsageError("--p95 must be > 0")
    change = one_change(changes)
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
    # click.echo flushes: the ready line reaches a parent's pipe at once.
    serve(model, ServeOptions(host, port, seed, slo_s, access_log), say=click.echo)
