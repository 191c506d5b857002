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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from loadguard import headline, human
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


#: Rows of the human summary table, in order, and the summary.json keys each one shows.
#: A key no row names (one a newer writer added) gets a row of its own, its name spelt
#: out (``zz_new`` -> "Zz new").
HUMAN_ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Verdict", ("verdict", "slo_verdicts")),
    ("Held rate", ("held_rate", "max_compliant_rate", "max_compliant_evidence")),
    ("Capacity at the SLO", ("capacity",)),
    ("SLO", ("slo", "violation_budget")),
    ("Windows over the SLO", ("violation_share", "violation_share_p95", "windows_evaluated")),
    ("Time over the SLO", ("time_in_zone_s",)),
    ("Time near the SLO", ()),
    ("Time without data", ()),
    ("Run length", ("duration_s",)),
    ("Samples", ("samples",)),
    ("Successful throughput (run mean)", ("ok_rps",)),
    ("Latency over the run", ("mean_ms", "p95_ms", "p99_ms")),
    ("Errors", ("error_rate",)),
    ("Last commanded rate", ("final_rate",)),
    ("Decisions", ("actions", "ticks")),
    ("Ended by", ("stop_reason", "internal_error")),
    ("Highest commanded rate", ("max_new_rate",)),
    ("Decision span", ("decision_span_s",)),
    ("Dashboard", ("dashboard",)),
)
#: Keys shown elsewhere on the page (the headline above the table).
SHOWN_ELSEWHERE = frozenset({"headline"})


