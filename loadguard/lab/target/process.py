"""Running ``loadguard target`` as a child process and reading its ready line.

The demo (and any test that wants the target out of its own GIL) uses::

    with spawn_target(["--model", "mmc", "--workers", "8", "--service", "50ms",
                       "--p95", "300ms"]) as target:
        target.port, target.base_url, target.ready.lambda_star_rps

The child binds ``--port 0`` unless told otherwise and prints, once listening, one line

    loadguard target ready: url=http://127.0.0.1:PORT/tools.descartes.teastore.webui/
    port=PORT lambda_star=147.97 p95_ms=300 method=analytic workers=8 ...

(on one line), which ``parse_ready_line`` reads. ``stop()`` sends SIGTERM (the target
shuts down cleanly), and SIGKILL after a timeout. The child stays in the caller's process
group, so a Ctrl-C at the terminal reaches it too.
"""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from loadguard.errors import EngineError
from loadguard.lab.child import die_with_parent

READY_PREFIX = "loadguard target ready:"
_PAIR = re.compile(r"(\w+)=(\S+)")
_Ready = TypeVar("_Ready")


@dataclass(frozen=True, slots=True)
class TargetReady:
    """The ready line's fields."""

    url: str
    port: int
    lambda_star_rps: float | None
    slo_ms: float
    quantile: float
    method: str
    workers: int
    degraded_workers: int
    lambda_star_degraded_rps: float | None


def format_ready_line(ready: TargetReady) -> str:
    def num(x: float | None) -> str:
        return "inf" if x is None else f"{x:.3f}"

    return (
        f"{READY_PREFIX} url={ready.url} port={ready.port} lambda_star={num(ready.lambda_star_rps)}"
        f" slo_ms={ready.slo_ms:g} quantile={ready.quantile:g} method={ready.method}"
        f" workers={ready.workers} degraded_workers={ready.degraded_workers}"
        f" lambda_star_degraded={num(ready.lambda_star_degraded_rps)}"
    )


def parse_ready_line(line: str) -> TargetReady | None:
    """The fields of a ready line, or None for any other line."""
    if not line.startswith(READY_PREFIX):
        return None
    f = dict(_PAIR.findall(line[len(READY_PREFIX) :]))

    def num(key: str) -> float | None:
        return None if f[key] == "inf" else float(f[key])

    try:
        return TargetReady(
            url=f["url"],
            port=int(f["port"]),
            lambda_star_rps=num("lambda_star"),
            slo_ms=float(f["slo_ms"]),
            quantile=float(f["quantile"]),
            method=f["method"],
            workers=int(f["workers"]),
            degraded_workers=int(f["degraded_workers"]),
            lambda_star_degraded_rps=num("lambda_star_degraded"),
        )
    except (KeyError, ValueError):
        return None


class TargetProcess:
    """A running ``loadguard target`` child."""

    def __init__(self, proc: subprocess.Popen[str], ready: TargetReady, output: list[str]) -> None:
        self.proc = proc
        self.ready = ready
        self.output = output  # every line the child printed (drained by a thread)

    @property
    def port(self) -> int:
        return self.ready.port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/tools.descartes.teastore.webui`` (no trailing slash)."""
        return self.ready.url.rstrip("/")

    def stop(self, timeout_s: float = 5.0) -> int:
        """SIGTERM, wait, then SIGKILL; returns the exit code."""
        return stop_server(self.proc, timeout_s)


def stop_server(proc: subprocess.Popen[str], timeout_s: float) -> int:
    """SIGTERM a server child, wait up to ``timeout_s``, then SIGKILL; its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def start_server_command(
    command: str, options: Sequence[str], python: str = sys.executable
) -> tuple[subprocess.Popen[str], queue.Queue[str | None], list[str]]:
    """Start ``python -m loadguard COMMAND --port 0 <options>`` (a foreground server).

    Returns the process, a queue of its output lines (``None`` once it closes) and the
    list every line is also kept in; a daemon thread drains the pipe."""
    argv = [python, "-m", "loadguard", command]
    if "--port" not in options:
        argv += ["--port", "0"]
    argv += list(options)
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        # SIGTERM when the caller dies, even by SIGKILL: the server stops what it started.
        preexec_fn=die_with_parent(signal.SIGTERM),
    )
    lines: queue.Queue[str | None] = queue.Queue()
    output: list[str] = []

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line.rstrip("\n"))
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, name=f"loadguard-{command}-output", daemon=True).start()
    return proc, lines, output


@contextmanager
def spawn_target(
    options: Sequence[str] = (),
    *,
    python: str = sys.executable,
    startup_timeout_s: float = 60.0,
) -> Iterator[TargetProcess]:
    """Start ``python -m loadguard target --port 0 <options>``; yields once it listens."""
    proc, lines, output = start_server_command("target", options, python)
    target: TargetProcess | None = None
    try:
        ready = wait_ready_line(
            lines,
            output,
            startup_timeout_s,
            parse_ready_line,
            not_ready="the demo target printed no ready line",
            exited="the demo target exited before listening",
        )
        target = TargetProcess(proc, ready, output)
        yield target
    finally:
        if target is not None:
            target.stop()
        elif proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_ready_line(
    lines: queue.Queue[str | None],
    output: list[str],
    timeout_s: float,
    parse: Callable[[str], _Ready | None],
    *,
    not_ready: str,
    exited: str,
) -> _Ready:
    """The first output line ``parse`` accepts (stripped). ``EngineError`` "<not_ready> in
    <timeout>s" when none comes in time, "<exited>: <last lines>" when the child exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise EngineError(f"{not_ready} in {timeout_s:g}s")
        try:
            line = lines.get(timeout=remaining)
        except queue.Empty:
            continue
        if line is None:
            tail = " | ".join(output[-3:])
            raise EngineError(f"{exited}: {tail}")
        ready = parse(line.strip())
        if ready is not None:
            return ready
