"""A BeanShell session server that listens on loopback only (for ``loadguard run``).

JMeter's ``beanshell.server.port=P`` starts BeanShell's stock ``server(P)`` command,
which opens an HTTP console on ``P`` and the session console on ``P+1`` with
``new ServerSocket(port)``: every interface, no bind-address property. Whoever reaches
``P+1`` runs arbitrary Java in the JMeter JVM.

JMeter's ``BeanShellServer`` *sources* ``beanshell.server.file`` into the interpreter
before it evaluates ``server(portnum)``, and a method defined in the interpreter's
namespace wins over a BeanShell command of the same name. So ``loadguard run`` hands
JMeter the init file below, whose ``server(int)`` opens only the session console, on
``127.0.0.1:P+1`` (``InetAddress.getLoopbackAddress()``), and serves each connection
exactly as BeanShell's ``Sessiond`` does: one interactive ``bsh.Interpreter`` per
connection, sharing the global namespace, reading the script to EOF. No HTTP console
is started. The sidecar's client (``loadguard.actuator.bsh``) cannot tell the
difference; a remote host gets "connection refused".

The script is a fixed text with no substitution: nothing from the user or the test
reaches it.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

import psutil

from loadguard.errors import EngineError

#: File name written into the run folder.
FILE_NAME: Final = "loadguard-bsh-loopback.bsh"

LOOPBACK_SERVER_SCRIPT: Final = """\
// Written by LoadGuard: BeanShell session console on loopback only (see
// loadguard/jmeter/bsh_loopback.py). Overrides BeanShell's server(int) command.
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

void server(int port) {
    loadguardSessions = new ServerSocket(port + 1, 50, InetAddress.getLoopbackAddress());
    loadguardNamespace = global.namespace;
    session(Socket client) {
        run() {
            try {
                out = new PrintStream(client.getOutputStream());
                interp = new bsh.Interpreter(
                    new InputStreamReader(client.getInputStream()), out, out, true,
                    loadguardNamespace);
                interp.setExitOnEOF(false);
                interp.run();
            } finally {
                client.close();
            }
        }
        return this;
    }
    acceptor() {
        run() {
            while (true) {
                Socket c = loadguardSessions.accept();
                Thread t = new Thread(session(c), "loadguard-bsh-session");
                t.setDaemon(true);
                t.start();
            }
        }
        return this;
    }
    Thread a = new Thread(acceptor(), "loadguard-bsh-sessiond");
    a.setDaemon(true);
    a.start();
    print("LoadGuard: BeanShell sessions on "
        + loadguardSessions.getLocalSocketAddress() + " (loopback only)");
}
"""


def write_loopback_server_file(directory: Path) -> Path:
    """Write the init file into ``directory``; returns its absolute path
    (``beanshell.server.file``).

    Fails closed: JMeter falls back to its stock all-interfaces server when the file is
    missing or unreadable (it only logs a warning), so the file is read back and
    compared before anything starts. Raises ``EngineError`` when that fails."""
    path = (directory / FILE_NAME).absolute()
    try:
        path.write_text(LOOPBACK_SERVER_SCRIPT, encoding="ascii")
        back = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise EngineError(
            f"cannot set up the loopback-only BeanShell console at {path}: {exc}; no load started"
        ) from exc
    if back != LOOPBACK_SERVER_SCRIPT:
        raise EngineError(f"{path} does not read back as written; no load started")
    return path


def _is_loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def console_listeners(pid: int, port: int) -> list[str] | None:
    """The addresses process ``pid`` listens on at ``port`` (HTTP console) and ``port + 1``
    (session console), as ``ip:port``; ``None`` when the process is gone."""
    try:
        conns = psutil.Process(pid).net_connections("tcp")
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    return [
        f"{c.laddr.ip}:{c.laddr.port}"
        for c in conns
        if c.status == psutil.CONN_LISTEN and c.laddr.port in (port, port + 1)
    ]


def confirm_loopback_console(
    pid: int,
    port: int,
    *,
    alive: Callable[[], bool],
    stop: threading.Event,
    timeout_s: float = 90.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Wait for JMeter (``pid``, ``beanshell.server.port=port``) to open its session
    console, then confirm it is this module's: listening on ``port + 1`` on loopback only,
    with no HTTP console on ``port``.

    What the operating system says the JVM listens on is the evidence, not a reply on
    the socket (a stock server answers a script just as well). JMeter opens the console
    only after the test has started, hence the wait.

    Returns ``True`` once confirmed; ``False`` when JMeter ended or a stop was requested
    first (the caller's probe says why). Raises ``EngineError`` when the console listens
    beyond loopback, or has not come up within ``timeout_s``."""
    deadline = clock() + timeout_s
    while True:
        if stop.is_set() or not alive():
            return False
        found = console_listeners(pid, port)
        if found is None:
            return False
        if found:
            exposed = [a for a in found if not _is_loopback(a.rsplit(":", 1)[0])]
            http = [a for a in found if a.endswith(f":{port}")]
            if exposed or http:
                raise EngineError(
                    "JMeter's BeanShell console is not LoadGuard's loopback-only one "
                    f"(listening on {', '.join(found)}); the test was stopped"
                )
            return True
        if clock() >= deadline:
            raise EngineError(
                f"JMeter opened no BeanShell console on 127.0.0.1:{port + 1} within "
                f"{timeout_s:g}s; the test was stopped (see jmeter.log)"
            )
        sleep(0.1)
