"""`loadguard report` on a real JMeter run, viewed in Debian's headless Chromium.

The run: real JMeter 5.6.3 (tests/plans/ctt_property.jmx, 20 req/s) against a real
loopback HTTP server. The decision log is written with the real ``DecisionLogWriter``
from the real ``Window`` stats over that JTL, ticked every 500 ms; the decisions are a
dry run (``applied=false``: this fixture does not push rates), and the p95 SLO is put at
the run's median window p95 so that SAFE, NEAR and BREACH windows all occur.

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

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import image

from loadguard.decisions import DecisionLogWriter, DecisionRow
from loadguard.jmeter.home import JMeterHome
from loadguard.jtl.sample import SampleBatch
from loadguard.report import render_report
from loadguard.summary import RunAccumulator, SummaryBuilder, write_json_atomic
from loadguard.window import Window
from tests.conftest import PLANS, _OkHandler
from tests.jmeter_runner import read_jtl, run_jmeter
from tests.unit.test_report_render import external_refs

pytestmark = pytest.mark.jmeter

WINDOW_MS = 2000
TICK_MS = 500
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


def write_run_from_jtl(jtl: Path, run_dir: Path) -> Path:
    """decisions.csv + summary.json for a real JTL, from real Window stats (dry-run decisions)."""
    df = read_jtl(jtl)
    batch = SampleBatch.of(
        df["timeStamp"].to_numpy(np.int64),
        df["elapsed"].to_numpy(np.int64),
        df["success"].to_numpy(np.bool_),
        df["label"].astype(str).tolist(),
    )
    window = Window(WINDOW_MS)
    window.add(batch)
    ends = batch.end_ms
    ticks = range(int(ends.min()) + TICK_MS, int(ends.max()) + 2 * WINDOW_MS, TICK_MS)
    stats = []
    for now in ticks:
        stats.append(window.stats(now))
    p95s = [s.overall.p95_ms for s in stats if s.overall.p95_ms is not None]
    slo = {"p95_ms": float(np.median(p95s)), "error_rate": 0.01}
    builder = SummaryBuilder(window_ms=WINDOW_MS, slo=slo)
    offered = 20.0
    rate = offered
    with DecisionLogWriter(run_dir / "decisions.csv") as log:
        for tick, (now, s) in enumerate(zip(ticks, stats, strict=True), start=1):
            o = s.overall
            if o.count == 0 or o.p95_ms is None:
                zone, action, new = "NO_DATA", "HOLD", rate
            elif o.p95_ms > slo["p95_ms"] or o.error_rate > slo["error_rate"]:
                zone, action, new = "BREACH", "DECREASE", rate * 0.8
            elif o.p95_ms > 0.8 * slo["p95_ms"]:
                zone, action, new = "NEAR", "HOLD", rate
            else:
                zone, action, new = "SAFE", "INCREASE", rate * 1.1
            row = DecisionRow(
                epoch_ms=now, tick=tick, action=action, zone=zone, reason=zone.lower(),
                old_rate=rate, new_rate=new, applied=False, engine_ack="dry-run",
                samples=o.count, rps=o.rps, ok_rps=o.ok_rps, error_rate=o.error_rate,
                mean_ms=o.mean_ms, p50_ms=o.p50_ms, p90_ms=o.p90_ms, p95_ms=o.p95_ms,
                p99_ms=o.p99_ms, max_ms=o.max_ms, offered_rps=offered,
                staleness_ms=None if s.newest_sample_ms is None else now - s.newest_sample_ms,
                slo=slo, breaches=("p95_ms",) if zone == "BREACH" else (), breached_labels=(),
            )  # fmt: skip
            log.append(row)
            builder.add(row)
            rate = new
    run = RunAccumulator()
    run.add(batch)
    write_json_atomic(run_dir / "summary.json", builder.build(run, "jmeter_exited").to_json())
    shutil.copy(jtl, run_dir / "results.jtl")
    return run_dir


@pytest.fixture(scope="module")
def real_report(
    jmeter_home: JMeterHome, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    # ``ok_server``'s handler, served once for the module so the JMeter run is shared.
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OkHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = tmp_path_factory.mktemp("real-run")
    try:
        jtl, proc = run_jmeter(
            jmeter_home,
            PLANS / "ctt_property.jmx",
            work,
            props={"target.port": server.server_address[1], "loadguard.tpm": 1200, "duration": 8},
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stdout
    run_dir = work / "run"
    run_dir.mkdir()
    write_run_from_jtl(jtl, run_dir)
    yield render_report(run_dir)


def test_real_run_has_every_zone_and_action(real_report: Path) -> None:
    log = pd.read_csv(real_report.parent / "decisions.csv")
    assert {"SAFE", "NEAR", "BREACH"} <= set(log["zone"])
    assert {"INCREASE", "HOLD", "DECREASE"} <= set(log["action"])
    assert (log["samples"] > 0).sum() >= 10


def test_report_renders_in_chromium_with_charts_and_tables(real_report: Path) -> None:
    dom, _ = run_chromium(real_report.as_uri(), "--dump-dom")
    assert len(re.findall(r"<svg\b", dom)) == 4
    for chart in ("rate", "latency", "errors", "throughput"):
        assert f'id="chart-{chart}"' in dom
    summary = re.search(r'<table id="summary-table">(.*?)</table>', dom, re.S)
    assert summary is not None and "<th>verdict</th>" in summary.group(1)
    labels = re.search(r'<table id="labels">(.*?)</table>', dom, re.S)
    assert labels is not None and "<td>home</td>" in labels.group(1)


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
