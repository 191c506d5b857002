"""Stopping a non-GUI JMeter run through its UDP control port.

A non-GUI JMeter listens on UDP ``jmeterengine.nongui.port`` (4445, or the first free
port up to ``jmeterengine.nongui.maxport``, 4455; the chosen one is printed on stdout).
It acts on exact ASCII payloads without a newline -- ``Shutdown`` (graceful: running
samples finish) and ``StopTestNow`` (abrupt) -- and **only from loopback sources**, so a
stop must be sent from the engine's own host, to a loopback address.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable

from loadguard.errors import ActuatorError, UsageError

DEFAULT_UDP_PORT = 4445
SHUTDOWN = b"Shutdown"
STOP_TEST_NOW = b"StopTestNow"


def loopback_address(host: str) -> str:
    """The loopback address ``host`` names, or a ``UsageError`` saying why not."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)
    except OSError:
        raise UsageError(f"cannot resolve engine host {host!r}") from None
    addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        if ipaddress.ip_address(address.split("%")[0]).is_loopback:
            return address
    raise UsageError(
        f"{host} ({addresses[0]}) is not a loopback address: JMeter accepts stop datagrams "
        "only from loopback, so run `loadguard stop` on the engine's host with 127.0.0.1"
    )


def send_stop(host: str = "127.0.0.1", port: int = DEFAULT_UDP_PORT, *, now: bool = False) -> bytes:
    """Send ``Shutdown`` (or ``StopTestNow`` when ``now``); returns the payload sent.

    UDP gives no answer: use ``wait_port_closed`` on the BeanShell port to confirm."""
    if not 0 < port < 65536:
        raise UsageError(f"bad UDP port {port}")
    address = loopback_address(host)
    payload = STOP_TEST_NOW if now else SHUTDOWN
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        try:
            sock.sendto(payload, (address, port))
        except OSError as exc:
            raise ActuatorError(
                f"cannot send {payload.decode()} to {address}:{port}: {exc}"
            ) from None
    return payload


def wait_port_closed(
    host: str,
    port: int,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Poll until nothing accepts TCP connections on ``host:port`` (the JVM has exited);
    ``False`` if it still does after ``timeout_s``."""
    deadline = clock() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                pass
        except OSError:
            return True
        if clock() >= deadline:
            return False
        sleep(0.2)
