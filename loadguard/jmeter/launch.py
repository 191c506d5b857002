"""Starting and stopping a non-GUI JMeter for ``loadguard run`` (an adapter).

``jmeter_args`` is the one command line of a controlled run; ``build_args`` (a local
JMeter) and ``remote.controller_args`` (a distributed controller) fill in what differs.

JMeter runs in the directory the user typed the command in, exactly as
``jmeter -n -t plan.jmx`` would: JMeter resolves a relative file name (CSV Data Set,
``__FileToString``, includes) against its working directory first and the plan's
folder second (``FileServer.resolveFileFromPath``), and relative arguments after ``--``
keep their meaning. Every path LoadGuard itself hands JMeter is made absolute, so none
depends on the working directory.

The JVM is started directly (no shell), in its own session, so a Ctrl-C aimed at the
sidecar does not reach JMeter half-way: LoadGuard stops it deliberately, in escalating
steps, and makes sure no process is left:

1. the UDP ``Shutdown`` datagram (graceful: running samples finish);
2. ``StopTestNow`` after ``grace_s``;
3. SIGTERM, then SIGKILL, to the whole process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from loadguard.actuator.udp import send_stop
from loadguard.errors import ActuatorError, EngineError
from loadguard.jmeter.home import JMeterHome, jmeter_command


def free_tcp_pair(host: str = "127.0.0.1", attempts: int = 50) -> int:
    """A port P such that P and P+1 are both free (BeanShell uses P+1 for sessions)."""
    for _ in range(attempts):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port >= 65535:
            continue
        ok = True
        for p in (port, port + 1):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
                try:
                    t.bind((host, p))
                except OSError:
                    ok = False
        if ok:
            return port
    raise EngineError("could not find two adjacent free TCP ports for the BeanShell server")


def free_udp_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def jmeter_args(
    *,
    plan: Path,
    jtl: Path,
    log: Path,
    udp_port: int,
    engines: Sequence[str],
    settings: Sequence[str] = (),
    properties: Sequence[str] = (),
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The one command line of a controlled non-GUI JMeter, local or distributed.

    ``-n -t plan -l jtl -j log``, then ``engines`` (what carries the load: a local
    BeanShell console, or ``-R`` and the remote engines), then what every controlled run
    needs: JMeter exits when the test ends, listens for ``Shutdown``/``StopTestNow`` on
    ``udp_port`` only, and writes a CSV JTL with a header, flushed at every sample; then
    the caller's ``settings``, ``properties`` and the user's ``extra_args`` (last, so
    they win). Every path is absolute (``Path.absolute``: relative to the directory the
    command was typed in, symlinks kept), whatever directory JMeter ends up running in."""
    return [
        "-n",
        "-t",
        str(plan.absolute()),
        "-l",
        str(jtl.absolute()),
        "-j",
        str(log.absolute()),
        *engines,
        "-Jjmeterengine.force.system.exit=true",
        f"-Jjmeterengine.nongui.port={udp_port}",
        f"-Jjmeterengine.nongui.maxport={udp_port}",
        "-Jjmeter.save.saveservice.autoflush=true",
        "-Jjmeter.save.saveservice.output_format=csv",
        "-Jjmeter.save.saveservice.print_field_names=true",
        *settings,
        *properties,
        *extra_args,
    ]


def property_args(properties: Mapping[str, str], *flags: str) -> list[str]:
    """``-Jkey=value`` (or each of ``flags``) per property, sorted by key."""
    return [f"{flag}{k}={v}" for k, v in sorted(properties.items()) for flag in flags or ("-J",)]


class JMeterRun(Protocol):
    """What ``JMeterProcess`` starts: its arguments, where its output goes, and the UDP
    port its ``stop`` sends ``Shutdown`` to."""

    @property
    def stdout(self) -> Path: ...

    @property
    def udp_port(self) -> int: ...

    def args(self) -> list[str]: ...


@dataclass(frozen=True)
class LaunchSpec:
    plan: Path
    jtl: Path
    log: Path
    stdout: Path
    bsh_port: int
    udp_port: int
    properties: Mapping[str, str]
    extra_args: Sequence[str] = ()
    #: BeanShell init file (``beanshell.server.file``); ``None``: none (the stock
    #: all-interfaces server). ``run`` passes the loopback-only one (``bsh_loopback``).
    bsh_server_file: Path | None = None

    def args(self) -> list[str]:
        return build_args(self)


def build_args(spec: LaunchSpec) -> list[str]:
    """A local JMeter's arguments: the load runs here, its BeanShell console on
    ``bsh_port`` (``jmeter_args`` has the rest)."""
    bsh_file = "" if spec.bsh_server_file is None else str(spec.bsh_server_file.absolute())
    return jmeter_args(
        plan=spec.plan,
        jtl=spec.jtl,
        log=spec.log,
        udp_port=spec.udp_port,
        engines=[
            f"-Jbeanshell.server.port={spec.bsh_port}",
            f"-Jbeanshell.server.file={bsh_file}",
        ],
        properties=property_args(spec.properties),
        extra_args=spec.extra_args,
    )


class JMeterProcess:
    """A running non-GUI JMeter started by LoadGuard."""

    def __init__(self, home: JMeterHome, spec: JMeterRun, what: str = "JMeter") -> None:
        """Start JMeter with ``spec.args()``; ``stop`` uses ``spec.udp_port``."""
        self.home = home
        self.spec = spec
        self._out = spec.stdout.open("ab")
        try:
            self.proc = subprocess.Popen(
                jmeter_command(home, spec.args()),
                stdout=self._out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                # The user's working directory, as `jmeter -n -t plan.jmx` would have.
                start_new_session=True,
            )
        except OSError as exc:
            self._out.close()
            raise EngineError(f"could not start {what}: {exc}") from exc
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace_s: float = 10.0, now_s: float = 5.0) -> int:
        """Stop JMeter in escalating steps; returns its exit code. Idempotent."""
        # Shutdown is repeated: a JVM still booting has no UDP listener yet and drops it.
        if self.alive() and not self._stop_until_exit(grace_s):
            with contextlib.suppress(ActuatorError):
                send_stop(port=self.spec.udp_port, now=True)
            if not self._wait(now_s):
                self._signal_group(signal.SIGTERM)
                if not self._wait(5.0):
                    self._signal_group(signal.SIGKILL)
                    self._wait(5.0)
        # The JVM may have left children in its session (none expected); sweep them.
        self._signal_group(signal.SIGKILL)
        self._out.close()
        code = self.proc.poll()
        return -9 if code is None else code

    def _stop_until_exit(self, seconds: float, every_s: float = 0.5) -> bool:
        """Send the graceful ``Shutdown`` every ``every_s`` until JMeter exits."""
        deadline = time.monotonic() + seconds
        while True:
            with contextlib.suppress(ActuatorError):
                send_stop(port=self.spec.udp_port)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return not self.alive()
            if self._wait(min(every_s, remaining)):
                return True

    def _wait(self, seconds: float) -> bool:
        try:
            self.proc.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)
