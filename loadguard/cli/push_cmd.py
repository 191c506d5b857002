"""``loadguard push``: set or read an engine's rate by hand (ops tool)."""

from __future__ import annotations

import click

from loadguard.actuator.elastic_timer import RATE_PROPERTY
from loadguard.actuator.engines import Engine, EngineAck, EngineSet
from loadguard.cli.options import RATE, engine_option, timeout_option
from loadguard.durations import Seconds
from loadguard.errors import ActuatorError, UsageError


def _line(ack: EngineAck) -> str:
    if not ack.ok:
        return f"{ack.engine}: FAILED {ack.error}"
    rate = "unset" if ack.rate_rps is None else f"{ack.rate_rps:g} req/s"
    return f"{ack.engine}: {rate} ({ack.elapsed_ms:.0f} ms)"


@click.command("push")
@engine_option(required=True)
@click.option(
    "-r", "--rate", type=RATE, help="Total rate to set, req/s (5, 5/s or 300/min), split by weight."
)
@click.option("--get", "get_", is_flag=True, help="Read the rate each engine holds instead.")
@timeout_option
def push(engines: tuple[str, ...], rate: float | None, get_: bool, timeout: Seconds) -> None:
    """Set (or read back) the Elastic Timer rate of running JMeter engines.

    Give -e once per engine; a total rate is split by the engines' weights.
    Talks to each engine's BeanShell server, so JMeter must run with
    -Jbeanshell.server.port=P -Jbeanshell.server.file= and PORT here is P+1. The rate
    lands in property loadguard.tpm (samples/min) and is confirmed by reading it back.
    The BeanShell server executes any code it is sent: enable it on trusted networks only.
    Exit 3 if any engine failed.

    \b
    Example:
      loadguard push --engine 127.0.0.1:9001 --rate 50
      loadguard push -e 10.0.0.5:9001 -e 10.0.0.6:9001:2 -r 300
      loadguard push --engine 127.0.0.1:9001 --get --timeout 2s
    """
    if get_ == (rate is not None):
        raise UsageError("give exactly one of --rate R or --get")
    if not timeout > 0:
        raise UsageError("--timeout: must be > 0")
    parsed = [Engine.parse(e) for e in engines]
    with EngineSet(parsed, timeout_s=timeout) as actuator:
        if get_:
            acks = actuator.read_acks()
        else:
            result = actuator.push(rate)  # type: ignore[arg-type]
            acks = result.acks
            click.echo(f"pushed {result.rate_rps:g} req/s ({RATE_PROPERTY})")
    for ack in acks:
        click.echo(_line(ack))
    failed = [a.engine for a in acks if not a.ok]
    if failed:
        raise ActuatorError(f"{len(failed)} of {len(acks)} engine(s) failed: {', '.join(failed)}")
