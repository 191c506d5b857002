"""The README's commands as a newcomer types them: a copy of the repository, a fresh
working directory, relative paths everywhere, a plan that reads a CSV file named
relative to itself, and a run folder used twice.

The first wave's tests all passed while ``make demo`` failed on a fresh clone: JMeter ran
in the run folder and was handed paths relative to the user's folder, and every test
passed absolute temporary paths. Nothing here is absolute except what the test itself
needs to find (the copy of the repository, the JMeter home).

The README's first command, ``loadguard demo`` with the default out folder, is checked in
tests/integration/test_wheel.py (its installed-demo test): the installed console script in
a folder that is not the checkout, as a newcomer runs it; one 45 s demo there instead of
one here and a shorter one there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest

from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.jmeter.launch import free_tcp_pair
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from tests.jmeter_runner import jmeter_pids, kill_jmeters, read_decisions

pytestmark = [pytest.mark.jmeter, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SHOP_PLAN = REPO / "tests" / "plans" / "newcomer"
PAGES = {"home", "category", "product"}


def _repository_files() -> list[str]:
    """What a fresh clone holds (tracked files, plus new ones git does not ignore)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.fail("the newcomer test copies the repository with git ls-files")
    return [f for f in out.decode().split("\0") if f and (REPO / f).is_file()]


@dataclass(frozen=True)
class Newcomer:
    repo: Path  # the copy
    work: Path  # where the commands are typed
    env: dict[str, str]
    #: per command run, the JMeter processes still alive when it returned (looked at
    #: before the clean-up kills them, so a command that leaves one behind is seen)
    left_behind: list[tuple[str, list[int]]] = field(default_factory=list)

    def loadguard(self, *args: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [sys.executable, "-m", "loadguard", *args],
                cwd=self.work,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        finally:
            self.left_behind.append((args[0] if args else "", list(jmeter_pids(str(self.work)))))
            kill_jmeters(str(self.work))


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Newcomer:
    base = tmp_path_factory.mktemp("newcomer")
    repo = base / "loadguard"
    for rel in _repository_files():
        dest = repo / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, dest)
    work = base / "work"
    # The user's own project: a plan with its data file beside it, in a subfolder.
    shutil.copytree(SHOP_PLAN, work / "plans")
    env = {**os.environ, "PYTHONPATH": str(repo)}
    found = subprocess.run(
        [sys.executable, "-c", "import loadguard; print(loadguard.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(found).is_relative_to(repo), found  # the copy's code runs, not the checkout's
    return Newcomer(repo, work, env)


@pytest.fixture(scope="module")
def shop() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=8, queue=200, service_s=0.010)) as t:
        yield t


def _run_shop(n: Newcomer, port: int, *extra: str) -> subprocess.CompletedProcess[str]:
    """The README's `loadguard run` line, on the user's plan, with a relative --out; the
    target's port comes from a property file named relatively after `--`."""
    (n.work / "shop.properties").write_text(f"port={port}\n")
    return n.loadguard(
        "run", "plans/shop.jmx",
        "--p95", "300ms", "--error-rate", "1%", "--max-rate", "200", "--duration", "15s",
        "--out", "results/run1", "-J", "threads=20", "-J", "duration=60", "-q", *extra,
        "--", "-q", "shop.properties",
    )  # fmt: skip


def _labels(jtl: Path) -> set[str]:
    return set(pd.read_csv(jtl)["label"].astype(str))


