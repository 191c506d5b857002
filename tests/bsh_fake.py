"""A loopback stand-in for JMeter's BeanShell session console, for unit tests.

It speaks the same protocol (read to EOF, reply, close) and understands exactly the
fixed-form statements ``loadguard.actuator.bsh`` builds; anything else gets the
``// Error:`` reply the real interpreter gives. Every script received is recorded.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_SET = re.compile(
    r'^org\.apache\.jmeter\.util\.JMeterUtils\.setProperty\("([A-Za-z0-9_.]+)", "([^"]*)"\);$'
)
_GET = re.compile(
    r'^print\(org\.apache\.jmeter\.util\.JMeterUtils\.getProperty\("([A-Za-z0-9_.]+)"\) == null'
)
_PRINT = re.compile(r'^print\("([^"]*)"\);$')


@dataclass
class FakeBeanShell:
    port: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    scripts: list[str] = field(default_factory=list)
    connections: int = 0
    delay_s: float = 0.0  # sleep before replying (a hung engine)
    mode: str = "ok"  # ok | error | truncate | wrong_echo

    def handle(self, script: str) -> str:
        out = ["BeanShell 2.0b6 - by Pat Niemeyer (pat@pat.net)\n"]
        for line in script.splitlines():
            out.append("bsh % ")
            if self.mode == "error":
                out.append("// Error: Parser Error: boom\n")
                break
            if (m := _SET.match(line)) is not None:
                value = "999.0" if self.mode == "wrong_echo" else m.group(2)
                self.properties[m.group(1)] = value
            elif (m := _GET.match(line)) is not None:
                value = self.properties.get(m.group(1))
                out.append("loadguard:unset\n" if value is None else f"loadguard:value={value}\n")
            elif (m := _PRINT.match(line)) is not None:
                if self.mode == "truncate":
                    break
                out.append(m.group(1) + "\n")
            else:
                out.append(f"// Error: Parser Error: unexpected {line[:40]}\n")
                break
        out.append("bsh % ")
        return "".join(out)


@contextmanager
def fake_bsh(**kwargs: object) -> Iterator[FakeBeanShell]:
    fake = FakeBeanShell(**kwargs)  # type: ignore[arg-type]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", fake.port))
    server.listen(16)
    server.settimeout(0.1)
    fake.port = server.getsockname()[1]
    stop = threading.Event()

    def serve_one(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            try:
                while chunk := conn.recv(4096):
                    data += chunk
            except OSError:
                return
            script = data.decode("latin-1")
            fake.scripts.append(script)
            if fake.delay_s:
                time.sleep(fake.delay_s)
            try:
                conn.sendall(fake.handle(script).encode("latin-1"))
            except OSError:
                return

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            fake.connections += 1
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        stop.set()
        thread.join(2)
        server.close()


def free_port() -> int:
    """A loopback TCP port nothing listens on (bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
