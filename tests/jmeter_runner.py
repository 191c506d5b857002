"""Running the real JMeter from tests: a bounded, non-GUI run that always cleans up."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

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
