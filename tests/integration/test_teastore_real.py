"""The real TeaStore: ``loadguard teastore`` builds it (or reuses the cached build), the
examples/teastore plan runs against it through real JMeter with every sampler
succeeding, and SIGTERM leaves no Tomcat JVM behind.

A cold build (no cache, Maven downloading into ~/.m2) takes about a minute more; the
build is cached under $LOADGUARD_HOME/teastore between runs on a machine.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from loadguard.jmeter.home import JMeterHome
from tests.integration.test_teastore_example import PLAN, SAMPLERS
from tests.jmeter_runner import read_jtl, run_jmeter
from tests.teastore_source import teastore_source

pytestmark = [pytest.mark.jmeter, pytest.mark.slow]

READY = re.compile(r"^loadguard teastore ready: url=(\S+) port=(\d+)$")
START_TIMEOUT_S = 900.0  # a cold build plus a start on a busy 2-core machine


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str
    port: int
    output: list[str] = field(default_factory=list)


def _tomcat_jvms(pid: int) -> list[psutil.Process]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [c for c in children if "org.apache.catalina.startup.Bootstrap" in c.cmdline()]


@contextlib.contextmanager
def serve(logs: Path, *options: str) -> Iterator[Served]:
    """``loadguard teastore --port 0 OPTIONS`` as a child; yields once it is ready."""
    argv = [sys.executable, "-m", "loadguard", "teastore", "--port", "0"]
    argv += ["--source", str(teastore_source()), "--logs", str(logs), *options]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    lines: queue.Queue[str | None] = queue.Queue()
    output: list[str] = []

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line.rstrip("\n"))
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        match = None
        while match is None:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no ready line in {START_TIMEOUT_S:g}s: {output[-5:]}")
            if line is None:
                pytest.fail(f"loadguard teastore exited ({proc.wait()}): {output[-5:]}")
            match = READY.match(line)
        yield Served(proc, match.group(1), int(match.group(2)), output)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(90)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture()
def teastore(tmp_path: Path) -> Iterator[Served]:
    with serve(tmp_path / "logs") as served:
        yield served


def _stop_and_check_no_jvm_is_left(served: Served, jvms: list[psutil.Process]) -> None:
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(90) == 0
    _gone, alive = psutil.wait_procs(jvms, timeout=5)
    assert not alive, [p.pid for p in alive]
    assert any("stopped every Tomcat" in line for line in served.output)


@pytest.mark.timeout(1500)
def test_browse_plan_runs_against_the_real_teastore_and_stop_leaves_no_jvm(
    teastore: Served, jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    assert teastore.url == f"http://127.0.0.1:{teastore.port}/tools.descartes.teastore.webui/"
    jvms = _tomcat_jvms(teastore.proc.pid)
    assert len(jvms) == 1  # the single layout
    jtl, result = run_jmeter(
        jmeter_home,
        PLAN,
        tmp_path,
        props={
            "hostname": "127.0.0.1",
            "port": teastore.port,
            "numUser": 10,
            "rampUp": 1,
            "duration": 40,
            "loadguard.tpm": 300,  # 5 samples/s: far below the knee
        },
        timeout=240,
    )
    assert result.returncode == 0, result.stdout
    df = read_jtl(jtl)
    top = df[~df["label"].str.contains(r"-\d+$")]
    failed = df[~df["success"]]
    assert failed.empty, failed[["label", "responseCode", "URL"]].to_string()
    assert set(top["label"]) == SAMPLERS
    assert len(top) >= 40, len(top)  # (a cold JIT on a busy machine is slow)
    # The logins succeeded: TeaStore redirects a good login home, a bad one to /login
    # (a 200 either way, so JMeter counts both as successes).
    logins = df.loc[df["label"] == "Login-1", "URL"]
    assert len(logins) > 0 and logins.str.endswith("/tools.descartes.teastore.webui/").all()
    # Real product ids were extracted and added to the cart.
    products = df.loc[df["label"] == "Look at Product", "URL"]
    assert products.str.contains(r"[?&]id=[0-9]+$").all()
    assert df.loc[df["label"] == "Add Product to Cart-1", "URL"].str.endswith("/cart").all()
    # The access log is where --logs put it.
    access = list((tmp_path / "logs").glob("all_access*.log"))
    assert access and "GET /tools.descartes.teastore.webui/product?id=" in access[0].read_text()

    _stop_and_check_no_jvm_is_left(teastore, jvms)


@pytest.mark.timeout(1500)
def test_per_service_layout_runs_six_tomcats_found_through_the_registry(tmp_path: Path) -> None:
    with serve(tmp_path / "logs", "--layout", "per-service") as served:
        jvms = _tomcat_jvms(served.proc.pid)
        assert len(jvms) == 6
        # The registry (in its own Tomcat) lists every service at its own port.
        registry = _registry_port(tmp_path / "logs" / "registry")
        ports = {}
        for service in ("persistence", "auth", "image", "recommender", "webui"):
            url = (
                f"http://127.0.0.1:{registry}/tools.descartes.teastore.registry/rest/services/"
                f"tools.descartes.teastore.{service}/"
            )
            with urllib.request.urlopen(url, timeout=30) as resp:
                (server,) = json.loads(resp.read())
            host, _, port = server.partition(":")
            assert host == "127.0.0.1"
            ports[service] = int(port)
        assert ports["webui"] == served.port
        assert len(set(ports.values()) | {registry}) == 6
        # A page that needs persistence, image and recommender answers.
        with urllib.request.urlopen(served.url + "product?id=7", timeout=30) as resp:
            assert resp.status == 200 and b"productid" in resp.read()
        _stop_and_check_no_jvm_is_left(served, jvms)


def _registry_port(logs: Path) -> int:
    """The registry Tomcat's port, from its own log of the connector it started."""
    text = "".join(p.read_text() for p in logs.glob("catalina.*.log"))
    match = re.search(r'"http-nio-127\.0\.0\.1-(\d+)"', text)
    assert match, "the registry's log names no connector"
    return int(match.group(1))
