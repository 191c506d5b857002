"""LoadGuard as a user gets it: a wheel built outside the checkout, installed into a fresh
virtualenv, run from a folder that is not the checkout.

The wheel is built from a copy of exactly its inputs (pyproject.toml, README.md,
loadguard/) in a temporary folder, so the build cannot see (or write into) the checkout,
and installed into a fresh virtualenv there; every command then runs with that folder as
its working directory and that virtualenv's ``loadguard``.

``tests/conftest.py`` builds it once per session (``installed_wheel``) and runs
``loadguard evaluate --quick --out eval`` with it once (``quick_evaluation``): that one
quick evaluation is what both tests/integration/test_evaluate_quick.py (the figures) and
tests/integration/test_wheel.py (an installed wheel runs it) check, instead of two
identical 2-minute runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.teastore.source import SOURCE_ENV

REPO = Path(__file__).resolve().parents[1]

#: `loadguard evaluate --quick` takes about 2.5 minutes; a loaded 2-core machine more. The
#: first test to use it pays for the wheel's build and install too (about a minute), all
#: within pytest-timeout's 600 s a test (pyproject.toml).
QUICK_TIMEOUT_S = 420


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    work: Path
    env: dict[str, str]

    def run(self, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / "loadguard"), *args],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@dataclass(frozen=True)
class QuickEvaluation:
    """``loadguard evaluate --quick --out eval`` run by an installed wheel in its work
    folder: the folder it wrote and what it printed."""

    out: Path
    returncode: int
    output: str


def _sh(argv: Sequence[str], cwd: Path, timeout: float = 600) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(argv)}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"


def build_and_install(root: Path, jmeter_home: JMeterHome) -> Installed:
    """Build the wheel from a copy of its inputs under ``root`` and install it into a
    fresh virtualenv there (the dependencies come from pip's cache or the index)."""
    assert not root.resolve().is_relative_to(REPO)
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(
        REPO / "loadguard", src / "loadguard", ignore=shutil.ignore_patterns("__pycache__")
    )
    dist = root / "dist"
    _sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), "."], src)
    (wheel,) = dist.glob("loadguard-*.whl")
    venv = root / "venv"
    _sh([sys.executable, "-m", "venv", str(venv)], root)
    # --no-compile: byte-compiling every installed module (numpy, pandas, scipy,
    # matplotlib) is half the install's time; the wheel's processes compile what they
    # import, once, as bytecode may be written below (PYTHONDONTWRITEBYTECODE is dropped:
    # with it set, as here and in CI, every process would compile its imports again).
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    _sh([*pip, str(wheel)], root)
    work = root / "work"
    work.mkdir()
    dropped = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.pop(SOURCE_ENV, None)
    env["JMETER_HOME"] = str(jmeter_home.path)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return Installed(wheel, venv, work, env)


def run_quick_evaluation(installed: Installed) -> QuickEvaluation:
    """``loadguard evaluate --quick --out eval`` (relative, as a user types it) in the
    installed wheel's work folder. On a timeout it is sent SIGTERM, which unwinds (stops
    its targets and JMeters), and killed with its group if that does not end it."""
    proc = subprocess.Popen(
        [str(installed.venv / "bin" / "loadguard"), "evaluate", "--quick", "--out", "eval"],
        cwd=installed.work,
        env=installed.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=QUICK_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return QuickEvaluation(installed.work / "eval", proc.returncode, output)
