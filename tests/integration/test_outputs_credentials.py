"""Credentials and unavailable outputs against a real InfluxDB 1.x with authentication on.

``attach --dry-run`` runs the real sidecar (CLI, loop, outputs) without JMeter; the
``--influx-required`` case uses ``run`` to show JMeter is never started.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadguard.jmeter.home import JMeterHome
from tests.jmeter_runner import read_decisions
from tests.servers import InfluxServer, influx_server

REPO = Path(__file__).resolve().parents[2]
LOADGUARD = [sys.executable, "-m", "loadguard"]
SECRET = "pw-Zq81xT-secret"
DB = "jmeter"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InfluxServer]:
    with influx_server(tmp_path_factory.mktemp("influx-auth"), auth=True) as server:
        # With no user yet, InfluxDB 1.x lets the first admin be created without auth.
        server.query(f"CREATE USER admin WITH PASSWORD '{SECRET}' WITH ALL PRIVILEGES")
        server.query(f"CREATE DATABASE {DB}", auth=("admin", SECRET))
        yield server


def attach(
    out: Path, url: str, token: str | None, *extra: str, token_file: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LOADGUARD_INFLUX_TOKEN"}
    if token is not None:
        env["LOADGUARD_INFLUX_TOKEN"] = token
    args = [*LOADGUARD, "attach", "--jtl", str(out / "results.jtl"), "--dry-run", "-v",
            "--duration", "3s", "--tick", "1s", "--p95", "250ms", "--out", str(out),
            "--influx", url, *extra]  # fmt: skip
    if token_file is not None:
        args += ["--influx-token-file", str(token_file)]
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=env, cwd=out)


def _everything_written(out: Path, proc: subprocess.CompletedProcess[str]) -> str:
    files = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    return proc.stdout + proc.stderr + files


def test_the_token_reaches_influxdb_and_never_any_log_row_or_summary(
    secured: InfluxServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    proc = attach(out, secured.write_url(DB), f"admin:{SECRET}", "--application", "authapp")
    assert proc.returncode == 1, proc.stderr  # NO_DATA: nothing ran, and that is the verdict
    data = secured.query(
        "SELECT count(rate) FROM loadguard WHERE application = 'authapp'", DB, ("admin", SECRET)
    )
    ticks = data["results"][0]["series"][0]["values"][0][1]
    summary = json.loads((out / "summary.json").read_text())
    rows = read_decisions(out / "decisions.csv")
    assert len(rows) >= 2 and ticks == len(rows)
    assert summary["outputs"]["influx"]["points_dropped"] == 0
    assert SECRET not in _everything_written(out, proc)


def test_the_token_file_is_read_when_the_environment_has_none(
    secured: InfluxServer, tmp_path: Path
) -> None:
    token_file = tmp_path / "influx.token"
    token_file.write_text(f"admin:{SECRET}\n")
    out = tmp_path / "run"
    proc = attach(out, secured.write_url(DB), None, "--application", "fileapp",
                  token_file=token_file)  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outputs"]["influx"]["points_written"] >= 3, proc.stderr
    assert SECRET not in _everything_written(out, proc).replace(token_file.read_text(), "")


def test_a_refused_token_is_one_warning_line_and_the_run_goes_on(
    secured: InfluxServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    wrong = "admin:not-the-password-77"
    proc = attach(out, secured.write_url(DB), wrong)
    assert proc.returncode == 1, proc.stderr  # the run's own verdict, not a usage error
    warnings = [line for line in proc.stderr.splitlines() if "influx" in line and "WARNING" in line]
    assert len(warnings) == 1, proc.stderr
    assert "credentials refused (HTTP 401)" in warnings[0]
    assert "the run goes on without it" in warnings[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outputs"]["influx"]["status"] == "unavailable"
    assert len(read_decisions(out / "decisions.csv")) >= 2  # the loop ran its ticks
    assert "not-the-password-77" not in _everything_written(out, proc)


def test_influx_required_with_a_refused_token_exits_2_before_jmeter_starts(
    jmeter_home: JMeterHome, secured: InfluxServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "LOADGUARD_INFLUX_TOKEN": "admin:wrong-one-55"}
    proc = subprocess.run(
        [*LOADGUARD, "run", str(REPO / "jmx_templates" / "elastic_plan.jmx"), "--out", str(out),
         "--p95", "250ms", "--duration", "20s", "-q", "--influx", secured.write_url(DB),
         "--influx-required"],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith("error: --influx-required: ") and "credentials refused" in errors[0]
    assert not (out / "results.jtl").exists() and not (out / "jmeter.log").exists()
    assert "wrong-one-55" not in proc.stderr
