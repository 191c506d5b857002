"""The Metrics Listener against JTLs written by the real JMeter 5.6.3.

The plan (tests/plans/metrics_mix.jmx) mixes passing and failing samplers, a label that
needs CSV quotes and one holding a raw newline, redirects (sub-result rows), and
Transaction Controllers with and without "generate parent sample", one inside another.
/ok answers a body with control characters, which the XML JTL saves as references XML
forbids; a CSV JTL is also written tab-delimited and read without flags. Every window and
every label of ``loadguard metrics --json`` is checked against an independent pandas
computation that knows the plan's sampler names (so it needs no sub-result or
transaction logic of its own).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from lxml import etree

from loadguard.cli import cli
from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.jtl.columns import format_from_properties
from loadguard.jtl.follow import JtlFollower
from loadguard.report.jtl_digest import digest_jtl
from tests.conftest import PLANS
from tests.jmeter_runner import run_jmeter

pytestmark = pytest.mark.jmeter

PLAN = PLANS / "metrics_mix.jmx"
SAMPLERS = {"get ok", 'search, "quoted"', "p_slow", "p_redirect", "redir", "multi\nline"}
SS = "jmeter.save.saveservice."
DATE_FORMAT = "yyyy/MM/dd HH:mm:ss.SSS"
# Written out here rather than imported, so that the reference stays independent.
JMETER_563_COLUMNS = [
    "timeStamp", "elapsed", "label", "responseCode", "responseMessage", "threadName", "dataType",
    "success", "failureMessage", "bytes", "sentBytes", "grpThreads", "allThreads", "URL",
    "Latency", "IdleTime", "Connect",
]  # fmt: skip


class _MixHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    counter = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        with self.lock:
            _MixHandler.counter += 1
            n = _MixHandler.counter
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/ok")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"ok\n"
        if self.path == "/ok":
            body = b"ok\x00\x01\x1b\n"  # binary: JMeter writes &#x0; &#x1; &#x1b; in XML
        if self.path == "/flaky" and n % 4 == 0:
            self.send_response(500, 'Server Error, "flaky"')
            body = b"nope\n"
        else:
            if self.path == "/slow":
                time.sleep(random.random() * 0.02)
            self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture()
def mix_server() -> Iterator[int]:
    """Loopback HTTP: /ok, /flaky (every 4th request a 500), /redirect -> /ok, /slow."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _MixHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _reference_rows(jtl: Path, props: Mapping[str, str]) -> pd.DataFrame:
    """end_ms, elapsed, success, label of the sampler rows, read independently."""
    if props.get(SS + "output_format") == "xml":
        # The binary bodies' control characters: references XML 1.0 forbids.
        text = re.sub(rb"&#x(?:[0-8bcef]|1[0-9a-f]);", b"", jtl.read_bytes())
        root = etree.fromstring(text)
        recs = [
            (int(e.get("ts")), int(e.get("t")), e.get("s") == "true", e.get("lb"))
            for e in root.iter("httpSample", "sample")
        ]
        df = pd.DataFrame(recs, columns=["start", "elapsed", "success", "label"])
    else:
        sep = props.get(SS + "default_delimiter", ",").replace("\\t", "\t")
        header = props.get(SS + "print_field_names", "true") == "true"
        names = None if header else JMETER_563_COLUMNS
        raw = pd.read_csv(jtl, sep=sep, header=0 if header else None, names=names,
                          keep_default_na=False, dtype={"label": str})  # fmt: skip
        if SS + "timestamp_format" in props:
            local = datetime.now().astimezone().tzinfo
            when = pd.to_datetime(raw["timeStamp"], format="%Y/%m/%d %H:%M:%S.%f")
            when = when.dt.tz_localize(local).dt.tz_convert("UTC").dt.tz_localize(None)
            start = (when - pd.Timestamp(0)) // pd.Timedelta(milliseconds=1)
        else:
            start = raw["timeStamp"].astype(np.int64)
        df = pd.DataFrame({"start": start, "elapsed": raw["elapsed"].astype(np.int64),
                           "success": raw["success"].astype(str).str.lower() == "true",
                           "label": raw["label"]})  # fmt: skip
    df = df[df["label"].isin(SAMPLERS)].copy()
    df["end"] = df["start"] + df["elapsed"]
    return df


def _expected(df: pd.DataFrame, end: int, window_ms: int) -> dict[str, float] | None:
    w = df[(df["end"] > end - window_ms) & (df["end"] <= end)]
    if w.empty:
        return None
    x = w["elapsed"].to_numpy()
    ok = int(w["success"].sum())
    p50, p90, p95, p99 = np.percentile(x, [50, 90, 95, 99])
    sec = window_ms / 1000
    return {"count": len(x), "rps": len(x) / sec, "ok_rps": ok / sec,
            "error_rate": (len(x) - ok) / len(x), "mean_ms": float(x.mean()), "p50_ms": p50,
            "p90_ms": p90, "p95_ms": p95, "p99_ms": p99, "max_ms": float(x.max())}  # fmt: skip


def _assert_matches(got: Mapping[str, float], want: Mapping[str, float], where: str) -> None:
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-9), f"{where} {key}"


