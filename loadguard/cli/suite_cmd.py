"""``loadguard evaluate --suite``: the controller's plant suite in the simulator (thin;
the work is loadguard.evaluate.suite and suite_report)."""

from __future__ import annotations

from pathlib import Path

import click

from loadguard.errors import UsageError
from loadguard.evaluate.suite import SuiteConfig, run_suite
from loadguard.evaluate.suite_report import load_json, to_json, write
from loadguard.policies import POLICIES
from loadguard.simulate.plants import select


def _policies(names: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for raw in names:
        for name in (n.strip() for n in raw.split(",")):
            if name and name not in POLICIES:
                raise UsageError(
                    f"--policies: unknown policy {name!r} (known: {', '.join(POLICIES)})"
                )
            if name and name not in out:
                out.append(name)
    if not out:
        raise UsageError("--policies: give at least one policy")
    return tuple(out)


def run_suite_command(
    *,
    quick: bool,
    plants: tuple[str, ...],
    policies: tuple[str, ...],
    seeds: int | None,
    duration: float | None,
    baseline: Path | None,
    doc: Path | None,
    out: Path | None,
    command: str,
) -> None:
    overrides: dict[str, object] = {}
    if policies:
        overrides["policies"] = _policies(policies)
    if seeds is not None:
        if seeds < 1:
            raise UsageError("--repetitions: must be >= 1")
        overrides["seeds"] = tuple(range(1, seeds + 1))
    if duration is not None:
        if duration < 300:
            raise UsageError("--duration: the suite needs at least 300s (events at 120-170 s)")
        overrides["duration_s"] = duration
    cfg = SuiteConfig.quick(**overrides) if quick else SuiteConfig(**overrides)  # type: ignore[arg-type]
    chosen = select(plants)
    base = load_json(baseline) if baseline is not None else None
    results = run_suite(chosen, cfg, progress=lambda msg: click.echo(msg, err=True))
    data = to_json(results, cfg, command)
    doc_path = doc or Path("docs/controller.md")
    out_dir = out or doc_path.parent / "controller"
    write(data, base, doc_path, out_dir)
    met = sum(1 for p in data["plants"] for r in p["runs"] if not r["misses"])
    total = sum(len(p["runs"]) for p in data["plants"])
    click.echo(
        f"goal met in {met} of {total} runs; report: {doc_path}; data: {out_dir}/suite.json",
        err=True,
    )
