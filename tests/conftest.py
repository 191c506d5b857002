"""Shared fixtures.

Real-JMeter tests are marked ``jmeter``. They use the JMeter home that
``loadguard jmeter install`` provisioned (``make test`` does that first). When none is
found they are skipped, unless ``LOADGUARD_REQUIRE_JMETER=1`` (set by ``make test`` and
therefore by CI), in which case the missing install is a failure, never a silent skip.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from loadguard.errors import JMeterNotFoundError
from loadguard.jmeter.home import JMeterHome, find_jmeter_home

PLANS = Path(__file__).parent / "plans"


@pytest.fixture(scope="session")
def jmeter_home() -> JMeterHome:
    try:
        return find_jmeter_home()
    except JMeterNotFoundError as exc:
        if os.environ.get("LOADGUARD_REQUIRE_JMETER") == "1":
            pytest.fail(f"real JMeter required but missing: {exc}")
        pytest.skip(str(exc))


class _OkHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture()
def ok_server() -> Iterator[int]:
    """A loopback HTTP server answering 200 at once; yields its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OkHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
