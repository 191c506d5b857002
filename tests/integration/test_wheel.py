"""An installed wheel runs every command, from a folder that is not the checkout.

The wheel is built from a copy of exactly its inputs (pyproject.toml, README.md,
loadguard/) in a temporary folder, so the build cannot see (or write into) the checkout,
and installed into a fresh virtualenv there. Every command then runs with that folder as
its working directory and that virtualenv's ``loadguard`` (whose lab commands come from
the wheel's ``loadguard.commands`` entry points): ``demo --duration 30s``,
``inject`` on a user's plan, ``evaluate --quick``, and ``teastore`` without a source,
which must fail in one line saying where TeaStore 1.4.2's source comes from.

Building and installing (the dependencies come from pip's cache or the index) take about
a minute; the demo about 50 s and ``evaluate --quick`` about 2.5 minutes.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from lxml import etree

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.teastore.source import RELEASE_URL, SOURCE_ENV
from loadguard.policies import DEFAULT_POLICY

pytestmark = [pytest.mark.jmeter, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SHOP_PLAN = REPO / "tests" / "plans" / "newcomer" / "shop.jmx"
DATA_FILES = {
    "loadguard/py.typed",
    "loadguard/data/jmx_templates/elastic_plan.jmx",
    "loadguard/data/jmx_templates/elastic_timer.jmx",
    "loadguard/data/plans/ffa_800.jmx",
    "loadguard/data/plans/tstctg_800.jmx",
    "loadguard/data/teastore/teastore-browse.jmx",
    "loadguard/data/evaluation/report.md",
    "loadguard/data/evaluation/setup-emulator.md",
    "loadguard/data/evaluation/setup-teastore.md",
}


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


def _sh(argv: Sequence[str], cwd: Path, timeout: float = 600) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(argv)}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, jmeter_home: JMeterHome) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
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
    _sh([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], root)
    work = root / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.pop(SOURCE_ENV, None)
    env["JMETER_HOME"] = str(jmeter_home.path)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return Installed(wheel, venv, work, env)


def test_the_wheel_carries_the_package_data_and_nothing_from_outside_the_package(
    installed: Installed,
) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert names >= DATA_FILES
    outside = {n for n in names if not n.startswith(("loadguard/", "loadguard-"))}
    assert outside == set()  # no share/ data-files, no tests/, benchmarks/ or examples/


def test_the_installed_package_is_imported_from_the_virtualenv(installed: Installed) -> None:
    code = "import loadguard; print(loadguard.__file__)"
    proc = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", code],
        cwd=installed.work, env=installed.env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(proc.stdout.strip()).is_relative_to(installed.venv)


def test_an_installed_loadguard_finds_the_lab_commands_by_their_entry_points(
    installed: Installed,
) -> None:
    wheel = zipfile.ZipFile(installed.wheel)
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert "[loadguard.commands]" in wheel.read(name).decode()
    proc = installed.run(["--help"], 60)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.split("Commands:")[1].splitlines() if line}
    assert {"demo", "evaluate", "simulate", "target", "teastore"} <= listed
    assert {"attach", "run", "report"} <= listed


def test_an_installed_demo_runs_the_loop_and_writes_its_results(installed: Installed) -> None:
    proc = installed.run(["demo", "--duration", "30s", "--quiet", "--out", "demo"], 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = installed.work / "demo"
    for name in ("results.jtl", "decisions.csv", "summary.json", "report.html"):
        assert (out / name).is_file(), name
    with (out / "decisions.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) >= 10  # a 2 s tick over 30 s


def test_an_installed_inject_puts_the_elastic_timer_into_a_plan(installed: Installed) -> None:
    shutil.copy2(SHOP_PLAN, installed.work / "shop.jmx")
    proc = installed.run(["inject", "shop.jmx", "shop.elastic.jmx"], 60)
    assert proc.returncode == 0, proc.stderr
    text = (installed.work / "shop.elastic.jmx").read_text()
    etree.fromstring(text.encode())
    assert "loadguard.tpm" in text and "loadguard.tpm" not in SHOP_PLAN.read_text()


def test_an_installed_evaluate_quick_runs_its_three_schemes(installed: Installed) -> None:
    proc = installed.run(["evaluate", "--quick", "--out", "eval"], 600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = installed.work / "eval"
    with (out / "evaluation" / "runs.csv").open() as fh:
        schemes = sorted(row["scheme"] for row in csv.DictReader(fh))
    assert schemes == sorted(["FFA", "TSTCTG", DEFAULT_POLICY])
    doc = (out / "evaluation.md").read_text()
    assert "benchmarks/evaluate.py" not in doc and ".venv/bin" not in doc
    assert "loadguard evaluate --quick --out eval" in doc


def test_an_installed_teastore_without_a_source_fails_in_one_line(installed: Installed) -> None:
    proc = installed.run(["teastore"], 60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert RELEASE_URL in lines[0] and "--source" in lines[0] and SOURCE_ENV in lines[0]
