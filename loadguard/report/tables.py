"""The report's tables as plain rows of strings (pure: no I/O, no HTML).

* ``summary_rows``: the fields of ``summary.json`` (loadguard.summary.Summary), known
  fields first in a fixed order, then any field a newer writer added.
* ``derived_summary``: when no summary.json is given, the figures that can be computed
  exactly from the decision log (actions, time in zone, final rate) and, with a JTL,
  from every sample (count, mean, p95, p99, error rate, ok rate).
* ``label_rows``: per-label results from the JTL against the SLO thresholds in the
  decision log's ``slo_*`` columns (the last value in force). A label *meets* a
  threshold when its whole-run figure is at most the threshold (the SLO is an upper
  bound, as in ``SloSpec``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from loadguard.report.jtl_digest import JtlDigest, LabelDigest

SUMMARY_ORDER: tuple[str, ...] = (
    "verdict",
    "max_compliant_rate",
    "final_rate",
    "samples",
    "duration_s",
    "mean_ms",
    "p95_ms",
    "p99_ms",
    "error_rate",
    "ok_rps",
    "windows_evaluated",
    "violation_share_p95",
    "violation_share",
    "time_in_zone_s",
    "actions",
    "slo",
    "stop_reason",
    "max_compliant_evidence",
)
FRACTIONS = frozenset({"error_rate", "violation_share_p95", "violation_share", "slo_error_rate"})
SLO_COLUMNS: dict[str, str] = {
    "p95_ms": "slo_p95_ms",
    "p99_ms": "slo_p99_ms",
    "mean_ms": "slo_mean_ms",
    "error_rate": "slo_error_rate",
}
DASH = "—"


def fmt_number(value: Any, percent: bool = False) -> str:
    """A figure for a table cell: ``—`` for missing, % for fractions, 3 significant decimals."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return DASH
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if percent:
            return f"{value * 100:.3g}%" if value else "0%"
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        if abs(value) < 1.0:
            return f"{value:.3g}"
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return str(value)


def fmt_value(key: str, value: Any) -> str:
    if key == "max_compliant_evidence" and isinstance(value, Mapping):
        return _evidence(value)
    if isinstance(value, Mapping):
        if not value:
            return DASH
        percent = key in FRACTIONS
        parts = []
        for k, v in value.items():
            if v is None:
                continue
            parts.append(f"{k}: {fmt_number(v, percent or k in FRACTIONS)}")
        return "; ".join(parts) or DASH
    if isinstance(value, list | tuple):
        return ", ".join(fmt_number(v) for v in value) or DASH
    return fmt_number(value, key in FRACTIONS)


def _iso(epoch_ms: Any) -> str:
    try:
        stamp = datetime.fromtimestamp(float(epoch_ms) / 1000.0, tz=UTC)
    except (TypeError, ValueError, OverflowError):
        return DASH
    return stamp.strftime("%H:%M:%S")


def _evidence(ev: Mapping[str, Any]) -> str:
    return (
        f"{fmt_number(ev.get('rate_rps'))} req/s held over {fmt_number(ev.get('windows'))} "
        f"ticks, {_iso(ev.get('from_epoch_ms'))}–{_iso(ev.get('to_epoch_ms'))} UTC"
    )


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    keys = [k for k in SUMMARY_ORDER if k in summary]
    keys += sorted(k for k in summary if k not in SUMMARY_ORDER)
    return [(k, fmt_value(k, summary[k])) for k in keys]


def derived_summary(frame: pd.DataFrame, jtl: JtlDigest | None) -> dict[str, Any]:
    """Exact figures without summary.json (see module docstring)."""
    epoch = frame["epoch_ms"].to_numpy(np.float64)
    zone_ms: dict[str, float] = {}
    for zone, dt in zip(frame["zone"].iloc[1:], np.diff(epoch), strict=True):
        zone_ms[str(zone)] = zone_ms.get(str(zone), 0.0) + max(0.0, float(dt))
    actions = {str(k): int(v) for k, v in frame["action"].value_counts().sort_index().items()}
    out: dict[str, Any] = {
        "ticks": len(frame),
        "final_rate": float(frame["new_rate"].iloc[-1]),
        "max_new_rate": float(frame["new_rate"].max()),
        "windows_evaluated": int((frame["zone"] != "NO_DATA").sum()),
        "time_in_zone_s": {z: ms / 1000.0 for z, ms in sorted(zone_ms.items())},
        "actions": actions,
        "decision_span_s": (epoch[-1] - epoch[0]) / 1000.0,
    }
    if jtl is not None:
        o = jtl.overall
        span = ((jtl.last_end_ms or 0) - (jtl.first_start_ms or 0)) / 1000.0
        out.update(
            samples=o.count,
            duration_s=span,
            mean_ms=o.hist.mean(),
            p95_ms=o.hist.quantile(0.95),
            p99_ms=o.hist.quantile(0.99),
            error_rate=o.error_rate,
            ok_rps=(o.count - o.errors) / span if span > 0 else None,
        )
    return out


