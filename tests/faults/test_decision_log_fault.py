"""Fault 7: the decision log cannot be written -- at start, or when the disk fills mid-run.

At start the sidecar fails with one clear line *before JMeter starts*. Mid-run it stops
with a clear line, exit 3, a summary with ``stop_reason=decision_log_failed``, and a log
whose every row is whole. "Disk full" is RLIMIT_FSIZE set in the sidecar's process only
(with SIGXFSZ ignored, ``write`` fails with EFBIG exactly as on a full disk: a short
write, then an error); being root, directory permissions would not bite.
"""

from __future__ import annotations

import csv
import json
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from loadguard.decisions import COLUMNS, HEADER
from loadguard.jmeter.home import JMeterHome
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from tests.faults.helpers import LOADGUARD, jmeter_engine, run_args
from tests.jmeter_runner import jmeter_pids, kill_jmeters


def file_size_limit(limit: int) -> Callable[[], None]:
    def setup() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return setup


@pytest.fixture()
def target() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=4, queue=200, service_s=0.020)) as t:
        yield t


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1, err[-2000:]
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("where", ["under_a_regular_file", "disk_full"])
def test_unwritable_log_fails_before_jmeter_starts(tmp_path: Path, where: str) -> None:
    out = tmp_path / "run"
    extra: list[str] = []
    setup = None
    if where == "under_a_regular_file":
        (tmp_path / "file").write_text("x")
        extra = ["--decisions", str(tmp_path / "file" / "decisions.csv")]
    else:
        setup = file_size_limit(len(HEADER) // 2)  # not even the header fits
    proc = subprocess.run(
        run_args(out, 9, "30s", extra=extra),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        preexec_fn=setup,
    )
    line = one_error_line(proc.stderr)
    # A path that cannot exist is bad input (2); a disk that fails is the environment (3).
    assert proc.returncode == (2 if where == "under_a_regular_file" else 3), proc.stderr[-2000:]
    if where == "under_a_regular_file":
        assert "is not a directory" in line, line
    else:
        assert "File too large" in line or "short write" in line, line
        assert (out / "decisions.csv").read_bytes() == b""  # no partial header kept
    # JMeter never started: no JVM, no JMeter output, no plan copy.
    assert not jmeter_pids(str(out))
    assert not (out / "jmeter.out").exists() and not (out / "jmeter.log").exists()
    print(f"\n{where}: {line}")


@pytest.mark.jmeter
def test_disk_full_mid_run_stops_cleanly_with_whole_rows(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    limit = 6000  # ~20 rows; summary.json (smaller) still fits
    decisions = tmp_path / "decisions.csv"
    summary = tmp_path / "summary.json"
    with jmeter_engine(jmeter_home, tmp_path / "engine", target.port) as engine:
        args = [
            *LOADGUARD, "attach", "--jtl", str(engine.jtl),
            "--engine", f"127.0.0.1:{engine.bsh_session_port}",
            "--p95", "250ms", "--window", "3s", "--tick", "200ms", "--duration", "60s",
            "--decisions", str(decisions), "--summary", str(summary), "-q",
        ]  # fmt: skip
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=90,
            cwd=tmp_path,
            preexec_fn=file_size_limit(limit),
        )
    line = one_error_line(proc.stderr)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert f"writing {decisions} failed" in line and "no partial row kept" in line, line
    data = decisions.read_bytes()
    assert data.endswith(b"\n") and len(data) <= limit
    with decisions.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(COLUMNS)
    assert len(rows) > 5 and all(len(r) == len(COLUMNS) for r in rows)
    ticks = [int(r[COLUMNS.index("tick")]) for r in rows[1:]]
    assert ticks == list(range(1, len(ticks) + 1))
    result = json.loads(summary.read_text())
    assert result["stop_reason"] == "decision_log_failed"
    print(f"\ndisk full mid-run: {len(ticks)} whole rows ({len(data)} B of {limit}); {line}")


def ignore_sigxfsz() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def rows_in(path: Path) -> int:
    return max(0, path.read_bytes().count(b"\n") - 1) if path.exists() else 0


def rows_with_samples(decisions: Path) -> int:
    if not decisions.exists():
        return 0
    with decisions.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return sum(1 for r in rows if r.get("samples", "0").isdigit() and int(r["samples"]) > 0)


@pytest.mark.jmeter
def test_disk_full_mid_run_stops_jmeter_and_drains_its_last_rows(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    # ``loadguard run`` (JMeter its child); once a few rows are logged, the sidecar's own
    # file size limit (prlimit on its pid only: JMeter, already started, keeps writing
    # its JTL) lets the log grow by a few rows more, then every write fails (EFBIG). The
    # summary (smaller than the limit) is still written.
    out = tmp_path / "run"
    decisions = out / "decisions.csv"
    args = run_args(out, target.port, "90s", extra=["--tick", "250ms"])
    proc = subprocess.Popen(
        args, stderr=subprocess.PIPE, text=True, cwd=tmp_path, preexec_fn=ignore_sigxfsz
    )
    try:
        deadline = time.monotonic() + 60
        while (
            rows_with_samples(decisions) < 8 and proc.poll() is None and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert rows_with_samples(decisions) >= 8, "the run never logged 8 rows with samples"
        limit = decisions.stat().st_size + 1500
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (limit, limit))
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
        kill_jmeters(str(out))
    line = one_error_line(err)
    assert proc.returncode == 3, err[-2000:]
    assert f"writing {decisions} failed" in line, line
    result = json.loads((out / "summary.json").read_text())
    assert result["stop_reason"] == "decision_log_failed"
    # JMeter was stopped by the wind-down (it ended its test) before the summary was
    # written, and the summary counts every row JMeter wrote: the last ones were drained.
    assert "... end of run" in (out / "jmeter.out").read_text(errors="replace")
    assert not jmeter_pids(str(out))
    written = (out / "summary.json").stat().st_mtime_ns
    assert (out / "jmeter.out").stat().st_mtime_ns <= written
    assert (out / "results.jtl").stat().st_mtime_ns <= written
    jtl_rows = rows_in(out / "results.jtl")
    assert jtl_rows > 0 and result["samples"] == jtl_rows, (result["samples"], jtl_rows)
    print(f"\ndisk full mid-run of run: {rows_in(decisions)} rows, {jtl_rows} samples drained")
