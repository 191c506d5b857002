"""`loadguard report` on a real JMeter run, viewed in Debian's headless Chromium.

The run: a real closed-loop ``loadguard run`` (20 s, 1 s ticks, 3 s window, p95 <= 250 ms):
real JMeter 5.6.3 on tests/plans/ctt_property.jmx (a Constant Throughput Timer reading
``loadguard.tpm``, so no injection is needed) against the embedded demo target as an M/M/2
queue on loopback. Its run directory (decisions.csv, summary.json, results.jtl) is what
the report is rendered from.

No-network check, three layers:

1. static: the HTML has no ``<script>``, ``<link>``, ``<iframe>`` and no src/href/url()
   other than ``#`` fragments and ``data:``;
2. isolation: Chromium runs with ``--host-resolver-rules="MAP * ~NOTFOUND"`` so no name
   resolves even if something tried;
3. evidence: Chromium's net log (``--log-net-log``) is read back and every
   ``URL_REQUEST_START_JOB`` made *by the page* must be ``file:``/``data:``. Requests made
   by the page carry the page's network partition (``file://``) and an initiator origin;
   Chromium's own background fetches (component updater, sign-in probe: still made even
   with --disable-background-networking) carry the initiator ``not an origin`` and are
   not the page's doing. A positive control page with an external ``<img>`` proves the
   net-log check sees a page request in this Chromium build.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import image

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import running_target
from loadguard.report import render_compare, render_report
from tests.conftest import PLANS
from tests.unit.test_report_render import external_refs

pytestmark = pytest.mark.jmeter

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("LOADGUARD_REQUIRE_JMETER") == "1":
            pytest.fail("chromium missing: `make chromium` installs Debian's package")
        pytest.skip("chromium not installed (make chromium)")
    return path


def run_chromium(url: str, *extra: str, timeout: float = 120.0) -> tuple[str, Path]:
    """Run headless Chromium on ``url`` with a fresh profile; returns stdout and the net log."""
    profile = Path(tempfile.mkdtemp(prefix="lg-chromium-"))
    netlog = profile / "netlog.json"
    args = [chromium_path(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    args += [f"--log-net-log={netlog}", *extra, url]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, f"chromium exited {proc.returncode}"
    kept = Path(tempfile.mkdtemp(prefix="lg-netlog-")) / "netlog.json"
    shutil.move(netlog, kept)
    shutil.rmtree(profile, ignore_errors=True)
    return out, kept


def page_requests(netlog: Path) -> list[str]:
    """URLs of every network request the *page* made (see module docstring)."""
    data = json.loads(netlog.read_text())
    start_job = data["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in data["events"]:
        params = event.get("params") or {}
        if event["type"] != start_job or "url" not in params:
            continue
        by_page = params.get("initiator") != "not an origin" or "file://" in str(
            params.get("network_isolation_key", "")
        )
        if by_page:
            urls.append(str(params["url"]))
    return urls


def loadguard_run(out: Path, port: int) -> subprocess.CompletedProcess[str]:
    """A real closed-loop ``loadguard run``: JMeter paced by ``loadguard.tpm`` (CTT, shared)."""
    args = [
        sys.executable, "-m", "loadguard", "run", str(PLANS / "ctt_property.jmx"), "--no-inject",
        "--out", str(out), "--p95", "250ms", "--error-rate", "1%", "--window", "3s",
        "--tick", "1s", "--initial-rate", "10", "--max-rate", "80", "--duration", "20s", "-q",
        "-J", f"target.port={port}", "-J", "duration=600",
    ]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, timeout=180, cwd=out.parent)


@pytest.fixture(scope="module")
def real_report(jmeter_home: JMeterHome, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # M/M/2 with 50 ms service: lambda* ~ 26 req/s at p95 <= 250 ms; JMeter's first
    # undelayed samples from 5 threads breach at once, so the run shows the loop react.
    run_dir = tmp_path_factory.mktemp("real-run") / "run"
    with running_target(build_model("mmc", workers=2, queue=100, service_s=0.050)) as target:
        proc = loadguard_run(run_dir, target.port)
    assert proc.returncode in (0, 1, 5), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return render_report(run_dir)


def test_report_comes_from_a_real_closed_loop_run(real_report: Path) -> None:
    log = pd.read_csv(real_report.parent / "decisions.csv")
    assert (log["samples"] > 0).sum() >= 10
    assert log["applied"].any(), "no rate was ever pushed into JMeter"
    assert log["zone"].nunique() >= 2  # NO_DATA while JMeter starts, then evaluated windows
    assert (real_report.parent / "results.jtl").stat().st_size > 0


def test_report_renders_in_chromium_with_charts_and_tables(real_report: Path) -> None:
    dom, _ = run_chromium(real_report.as_uri(), "--dump-dom")
    # One more when a label breached: its p95 over time.
    assert len(re.findall(r"<svg\b", dom)) == 5 + ('id="chart-labels"' in dom)
    for chart in ("knee", "rate", "latency", "errors", "throughput"):
        assert f'id="chart-{chart}"' in dom
    summary = re.search(r'<table id="summary-table">(.*?)</table>', dom, re.S)
    assert summary is not None and "<th>Verdict</th>" in summary.group(1)
    labels = re.search(r'<table id="labels">(.*?)</table>', dom, re.S)
    assert labels is not None and "<td>home</td>" in labels.group(1)
    assert "summary.json" in dom


def test_headline_in_chromium_is_the_sentence_summary_json_holds(real_report: Path) -> None:
    dom, _ = run_chromium(real_report.as_uri(), "--dump-dom")
    summary = json.loads((real_report.parent / "summary.json").read_text())
    shown = re.search(r'<span id="headline-text">([^<]*)</span>', dom)
    assert shown is not None and html.unescape(shown.group(1)) == summary["headline"]["text"]
    assert summary["headline"]["text"].startswith(("Sustained", "p95", "Capacity", "No window"))
    # The headline comes first, then the knee chart, then the summary table.
    assert dom.index('id="headline"') < dom.index('id="chart-knee"') < dom.index('id="summary"')


def test_knee_chart_in_chromium_has_its_axes_and_the_slo_line(real_report: Path) -> None:
    dom, _ = run_chromium(real_report.as_uri(), "--dump-dom")
    knee = re.search(r'id="chart-knee">(.*?)</section>', dom, re.S)
    assert knee is not None
    text = html.unescape(re.sub(r"<[^>]+>", " ", knee.group(1)))
    for words in ("achieved throughput (req/s, window rps)", "latency (ms)", "error rate (%)",
                  "SLO p95 250 ms", "keyed on completion time"):  # fmt: skip
        assert words in " ".join(text.split()), words


def test_summary_table_in_chromium_shows_no_snake_case_key(real_report: Path) -> None:
    dom, _ = run_chromium(real_report.as_uri(), "--dump-dom")
    table = re.search(r'<table id="summary-table">(.*?)</table>', dom, re.S)
    assert table is not None
    words = html.unescape(re.sub(r"<[^>]+>", " ", table.group(1)))
    assert "Run length" in words and "Held rate" in words
    assert re.findall(r"\b[a-z0-9]+_[a-z0-9_]+\b", words) == []


def test_dashboard_link_resolves_to_jmeters_dashboard(real_report: Path) -> None:
    dom, _ = run_chromium(real_report.as_uri(), "--dump-dom")
    link = re.search(r'<a href="([^"]+)">', dom)
    assert link is not None and link.group(1) == "dashboard/index.html"
    index = (real_report.parent / link.group(1)).resolve()
    assert index.is_file()
    board, _ = run_chromium(index.as_uri(), "--dump-dom")
    assert "Apache JMeter Dashboard" in board


def test_report_screenshot_is_a_drawn_page(real_report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    run_chromium(real_report.as_uri(), f"--screenshot={shot}", "--window-size=1100,2400")
    pixels = image.imread(shot)
    assert pixels.shape[:2] == (2400, 1100)
    # A blank or error page is nearly one colour; the report's charts are not.
    assert float(pixels[..., :3].std()) > 0.05
    assert len(np.unique((pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50


def test_report_makes_no_network_request(real_report: Path) -> None:
    html = real_report.read_text()
    assert external_refs(html) == []
    assert not re.search(r"<(script|link|iframe|object|embed)\b", html, re.I)
    _, netlog = run_chromium(real_report.as_uri(), "--dump-dom")
    assert [u for u in page_requests(netlog) if not u.startswith(("file:", "data:"))] == []


def test_netlog_check_detects_a_page_request(tmp_path: Path) -> None:
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><p>x</p><img src="http://probe.invalid/x.png">')
    _, netlog = run_chromium(control.as_uri(), "--dump-dom")
    assert "http://probe.invalid/x.png" in page_requests(netlog)


def test_compare_of_real_runs_renders_in_chromium(real_report: Path, tmp_path: Path) -> None:
    # The same run twice, under two names: the harness compares runs of one scheme too.
    run = real_report.parent
    out = render_compare([run, run], tmp_path / "c.html", names=["first", "second"])
    dom, netlog = run_chromium(out.as_uri(), "--dump-dom")
    assert len(re.findall(r"<svg\b", dom)) == 3 and 'id="chart-knee"' in dom
    assert '<table id="compare-table">' in dom and "<th>Verdict</th>" in dom
    assert "<th>first</th>" in dom and "<th>second</th>" in dom
    assert [u for u in page_requests(netlog) if not u.startswith(("file:", "data:"))] == []
