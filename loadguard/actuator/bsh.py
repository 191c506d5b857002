"""A pure-Python client for JMeter's BeanShell session console (port P+1).

JMeter started with ``-Jbeanshell.server.port=P`` runs an interactive BeanShell
interpreter on ``P+1``. The protocol (JMeter's own ``BeanShellClient``):

1. connect to ``P+1``;
2. write the script as ASCII, one statement per line, each ending in ``;``
   (a final statement without ``;`` is dropped silently);
3. half-close the socket (``SHUT_WR``);
4. read to EOF -- the reply holds a banner, ``bsh % `` prompts, ``print()`` output and
   errors as ``// Error: ...``.

**Security.** The console executes whatever it is sent, so this module only ever sends
*fixed-form* scripts: a property name checked against ``[A-Za-z0-9_.]+`` and a value
that is a finite float formatted by Python. No other text reaches the socket; there is
no way to pass a string through. The script ends with a sentinel ``print`` so that a
reply cut short (server died, parse error discarding the rest) is detected.

In non-GUI mode JMeter starts the server just *after* the test starts, so ``connect``
retries a refused connection until ``connect_timeout`` has passed.
"""

from __future__ import annotations

import math
import re
import socket
import time
from collections.abc import Callable

from loadguard.errors import ActuatorError, BeanShellReplyError, UsageError

#: Property names the client agrees to touch.
PROPERTY_NAME = re.compile(r"[A-Za-z0-9_.]+")
#: What a formatted value may look like (defence in depth: ``float`` formatting only).
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?")
_UTILS = "org.apache.jmeter.util.JMeterUtils"
_VALUE_TAG = "loadguard:value="
_UNSET_TAG = "loadguard:unset"
SENTINEL = "loadguard:end"
_VALUE_LINE = re.compile(re.escape(_VALUE_TAG) + r"([^\r\n]*)")
_MAX_REPLY = 1 << 20


def check_property_name(name: str) -> str:
    """Return ``name`` if it is a safe property name, else raise ``UsageError``."""
    if not isinstance(name, str) or PROPERTY_NAME.fullmatch(name) is None:
        raise UsageError(f"bad property name {name!r}: allowed characters are [A-Za-z0-9_.]")
    return name


