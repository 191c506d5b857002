"""``loadguard evaluate --suite --real``: the plant suite on real JMeter (thin; the work is
loadguard.lab.evaluate.real_suite and real_report)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import click

from loadguard.errors import UsageError
from loadguard.jmeter.home import find_jmeter_home
from loadguard.lab.cli.suite_cmd import _policies
from loadguard.lab.evaluate.real_plants import select_real
from loadguard.lab.evaluate.real_report import data_dir, load, merge, to_json, write
from loadguard.lab.evaluate.real_suite import RealPlantResult, RealSuiteConfig, evaluate_real_plant
from loadguard.policies import DEFAULT_POLICY

#: A real run is judged from 30 s on (three windows at least); steady efficiency needs
#: more than 120 s.
MIN_DURATION_S = 60.0


def _commit() -> str:
    """The commit of the checkout it runs in (the current folder), ``+dirty`` when a tracked
    file in loadguard/ is changed; ``unknown`` outside a checkout (an installed wheel)."""
    root = Path.cwd()
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "-uno", "--", "loadguard"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M")


def run_real_suite_command(
    *,
    plants: tuple[str, ...],
    policies: tuple[str, ...],
    duration: float | None,
    doc: Path | None,
    out: Path | None,
    command: str,
    render_only: bool = False,
) -> None:
    d = 240.0 if duration is None else duration
    if d < MIN_DURATION_S:
        raise UsageError(f"--duration: a real suite run needs at least {MIN_DURATION_S:g}s")
    chosen = select_real(plants)
    out_dir = out or Path("results") / datetime.now().strftime("suite-jmeter-%Y%m%d-%H%M%S")
    cfg = RealSuiteConfig(
        out_dir=out_dir,
        duration_s=d,
        policies=_policies(policies) if policies else (DEFAULT_POLICY,),
    )
    doc_path = doc or Path("docs/controller-jmeter.md")
    if render_only:
        json_path = write(load(doc_path), doc_path)
        click.echo(f"report: {doc_path} again from {json_path}", err=True)
        return
    earlier = load(doc_path) if (data_dir(doc_path) / "suite.json").exists() else None
    home = find_jmeter_home()
    meta = {"command": command, "commit": _commit(), "started": _now(), "finished": ""}
    results: list[RealPlantResult] = []
    for plant in chosen:
        results.append(
            evaluate_real_plant(plant, cfg, home, progress=lambda m: click.echo(m, err=True))
        )
        data = to_json(results, cfg, {**meta, "finished": _now()})
        write(merge(earlier, data), doc_path)
    met = sum(1 for r in results for run in r.runs if not run.misses)
    total = sum(len(r.runs) for r in results)
    click.echo(
        f"goal met in {met} of {total} runs; report: {doc_path}; data: {data_dir(doc_path)}; "
        f"runs: {out_dir}",
        err=True,
    )
