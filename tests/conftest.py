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


#: Test files that run alone, after the others (``make test``'s third pass, no xdist): the
#: real TeaStore's Tomcats take both cores (beside them a JMeter took over a minute to write
#: its first sample, and the quick evaluation's TeaStore run was not covered), and the
#: installed wheel's demo and quick evaluation judge a closed loop on the demo target
#: (beside another test's JMeter the demo's ramp never left 5 req/s in 45 s). The wheel's
#: two files share one session: they run in the same pass.
ALONE_FILES = frozenset(
    {
        "test_budget_real.py",
        "test_evaluate_quick.py",
        "test_evaluate_teastore_quick.py",
        "test_teastore_example.py",
        "test_teastore_real.py",
        "test_wheel.py",
    }
)

#: Test files that load the CPU (Chromium, a run at the demo target's knee) or judge
#: latencies against a known capacity: under ``make test``'s pytest-xdist pass they run one
#: after another on one worker (the scope "cpu"), never two at once; every other file is a
#: scope of its own (its module fixtures run once) and runs beside them on the other workers.
CPU_BOUND_FILES = frozenset(
    {
        "test_report_chromium.py",
        "test_sidecar_e2e.py",
        "test_suite_real.py",
    }
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of ``ALONE_FILES`` ``alone`` (``-m alone`` selects them)."""
    for item in items:
        if item.path.name in ALONE_FILES:
            item.add_marker(pytest.mark.alone)


def _scope(nodeid: str) -> str:
    """The file of a test, or "cpu" for every file of ``CPU_BOUND_FILES``."""
    path = nodeid.split("::", 1)[0]
    return "cpu" if path.rsplit("/", 1)[-1] in CPU_BOUND_FILES else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadscope`` by ``_scope``: a file per worker at a time, the CPU-bound
    files all on one. (xdist's own ``loadgroup`` renames ``item._nodeid``, which pytest 9
    no longer reads: it scheduled every test on its own.) Optional: under ``-p no:xdist``
    (``make test``'s last pass) the hook is not declared, and pytest would refuse it."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _ByScope(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return _ByScope(config, log)
