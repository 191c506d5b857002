"""``loadguard stop``: end a non-GUI JMeter run through its UDP control port."""

from __future__ import annotations

import click

from loadguard.actuator.engines import Engine
from loadguard.actuator.udp import DEFAULT_UDP_PORT, send_stop, wait_port_closed
from loadguard.cli.options import DURATION, engine_option
from loadguard.durations import Seconds
from loadguard.errors import EngineError, UsageError


@click.command("stop")
@engine_option(required=True)
@click.option("--udp-port", default=DEFAULT_UDP_PORT, show_default=True, type=int,
              help="jmeterengine.nongui.port (JMeter prints the one it took).")  # fmt: skip
@click.option("--now", is_flag=True, help="StopTestNow (abrupt) instead of Shutdown.")
@click.option(
    "--wait", "wait_s", type=DURATION, default="30s", show_default=True,
    help="Wait this long for the engine to go away (0s: do not wait).",
)  # fmt: skip
def stop(engines: tuple[str, ...], udp_port: int, now: bool, wait_s: Seconds) -> None:
    """Stop a running non-GUI JMeter: Shutdown (graceful) or StopTestNow (--now).

    JMeter accepts these UDP datagrams ONLY FROM LOOPBACK, so run this on the engine's
    own host with HOST 127.0.0.1 (a remote or non-loopback host is refused), one engine
    at a time (each has its own --udp-port). The
    datagram gets no answer; LoadGuard confirms the stop by waiting until the engine's
    BeanShell port closes (the JVM exited; start JMeter with
    -Jjmeterengine.force.system.exit=true, or BeanShell keeps it alive). Exit 3 if it
    is still up after --wait.

    \b
    Example:
      loadguard stop --engine 127.0.0.1:9001
      loadguard stop -e 127.0.0.1:9001 --udp-port 4446 --now --wait 10s
    """
    if len(engines) != 1:
        raise UsageError("stop: give one --engine (each engine has its own --udp-port)")
    target = Engine.parse(engines[0])
    was_up = not wait_port_closed(target.host, target.port, 0.0)
    payload = send_stop(target.host, udp_port, now=now).decode()
    click.echo(f"sent {payload} to {target.host} udp/{udp_port}")
    if not wait_s > 0:
        return
    if not was_up:
        click.echo(f"warning: nothing answered on {target.name} before the stop: not confirmed")
        return
    if not wait_port_closed(target.host, target.port, wait_s):
        raise EngineError(
            f"{target.name} still answers {wait_s:g}s after {payload}: wrong --udp-port, "
            "or the JVM does not exit (jmeterengine.force.system.exit=true)"
        )
    click.echo(f"{target.name}: stopped")
