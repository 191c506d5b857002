"""End to end: `loadguard run` / `attach` against real JMeter 5.6.3 and the demo target.

The target is M/M/4 with 50 ms mean service (capacity 80 req/s). With p95 <= 250 ms its
analytic max SLO-compliant rate is lambda* = 65 req/s (``lambda_star``, computed below): a
controller that raises the rate from 10 req/s must find the knee and back off from it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.jmeter.launch import free_tcp_pair
from loadguard.jtl.sample import SampleBatch
from loadguard.lab.simulate.mmc import lambda_star
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from loadguard.window import Window
from tests.jmeter_runner import jmeter_pids, read_decisions

pytestmark = pytest.mark.jmeter

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "jmx_templates" / "elastic_plan.jmx"
LOADGUARD = [sys.executable, "-m", "loadguard"]


@pytest.fixture()
def mm4_target() -> Iterator[RunningTarget]:
    model = build_model("mmc", workers=4, queue=400, service_s=0.050)
    with running_target(model) as t:
        yield t


def run_args(out: Path, port: int, duration: str, extra: list[str] | None = None) -> list[str]:
    return [
        *LOADGUARD,
        "run",
        str(PLAN),
        "--out",
        str(out),
        "--p95",
        "250ms",
        "--error-rate",
        "1%",
        "--window",
        "5s",
        "--tick",
        "1s",
        "--initial-rate",
        "10",
        "--max-rate",
        "150",
        "--duration",
        duration,
        "-q",
        "-J",
        f"target.port={port}",
        "-J",
        "threads=80",
        "-J",
        "duration=600",
        *(extra or []),
    ]


def test_run_drives_the_rate_to_the_knee_and_backs_off_past_it(
    jmeter_home: JMeterHome, mm4_target: RunningTarget, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    lam = lambda_star(4, 0.050, 0.250)
    proc = subprocess.run(
        # 90 s: alone, the first cut comes at ~25 s; beside another real-JMeter test (make
        # test's second pass on a 2-core CI machine) JMeter's start and the ramp's settling
        # took the whole of a 70 s run without one. The paper's rule (+10 req/s a settled
        # window, x0.8 on a breach) reaches this knee within that. The default does not:
        # on M/M/4 its knee watcher sees p95 rise at 40 req/s (0.6 lambda*) and the climb
        # under that soft ceiling took 34 s a step (docs/controller-jmeter.md); the
        # default's real test is test_budget_real.py.
        run_args(out, mm4_target.port, "90s", ["--policy", "threezone"]),
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    # The exit code is the verdict's (docs/decision-log.md): 0 PASS, 1 FAIL, 5 INCONCLUSIVE
    # (the knee not reached); never NO_DATA.
    codes = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 5}
    assert summary["verdict"] in codes, summary["verdict"]
    assert proc.returncode == codes[summary["verdict"]], proc.stderr[-3000:]
    rows = read_decisions(out / "decisions.csv")
    actions = {r["action"] for r in rows}
    assert {"INCREASE", "DECREASE"} <= actions, [
        (r["action"], r["new_rate"], r["zone"], r["p95_ms"], r["samples"]) for r in rows
    ]
    assert "HOLD" in actions
    rates = [float(r["new_rate"]) for r in rows]
    # Drove the rate up to the knee, never past the ceiling or to zero...
    assert max(rates) >= 0.8 * lam
    assert min(rates) > 0 and max(rates) <= 150.0
    # ...and every DECREASE answered a window near or over the SLO.
    for r in rows:
        if r["action"] == "DECREASE" and r["reason"] not in ("stale", "clamp_max"):
            assert r["zone"] in ("BREACH", "NEAR") or float(r["p95_ms"]) > 0.6 * 250, r
        if r["zone"] == "BREACH":
            assert r["action"] != "INCREASE", r

    # Each row's window stats match the JTL recomputed at that tick (same Window code).
    jtl = pd.read_csv(out / "results.jtl")
    batch = SampleBatch.of(
        jtl["timeStamp"].to_numpy(),
        jtl["elapsed"].to_numpy(),
        jtl["success"].astype(bool).to_numpy(),
        jtl["label"].astype(str).to_numpy(),
    )
    checked = 0
    for r in rows:
        if int(r["samples"]) < 50:
            continue
        w = Window(5000)
        w.add(batch)
        st = w.stats(int(r["epoch_ms"])).overall
        # A few samples complete just before the tick but reach the file after it.
        assert abs(st.count - int(r["samples"])) <= max(3, 0.05 * st.count)
        assert st.p95_ms is not None
        assert float(r["p95_ms"]) == pytest.approx(st.p95_ms, rel=0.15, abs=5)
        checked += 1
    assert checked >= 10

    # summary.json matches a recomputation from the whole JTL.
    assert summary["samples"] == len(jtl)
    assert summary["p95_ms"] == pytest.approx(float(np.quantile(jtl["elapsed"], 0.95)))
    assert summary["error_rate"] == pytest.approx(1.0 - jtl["success"].mean())
    for key in ("verdict", "max_compliant_rate", "violation_share_p95", "ok_rps", "actions"):
        assert key in summary
    assert summary["actions"]["INCREASE"] == sum(r["action"] == "INCREASE" for r in rows)
    claimed = summary["max_compliant_rate"]
    # The claim is backed by the JTL: over its evidence span (its ticks' windows), JMeter
    # completed that many samples, within 3 sigma of the count's Poisson noise.
    ev = summary["max_compliant_evidence"]
    end_ms = jtl["timeStamp"] + jtl["elapsed"]
    lo_ms, hi_ms = ev["from_epoch_ms"] - 5000, ev["to_epoch_ms"]
    n = int(((end_ms > lo_ms) & (end_ms <= hi_ms)).sum())
    span_s = (hi_ms - lo_ms) / 1000.0
    assert claimed <= (n + 3 * np.sqrt(n)) / span_s, (claimed, n, span_s)
    # And the target bounds it. A 5 s window at lambda* holds N = 5 lambda* samples; its
    # rate is off by the count's Poisson noise (3 sigma: 3/sqrt(N), 17 % here) and its p95
    # by the sampling error of a 95th percentile, relative sd sqrt(0.95/(0.05 N)) / ln 20
    # for an exponential tail (3 sigma: 24 % here). One that found the knee shows a
    # compliant span at lambda*(p95 = 0.76 SLO) x 0.83 at least. Above, only the servers
    # bound it, not lambda*: this rule steps by 10 req/s to 80 = 4 / 50 ms, and at
    # rho -> 1 the queue's relaxation time, about 1 / (c mu (1 - sqrt rho)^2), is minutes,
    # so windows at the servers' rate stay compliant for longer than a span (CI claimed
    # 80.6 req/s at 80 commanded). No window completes more than c mu = 80 req/s but for
    # the count's noise: [0.72 lambda*, 1.15 c mu] for this target.
    count_noise = 3.0 / np.sqrt(5.0 * lam)
    p95_noise = 3.0 * np.sqrt(0.95 / (0.05 * 5.0 * lam)) / np.log(20.0)
    servers_rps = 4 / 0.050
    upper = servers_rps * (1 + 3.0 / np.sqrt(5.0 * servers_rps))
    lower = lambda_star(4, 0.050, 0.250 * (1 - p95_noise)) * (1 - count_noise)
    assert lower <= claimed <= upper, (lower, claimed, upper, lam)
    assert not jmeter_pids(str(out))


def test_ctrl_c_stops_jmeter_and_writes_the_summary(
    jmeter_home: JMeterHome, mm4_target: RunningTarget, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        run_args(out, mm4_target.port, "5m"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (out / "decisions.csv").exists() and len(read_decisions(out / "decisions.csv")) >= 5:
                break
            time.sleep(0.5)
        assert jmeter_pids(str(out)), "JMeter should be running"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (0, 1, 5), err[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "signal"
    time.sleep(0.5)
    assert not jmeter_pids(str(out))


def test_attach_killed_and_restarted_appends_and_resumes_the_rate(
    jmeter_home: JMeterHome, mm4_target: RunningTarget, tmp_path: Path
) -> None:
    bsh = free_tcp_pair()
    jtl = tmp_path / "results.jtl"
    args = [
        "-n",
        "-t",
        str(PLAN),
        "-l",
        str(jtl),
        "-j",
        str(tmp_path / "jmeter.log"),
        f"-Jbeanshell.server.port={bsh}",
        "-Jbeanshell.server.file=",
        "-Jjmeterengine.force.system.exit=true",
        "-Jjmeter.save.saveservice.autoflush=true",
        "-Jloadguard.tpm=600",
        f"-Jtarget.port={mm4_target.port}",
        "-Jthreads=40",
        "-Jduration=120",
    ]
    jm = subprocess.Popen(
        jmeter_command(jmeter_home, args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    decisions = tmp_path / "decisions.csv"
    attach = [
        *LOADGUARD,
        "attach",
        "--jtl",
        str(jtl),
        "--engine",
        f"127.0.0.1:{bsh + 1}",
        "--p95",
        "250ms",
        "--window",
        "5s",
        "--tick",
        "1s",
        "--decisions",
        str(decisions),
        "--summary",
        str(tmp_path / "summary.json"),
        "-q",
    ]
    try:
        first = subprocess.Popen([*attach, "--duration", "5m"], cwd=tmp_path)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            rows = read_decisions(decisions) if decisions.exists() else []
            if len(rows) >= 12 and any(r["action"] == "INCREASE" for r in rows):
                break
            time.sleep(0.5)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        before = read_decisions(decisions)
        assert len(before) >= 12
        last_rate = float(before[-1]["new_rate"])

        second = subprocess.run(
            [*attach, "--duration", "6s"], cwd=tmp_path, timeout=60, capture_output=True, text=True
        )
        assert second.returncode in (0, 1, 5), second.stderr[-2000:]
        after = read_decisions(decisions)
        assert after[: len(before)] == before
        assert len(after) > len(before)
        ticks = [int(r["tick"]) for r in after]
        assert ticks == list(range(1, len(after) + 1))
        # The restarted sidecar resumed from the rate JMeter was running, not the default.
        resumed = after[len(before)]
        assert float(resumed["old_rate"]) == pytest.approx(last_rate, rel=0.01)
        assert decisions.read_text().count("iso_time,epoch_ms") == 1
    finally:
        if jm.poll() is None:
            os.killpg(jm.pid, signal.SIGKILL)
        jm.wait(timeout=10)
