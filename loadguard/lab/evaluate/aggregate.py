"""Per-run rows (the CSV of every run) and mean ± sd per scheme (pure).

``efficiency`` = ok throughput / λ*; ``steady_efficiency`` the same after the
steady-state cut-off; ``compliant_efficiency`` = compliant throughput / λ*. λ* is the
value measured by the sweep (the analytic one is in its own column). The sd is the
sample standard deviation (ddof = 1); with one repetition it is ``None``.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from loadguard.lab.evaluate.runner import RunRecord

Row = dict[str, float | int | str | None]

#: Columns of runs.csv, in order.
CSV_COLUMNS: tuple[str, ...] = (
    "scheme", "rep", "seed", "duration_s", "steady_from_s", "samples",
    "mean_ms", "p95_ms", "p99_ms", "error_rate",
    "windows", "windows_judged", "windows_violating_p95", "violation_share_p95",
    "violation_share_any",
    "ok_rps", "compliant_ok_rps", "steady_ok_rps",
    "lambda_star_measured", "lambda_star_analytic",
    "efficiency", "steady_efficiency", "compliant_efficiency",
    "offered_rps", "started_rps", "held_back", "held_back_share", "max_threads",
    "increase", "hold", "decrease",
    "jmeter_cpu_cores", "target_cpu_cores", "sidecar_cpu_cores",
    "load_start", "load_end", "wall_s", "covered", "stop_reason", "run_dir",
)  # fmt: skip

#: Numeric columns averaged per scheme.
AGGREGATED: tuple[str, ...] = (
    "mean_ms", "p95_ms", "p99_ms", "error_rate", "violation_share_p95", "violation_share_any",
    "ok_rps", "compliant_ok_rps", "steady_ok_rps", "efficiency", "steady_efficiency",
    "compliant_efficiency", "offered_rps", "started_rps", "held_back", "held_back_share",
    "max_threads", "jmeter_cpu_cores", "target_cpu_cores", "sidecar_cpu_cores",
    "increase", "hold", "decrease",
)  # fmt: skip


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return num / den


def run_row(record: RunRecord, lambda_star: float | None) -> Row:
    m = record.metrics
    busy = max(record.wall_s, 1e-9)
    return {
        "scheme": record.scheme,
        "rep": record.rep,
        "seed": record.seed,
        "duration_s": m.duration_s,
        "steady_from_s": m.steady_from_s,
        "samples": m.samples,
        "mean_ms": m.mean_ms,
        "p95_ms": m.p95_ms,
        "p99_ms": m.p99_ms,
        "error_rate": m.error_rate,
        "windows": m.windows,
        "windows_judged": m.windows_judged,
        "windows_violating_p95": m.windows_violating_p95,
        "violation_share_p95": m.violation_share_p95,
        "violation_share_any": m.violation_share_any,
        "ok_rps": m.ok_rps,
        "compliant_ok_rps": m.compliant_ok_rps,
        "steady_ok_rps": m.steady_ok_rps,
        "lambda_star_measured": lambda_star,
        "lambda_star_analytic": record.lambda_star_analytic,
        "efficiency": _ratio(m.ok_rps, lambda_star),
        "steady_efficiency": _ratio(m.steady_ok_rps, lambda_star),
        "compliant_efficiency": _ratio(m.compliant_ok_rps, lambda_star),
        "offered_rps": m.offered_rps,
        "started_rps": m.started_rps,
        "held_back": m.held_back,
        "held_back_share": m.held_back_share,
        "max_threads": m.max_threads,
        "increase": record.actions.get("INCREASE") if record.actions else None,
        "hold": record.actions.get("HOLD") if record.actions else None,
        "decrease": record.actions.get("DECREASE") if record.actions else None,
        "jmeter_cpu_cores": record.jmeter_cpu_s / busy,
        "target_cpu_cores": record.target_cpu_s / busy,
        "sidecar_cpu_cores": None if record.sidecar_cpu_s is None else record.sidecar_cpu_s / busy,
        "load_start": record.load_start,
        "load_end": record.load_end,
        "wall_s": record.wall_s,
        "covered": "yes" if record.covered else "no",
        "stop_reason": record.stop_reason,
        "run_dir": str(record.run_dir),
    }


def write_runs_csv(path: Path, rows: Iterable[Mapping[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(CSV_COLUMNS), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_value(row.get(k)) for k in CSV_COLUMNS})


def read_runs_csv(path: Path) -> list[Row]:
    """runs.csv back into rows: numbers as numbers, empty cells as None."""
    text_columns = {"scheme", "covered", "stop_reason", "run_dir"}
    int_columns = {"rep", "seed", "samples", "windows", "windows_judged"}
    int_columns |= {"windows_violating_p95", "max_threads", "increase", "hold", "decrease"}

    def value(key: str, text: str) -> float | int | str | None:
        if key in text_columns:
            return text
        if text == "":
            return None
        return int(float(text)) if key in int_columns else float(text)

    with path.open(newline="", encoding="utf-8") as fh:
        return [{k: value(k, v) for k, v in raw.items()} for raw in csv.DictReader(fh)]


def _csv_value(value: object) -> object:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else value


@dataclass(frozen=True)
class Stat:
    mean: float | None
    sd: float | None
    n: int


def mean_sd(values: Sequence[float | int | str | None]) -> Stat:
    xs = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(float(v))]
    if not xs:
        return Stat(None, None, 0)
    return Stat(statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else None, len(xs))


def aggregate(rows: Sequence[Row], schemes: Sequence[str]) -> dict[str, dict[str, Stat]]:
    """scheme -> column -> mean ± sd over that scheme's runs."""
    out: dict[str, dict[str, Stat]] = {}
    for name in schemes:
        mine = [r for r in rows if r["scheme"] == name]
        out[name] = {col: mean_sd([r.get(col) for r in mine]) for col in AGGREGATED}
    return out


def reduction(ours: float | None, baseline: float | None) -> float | None:
    """The paper's "improved by X %": (baseline − ours) / baseline."""
    if ours is None or baseline is None or baseline == 0:
        return None
    return (baseline - ours) / baseline
