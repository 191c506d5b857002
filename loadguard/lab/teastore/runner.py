"""Starting TeaStore's Tomcats, waiting until TeaStore is ready, stopping every JVM.

::

    with running_teastore(ensure_build(source).build, TeaStoreOptions(layout="single")) as ts:
        ts.port, ts.url        # http://127.0.0.1:PORT/tools.descartes.teastore.webui/

``start`` picks the ports (the web UI's is ``port``, 0 for a free one; every other
service of the per-service layout gets a free one), writes a fresh instance folder per
run (``$TMPDIR/loadguard-teastore-*``, one CATALINA_BASE per Tomcat) and starts every
Tomcat at once: the services retry their registration and wait for the persistence
service themselves. ``wait_ready`` polls the status page every ``poll_s`` until it shows
every service ready (``status``), a login as ``user1`` succeeds (``login_works``) and
the home, category and product pages have each been served once (``pages_work``: their
first views compile JSPs and scale images), failing early when a JVM exits. ``stop`` SIGTERMs every
Tomcat's process group, SIGKILLs what is left after ``stop_grace_s``, and removes the
instance folder (kept after a failed start when the logs are in it).
"""

from __future__ import annotations

import contextlib
import http.client
import re
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from loadguard.errors import EngineError
from loadguard.jmeter.install import require_tool
from loadguard.lab.teastore.build import Build
from loadguard.lab.teastore.layout import HOST, SERVICES, WEBUI, plan, webui_url
from loadguard.lab.teastore.status import Status, parse_status
from loadguard.lab.teastore.tomcat import Tomcat, java_command, prepare, stop_all

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


@dataclass(frozen=True)
class TeaStoreOptions:
    layout: str = "single"
    port: int = 0
    heap: str = "512m"  # -Xmx of every Tomcat JVM
    max_threads: int = 200  # the HTTP connector's maxThreads, per Tomcat
    logs: Path | None = None  # catalina + access logs (per-service: one folder each)
    start_timeout_s: float = 600.0
    #: SIGTERM to SIGKILL. TeaStore 1.4.2 never stops cleanly in 20 s (its services'
    #: registry clients wait on calls through the connector Tomcat has already paused:
    #: read timeouts, 5-6 s per webapp, half of them undeployed after 20 s; the access
    #: log is flushed only at the end of that), so the wait bought nothing but time.
    stop_grace_s: float = 5.0
    poll_s: float = 2.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _check_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError as exc:
            raise EngineError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from exc


def pick_ports(layout: str, port: int) -> dict[str, int]:
    """Each service's port: the web UI's is ``port`` (0: a free one)."""
    if port:
        _check_free(port)
    webui = port or free_port()
    if layout == "single":
        return dict.fromkeys(SERVICES, webui)
    ports = {WEBUI: webui}
    for service in SERVICES:
        while service not in ports:
            cand = free_port()
            if cand not in ports.values():
                ports[service] = cand
    return ports


def login_works(port: int, timeout_s: float = 30.0) -> bool:
    """POST TeaStore's login form as ``user1``/``password``: True when it redirects home
    (a failed login redirects to ``/login``), i.e. web UI -> auth -> persistence works."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout_s)
    try:
        body = urllib.parse.urlencode({"username": "user1", "password": "password"})
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        conn.request("POST", f"/{WEBUI}/loginAction", body, headers)
        resp = conn.getresponse()
        resp.read()
        location = resp.getheader("Location") or ""
        return resp.status == 302 and location.rstrip("/").endswith(WEBUI)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def _get(port: int, path: str, timeout_s: float) -> tuple[int, str]:
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout_s)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


def pages_work(port: int, timeout_s: float = 30.0) -> bool:
    """GET the home page, every category's first page and one product page: True when
    all answer 200. Their first requests after a start compile JSPs and scale images,
    which on a busy machine can outlast TeaStore's 6 s inter-service read timeout (a 500)."""
    base = f"/{WEBUI}/"
    try:
        status, home = _get(port, base, timeout_s)
        categories = sorted(set(re.findall(r"category=([0-9]+)", home)))
        if status != 200 or not categories:
            return False
        product = None
        for cat in categories:
            status, page = _get(port, f"{base}category?category={cat}&page=1", timeout_s)
            if status != 200:
                return False
            found = re.search(r'name="productid" value="([0-9]+)"', page)
            product = product or (found.group(1) if found else None)
        if product is None:
            return False
        status, _ = _get(port, f"{base}product?id={product}", timeout_s)
        return status == 200
    except (OSError, http.client.HTTPException):
        return False