FORMATS = {
    "csv-header": {},
    "csv-no-header-dates-semicolon": {
        SS + "print_field_names": "false",
        SS + "timestamp_format": DATE_FORMAT,
        SS + "default_delimiter": ";",
    },
    "xml": {SS + "output_format": "xml", SS + "response_data": "true"},
    "csv-header-tab": {SS + "default_delimiter": "\\t"},
}
# Formats read without telling LoadGuard how they were written.
NO_FLAGS = {"csv-header", "csv-header-tab"}


@pytest.mark.parametrize("name", list(FORMATS))
def test_metrics_matches_pandas_for_every_window_and_label(
    name: str, jmeter_home: JMeterHome, mix_server: int, tmp_path: Path
) -> None:
    props = FORMATS[name]
    jtl, proc = run_jmeter(jmeter_home, PLAN, tmp_path,
                           props={"target.port": mix_server, "duration": 3, "threads": 3, **props},
                           timeout=90)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    ref = _reference_rows(jtl, props)
    assert len(ref) > 50
    assert not ref["success"].all(), "the plan must produce failing samples"
    overrides = (
        [] if name in NO_FLAGS else [a for k, v in props.items() for a in ("-J", f"{k}={v}")]
    )
    for window_ms, step in ((2000, "500ms"), (1000, "1s")):
        res = CliRunner().invoke(cli, ["metrics", str(jtl), "--json", "--window",
                                       f"{window_ms}ms", "--step", step, *overrides])  # fmt: skip
        assert res.exit_code == 0, res.output
        lines = [json.loads(x) for x in res.stdout.splitlines()]
        assert lines, res.stderr
        assert "0 malformed" in res.stderr
        if name == "xml":  # every sample counted, the forbidden characters counted
            assert "illegal XML characters replaced" in res.stderr
            assert lines[-1]["illegal_xml_chars"] > 0
        assert " 0 transaction rows" not in res.stderr  # transactions were seen and skipped
        assert " 0 sub-results" not in res.stderr
        for line in lines:
            end = line["window_end_ms"]
            want = _expected(ref, end, window_ms)
            if want is None:
                assert line["overall"]["count"] == 0
                continue
            _assert_matches(line["overall"], want, f"{name} @{end} overall")
            labels = {lb for lb in SAMPLERS if _expected(ref[ref["label"] == lb], end, window_ms)}
            assert set(line["labels"]) == labels
            for lb in labels:
                lw = _expected(ref[ref["label"] == lb], end, window_ms)
                assert lw is not None
                _assert_matches(line["labels"][lb], lw, f"{name} @{end} {lb!r}")
        if step == "1s":
            # Windows that tile time count every sampler row exactly once.
            assert sum(line["overall"]["count"] for line in lines) == len(ref)
    # The report reads the same file (the comma CSV with a header through pandas, the
    # others through the follower) and counts each request once in both.
    digest = digest_jtl(jtl, fmt=None if name in NO_FLAGS else format_from_properties(props))
    assert digest.malformed_rows == 0
    for lb, group in ref.groupby("label"):
        d = digest.labels[str(lb)]
        assert (d.count, d.errors) == (len(group), int((~group["success"]).sum())), lb
        for q in (0.5, 0.95, 0.99):
            assert d.hist.quantile(q) == pytest.approx(np.quantile(group["elapsed"], q)), lb
    assert set(digest.labels) == set(ref["label"]) and digest.skipped_rows > 0
    assert digest.overall.count == len(ref)


@pytest.mark.parametrize(
    ("output_format", "autoflush"), [("csv", False), ("csv", True), ("xml", False)]
)
def test_follower_on_a_running_jmeter_sees_every_row_once(
    output_format: str, autoflush: bool, jmeter_home: JMeterHome, mix_server: int, tmp_path: Path
) -> None:
    jtl = tmp_path / "live.jtl"
    props = {SS + "output_format": output_format}
    args = ["-n", "-t", str(PLAN), "-l", str(jtl), "-j", str(tmp_path / "live.log"),
            f"-Jtarget.port={mix_server}", "-Jduration=5", "-Jthreads=4", "-Jthink=5",
            f"-J{SS}autoflush={'true' if autoflush else 'false'}",
            f"-J{SS}output_format={output_format}",
            "-Jjmeterengine.force.system.exit=true"]  # fmt: skip
    follower = JtlFollower(jtl)
    assert len(follower.poll()) == 0  # before the file exists
    seen: list[pd.DataFrame] = []
    proc = subprocess.Popen(jmeter_command(jmeter_home, args), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    polls_with_rows = 0
    try:
        deadline = time.monotonic() + 90
        while proc.poll() is None and time.monotonic() < deadline:
            batch = follower.poll()
            if len(batch):
                polls_with_rows += 1
                seen.append(pd.DataFrame({"end": batch.end_ms, "label": batch.label}))
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == 0
    tail = follower.finish()  # JMeter has exited: the file is complete
    seen.append(pd.DataFrame({"end": tail.end_ms, "label": tail.label}))
    got = pd.concat(seen, ignore_index=True)
    ref = _reference_rows(jtl, props)
    assert polls_with_rows >= 3  # rows really arrived while JMeter was writing
    assert len(got) == len(ref) > 100
    assert got["end"].tolist() == ref["end"].tolist()
    assert got["label"].tolist() == ref["label"].tolist()
    assert follower.malformed_rows == 0
    if output_format == "csv":
        assert follower.buffered_suspected is (not autoflush)
