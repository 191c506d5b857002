"""Running the real JMeter from tests: bounded non-GUI runs that always clean up, and the
small readers/waiters the real-JMeter suites share."""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd
import psutil

from loadguard.jmeter.home import JMeterHome, jmeter_command


def run_jmeter(
    home: JMeterHome,
    plan: Path,
    out_dir: Path,
    props: Mapping[str, str | int | float] | None = None,
    extra: Sequence[str] = (),
    timeout: float = 120.0,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Run ``plan`` non-GUI to completion; returns the JTL path and the process result."""
    jtl = out_dir / f"{plan.stem}.jtl"
    args = ["-n", "-t", str(plan), "-l", str(jtl), "-j", str(out_dir / f"{plan.stem}.log")]
    for key, value in (props or {}).items():
        args.append(f"-J{key}={value}")
    args += ["-Jjmeterengine.force.system.exit=true", *extra]
    proc = subprocess.Popen(
        jmeter_command(home, args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return jtl, subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def read_jtl(jtl: Path) -> pd.DataFrame:
    return pd.read_csv(jtl)


def read_decisions(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def wait_for(predicate: Callable[[], bool], timeout_s: float, step_s: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step_s)
    return predicate()


def jmeter_pids(marker: str) -> list[int]:
    """JMeter JVMs whose command line mentions ``marker`` (the run's folder)."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            cmd = " ".join(p.info["cmdline"] or [])
            if "ApacheJMeter" in cmd and marker in cmd:
                found.append(p.info["pid"])
    return found


def kill_jmeters(marker: str) -> None:
    for pid in jmeter_pids(marker):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
