"""JMeter's own HTML dashboard beside a real ``loadguard run`` (real JMeter 5.6.3, real
demo target on loopback): made by JMeter's generator from a CSV JTL, skipped in one line
for an XML JTL, off with --no-dashboard, and made later by ``loadguard report --dashboard``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from tests.conftest import PLANS

pytestmark = pytest.mark.jmeter


@pytest.fixture(scope="module")
def target() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=4, queue=100, service_s=0.020)) as t:
        yield t


def loadguard(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loadguard", *args],
        capture_output=True, text=True, timeout=240, cwd=cwd,
    )  # fmt: skip


def run(out: Path, port: int, *extra: str) -> subprocess.CompletedProcess[str]:
    """A real closed-loop run of the CTT plan, 10 s, paced by ``loadguard.tpm``."""
    proc = loadguard(
        "run", str(PLANS / "ctt_property.jmx"), "--no-inject", "--out", str(out),
        "--p95", "250ms", "--error-rate", "1%", "--window", "3s", "--tick", "1s",
        "--initial-rate", "10", "--max-rate", "60", "--duration", "10s", "-q",
        "-J", f"target.port={port}", "-J", "duration=600", *extra,
        cwd=out.parent,
    )  # fmt: skip
    # 0 PASS, 1 FAIL, 5 INCONCLUSIVE (10 s may end before the knee): never 2, 3 or 4.
    assert proc.returncode in (0, 1, 5), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


def check_dashboard_is_jmeters_own_of(run_dir: Path) -> None:
    index = run_dir / "dashboard" / "index.html"
    assert "<title>Apache JMeter Dashboard" in index.read_text()
    # JMeter's generator counted the very samples of this run's JTL.
    stats = json.loads((run_dir / "dashboard" / "statistics.json").read_text())
    jtl = pd.read_csv(run_dir / "results.jtl")
    assert stats["Total"]["sampleCount"] == len(jtl)
    assert stats["home"]["sampleCount"] == int((jtl["label"] == "home").sum())


def test_run_leaves_jmeters_own_dashboard_and_notes_it(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    proc = run(out, target.port)
    check_dashboard_is_jmeters_own_of(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dashboard"] == {
        "status": "made",
        "path": "dashboard/index.html",
        "reason": None,
    }
    assert f"dashboard: {out / 'dashboard' / 'index.html'} (JMeter's HTML dashboard)" in proc.stderr
    assert not list(out.glob(".dashboard-*"))  # no staging folder left behind


def test_an_xml_jtl_gets_the_one_line_skip(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    out = tmp_path / "xml"
    proc = run(out, target.port, "-J", "jmeter.save.saveservice.output_format=xml")
    assert (out / "results.jtl").read_text().lstrip().startswith("<?xml")
    assert not (out / "dashboard").exists()
    why = "results.jtl is an XML JTL; JMeter's dashboard reads CSV JTLs only"
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("dashboard")]
    assert lines == [f"dashboard skipped: {why}"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dashboard"] == {"status": "skipped", "path": None, "reason": why}
    # The run itself is whole: its verdict and headline are there.
    assert summary["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE")
    assert summary["headline"]["text"]


def test_no_dashboard_then_report_dashboard_makes_it_for_the_finished_folder(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    out = tmp_path / "later"
    run(out, target.port, "--no-dashboard")
    assert not (out / "dashboard").exists()
    assert json.loads((out / "summary.json").read_text())["dashboard"]["reason"] == "--no-dashboard"
    made = loadguard("report", str(out), "--dashboard", cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    check_dashboard_is_jmeters_own_of(out)
    assert json.loads((out / "summary.json").read_text())["dashboard"]["status"] == "made"
    assert 'href="dashboard/index.html"' in (out / "report.html").read_text()
