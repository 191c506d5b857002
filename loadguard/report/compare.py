"""``render_compare``: several runs overlaid on shared axes, and their summaries side by side.

Each run's x is the time since *its own* first tick, so runs started at different wall
times line up. Both charts share one time unit (seconds, or minutes past 20 minutes).
Runs with a JTL also get a per-label table: each label's whole-run p95 / p99, error rate
and sample count per run, exact (the same one-pass digest as ``loadguard report``).
Files written: ``OUT`` and ``<stem>_knee.png``, ``<stem>_rate.png``, ``<stem>_p95.png``
beside it. The first chart overlays the runs' latency-throughput curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from loadguard import __version__
from loadguard.errors import ReportError
from loadguard.report import charts, page, tables
from loadguard.report.atomic import write_all
from loadguard.report.decision_frame import load_decisions
from loadguard.report.downsample import MAX_POINTS, minmax_downsample
from loadguard.report.jtl_digest import digest_jtl
from loadguard.report.run_inputs import RunPaths, load_summary, resolve_run

PALETTE = ("#2b5c8a", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#a6761d", "#666")


def run_names(paths: Sequence[RunPaths]) -> list[str]:
    """Directory names; made unique with the parent's name, then an index."""
    plain = [p.name for p in paths]
    names = list(plain)
    for i, p in enumerate(paths):
        if plain.count(plain[i]) > 1:
            base = (p.run_dir or p.decisions.parent).resolve()
            names[i] = f"{base.parent.name}/{base.name}"
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if names.count(name) == 1 else f"{name} #{seen[name]}")
    return out


Series = tuple[str, np.ndarray, np.ndarray]


def _overlay(
    frames: Sequence[Series],
    unit: charts.TimeAxis,
    ylabel: str,
    step: bool,
    slo: float | None,
    dotted: Sequence[Series] = (),
    dotted_label: str = "",
) -> Figure:
    """One line per run; ``dotted`` adds a second, dotted line per run in the same colour."""
    fig, ax = charts.new_figure()
    for i, (name, x, y) in enumerate(frames):
        dx, dy = minmax_downsample(x, y, MAX_POINTS)
        colour = PALETTE[i % len(PALETTE)]
        if step:
            ax.step(dx, dy, where="post", color=colour, linewidth=1.3, label=name)
        else:
            ax.plot(dx, dy, color=colour, linewidth=1.2, label=name)
    for i, (_, x, y) in enumerate(dotted):
        dx, dy = minmax_downsample(x, y, MAX_POINTS)
        colour = PALETTE[i % len(PALETTE)]
        ax.plot(dx, dy, color=colour, linewidth=1.0, linestyle=":", alpha=0.9)
    if dotted:
        ax.plot([], [], color="#555", linestyle=":", label=dotted_label)
    if slo is not None:
        ax.axhline(slo, color="#b01e12", linestyle="--", linewidth=1.2, label="SLO p95")
    ax.set_xlabel(unit.label)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


