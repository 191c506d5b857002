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

from pathlib import Path
from typing import Final

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
    """Write the init file into ``directory``; returns its path (``beanshell.server.file``)."""
    path = directory / FILE_NAME
    path.write_text(LOOPBACK_SERVER_SCRIPT, encoding="ascii")
    return path
