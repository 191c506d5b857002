"""Running ``loadguard teastore`` as a child process and reading its ready line.

::

    with spawn_teastore(["--layout", "single"]) as store:
        store.port, store.url

The child gets ``--port 0`` unless told otherwise and prints, once TeaStore is ready,
``loadguard teastore ready: url=http://127.0.0.1:PORT/tools.descartes.teastore.webui/
port=PORT``. On the way out it is sent SIGTERM (it then stops every Tomcat JVM it
started) and SIGKILL only if it has not exited after ``stop_timeout_s``.
"""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from loadguard.errors import EngineError
from loadguard.target.process import start_server_command

READY = re.compile(r"^loadguard teastore ready: url=(\S+) port=(\d+)$")


@dataclass(frozen=True)
class TeaStoreProcess:
    proc: subprocess.Popen[str]
    url: str
    port: int
    output: list[str]


def parse_ready(line: str) -> tuple[str, int] | None:
    match = READY.match(line.strip())
    return (match.group(1), int(match.group(2))) if match else None


@contextmanager
def spawn_teastore(
    options: Sequence[str] = (),
    *,
    python: str = sys.executable,
    startup_timeout_s: float = 900.0,
    stop_timeout_s: float = 60.0,
) -> Iterator[TeaStoreProcess]:
    proc, lines, output = start_server_command("teastore", options, python)
    try:
        deadline = time.monotonic() + startup_timeout_s
        ready = None
        while ready is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EngineError(f"loadguard teastore was not ready in {startup_timeout_s:g}s")
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                tail = " | ".join(output[-3:])
                raise EngineError(f"loadguard teastore exited before it was ready: {tail}")
            ready = parse_ready(line)
        yield TeaStoreProcess(proc, ready[0], ready[1], output)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(stop_timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
