"""Real InfluxDB 1.x and Prometheus servers for the tests (Debian's ``influxdb`` and
``prometheus`` packages, installed by ``make servers``).

Each server runs as our child on free loopback ports with its data in a temporary folder,
and is stopped (or killed, for the fault tests) by the test. A missing binary is a
failure that says how to install it, never a skip.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def need(binary: str, package: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(
            f"{binary} not found: the test needs Debian's {package} package "
            f"(`make servers` installs it: apt-get install -y {package})"
        )
    return path


def _wait(
    check: Any, timeout_s: float, what: str, proc: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(requests.RequestException):
            if check():
                return
        time.sleep(0.1)
    pytest.fail(f"{what} not ready within {timeout_s:g} s: {log.read_text()[-2000:]}")


class InfluxServer:
    """``influxd`` 1.x on a free loopback port; ``start`` / ``kill`` / ``start`` again
    keep the same port and data folder (a restart)."""

    def __init__(self, folder: Path, *, auth: bool = False) -> None:
        self.binary = need("influxd", "influxdb")
        self.folder = folder
        self.port = free_port()
        self.rpc_port = free_port()
        self.auth = auth
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = folder / "influxd.log"
        self.config = folder / "influxdb.conf"
        self.config.write_text(
            f"""reporting-disabled = true
bind-address = "127.0.0.1:{self.rpc_port}"
[meta]
  dir = "{folder / "meta"}"
[data]
  dir = "{folder / "data"}"
  wal-dir = "{folder / "wal"}"
  query-log-enabled = false
[http]
  bind-address = "127.0.0.1:{self.port}"
  auth-enabled = {"true" if auth else "false"}
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
[subscriber]
  enabled = false
"""
        )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_url(self, db: str) -> str:
        return f"{self.base}/write?db={db}"

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [self.binary, "-config", str(self.config)], stdout=out, stderr=subprocess.STDOUT
            )
        _wait(
            lambda: requests.get(f"{self.base}/ping", timeout=1).status_code == 204,
            30,
            "influxd",
            self.proc,
            self.log,
        )

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def query(self, q: str, db: str | None = None, auth: tuple[str, str] | None = None) -> Any:
        """InfluxQL through ``/query``; the JSON answer (an error in it fails the test)."""
        params = {"q": q, "epoch": "ms"}
        if db is not None:
            params["db"] = db
        resp = requests.post(f"{self.base}/query", params=params, auth=auth, timeout=10)
        resp.raise_for_status()
        data = resp.json()
        for result in data.get("results", []):
            assert "error" not in result, f"{q}: {result['error']}"
        return data

    def points(self, q: str, db: str) -> list[dict[str, Any]]:
        """The rows of the first series of ``q``, as dicts (column -> value)."""
        rows: list[dict[str, Any]] = []
        for result in self.query(q, db)["results"]:
            for series in result.get("series", []):
                cols = series["columns"]
                tags = series.get("tags", {})
                rows += [
                    {**tags, **dict(zip(cols, values, strict=True))} for values in series["values"]
                ]
        return rows


@contextlib.contextmanager
def influx_server(folder: Path, *, auth: bool = False) -> Iterator[InfluxServer]:
    folder.mkdir(parents=True, exist_ok=True)
    server = InfluxServer(folder, auth=auth)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class PrometheusServer:
    """``prometheus`` on a free loopback port scraping ``targets`` every second."""

    def __init__(self, folder: Path, targets: list[str]) -> None:
        self.binary = need("prometheus", "prometheus")
        self.folder = folder
        self.port = free_port()
        self.log = folder / "prometheus.log"
        self.config = folder / "prometheus.yml"
        quoted = ", ".join(f"'{t}'" for t in targets)
        self.config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: loadguard\n"
            f"    static_configs:\n      - targets: [{quoted}]\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    f"--config.file={self.config}",
                    f"--storage.tsdb.path={self.folder / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        _wait(
            lambda: requests.get(f"{self.base}/-/ready", timeout=1).status_code == 200,
            60,
            "prometheus",
            self.proc,
            self.log,
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def api(self, path: str, **params: str) -> Any:
        resp = requests.get(f"{self.base}/api/v1/{path}", params=params, timeout=10)
        resp.raise_for_status()
        data = resp.json()
        assert data["status"] == "success", data
        return data["data"]


@contextlib.contextmanager
def prometheus_server(folder: Path, targets: list[str]) -> Iterator[PrometheusServer]:
    folder.mkdir(parents=True, exist_ok=True)
    server = PrometheusServer(folder, targets)
    server.start()
    try:
        yield server
    finally:
        server.stop()
