"""``loadguard evaluate --quick --target teastore`` end to end, on the real TeaStore.

A one-point sweep and FFA, TSTCTG and LoadGuard's default policy for 20 s each with the browse
plan, all on ONE ``loadguard teastore`` (the cached build), as ``--quick`` does: a smoke
test of the harness on the real system, not an evaluation (the full one starts a fresh
TeaStore per run). One TeaStore start instead of four keeps it to a few minutes.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loadguard.jmeter.home import JMeterHome
from loadguard.policies import DEFAULT_POLICY
from tests.teastore_source import teastore_source

pytestmark = [pytest.mark.jmeter, pytest.mark.slow]

TIMEOUT_S = 2400


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory, jmeter_home: JMeterHome) -> Path:
    teastore_source()  # skip (or fail under LOADGUARD_REQUIRE_TEASTORE=1) without it
    out = tmp_path_factory.mktemp("evaluate-teastore")
    argv = [sys.executable, "-m", "loadguard", "evaluate", "--quick", "--target", "teastore"]
    proc = subprocess.Popen(
        [*argv, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "JMETER_HOME": str(jmeter_home.path)},
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # unwinds: stops its TeaStores and JMeters
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert proc.returncode == 0, output[-3000:]
    return out


def runs(out: Path) -> dict[str, dict[str, str]]:
    with (out / "evaluation" / "runs.csv").open() as fh:
        return {row["scheme"]: row for row in csv.DictReader(fh)}


@pytest.mark.timeout(TIMEOUT_S + 300)
def test_quick_teastore_runs_three_schemes_on_the_browse_plan(quick_run: Path) -> None:
    rows = runs(quick_run)
    assert sorted(rows) == sorted(["FFA", "TSTCTG", DEFAULT_POLICY])
    for row in rows.values():
        assert row["covered"] == "yes"
    for scheme in ("FFA", "TSTCTG"):
        plan = (quick_run / "runs" / f"{scheme}-1" / "plan.jmx").read_text()
        assert "Look at Product" in plan and 'testname="LoadGuard Elastic Timer"' not in plan
        jtl = (quick_run / "runs" / f"{scheme}-1" / "results.jtl").read_text()
        assert "/tools.descartes.teastore.webui/product?id=" in jtl


@pytest.mark.timeout(60)
def test_quick_teastore_baselines_hold_most_of_800_samples_back(quick_run: Path) -> None:
    for scheme in ("FFA", "TSTCTG"):
        row = runs(quick_run)[scheme]
        assert float(row["offered_rps"]) == pytest.approx(800.0)
        assert float(row["held_back_share"]) > 0.5  # TeaStore here takes tens per second
        # capped at the elastic plan's 100 users (+2 spare for TSTCTG), so the flood's
        # backlog drains in seconds before the next run
        assert int(row["max_threads"]) <= 102


@pytest.mark.timeout(60)
def test_quick_teastore_sweep_and_report_name_the_real_teastore(quick_run: Path) -> None:
    (point,) = json.loads((quick_run / "sweep.json").read_text())["points"]
    assert point["offered_rps"] == 40.0 and point["samples"] > 0
    doc = (quick_run / "evaluation.md").read_text()
    assert "experiment on the real TeaStore" in doc
    assert "loadguard teastore --layout single" in doc
    assert "one instance shared by every run" in doc
    assert (quick_run / "runs" / f"{DEFAULT_POLICY}-1" / "decisions.csv").is_file()