def test_run_reads_plan_relative_files_refuses_a_used_folder_and_reports(
    jmeter_home: JMeterHome, newcomer: Newcomer, shop: RunningTarget
) -> None:
    run1 = newcomer.work / "results" / "run1"
    seen = len(newcomer.left_behind)
    first = _run_shop(newcomer, shop.port)
    assert first.returncode in (0, 1, 5), first.stderr[-3000:]
    jtl = pd.read_csv(run1 / "results.jtl")
    # Every sampler label came from data/paths.csv beside the plan, and every request
    # reached a real page of the target.
    assert set(jtl["label"].astype(str)) == PAGES, jtl["label"].value_counts()
    assert jtl["success"].astype(str).str.lower().eq("true").all()
    assert (run1 / "shop.loadguard.jmx").is_file()  # the plan as run, kept with the run
    assert sorted(p.name for p in (newcomer.work / "plans").iterdir()) == ["data", "shop.jmx"]
    first_end = int((jtl["timeStamp"] + jtl["elapsed"]).max())
    size = (run1 / "results.jtl").stat().st_size

    again = _run_shop(newcomer, shop.port)
    assert again.returncode == 2, again.stderr[-2000:]
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: results/run1 already holds a run")
    assert "--force" in lines[0]
    assert (run1 / "results.jtl").stat().st_size == size  # nothing touched
    # `run` stops the JMeter it started, every time (the refused run started none)
    assert [pids for cmd, pids in newcomer.left_behind[seen:] if cmd == "run"] == [[], []]

    forced = _run_shop(newcomer, shop.port, "--force")
    assert forced.returncode in (0, 1, 5), forced.stderr[-3000:]
    fresh = pd.read_csv(run1 / "results.jtl")
    assert int(fresh["timeStamp"].min()) > first_end  # the old JTL was replaced
    assert set(fresh["label"].astype(str)) == PAGES
    summary = json.loads((run1 / "summary.json").read_text())
    assert 0 < summary["samples"] <= len(fresh)  # nothing old reached the summary
    rows = read_decisions(run1 / "decisions.csv")
    assert [int(r["tick"]) for r in rows][:1] == [1]  # a fresh decision log
    assert not [r for r in rows if r["reason"] == "stale"], rows  # no old samples seen

    report = newcomer.loadguard("report", "results/run1")
    assert report.returncode == 0, report.stderr[-2000:]
    assert "<svg" in (run1 / "report.html").read_text()

    # The commands that start no JMeter take relative paths too.
    metrics = newcomer.loadguard("metrics", "results/run1/results.jtl", "--json")
    assert metrics.returncode == 0 and '"overall"' in metrics.stdout, metrics.stderr[-2000:]
    compare = newcomer.loadguard(
        "compare", "results/run1", "results/run1", "--name", "a", "--name", "b",
        "--html", "cmp.html",
    )  # fmt: skip
    assert compare.returncode == 0, compare.stderr[-2000:]
    assert (newcomer.work / "cmp.html").stat().st_size > 0
    (newcomer.work / "slo.toml").write_text('[slo]\np95 = "250ms"\nerror_rate = "1%"\n')
    sim = newcomer.loadguard("simulate", "--slo-file", "slo.toml", "--duration", "60s", "--json")
    assert sim.returncode in (0, 1, 5) and sim.stdout.strip().startswith("{"), sim.stderr[-2000:]


def test_attach_beside_a_jmeter_the_user_started_with_relative_paths(
    jmeter_home: JMeterHome, newcomer: Newcomer, shop: RunningTarget
) -> None:
    injected = newcomer.loadguard(
        "inject", "plans/shop.jmx", "plans/shop.elastic.jmx",
        "--initial-rate", "10", "--max-rate", "200", "--p95", "300ms",
    )  # fmt: skip
    assert injected.returncode == 0, injected.stderr[-2000:]
    bsh = free_tcp_pair()
    # README: jmeter -n -t plan.elastic.jmx -l results.jtl -Jbeanshell.server.port=9000 ...
    jmeter = subprocess.Popen(
        jmeter_command(
            jmeter_home,
            [
                "-n", "-t", "plans/shop.elastic.jmx", "-l", "attached.jtl", "-j", "attached.log",
                f"-Jbeanshell.server.port={bsh}", "-Jbeanshell.server.file=",
                "-Jjmeter.save.saveservice.autoflush=true",
                "-Jjmeterengine.force.system.exit=true",
                f"-Jport={shop.port}", "-Jthreads=20", "-Jduration=20",
            ],
        ),
        cwd=newcomer.work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        attach = newcomer.loadguard(
            "attach", "--jtl", "attached.jtl", "--engine", f"127.0.0.1:{bsh + 1}",
            "--p95", "300ms", "--error-rate", "1%", "--max-rate", "200",
            "--idle-exit", "3s", "--out", "lg/", "-q",
            timeout=120,
        )  # fmt: skip
    finally:
        if jmeter.poll() is None:
            jmeter.kill()
        jmeter.wait(timeout=30)
    assert attach.returncode in (0, 1, 5), attach.stderr[-3000:]
    assert _labels(newcomer.work / "attached.jtl") == PAGES
    rows = read_decisions(newcomer.work / "lg" / "decisions.csv")
    assert any(r["applied"] == "true" and r["old_rate"] != r["new_rate"] for r in rows), rows
    summary = json.loads((newcomer.work / "lg" / "summary.json").read_text())
    assert summary["samples"] > 50
