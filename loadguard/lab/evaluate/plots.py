"""Time-series PNGs: one figure per scheme (every repetition overlaid) and an overview.

Each point is the sliding 10 s window ending at t (step 2 s), from ``run_metrics``:
offered rate (the scheme's own schedule, dashed) and achieved completions per second
(solid); window p95 against the SLO; window error rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullFormatter

from loadguard.lab.evaluate.run_metrics import WindowPoint

COLOURS = ("#2b5c8a", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#a6761d", "#666")


def _xy(points: Sequence[WindowPoint], attr: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([p.t_s for p in points], np.float64)
    y = np.array(
        [np.nan if getattr(p, attr) is None else float(getattr(p, attr)) for p in points],
        np.float64,
    )
    return x, y


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def _slo_axes(ax_p95: Axes, slo_ms: float) -> None:
    ax_p95.axhline(slo_ms, color="#b01e12", linestyle="--", linewidth=1.1, label="p95 SLO")
    ax_p95.set_ylim(bottom=0)
    ax_p95.set_ylabel("window p95 (ms)")


def _legend_right(ax: Axes) -> None:
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _rate_axes(ax: Axes, ylabel: str, lambda_star: float | None) -> None:
    """A rate axis from 0, with the sweep's λ* as a dotted line and the legend outside."""
    if lambda_star is not None:
        ax.axhline(lambda_star, color="#333", linestyle=":", linewidth=1.1, label="λ* (sweep)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    _legend_right(ax)


def scheme_figure(
    name: str,
    runs: Sequence[Sequence[WindowPoint]],
    slo_ms: float,
    lambda_star: float | None,
    path: Path,
) -> Path:
    fig = Figure(figsize=(8.0, 7.2))
    ax_rate, ax_p95, ax_err = fig.subplots(3, 1, sharex=True)
    for i, points in enumerate(runs):
        colour = COLOURS[i % len(COLOURS)]
        x, achieved = _xy(points, "rps")
        _, offered = _xy(points, "offered_rps")
        _, p95 = _xy(points, "p95_ms")
        _, err = _xy(points, "error_rate")
        ax_rate.plot(x, achieved, color=colour, linewidth=1.3, label=f"run {i + 1} completed/s")
        ax_rate.plot(x, offered, color=colour, linewidth=1.0, linestyle="--", alpha=0.8)
        ax_p95.plot(x, p95, color=colour, linewidth=1.2)
        ax_err.plot(x, err * 100.0, color=colour, linewidth=1.2)
    ax_rate.plot([], [], color="#555", linestyle="--", label="offered (schedule)")
    _rate_axes(ax_rate, "requests / s", lambda_star)
    _slo_axes(ax_p95, slo_ms)
    _legend_right(ax_p95)
    ax_err.set_ylabel("errors (%)")
    ax_err.set_ylim(bottom=0)
    ax_err.set_xlabel("seconds since the run's first sample (10 s sliding window, 2 s step)")
    ax_rate.set_title(name)
    for ax in (ax_rate, ax_p95, ax_err):
        ax.grid(True, alpha=0.3)
    return _save(fig, path)


def overview_figure(
    first_runs: Mapping[str, Sequence[WindowPoint]],
    slo_ms: float,
    lambda_star: float | None,
    path: Path,
) -> Path:
    """Repetition 1 of every scheme on shared axes: successful rate and window p95."""
    fig = Figure(figsize=(8.0, 5.6))
    ax_ok, ax_p95 = fig.subplots(2, 1, sharex=True)
    for i, (name, points) in enumerate(first_runs.items()):
        colour = COLOURS[i % len(COLOURS)]
        x, ok = _xy(points, "ok_rps")
        _, p95 = _xy(points, "p95_ms")
        ax_ok.plot(x, ok, color=colour, linewidth=1.3, label=name)
        ax_p95.plot(x, p95, color=colour, linewidth=1.2, label=name)
    _rate_axes(ax_ok, "successful / s", lambda_star)
    _slo_axes(ax_p95, slo_ms)
    # log scale so seconds-long baselines and ~200 ms LoadGuard runs both read
    ax_p95.set_yscale("log")
    ax_p95.set_ylim(50, 12_000)
    ax_p95.yaxis.set_major_locator(FixedLocator([50, 100, 250, 500, 1000, 2500, 5000, 10000]))
    ax_p95.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax_p95.yaxis.set_minor_formatter(NullFormatter())
    ax_p95.set_ylabel("window p95 (ms, log)")
    ax_p95.set_xlabel("seconds since the run's first sample (10 s sliding window)")
    for ax in (ax_ok, ax_p95):
        ax.grid(True, alpha=0.3)
    return _save(fig, path)
