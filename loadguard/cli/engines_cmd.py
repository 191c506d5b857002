"""``loadguard engines``: is every engine of a (distributed) test reachable? (thin)"""

from __future__ import annotations

import json

import click

from loadguard.actuator.engine_info import EngineInfo, describe_engines
from loadguard.actuator.engines import Engine
from loadguard.cli.options import engine_option, json_option, remote_option, timeout_option
from loadguard.durations import Seconds
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
@engine_option(required=True)
@remote_option
@timeout_option
@json_option
def engines(
    engines: tuple[str, ...], remotes: tuple[str, ...], timeout: Seconds, as_json: bool
) -> None:
    """Check every engine: reachable or not, JMeter version, active threads, current rate.

    Give -e once per engine. Each engine is asked over its BeanShell session port
    (in parallel, each bounded by --timeout) with one fixed script: no user text is
    sent. With --remote, each RMI registry port is checked too (a TCP connect). Exit 3
    if any engine (or RMI port) does not answer.

    --json prints one object: {"engines": [one object per engine: engine, reachable,
    version, active_threads, rate_property, rate_rps, elapsed_ms, error], "rmi": [{"remote":
    HOST:PORT, "open": true|false}]} ("rmi" only with --remote).

    \b
    Example:
      loadguard engines --engine 10.0.0.5:9001 --engine 10.0.0.6:9001 --timeout 2s
      loadguard engines -e 10.0.0.5:9001 -e 10.0.0.6:9001 --remote 10.0.0.5:1099,10.0.0.6:1099
      loadguard engines -e 127.0.0.1:9001 --json
    """
    if not timeout > 0:
        raise UsageError("--timeout: must be > 0")
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
