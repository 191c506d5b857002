"""The whole evaluation: sweep, every run, CSV, plots, docs/evaluation.md (an adapter).

Order: the λ* sweep first, then repetition by repetition, every scheme once per
repetition (FFA, TSTCTG, threezone, ... then again), so a slow drift of the shared
machine's load spreads over all schemes instead of hitting one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loadguard.errors import ReportError, UsageError
from loadguard.jmeter.home import JMeterHome, find_jmeter_home
from loadguard.lab.evaluate import markdown, plots
from loadguard.lab.evaluate.aggregate import Row, aggregate, read_runs_csv, run_row, write_runs_csv
from loadguard.lab.evaluate.config import EvalConfig
from loadguard.lab.evaluate.lambda_star import LambdaStar, SweepPoint, lambda_star_from_sweep
from loadguard.lab.evaluate.run_metrics import WindowPoint
from loadguard.lab.evaluate.runner import RunRecord, read_points, run_scheme, sweep_point
from loadguard.lab.evaluate.schemes import Scheme
from loadguard.lab.evaluate.targets import Targets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalResult:
    rows: list[Row]
    sweep: list[SweepPoint]
    lambda_star: LambdaStar
    csv: Path
    doc: Path


def run_seed(cfg: EvalConfig, scheme_index: int, rep: int) -> int:
    return cfg.seed + 100 * scheme_index + rep


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def machine_lines(home: JMeterHome) -> list[str]:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    try:
        java = subprocess.run(
            ["java", "-version"], capture_output=True, text=True, timeout=30
        ).stderr.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        java = "java: unknown"
    plugins = sorted(p.name for p in (home.path / "lib" / "ext").glob("jmeter-plugins-*.jar"))
    return [
        f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} "
        f"logical CPUs ({cpu}){mem}",
        "shared with other jobs while running (see the load averages per run)",
        f"Python {platform.python_version()}, {java}",
        f"JMeter {home.version or '?'} at {home.path}, plugins: {', '.join(plugins)}",
    ]


def _sweep(
    cfg: EvalConfig, home: JMeterHome, targets: Targets
) -> tuple[list[SweepPoint], float | None]:
    points: list[SweepPoint] = []
    analytic: float | None = None
    for j, rate in enumerate(cfg.sweep_rates):
        point, analytic = sweep_point(cfg, rate, cfg.seed + 1000 + j, home, targets)
        log.info(
            "sweep %g req/s: achieved %.1f, p95 %.0f ms, errors %.2f%%",
            rate, point.achieved_rps, point.p95_ms, point.error_rate * 100,
        )  # fmt: skip
        points.append(point)
    return points, analytic


def _write_sweep(cfg: EvalConfig, sweep: list[SweepPoint], analytic: float | None) -> LambdaStar:
    """λ* from the sweep, written to sweep.json before the runs start."""
    lam = lambda_star_from_sweep(sweep, cfg.target.p95_ms, cfg.error_rate)
    log.info("lambda* measured %s req/s, analytic %s", lam.rps, analytic)
    (cfg.out_dir / "sweep.json").write_text(
        json.dumps(
            {
                "points": [dataclasses.asdict(p) for p in sweep],
                "lambda_star": lam.rps,
                "bounded": lam.bounded,
                "analytic": analytic,
            },
            indent=2,
        )
        + "\n"
    )
    return lam


def run_order(cfg: EvalConfig) -> list[tuple[int, Scheme]]:
    """The schemes of one round, each with its canonical index (its seed's).

    On a shared target (``cfg.share_target``) the open-loop floods run last: the
    round's last flood then needs no recovery and reset before the next run, which is
    a minute and a half of TeaStore draining its queue (the quick smoke test saves one
    of its two). Fresh targets keep the canonical order."""
    order = list(enumerate(cfg.schemes))
    if cfg.share_target:
        order.sort(key=lambda pair: pair[1].kind == "baseline")  # stable: else canonical
    return order


def _runs(cfg: EvalConfig, home: JMeterHome, targets: Targets) -> list[RunRecord]:
    """Every scheme's runs, the repetitions interleaved across schemes."""
    records: list[RunRecord] = []
    for rep in range(1, cfg.repetitions + 1):
        for i, scheme in run_order(cfg):
            seed = run_seed(cfg, i, rep)
            log.info("run %s #%d (seed %d)", scheme.name, rep, seed)
            record = run_scheme(cfg, scheme, rep, seed, home, targets)
            m = record.metrics
            log.info(
                "  %s #%d: p95 %.0f ms, violating %.0f%%, errors %.2f%%, ok %.1f/s, "
                "held back %.0f%%",
                scheme.name, rep, m.p95_ms or 0, (m.violation_share_p95 or 0) * 100,
                (m.error_rate or 0) * 100, m.ok_rps, m.held_back_share * 100,
            )  # fmt: skip
            records.append(record)
    return records


#: What one evaluation writes into its folder (``--force`` removes exactly these).
EVALUATION_PARTS = ("runs", "sweep", "sweep.json", "session.json")


def claim_evaluation_folder(out_dir: Path, force: bool) -> None:
    """An evaluation folder holds one evaluation: the runs of an earlier one would mix
    with the new ones (JMeter appends to an existing JTL). Refused with ``UsageError``
    unless ``force``, which removes the earlier evaluation's parts first."""
    earlier = [out_dir / p for p in EVALUATION_PARTS if (out_dir / p).exists()]
    if not earlier:
        return
    if not force:
        raise UsageError(
            f"{out_dir} already holds an evaluation ({', '.join(p.name for p in earlier)}): "
            "give another --out, or --force to replace it"
        )
    for p in earlier:
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def evaluate(cfg: EvalConfig, doc: Path | None = None, force: bool = False) -> EvalResult:
    """Run the evaluation in ``cfg`` and write runs.csv, PNGs and the Markdown report.

    ``doc``: where the report goes (default ``<out>/evaluation.md``); its PNGs go in a
    folder named after it (``docs/evaluation.md`` -> ``docs/evaluation/``). ``force``:
    replace an earlier evaluation in ``cfg.out_dir`` instead of refusing.
    """
    home = find_jmeter_home()
    claim_evaluation_folder(cfg.out_dir, force)
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    doc = doc or cfg.out_dir / "evaluation.md"
    started = _now()
    machine = machine_lines(home)
    with Targets(cfg) as targets:  # fresh per run, or one shared (cfg.share_target)
        sweep, analytic = _sweep(cfg, home, targets)
        lam = _write_sweep(cfg, sweep, analytic)
        records = _runs(cfg, home, targets)
    rows = [run_row(r, lam.rps) for r in records]
    csv_path = doc.with_suffix("") / "runs.csv"
    write_runs_csv(csv_path, rows)
    session = {"machine": machine, "started": started, "finished": _now(), "command": cfg.command}
    (cfg.out_dir / "session.json").write_text(json.dumps(session, indent=2) + "\n")
    points = {(r.scheme, r.rep): r.points for r in records}
    _write_report(cfg, doc, rows, points, sweep, lam, analytic, session)
    return EvalResult(rows, sweep, lam, csv_path, doc)


def _write_report(
    cfg: EvalConfig,
    doc: Path,
    rows: list[Row],
    points: Mapping[tuple[str, int], Sequence[WindowPoint]],
    sweep: list[SweepPoint],
    lam: LambdaStar,
    analytic: float | None,
    session: Mapping[str, Any],
) -> None:
    """PNGs and the Markdown report from finished runs (their rows and window series)."""
    fig_dir = doc.with_suffix("")
    names = [s.name for s in cfg.schemes]
    figures: dict[str, str] = {}
    first: dict[str, Sequence[WindowPoint]] = {}
    for name in names:
        mine = [points[key] for key in sorted(points) if key[0] == name]
        png = plots.scheme_figure(name, mine, cfg.target.p95_ms, lam.rps, fig_dir / f"{name}.png")
        figures[name] = os.path.relpath(png, doc.parent)
        first[name] = mine[0]
    overview = plots.overview_figure(first, cfg.target.p95_ms, lam.rps, fig_dir / "overview.png")
    figures = {"overview": os.path.relpath(overview, doc.parent), **figures}
    report = markdown.Report(
        cfg=replace(cfg, command=str(session.get("command") or cfg.command)),
        sweep=sweep,
        lambda_star=lam.rps,
        lambda_star_bounded=lam.bounded,
        lambda_star_analytic=analytic,
        rows=rows,
        agg=aggregate(rows, names),
        figures=figures,
        csv_path=os.path.relpath(fig_dir / "runs.csv", doc.parent),
        machine=list(session["machine"]),
        started=str(session["started"]),
        finished=str(session["finished"]),
    )
    previous = doc.read_text(encoding="utf-8") if doc.exists() else None
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(markdown.render(report, previous), encoding="utf-8")


def rerender(cfg: EvalConfig, doc: Path | None = None) -> EvalResult:
    """Write the PNGs and the report again from a finished evaluation in ``cfg.out_dir``
    (its runs.csv, every run's windows.csv, sweep.json and session.json); runs nothing."""
    doc = doc or cfg.out_dir / "evaluation.md"
    csv_path = doc.with_suffix("") / "runs.csv"
    try:
        rows = read_runs_csv(csv_path)
        saved = json.loads((cfg.out_dir / "sweep.json").read_text())
        session = json.loads((cfg.out_dir / "session.json").read_text())
        points = {
            (str(r["scheme"]), int(r["rep"] or 0)): read_points(
                Path(str(r["run_dir"])) / "windows.csv"
            )
            for r in rows
        }
    except (OSError, ValueError, KeyError) as exc:
        raise ReportError(f"{cfg.out_dir}: not a finished evaluation ({exc})") from exc
    sweep = [SweepPoint(**p) for p in saved["points"]]
    lam = LambdaStar(saved["lambda_star"], bool(saved["bounded"]))
    _write_report(cfg, doc, rows, points, sweep, lam, saved["analytic"], session)
    return EvalResult(rows, sweep, lam, csv_path, doc)
