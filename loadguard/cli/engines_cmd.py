"""``loadguard engines``: is every engine of a (distributed) test reachable? (thin)"""

from __future__ import annotations

import json

import click

from loadguard.actuator.engine_info import EngineInfo, describe_engines
from loadguard.actuator.engines import Engine
from loadguard.errors import ActuatorError, UsageError
from loadguard.jmeter.remote import parse_remotes, port_open


def _line(info: EngineInfo) -> str:
    if not info.reachable:
        return f"{info.engine}  UNREACHABLE  {info.error}"
    rate = (
        "rate unset"
        if info.rate_property is None
        else (
            f"rate {info.rate_rps:g} req/s (loadguard.tpm={info.rate_property})"
            if info.rate_rps is not None
            else f"rate {info.rate_property!r} (not a number)"
        )
    )
    threads = "-" if info.active_threads is None else str(info.active_threads)
    return (
        f"{info.engine}  reachable  JMeter {info.version or '?'}  "
        f"threads {threads}  {rate}  ({info.elapsed_ms:.0f} ms)"
    )


@click.command("engines")
@click.option(
    "-e", "--engine", "engines", multiple=True, required=True, metavar="HOST:PORT[:WEIGHT]",
    help="BeanShell session port (beanshell.server.port + 1); repeat for every engine.",
)  # fmt: skip
@click.option(
    "--remote",
    "remotes",
    multiple=True,
    help="Also check each engine's RMI registry port HOST:RMIPORT[,...] (TCP connect).",
)
@click.option("--timeout", default=3.0, show_default=True, help="Seconds per engine.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per engine, in a list.")
def engines(
    engines: tuple[str, ...], remotes: tuple[str, ...], timeout: float, as_json: bool
) -> None:
    """Check every engine: reachable or not, JMeter version, active threads, current rate.

    Each engine is asked over its BeanShell session port (in parallel, each bounded by
    --timeout) with one fixed script: no user text is sent. Exit 3 if any engine (or
    RMI port given with --remote) does not answer.

    \b
    Example:
      loadguard engines --engine 10.0.0.5:9001 --engine 10.0.0.6:9001
      loadguard engines -e 10.0.0.5:9001 -e 10.0.0.6:9001 --remote 10.0.0.5:1099,10.0.0.6:1099
      loadguard engines -e 127.0.0.1:9001 --json
    """
    if not timeout > 0:
        raise UsageError("--timeout must be > 0")
    parsed = [Engine.parse(e) for e in engines]
    infos = describe_engines(parsed, timeout_s=timeout)
    rmi = [(r.spec, port_open(r.host, r.port, timeout)) for r in parse_remotes(remotes)]
    if as_json:
        payload: dict[str, object] = {"engines": [i.to_json() for i in infos]}
        if rmi:
            payload["rmi"] = [{"remote": spec, "open": ok} for spec, ok in rmi]
        click.echo(json.dumps(payload, indent=2))
    else:
        for info in infos:
            click.echo(_line(info))
        for spec, ok in rmi:
            click.echo(f"{spec}  RMI registry {'open' if ok else 'CLOSED'}")
    bad = [i.engine for i in infos if not i.reachable] + [s for s, ok in rmi if not ok]
    if bad:
        raise ActuatorError(f"{len(bad)} engine port(s) not answering: {', '.join(bad)}")