def format_number(value: float) -> str:
    """Format a finite number for a script; refuses anything but int/float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"bad property value {value!r}: a number is required")
    number = float(value)
    if not math.isfinite(number):
        raise UsageError(f"bad property value {value!r}: must be finite")
    text = repr(number)  # shortest text that parses back to the same double
    if _NUMBER.fullmatch(text) is None:  # pragma: no cover - float formatting guarantees it
        raise UsageError(f"bad property value {value!r}")
    return text


class PropertyValueError(Exception):
    """The engine answered, but the property is unset or its value is not a number."""


def property_number(name: str, value: str | None) -> float:
    """A property's value as JMeter holds it (``get_property``), as a number; raises
    ``PropertyValueError`` when it is unset (``None``) or not a number."""
    if value is None:
        raise PropertyValueError(f"{name} is unset")
    try:
        return float(value)
    except ValueError:
        raise PropertyValueError(f"{name}={value[:40]!r} is not a number") from None


def set_script(name: str, value: float) -> str:
    """The fixed-form script that sets ``name`` to ``value`` and prints it back."""
    name = check_property_name(name)
    number = format_number(value)
    return (
        f'{_UTILS}.setProperty("{name}", "{number}");\n'
        + _read_statement(name)
        + f'print("{SENTINEL}");\n'
    )


def get_script(name: str) -> str:
    """The fixed-form script that prints the value of ``name`` (or that it is unset)."""
    name = check_property_name(name)
    return _read_statement(name) + f'print("{SENTINEL}");\n'


def _read_statement(name: str) -> str:
    return (
        f'print({_UTILS}.getProperty("{name}") == null ? "{_UNSET_TAG}" : '
        f'"{_VALUE_TAG}" + {_UTILS}.getProperty("{name}"));\n'
    )


def parse_reply(reply: str) -> str | None:
    """The property value printed in ``reply`` (``None``: unset).

    Raises ``BeanShellReplyError`` for an ``// Error:`` reply or a reply without the
    sentinel (cut short)."""
    if "// Error:" in reply:
        line = reply[reply.index("// Error:") :].splitlines()[0]
        raise BeanShellReplyError(f"BeanShell error: {line[:200]}")
    if SENTINEL not in reply:
        raise BeanShellReplyError("BeanShell reply ended before the sentinel")
    match = _VALUE_LINE.search(reply)
    if match is not None:
        return match.group(1).strip()
    if _UNSET_TAG in reply:
        return None
    raise BeanShellReplyError("BeanShell reply holds no property value")


class BeanShellClient:
    """Set and read JMeter properties through one engine's BeanShell session port.

    ``port`` is the *session* port (``beanshell.server.port + 1``). Every call opens a
    fresh connection (the server closes it at end of input); there is no Java process per
    push. ``connect_timeout`` bounds the connect retries, ``read_timeout`` the reply.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        connect_timeout: float = 2.0,
        read_timeout: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not 0 < port < 65536:
            raise UsageError(f"bad BeanShell port {port}")
        self.host = host
        self.port = port
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._clock = clock
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"BeanShellClient({self.host}:{self.port})"

    def set_property(self, name: str, value: float) -> float:
        """Set ``name`` to ``value``; returns the value read back in the same session.

        Raises ``ActuatorError`` when unreachable, ``BeanShellReplyError`` when the reply
        is an error or the read-back differs from what was sent."""
        sent = format_number(value)
        back = parse_reply(self._run(set_script(name, value)))
        try:
            echoed = property_number(name, back)
        except PropertyValueError as exc:
            raise BeanShellReplyError(f"{exc} when read back after setting {sent}") from None
        if not math.isclose(echoed, float(sent), rel_tol=1e-9, abs_tol=0.0):
            raise BeanShellReplyError(f"property {name} read back {back} after setting {sent}")
        return echoed

    def get_property(self, name: str) -> str | None:
        """The current value of ``name`` as JMeter holds it (a string), ``None`` if unset."""
        return parse_reply(self._run(get_script(name)))

    def _run(self, script: str) -> str:
        """Send one fixed-form script (built by this module) and return the raw reply."""
        data = script.encode("ascii")
        sock = self._connect()
        try:
            sock.settimeout(self.read_timeout)
            deadline = self._clock() + self.read_timeout
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            chunks: list[bytes] = []
            size = 0
            while True:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise ActuatorError(f"{self.host}:{self.port}: no reply within read timeout")
                sock.settimeout(remaining)
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > _MAX_REPLY:
                    raise BeanShellReplyError(f"{self.host}:{self.port}: reply too long")
        except TimeoutError:
            raise ActuatorError(f"{self.host}:{self.port}: no reply within read timeout") from None
        except OSError as exc:
            raise ActuatorError(f"{self.host}:{self.port}: {exc.strerror or exc}") from None
        finally:
            sock.close()
        return b"".join(chunks).decode("latin-1")

    def _connect(self) -> socket.socket:
        """Connect, retrying refusals (server not up yet) until ``connect_timeout``."""
        deadline = self._clock() + self.connect_timeout
        delay = 0.05
        while True:
            remaining = deadline - self._clock()
            try:
                return socket.create_connection(
                    (self.host, self.port), timeout=max(remaining, 0.05)
                )
            except (ConnectionRefusedError, ConnectionResetError) as exc:
                last: OSError = exc
            except TimeoutError as exc:
                last = exc
            except OSError as exc:
                # DNS failure, unreachable network: retrying will not help.
                raise ActuatorError(f"{self.host}:{self.port}: {exc.strerror or exc}") from None
            remaining = deadline - self._clock()
            if remaining <= 0:
                reason = "timed out" if isinstance(last, TimeoutError) else "connection refused"
                raise ActuatorError(
                    f"{self.host}:{self.port}: {reason} (BeanShell session port = "
                    "beanshell.server.port + 1)"
                )
            self._sleep(min(delay, remaining))
            delay = min(delay * 2, 0.5)
