"""Distributed JMeter: the controller's command line, the sample sender, remote engines.

A distributed test is one controller (``jmeter -n -t plan.jmx -R h1:p1,h2:p2``) and
``jmeter-server`` engines. Each engine runs the **whole** plan in its own JVM, evaluates
``${__P()}`` there and has its own BeanShell server, so LoadGuard pushes each engine its
share. Samples reach the controller's JTL through the *sample sender*; in that JTL every
``threadName`` starts with the ``-R`` entry of its engine and a dash, exactly as written
on the command line (measured on 5.6.3: ``-R 127.0.0.2:12099`` gives
``127.0.0.2:12099-elastic 1-1``), which is how samples are told apart per engine even
when every engine is on one host.

Sample sender freshness (controller JTL arrival minus sample end, two engines at 10
req/s each on one loaded 2-core host; ``benchmarks/sample_sender_freshness.py``,
docs/distributed.md):

==============================================  =========  =========  ========
mode                                             p50 lag    p95 lag    max
==============================================  =========  =========  ========
``StrippedBatch`` (JMeter's default)             3.5 s      9.3 s      9.8 s
``StrippedBatch`` + 10 samples / 1 s thresholds  0.47 s     0.93 s     1.0 s
``Stripped``                                     31 ms      60 ms      130 ms
``StrippedAsynch``                               31 ms      55 ms      106 ms
==============================================  =========  =========  ========

``Stripped`` sends every sample in its own RMI call from the sampling thread;
``StrippedAsynch`` hands it to a queue drained by one sender thread, so a slow controller
does not slow the samplers. LoadGuard's default is ``StrippedAsynch``.
"""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loadguard.errors import EngineError, UsageError
from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.jmeter.launch import JMeterProcess, jmeter_args, property_args

#: JMeter's sample sender modes LoadGuard accepts for ``run --remote``.
SAMPLE_SENDER_MODES = ("Stripped", "StrippedAsynch", "StrippedBatch", "Standard", "Asynch")
DEFAULT_SAMPLE_SENDER = "StrippedAsynch"
#: The batch thresholds set when a batching mode is chosen: 10 samples or 1 s.
BATCH_THRESHOLDS = {"num_sample_threshold": "10", "time_threshold": "1000"}

_HOST = re.compile(r"[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\]")


@dataclass(frozen=True)
class RemoteEngine:
    """One ``-R`` entry: the engine's RMI registry ``host:port`` (port default 1099)."""

    host: str
    port: int = 1099
    spec: str = ""

    @classmethod
    def parse(cls, text: str) -> RemoteEngine:
        raw = text.strip()
        host, sep, port_text = raw.rpartition(":") if not raw.endswith("]") else ("", "", "")
        if not sep:
            host, port_text = raw, ""
        if not host or _HOST.fullmatch(host) is None:
            raise UsageError(f"bad remote engine {text!r}: expected host[:rmiport]")
        try:
            port = int(port_text) if port_text else 1099
        except ValueError:
            raise UsageError(f"bad remote engine {text!r}: port must be a number") from None
        if not 0 < port < 65536:
            raise UsageError(f"bad remote engine {text!r}: port out of range")
        return cls(host, port, raw)

    @property
    def thread_prefix(self) -> str:
        """What the engine's threadName starts with in the controller's JTL."""
        return f"{self.spec or self.host}-"


def parse_remotes(values: Sequence[str]) -> tuple[RemoteEngine, ...]:
    """``--remote h1:p1,h2:p2`` (comma-separated, repeatable) -> engines, in order."""
    out: list[RemoteEngine] = []
    for value in values:
        for part in value.split(","):
            if part.strip():
                out.append(RemoteEngine.parse(part))
    specs = [r.spec for r in out]
    if len(set(specs)) != len(specs):
        raise UsageError(f"remote engine listed twice: {','.join(specs)}")
    return tuple(out)


