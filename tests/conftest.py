"""Shared fixtures.

Real-JMeter tests are marked ``jmeter``. They use the JMeter home that
``loadguard jmeter install`` provisioned (``make test`` does that first). When none is
found they are skipped, unless ``LOADGUARD_REQUIRE_JMETER=1`` (set by ``make test`` and
therefore by CI), in which case the missing install is a failure, never a silent skip.

The installed wheel and its one ``evaluate --quick`` run are session fixtures
(tests/installed_wheel.py): built and run once, checked by test_wheel.py and
test_evaluate_quick.py.
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
from tests.installed_wheel import (
    Installed,
    QuickEvaluation,
    build_and_install,
    run_quick_evaluation,
)

PLANS = Path(__file__).parent / "plans"


@pytest.fixture(scope="session")
def jmeter_home() -> JMeterHome:
    try:
        return find_jmeter_home()
    except JMeterNotFoundError as exc:
        if os.environ.get("LOADGUARD_REQUIRE_JMETER") == "1":
            pytest.fail(f"real JMeter required but missing: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory, jmeter_home: JMeterHome) -> Installed:
    """The wheel, built outside the checkout and installed into a fresh virtualenv."""
    return build_and_install(tmp_path_factory.mktemp("wheel"), jmeter_home)


@pytest.fixture(scope="session")
def quick_evaluation(installed_wheel: Installed) -> QuickEvaluation:
    """The installed wheel's ``loadguard evaluate --quick --out eval``, run once; it must
    have exited 0 (each test that uses it fails with its output otherwise)."""
    run = run_quick_evaluation(installed_wheel)
    assert run.returncode == 0, run.output[-3000:]
    return run


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