def fetch_status(url: str, timeout_s: float = 10.0) -> Status | None:
    """The parsed status page, or None when it does not answer 200 yet."""
    try:
        with urllib.request.urlopen(url + "status", timeout=timeout_s) as resp:
            html = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return parse_status(html)


class TeaStore:
    """TeaStore's Tomcats for one run."""

    def __init__(self, build: Build, options: TeaStoreOptions, log: Log = _quiet) -> None:
        self.build = build
        self.options = options
        self.log = log
        self.tomcats: list[Tomcat] = []
        self.instance: Path | None = None
        self.port = 0
        self.last_status: Status | None = None

    @property
    def url(self) -> str:
        return webui_url(self.port)

    def logs_of(self, name: str) -> Path:
        if self.options.logs is not None:
            logs = self.options.logs
            return logs if self.options.layout == "single" else logs / name
        assert self.instance is not None
        return self.instance / name / "logs"

    def start(self) -> None:
        java = require_tool("java", "a JDK 17 (apt-get install openjdk-17-jdk-headless)")
        ports = pick_ports(self.options.layout, self.options.port)
        self.port = ports[WEBUI]
        self.instance = Path(tempfile.mkdtemp(prefix="loadguard-teastore-"))
        specs = plan(self.options.layout, ports)
        for spec in specs:
            base = self.instance / spec.name
            logs = None
            if self.options.logs is not None:
                logs = self.logs_of(spec.name)
            prepare(base, spec, self.build, self.options.max_threads, logs)
        for spec in specs:
            base = self.instance / spec.name
            cmd = java_command(java, self.build.tomcat_home, base, self.options.heap)
            self.tomcats.append(Tomcat(spec, base, cmd))
            self.log(f"started Tomcat {spec.name} (pid {self.tomcats[-1].pid}) on port {spec.port}")

    def check_alive(self, when: str = "") -> None:
        """Raise ``EngineError`` naming the first Tomcat that has exited (``when``: where)."""
        for t in self.tomcats:
            if not t.alive():
                raise EngineError(
                    f"Tomcat {t.spec.name} exited with code {t.proc.returncode}{when}; "
                    f"see {t.out_path}"
                )

    def wait_ready(self) -> Status:
        """Poll the status page until TeaStore is ready; raises EngineError otherwise."""
        deadline = time.monotonic() + self.options.start_timeout_s
        shown = ""
        while True:
            self.check_alive(" during startup")
            status = fetch_status(self.url)
            self.last_status = status
            if status is not None:
                # The status page can be all green while the auth service's client for
                # the persistence service is not set up yet: a first login then fails.
                if status.ready:
                    if not login_works(self.port):
                        summary = status.summary() + ", a login fails"
                    elif not pages_work(self.port):
                        summary = status.summary() + ", a first page view fails"
                    else:
                        return status
                else:
                    summary = status.summary()
                if summary != shown:
                    shown = summary
                    self.log(f"waiting: {shown}")
            if time.monotonic() >= deadline:
                state = status.summary() if status else "the status page does not answer"
                raise EngineError(
                    f"TeaStore was not ready after {self.options.start_timeout_s:g}s ({state}); "
                    f"see the logs in {self.logs_of(self.tomcats[0].spec.name).parent}"
                )
            time.sleep(self.options.poll_s)

    def pids(self) -> list[int]:
        return [t.pid for t in self.tomcats]

    def rss_bytes(self) -> int:
        """Resident memory of every Tomcat JVM, summed."""
        total = 0
        for t in self.tomcats:
            with contextlib.suppress(psutil.Error):
                total += int(psutil.Process(t.pid).memory_info().rss)
        return total

    def stop(self, keep_instance: bool = False) -> None:
        stop_all(self.tomcats, self.options.stop_grace_s)
        if self.instance is not None and not keep_instance:
            shutil.rmtree(self.instance, ignore_errors=True)


@contextlib.contextmanager
def running_teastore(
    build: Build, options: TeaStoreOptions, log: Log = _quiet
) -> Iterator[TeaStore]:
    """Start TeaStore, yield once it is ready, stop every JVM on the way out."""
    store = TeaStore(build, options, log)
    ok = False
    try:
        store.start()
        store.wait_ready()
        ok = True
        yield store
    finally:
        # After a failed start, keep the instance folder when the logs are in it.
        store.stop(keep_instance=not ok and options.logs is None)