def knee_overlay(frames: Sequence[tuple[str, pd.DataFrame]], slo: float | None) -> Figure:
    """Each run's window p95 against its achieved rate (judged ticks), in its colour, and
    a line through the median p95 of each rate bin: the runs' latency-throughput curves."""
    fig, ax = charts.new_figure()
    for i, (name, frame) in enumerate(frames):
        colour = PALETTE[i % len(PALETTE)]
        judged = frame[(frame["zone"] != "NO_DATA") & (frame["rps"] > 0)]
        x = judged["rps"].to_numpy(np.float64)
        y = judged["p95_ms"].to_numpy(np.float64)
        keep = charts.thin(len(x), charts.MAX_MARKERS * 2)
        ax.scatter(x[keep], y[keep], s=10, color=colour, alpha=0.45, linewidths=0)
        bx, by = binned_median(x, y)
        ax.plot(bx, by, color=colour, linewidth=1.6, marker="o", markersize=3, label=name)
    if slo is not None:
        ax.axhline(slo, color="#b01e12", linestyle="--", linewidth=1.2, label="SLO p95")
    ax.set_xlabel("achieved throughput (req/s, window rps)")
    ax.set_ylabel("window p95 (ms)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


def binned_median(x: np.ndarray, y: np.ndarray, bins: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Median ``y`` of ``bins`` equal-width bins of ``x`` (empty bins left out), at each
    bin's median ``x``; NaN ``y`` is ignored."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) == 0:
        return np.empty(0), np.empty(0)
    edges = np.linspace(float(x.min()), float(x.max()) + 1e-9, bins + 1)
    which = np.clip(np.digitize(x, edges) - 1, 0, bins - 1)
    bx, by = [], []
    for b in range(bins):
        sel = which == b
        if sel.any():
            bx.append(float(np.median(x[sel])))
            by.append(float(np.median(y[sel])))
    return np.asarray(bx), np.asarray(by)


def render_compare(
    sources: Sequence[Path | RunPaths], out: Path, names: Sequence[str] | None = None
) -> Path:
    """Overlay the runs' commanded and achieved rate and p95; table their summary.json."""
    if not sources:
        raise ReportError("compare needs at least one run directory")
    paths = [s if isinstance(s, RunPaths) else resolve_run(s) for s in sources]
    if names is not None and len(names) != len(paths):
        raise ReportError(f"{len(names)} names given for {len(paths)} runs")
    labels = list(names) if names is not None else run_names(paths)
    frames = [load_decisions(p.decisions) for p in paths]
    summaries = [load_summary(p.summary) if p.summary else None for p in paths]
    digests = [
        digest_jtl(p.jtl, fmt=p.jtl_format, transactions=p.transactions) if p.jtl else None
        for p in paths
    ]
    spans = [float(f["epoch_ms"].iloc[-1] - f["epoch_ms"].iloc[0]) for f in frames]
    unit = charts.TimeAxis.for_span(0.0, max(spans))
    rate: list[Series] = []
    achieved: list[Series] = []
    p95: list[Series] = []
    for name, frame in zip(labels, frames, strict=True):
        axis = charts.TimeAxis(float(frame["epoch_ms"].iloc[0]), unit.scale_s, unit.label)
        x = axis.of(frame["epoch_ms"])
        rate.append((name, x, frame["new_rate"].to_numpy(np.float64)))
        achieved.append((name, x, frame["rps"].to_numpy(np.float64)))
        p95.append((name, x, frame["p95_ms"].to_numpy(np.float64)))
    slos = {float(v) for f in frames for v in f["slo_p95_ms"].dropna().iloc[-1:]}
    common_slo = slos.pop() if len(slos) == 1 else None
    with charts.style():
        figs = {
            "knee": knee_overlay(list(zip(labels, frames, strict=True)), common_slo),
            "rate": _overlay(
                rate, unit, "requests / s", True, None, achieved, "achieved rps (dotted)"
            ),
            "p95": _overlay(p95, unit, "window p95 (ms)", False, common_slo),
        }
    titles = {
        "knee": (
            "Latency against throughput",
            "Each run's window p95 against its achieved rate, one dot per judged tick "
            f"({charts.KNEE_SAMPLES}); the line joins the median p95 of 12 equal rate bins. "
            "Dashed: the p95 SLO when all runs share it.",
        ),
        "rate": (
            "Rate",
            "Each run's commanded new_rate (solid) and achieved window rps (dotted, same "
            "colour), time since its own start.",
        ),
        "p95": ("Window p95", "Each run's window p95; dashed: the p95 SLO when all runs share it."),
    }
    sections = [
        '<section id="summary"><h2>Summary figures</h2>'
        + page.grid_table(["", *labels], tables.compare_rows(summaries), "compare-table")
        + "</section>"
    ]
    if any(d is not None for d in digests):
        sections.append(
            '<section id="labels-compare"><h2>Per label (whole run)</h2>'
            "<p>p95 / p99, error rate and samples of each label over the whole run, exact "
            "(every JTL row); a dash where a run has no JTL or no such label.</p>"
            + page.grid_table(
                ["label", *labels], tables.compare_label_rows(digests), "label-compare"
            )
            + "</section>"
        )
    for key, fig in figs.items():
        sections.append(page.figure(key, titles[key][0], charts.svg_text(fig), titles[key][1]))
    meta = [
        f"{escape(n)}: <code>{escape(str(p.decisions))}</code>"
        + ("" if p.summary else " (no summary.json)")
        + ("" if p.jtl else " (no JTL)")
        for n, p in zip(labels, paths, strict=True)
    ]
    html = page.page(
        f"LoadGuard compare: {len(paths)} runs", meta, sections, f"LoadGuard {escape(__version__)}."
    )
    files: dict[Path, bytes] = {out: html.encode("utf-8")}
    for key, fig in figs.items():
        files[out.with_name(f"{out.stem}_{key}.png")] = charts.png_bytes(fig)
    write_all(files)
    return out
