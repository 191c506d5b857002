"""Shared pieces of the fault-injection suite: real JMeter, real sockets, bounded runs.

Everything started here is stopped in a ``finally``: JMeter JVMs by process group, the
sidecar by pid, servers and proxies by closing their sockets.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from loadguard.jmeter.bsh_loopback import write_loopback_server_file
from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.jmeter.launch import free_tcp_pair
from tests.jmeter_runner import kill_jmeters

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "jmx_templates" / "elastic_plan.jmx"
LOADGUARD = [sys.executable, "-m", "loadguard"]


def free_port() -> int:
    """A TCP port nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_args(
    out: Path,
    target_port: int,
    duration: str,
    *,
    extra: Sequence[str] = (),
    props: Sequence[str] = (),
    window: str = "3s",
    initial_rate: str = "10",
    max_rate: str = "60",
) -> list[str]:
    """``loadguard run`` on the Elastic plan: 1 s ticks, short window, loopback only."""
    args = [
        *LOADGUARD,
        "run",
        str(PLAN),
        "--out",
        str(out),
        "--p95",
        "250ms",
        "--error-rate",
        "1%",
        "--window",
        window,
        "--tick",
        "1s",
        "--initial-rate",
        initial_rate,
        "--max-rate",
        max_rate,
        "--duration",
        duration,
        "-q",
        "-J",
        f"target.port={target_port}",
        "-J",
        "threads=30",
        "-J",
        "duration=600",
        *[x for p in props for x in ("-J", p)],
        *extra,
    ]
    return args


@contextlib.contextmanager
def sidecar(args: list[str], cwd: Path, marker: str) -> Iterator[subprocess.Popen[str]]:
    """A ``loadguard`` process; killed (and its JMeter with it) if the test leaves early."""
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
        kill_jmeters(marker)


@dataclass
class Engine:
    """A JMeter the test started itself (for ``attach``): BeanShell on loopback only."""

    proc: subprocess.Popen[bytes]
    bsh_session_port: int
    jtl: Path
    folder: Path


@contextlib.contextmanager
def jmeter_engine(
    home: JMeterHome, folder: Path, target_port: int, tpm: float = 600.0, threads: int = 30
) -> Iterator[Engine]:
    folder.mkdir(parents=True, exist_ok=True)
    bsh = free_tcp_pair()
    jtl = folder / "results.jtl"
    args = [
        "-n",
        "-t",
        str(PLAN),
        "-l",
        str(jtl),
        "-j",
        str(folder / "jmeter.log"),
        f"-Jbeanshell.server.port={bsh}",
        f"-Jbeanshell.server.file={write_loopback_server_file(folder)}",
        "-Jjmeterengine.force.system.exit=true",
        "-Jjmeter.save.saveservice.autoflush=true",
        f"-Jloadguard.tpm={tpm}",
        f"-Jtarget.port={target_port}",
        f"-Jthreads={threads}",
        "-Jduration=300",
    ]
    proc = subprocess.Popen(
        jmeter_command(home, args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield Engine(proc, bsh + 1, jtl, folder)
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


class TcpProxy:
    """A loopback TCP proxy with three modes, switched at run time:

    * ``refuse``: nothing listens (connection refused);
    * ``forward``: every connection is piped to ``upstream``;
    * ``hang``: connections are accepted and then left unanswered.

    ``attempts`` counts connections accepted (refusals are not seen, by definition).
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.mode = "refuse"
        self.attempts = 0
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def set_mode(self, mode: str) -> None:
        with self._lock:
            self.mode = mode
            if mode == "refuse":
                self._close_all()
            elif self._listener is None:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", self.port))
                s.listen(16)
                self._listener = s
                self._thread = threading.Thread(target=self._accept, args=(s,), daemon=True)
                self._thread.start()

    def _close_all(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        for c in self._conns:
            with contextlib.suppress(OSError):
                c.close()
        self._conns.clear()

    def close(self) -> None:
        with self._lock:
            self._close_all()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                self.attempts += 1
                mode = self.mode
                self._conns.append(conn)
            if mode == "forward":
                threading.Thread(target=self._pipe_pair, args=(conn,), daemon=True).start()

    def _pipe_pair(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        with self._lock:
            self._conns.append(upstream)

        def pipe(a: socket.socket, b: socket.socket) -> None:
            try:
                while data := a.recv(65536):
                    b.sendall(data)
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass

        t = threading.Thread(target=pipe, args=(client, upstream), daemon=True)
        t.start()
        pipe(upstream, client)
        t.join(timeout=10)
        client.close()
        upstream.close()


class _FreezeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FreezableServer

    def do_GET(self) -> None:
        srv = self.server
        if srv.frozen.is_set():
            with srv.lock:
                srv.hung += 1
            srv.thawed.wait(60)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class FreezableServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """Answers at once until ``freeze()``; then holds every request until ``thaw()``."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _FreezeHandler)
        self.frozen = threading.Event()
        self.thawed = threading.Event()
        self.lock = threading.Lock()
        self.hung = 0
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def freeze(self) -> None:
        self.thawed.clear()
        self.frozen.set()

    def thaw(self) -> None:
        self.frozen.clear()
        self.thawed.set()

    def close(self) -> None:
        self.thaw()
        self.shutdown()
        self.server_close()