_ORDER = {m: i for i, m in enumerate((*headline.BINDING_ORDER, "label"))}
_ACTION_ORDER = {a: i for i, a in enumerate(("INCREASE", "HOLD", "DECREASE", "STOP"))}


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _f(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if np.isfinite(value) else None


def _held_cell(s: Mapping[str, Any]) -> str | None:
    held = _m(s.get("held_rate"))
    rps = _f(held.get("rps"))
    if rps is not None:
        share = _f(held.get("violation_share"))
        windows = _f(held.get("windows"))
        extra = []
        if windows is not None:
            extra.append(f"over {human.count(windows)} windows")
        if share is not None:
            extra.append(f"{human.percent(share)} of them over the SLO")
        return human.rate(rps) + (f" ({', '.join(extra)})" if extra else "")
    if "max_compliant_rate" not in s and "max_compliant_evidence" not in s and not held:
        return None
    best = _f(s.get("max_compliant_rate"))
    if best is None:
        return f"{DASH} (no rate held within every SLO for a whole window)"
    ev = _m(s.get("max_compliant_evidence"))
    a, b = _f(ev.get("from_epoch_ms")), _f(ev.get("to_epoch_ms"))
    when = ""
    if a is not None and b is not None:
        when = f" for {human.duration((b - a) / 1000.0)}, {_iso(a)}–{_iso(b)} UTC"
    return f"{human.rate(best)} within every SLO{when} (the highest such rate)"


def _capacity_cell(s: Mapping[str, Any]) -> str | None:
    if "capacity" not in s:
        return None
    cap = _m(s.get("capacity"))
    status, rps = cap.get("status"), _f(cap.get("rps"))
    note = headline.note_tail(cap.get("note") if isinstance(cap.get("note"), str) else None)
    ci = cap.get("ci90_rps")
    if status == "estimated" and rps is not None:
        interval = ""
        if isinstance(ci, list | tuple) and len(ci) == 2:
            interval = f" (90 % CI {human.rate_interval(_f(ci[0]), _f(ci[1]))})"
        return f"≈ {human.rate(rps)}{interval}" + (f"; {note}" if note else "")
    if status == "lower_bound" and rps is not None:
        return f"above {human.rate(rps)}" + (f": {note}" if note else "")
    return "unknown" + (f": {note}" if note else "")


def _slo_cell(s: Mapping[str, Any]) -> str | None:
    if "slo" not in s and "violation_budget" not in s:
        return None
    parts = headline.slo_list(_m(s.get("slo")))
    text = ", ".join(parts) or "none"
    budget = _f(s.get("violation_budget"))
    if budget is not None:
        text += f"; at most {human.percent(budget)} of windows over it"
    return text


def _verdict_cell(s: Mapping[str, Any]) -> str | None:
    if "verdict" not in s:
        return None
    slo = _m(s.get("slo"))
    per = [
        f"{headline.slo_text(m, _f(slo.get(m)))} {str(v).lower().replace('_', ' ')}"
        for m, v in _m(s.get("slo_verdicts")).items()
    ]
    return str(s["verdict"]) + (f" ({'; '.join(per)})" if per else "")


def _windows_cell(s: Mapping[str, Any]) -> str | None:
    shares = _m(s.get("violation_share"))
    if not shares and "windows_evaluated" not in s:
        return None
    slo = _m(s.get("slo"))
    parts = []
    ordered = sorted(shares.items(), key=lambda kv: _ORDER.get(str(kv[0]), 99))
    for m, v in ordered:
        name = "label SLOs" if m == "label" else headline.slo_text(m, _f(slo.get(m)))
        parts.append(f"{name}: {human.percent(_f(v))}")
    judged = _f(s.get("windows_evaluated"))
    if judged is not None:
        parts.append(f"of {human.count(judged)} windows judged")
    return ", ".join(parts)


def _zone_cell(s: Mapping[str, Any], zone: str) -> str | None:
    zones = _m(s.get("time_in_zone_s"))
    if not zones:
        return None
    total = sum(v for v in (_f(x) for x in zones.values()) if v is not None)
    secs = _f(zones.get(zone)) or 0.0
    share = f" ({human.percent(secs / total)})" if total > 0 else ""
    return f"{human.duration(secs)}{share}"


def _latency_cell(s: Mapping[str, Any]) -> str | None:
    names = (("mean", "mean_ms"), ("p95", "p95_ms"), ("p99", "p99_ms"))
    parts = [f"{n} {human.latency(_f(s.get(k)))}" for n, k in names if k in s]
    return ", ".join(parts) + " (every sample)" if parts else None


def _errors_cell(s: Mapping[str, Any]) -> str | None:
    if "error_rate" not in s:
        return None
    rate = _f(s.get("error_rate"))
    if rate is None:
        return DASH
    n = _f(s.get("samples"))
    if rate == 0:
        return "none"
    failed = f" ({human.count(rate * n)} samples)" if n else ""
    return f"{human.percent(rate)}{failed}"


def _actions_cell(s: Mapping[str, Any]) -> str | None:
    actions = _m(s.get("actions"))
    if not actions:
        return None
    ordered = sorted(actions.items(), key=lambda kv: _ACTION_ORDER.get(str(kv[0]), 99))
    text = ", ".join(f"{human.count(_f(v))} {str(k).lower()}" for k, v in ordered)
    ticks = _f(s.get("ticks"))
    return text + (f" over {human.count(ticks)} ticks" if ticks is not None else "")


def _stop_cell(s: Mapping[str, Any]) -> str | None:
    if "stop_reason" not in s and "internal_error" not in s:
        return None
    text = str(s.get("stop_reason") or DASH).replace("_", " ")
    if s.get("internal_error"):
        text += f" ({s['internal_error']})"
    return text


def _dashboard_cell(s: Mapping[str, Any]) -> str | None:
    if "dashboard" not in s:
        return None
    d = _m(s.get("dashboard"))
    status = str(d.get("status") or DASH)
    why = d.get("reason") or d.get("path")
    return status.replace("_", " ") + (f": {why}" if why else "")


def _human_key(key: str) -> str:
    words = key.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def _generic(value: Any) -> str:
    if isinstance(value, Mapping):
        return "; ".join(f"{_human_key(str(k))}: {_generic(v)}" for k, v in value.items()) or DASH
    if isinstance(value, list | tuple):
        return ", ".join(_generic(v) for v in value) or DASH
    if isinstance(value, float):
        return human.number(value)
    return fmt_number(value)


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The summary table for people: labelled rows, units on every figure (module doc)."""
    s = summary
    cells: dict[str, str | None] = {
        "Verdict": _verdict_cell(s),
        "Held rate": _held_cell(s),
        "Capacity at the SLO": _capacity_cell(s),
        "SLO": _slo_cell(s),
        "Windows over the SLO": _windows_cell(s),
        "Time over the SLO": _zone_cell(s, "BREACH"),
        "Time near the SLO": _zone_cell(s, "NEAR"),
        "Time without data": _zone_cell(s, "NO_DATA"),
        "Run length": (human.duration(_f(s.get("duration_s"))) if "duration_s" in s else None),
        "Samples": human.count(_f(s.get("samples"))) if "samples" in s else None,
        "Successful throughput (run mean)": human.rate(_f(s.get("ok_rps")))
        if "ok_rps" in s
        else None,
        "Latency over the run": _latency_cell(s),
        "Errors": _errors_cell(s),
        "Last commanded rate": (human.rate(_f(s.get("final_rate"))) if "final_rate" in s else None),
        "Decisions": _actions_cell(s),
        "Ended by": _stop_cell(s),
        "Highest commanded rate": (
            human.rate(_f(s.get("max_new_rate"))) if "max_new_rate" in s else None
        ),
        "Decision span": (
            human.duration(_f(s.get("decision_span_s"))) if "decision_span_s" in s else None
        ),
        "Dashboard": _dashboard_cell(s),
    }
    rows = [(label, cell) for label, cell in cells.items() if cell is not None]
    known = {k for _, keys in HUMAN_ROWS for k in keys} | SHOWN_ELSEWHERE
    rows += [(_human_key(k), _generic(s[k])) for k in sorted(s) if k not in known]
    return rows


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
    #: the smallest relative margin to a threshold, (limit - value) / limit: negative
    #: when over; ``None`` when no threshold applies
    margin: float | None = None

    @property
    def meets_slo(self) -> bool | None:
        return all(self.verdicts.values()) if self.verdicts else None


LABEL_HEADER: tuple[str, ...] = (
    "label",
    "samples",
    "errors",
    "error rate",
    "mean",
    "p95",
    "p99",
    "max",
    "margin to the SLO",
    "SLO",
)


def _margin(value: float | None, limit: float) -> float:
    if value is None:
        return -math.inf
    if limit <= 0:
        return 0.0 if value <= 0 else -math.inf
    return (limit - value) / limit


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
    margins = {m: _margin(figures[m], limit) for m, limit in slo.items()}
    margin = min(margins.values()) if margins else None
    worst = min(margins, key=lambda m: margins[m]) if margins else None
    if margin is None or worst is None:
        margin_text = DASH
    elif math.isinf(margin):
        margin_text = f"no {headline.METRIC_NAMES.get(worst, worst)}"
    else:
        metric = headline.METRIC_NAMES.get(worst, worst)
        if margin >= 0:
            margin_text = f"{human.percent(margin)} below ({metric})"
        elif slo[worst] > 0:
            margin_text = f"{human.number(1.0 - margin)}× the SLO ({metric})"
        else:
            margin_text = f"over ({metric})"
    cells = (
        name,
        human.count(d.count),
        human.count(d.errors),
        human.percent(d.error_rate),
        human.latency(figures["mean_ms"]),
        human.latency(figures["p95_ms"]),
        human.latency(figures["p99_ms"]),
        human.latency(None if d.max_ms is None else float(d.max_ms)),
        margin_text,
    )
    return LabelRow(name, cells, verdicts, margin)


def label_rows(jtl: JtlDigest, slo: Mapping[str, float]) -> list[LabelRow]:
    """One row per label, the worst first (smallest margin to its SLO; labels without a
    threshold after, by name), then the overall row ``(all labels)``."""
    rows = [_label_row(name, jtl.labels[name], slo) for name in sorted(jtl.labels)]
    rows.sort(key=lambda r: (r.margin is None, r.margin if r.margin is not None else 0.0))
    rows.append(_label_row("(all labels)", jtl.overall, slo))
    return rows


def breached_labels(frame: pd.DataFrame, rows: Sequence[LabelRow]) -> list[str]:
    """Labels that breached: named in the decision log's ``breached_labels`` column, or
    missing a threshold over the whole run; worst first, as in the table."""
    logged = {
        name
        for cell in frame["breached_labels"].astype(str)
        for name in cell.split(";")
        if name and cell != "nan"
    }
    return [
        r.label
        for r in rows
        if r.label != "(all labels)" and (r.label in logged or r.meets_slo is False)
    ]


def verdict_text(row: LabelRow, slo: Mapping[str, float]) -> str:
    if not row.verdicts:
        return DASH
    failed = [m for m, ok in row.verdicts.items() if not ok]
    if not failed:
        return "meets " + ", ".join(headline.slo_text(m, slo[m]) for m in slo)
    return "misses " + ", ".join(headline.slo_text(m, slo[m]) for m in failed)


def compare_rows(summaries: Sequence[Mapping[str, Any] | None]) -> list[tuple[str, list[str]]]:
    """Side-by-side summary figures: one labelled row (as ``summary_rows``), one column
    per run; a dash where a run lacks the figure."""
    per_run = [dict(summary_rows(s)) if s is not None else {} for s in summaries]
    order: list[str] = []
    for cells in per_run:
        order += [label for label in cells if label not in order]
    return [(label, [cells.get(label, DASH) for cells in per_run]) for label in order]


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
