"""``loadguard evaluate --suite``: the controller's plant suite in the simulator (thin;
the work is loadguard.lab.evaluate.suite and suite_report)."""

from __future__ import annotations

from pathlib import Path

import click

from loadguard.errors import UsageError
from loadguard.lab.evaluate.suite import SuiteConfig, run_suite
from loadguard.lab.evaluate.suite_report import default_out, load_json, to_json, write
from loadguard.lab.simulate.plants import select
from loadguard.policies import POLICIES
from loadguard.slo import SloSpec


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


def _seeds(text: str) -> tuple[int, ...]:
    """``101,102,103`` -> (101, 102, 103): distinct whole numbers >= 0, in the order given."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if not part.isdigit():
            raise UsageError(f"--seeds: expected whole numbers like 101,102,103, got {part!r}")
        if int(part) not in out:
            out.append(int(part))
    if not out:
        raise UsageError("--seeds: give at least one seed, e.g. 101,102,103")
    return tuple(out)


def _budget(text: str) -> float:
    """``5%`` -> 0.05, through the SLO's own parser and limits (an ``SloSpecError`` as the
    sidecar's commands give for the same value)."""
    return SloSpec.from_options(p95="1s", violation_budget=text).violation_budget


def run_suite_command(
    *,
    quick: bool,
    plants: tuple[str, ...],
    policies: tuple[str, ...],
    repetitions: int | None,
    seeds: str | None,
    violation_budget: str | None,
    duration: float | None,
    baseline: Path | None,
    doc: Path | None,
    out: Path | None,
    command: str,
) -> None:
    overrides: dict[str, object] = {}
    if policies:
        overrides["policies"] = _policies(policies)
    if repetitions is not None and seeds is not None:
        raise UsageError("--seeds and --repetitions: give one of them")
    if repetitions is not None:
        if repetitions < 1:
            raise UsageError("--repetitions: must be >= 1")
        overrides["seeds"] = tuple(range(1, repetitions + 1))
    if seeds is not None:
        overrides["seeds"] = _seeds(seeds)
    if violation_budget is not None:
        overrides["violation_budget"] = _budget(violation_budget)
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
    out_dir = out or default_out(doc_path, data)
    write(data, base, doc_path, out_dir)
    met = sum(1 for p in data["plants"] for s in p["summary"] if not s["misses"])
    total = sum(len(p["summary"]) for p in data["plants"])
    click.echo(
        f"goal met on {met} of {total} plant x policy pairs (over seeds "
        f"{','.join(map(str, cfg.seeds))}, B = {cfg.violation_budget:.1%}); report: "
        f"{doc_path}; data: {out_dir}/suite.json",
        err=True,
    )