def sample_sender_properties(mode: str) -> dict[str, str]:
    """Controller properties for a fresh JTL (``mode`` is read on the controller, which
    configures the senders: ``sample_sender_client_configured=true`` is the default)."""
    if mode not in SAMPLE_SENDER_MODES:
        raise UsageError(f"unknown sample sender mode {mode!r}: one of {SAMPLE_SENDER_MODES}")
    props = {"mode": mode}
    if "Batch" in mode:
        props.update(BATCH_THRESHOLDS)
    return props


@dataclass(frozen=True)
class ControllerSpec:
    plan: Path
    jtl: Path
    log: Path
    stdout: Path
    udp_port: int
    remotes: tuple[RemoteEngine, ...]
    properties: Mapping[str, str] = field(default_factory=dict)
    sample_sender: str = DEFAULT_SAMPLE_SENDER
    rmi_ssl_disable: bool = True
    extra_args: Sequence[str] = ()

    def args(self) -> list[str]:
        return controller_args(self)


def controller_args(spec: ControllerSpec) -> list[str]:
    """The controller's arguments (pure): the load runs on ``-R`` engines, samples come
    back through the sample sender with their thread names (``jmeter_args`` has the
    rest). Plan properties go to the controller (``-J``) and to every engine (``-G``),
    since each engine evaluates the plan itself."""
    if not spec.remotes:
        raise UsageError("no remote engine given")
    settings = ["-Jjmeter.save.saveservice.thread_name=true"]
    if spec.rmi_ssl_disable:
        settings.append("-Jserver.rmi.ssl.disable=true")
    return jmeter_args(
        plan=spec.plan,
        jtl=spec.jtl,
        log=spec.log,
        udp_port=spec.udp_port,
        engines=["-R", ",".join(r.spec or r.host for r in spec.remotes)],
        settings=settings + property_args(sample_sender_properties(spec.sample_sender)),
        properties=property_args(spec.properties, "-J", "-G"),
        extra_args=spec.extra_args,
    )


class ControllerProcess(JMeterProcess):
    """The distributed controller, started and stopped like ``JMeterProcess`` (UDP
    ``Shutdown``, which the controller forwards to its engines, then escalation)."""

    def __init__(self, home: JMeterHome, spec: ControllerSpec) -> None:
        super().__init__(home, spec, what="the JMeter controller")


def engine_server_args(
    rmi_port: int,
    bsh_port: int,
    *,
    hostname: str | None = None,
    rmi_ssl_disable: bool = True,
    log: Path | None = None,
) -> list[str]:
    """Arguments for a ``jmeter-server`` engine with a fixed RMI port and BeanShell on
    ``bsh_port`` (LoadGuard talks to ``bsh_port + 1``). The RMI object port is pinned
    to ``rmi_port + 1`` so a firewall needs only the two."""
    args = [
        "-s",
        f"-Dserver_port={rmi_port}",
        f"-Jserver.rmi.localport={rmi_port + 1}",
        f"-Jbeanshell.server.port={bsh_port}",
        "-Jbeanshell.server.file=",
    ]
    if hostname:
        args.append(f"-Djava.rmi.server.hostname={hostname}")
    if rmi_ssl_disable:
        args.append("-Jserver.rmi.ssl.disable=true")
    if log is not None:
        args += ["-j", str(log.absolute())]
    return args


def start_engine_server(
    home: JMeterHome,
    rmi_port: int,
    bsh_port: int,
    *,
    hostname: str | None = "127.0.0.1",
    log: Path | None = None,
    stdout: Path | None = None,
    jvm_args: Sequence[str] = ("-Xms128m", "-Xmx512m", "-Djava.awt.headless=true"),
) -> subprocess.Popen[bytes]:
    """Start one ``jmeter-server`` (in its own session; the caller kills it)."""
    out = stdout.open("ab") if stdout is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            jmeter_command(
                home,
                engine_server_args(rmi_port, bsh_port, hostname=hostname, log=log),
                jvm_args=jvm_args,
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=str(log.parent) if log is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        raise EngineError(f"could not start jmeter-server: {exc}") from exc
    finally:
        if stdout is not None and not isinstance(out, int):
            out.close()


def port_open(host: str, port: int, timeout_s: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
