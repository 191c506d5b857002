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

import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from loadguard.lab.target.process import start_server_command, stop_server, wait_ready_line

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
        url, port = wait_ready_line(
            lines,
            output,
            startup_timeout_s,
            parse_ready,
            not_ready="loadguard teastore was not ready",
            exited="loadguard teastore exited before it was ready",
        )
        yield TeaStoreProcess(proc, url, port, output)
    finally:
        stop_server(proc, stop_timeout_s)
