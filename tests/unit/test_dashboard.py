"""JMeter's dashboard step (loadguard.dashboard): which JTLs fit, and a failure that is
noted, not raised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadguard.dashboard import dashboard_for_run, unfit_reason
from loadguard.jmeter.home import JMeterHome
from loadguard.summary import write_json_atomic

HEADER = (
    "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,"
    "failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect"
)
ROW = "1796000000000,12,home,200,OK,TG 1-1,text,true,,100,10,1,1,http://127.0.0.1/,10,0,2"


def jtl(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "results.jtl"
    path.write_text(text)
    return path


def test_jmeters_default_csv_fits(tmp_path: Path) -> None:
    assert unfit_reason(jtl(tmp_path, f"{HEADER}\n{ROW}\n")) is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('<?xml version="1.0"?>\n<testResults version="1.2">\n', "is an XML JTL"),
        (f"{ROW}\n", "has no header line"),
        (HEADER.replace(",", "\t") + "\n", "is not comma-separated"),
        (
            HEADER.replace(",Connect", "") + "\n" + ROW.rsplit(",", 1)[0] + "\n",
            "lacks the field(s) the dashboard needs: Connect",
        ),
        (f"{HEADER}\n", "holds no samples"),
        ("", "holds no samples"),
        (
            f"{HEADER}\n" + ROW.replace("1796000000000", "2026/12/01 10:00:00"),
            "is not ms since the epoch",
        ),
    ],
)
def test_a_jtl_the_generator_cannot_read_is_refused_with_why(
    tmp_path: Path, text: str, why: str
) -> None:
    reason = unfit_reason(jtl(tmp_path, text))
    assert reason is not None and why in reason and "\n" not in reason


def test_a_failing_generator_is_noted_in_the_summary_and_never_raises(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    broken = tmp_path / "bin" / "ApacheJMeter.jar"
    broken.write_bytes(b"not a jar")
    home = JMeterHome(path=tmp_path, launcher=broken, found_by="test")
    summary = tmp_path / "summary.json"
    write_json_atomic(summary, {"verdict": "PASS"})
    result = dashboard_for_run(home, tmp_path, jtl(tmp_path, f"{HEADER}\n{ROW}\n"), summary)
    assert result.status == "failed" and "generator exited" in (result.reason or "")
    assert json.loads(summary.read_text())["dashboard"]["status"] == "failed"
    assert json.loads(summary.read_text())["verdict"] == "PASS"
    assert not (tmp_path / "dashboard").exists() and not list(tmp_path.glob(".dashboard-*"))
    assert result.line().startswith("dashboard failed: ")
