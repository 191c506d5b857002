"""``loadguard demo``, the README's first command, end to end: real JMeter, real target.

A short run (45 s) cannot find the knee (that takes the default 180 s, docs/demo-target.md)
but it exercises the whole job: provisioning check, target process, elastic plan, the
loop's ramp, and every file the README promises, with nothing left running.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from loadguard.jmeter.home import JMeterHome
from tests.jmeter_runner import jmeter_pids, kill_jmeters, read_decisions

pytestmark = pytest.mark.jmeter

FILES = ("results.jtl", "decisions.csv", "summary.json", "report.html", "jmeter.log")


def test_demo_runs_the_loop_and_leaves_every_promised_file(
    jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    out = tmp_path / "demo"
    cmd = [sys.executable, "-m", "loadguard", "demo", "--duration", "45s", "--out", str(out)]
    try:
        proc = subprocess.run(
            [*cmd, "-q"], capture_output=True, text=True, timeout=240, cwd=tmp_path
        )
    finally:
        kill_jmeters(str(out))
    # 0: PASS, 1: the SLO verdict failed; never 2 (usage) or 3 (engine/log failure).
    assert proc.returncode in (0, 1), (proc.stdout + proc.stderr)[-3000:]
    for name in FILES:
        assert (out / name).stat().st_size > 0, name

    rows = read_decisions(out / "decisions.csv")
    assert rows[0]["old_rate"] and float(rows[0]["old_rate"]) == pytest.approx(5.0)
    increases = [r for r in rows if r["action"] == "INCREASE"]
    assert len(increases) >= 2, [(r["action"], r["reason"]) for r in rows]
    assert max(float(r["new_rate"]) for r in rows) >= 20.0  # the ramp doubled at least twice
    assert all(r["applied"] == "true" for r in rows if r["action"] != "HOLD")

    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "duration"
    jtl = pd.read_csv(out / "results.jtl")
    assert summary["samples"] > 300 and summary["samples"] <= len(jtl)
    assert summary["error_rate"] == pytest.approx(0.0, abs=0.01)
    assert "<svg" in (out / "report.html").read_text()

    assert "max SLO-compliant rate" in proc.stdout
    port = re.search(r"demo target on port (\d+)", proc.stdout + proc.stderr)
    assert port, proc.stdout[-2000:]
    assert not jmeter_pids(str(out))
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", int(port.group(1))))  # the target process is gone too