def slo_thresholds(frame: pd.DataFrame) -> dict[str, float]:
    """The last non-empty value of each ``slo_*`` column: the thresholds in force at the end."""
    out: dict[str, float] = {}
    for metric, col in SLO_COLUMNS.items():
        values = frame[col].dropna()
        if len(values):
            out[metric] = float(values.iloc[-1])
    return out


@dataclass(frozen=True)
class LabelRow:
    label: str
    cells: tuple[str, ...]
    #: metric -> met? for each SLO threshold in force; empty when no threshold applies
    verdicts: Mapping[str, bool]

    @property
    def meets_slo(self) -> bool | None:
        return all(self.verdicts.values()) if self.verdicts else None


LABEL_HEADER: tuple[str, ...] = (
    "label",
    "samples",
    "errors",
    "error rate",
    "mean ms",
    "p95 ms",
    "p99 ms",
    "max ms",
    "SLO",
)


def _label_row(name: str, d: LabelDigest, slo: Mapping[str, float]) -> LabelRow:
    figures: dict[str, float | None] = {
        "p95_ms": d.hist.quantile(0.95),
        "p99_ms": d.hist.quantile(0.99),
        "mean_ms": d.hist.mean(),
        "error_rate": d.error_rate,
    }
    verdicts = {
        m: figures[m] is not None and float(figures[m] or 0.0) <= limit for m, limit in slo.items()
    }
    cells = (
        name,
        fmt_number(d.count),
        fmt_number(d.errors),
        fmt_number(d.error_rate, percent=True),
        fmt_number(figures["mean_ms"]),
        fmt_number(figures["p95_ms"]),
        fmt_number(figures["p99_ms"]),
        fmt_number(None if d.max_ms is None else float(d.max_ms)),
    )
    return LabelRow(name, cells, verdicts)


def label_rows(jtl: JtlDigest, slo: Mapping[str, float]) -> list[LabelRow]:
    """One row per label (sorted by name), then the overall row ``(all labels)``."""
    rows = [_label_row(name, jtl.labels[name], slo) for name in sorted(jtl.labels)]
    rows.append(_label_row("(all labels)", jtl.overall, slo))
    return rows


def verdict_text(row: LabelRow, slo: Mapping[str, float]) -> str:
    if not row.verdicts:
        return DASH
    failed = [m for m, ok in row.verdicts.items() if not ok]
    if not failed:
        return "meets " + ", ".join(f"{m} ≤ {fmt_number(slo[m], m in FRACTIONS)}" for m in slo)
    return "misses " + ", ".join(f"{m} ≤ {fmt_number(slo[m], m in FRACTIONS)}" for m in failed)


def compare_rows(summaries: Sequence[Mapping[str, Any] | None]) -> list[tuple[str, list[str]]]:
    """Side-by-side summary figures: one row per field, one column per run."""
    keys: list[str] = [k for k in SUMMARY_ORDER if any(s is not None and k in s for s in summaries)]
    extra = sorted({k for s in summaries if s for k in s} - set(SUMMARY_ORDER))
    rows = []
    for key in [*keys, *extra]:
        rows.append(
            (
                key,
                [DASH if s is None or key not in s else fmt_value(key, s[key]) for s in summaries],
            )
        )
    return rows


def compare_label_rows(digests: Sequence[JtlDigest | None]) -> list[tuple[str, list[str]]]:
    """Per label, one cell per run: ``p95 / p99 ms, errors % (samples)`` over the whole
    run, exact; a dash where the run has no JTL or never saw the label."""

    def cell(d: LabelDigest | None) -> str:
        if d is None or d.count == 0:
            return DASH
        return (
            f"{fmt_number(d.hist.quantile(0.95))} / {fmt_number(d.hist.quantile(0.99))} ms, "
            f"{fmt_number(d.error_rate, percent=True)} ({fmt_number(d.count)})"
        )

    names = sorted({n for d in digests if d is not None for n in d.labels})
    rows = [(n, [cell(None if d is None else d.labels.get(n)) for d in digests]) for n in names]
    rows.append(("(all labels)", [cell(None if d is None else d.overall) for d in digests]))
    return rows
