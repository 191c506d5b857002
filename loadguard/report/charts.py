"""The report's charts, drawn with matplotlib's object API (no pyplot, no global state).

Every chart takes the decision log (``decision_frame.load_decisions``) and a time origin
``t0_ms``; x is time since the start of the run. Long series are thinned *for drawing*
with ``minmax_downsample`` (envelope kept); the figures in the tables never are.

``svg_text`` renders a figure as an inline ``<svg>`` element: text stays text
(``svg.fonttype = none``, smaller and selectable), ids are salted with a fixed string so
the output is reproducible, and the XML prolog, DOCTYPE and RDF metadata are dropped so the
page names no external URL. ``png_bytes`` renders the same figure as a PNG for use outside
the page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np
import numpy.typing as npt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from loadguard.report.downsample import MAX_POINTS as MAX_POINTS
from loadguard.report.downsample import minmax_downsample

F64 = npt.NDArray[np.float64]

ZONE_COLOURS: dict[str, str] = {
    "SAFE": "#d9f0d3",
    "NEAR": "#fee8a8",
    "BREACH": "#f8c4c0",
    "NO_DATA": "#e4e4e4",
}
ACTION_MARKERS: dict[str, tuple[str, str]] = {
    "INCREASE": ("^", "#1a9850"),
    "HOLD": ("o", "#7a7a7a"),
    "DECREASE": ("v", "#d73027"),
    "STOP": ("X", "#000000"),
}
#: At most this many markers per action are drawn (evenly spaced); counts are exact.
MAX_MARKERS = 1500
RC: dict[str, object] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "loadguard",
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "path.simplify": True,
}
SIZE = (10.0, 3.1)
#: What the window figures of the time charts count, said in their captions.
WINDOW_SAMPLES = (
    "each tick's sliding window of samples, keyed on completion time (timeStamp + elapsed)"
)
MARGINS = {"left": 0.07, "right": 0.79, "top": 0.95, "bottom": 0.16}


@dataclass(frozen=True)
class Chart:
    """A drawn chart: its file-name stem, heading, caption and the figure."""

    name: str
    title: str
    caption: str
    figure: Figure


@contextmanager
def style() -> Iterator[None]:
    """The report's matplotlib settings, applied while figures are built and saved."""
    with matplotlib.rc_context(RC):  # type: ignore[arg-type]
        yield


@dataclass(frozen=True)
class TimeAxis:
    """Epoch ms -> elapsed time in seconds or minutes, chosen by the run's length."""

    t0_ms: float
    scale_s: float
    label: str

    @classmethod
    def for_span(cls, t0_ms: float, span_ms: float) -> TimeAxis:
        if span_ms > 1_200_000:
            return cls(t0_ms, 60.0, "time since start (min)")
        return cls(t0_ms, 1.0, "time since start (s)")

    def of(self, epoch_ms: F64 | pd.Series) -> F64:
        return (np.asarray(epoch_ms, np.float64) - self.t0_ms) / (1000.0 * self.scale_s)


def _col(frame: pd.DataFrame, name: str) -> F64:
    return np.asarray(frame[name].to_numpy(np.float64), np.float64)


def _line(ax: Axes, x: F64, y: F64, **kw: object) -> None:
    dx, dy = minmax_downsample(x, y, MAX_POINTS)
    ax.plot(dx, dy, **kw)  # type: ignore[arg-type]


def new_figure() -> tuple[Figure, Axes]:
    """A chart with fixed margins, so stacked charts share the plot area's x extent
    whatever their legends hold (the legend sits in the right margin)."""
    fig = Figure(figsize=SIZE)
    fig.subplots_adjust(**MARGINS)
    return fig, fig.add_subplot()


def _finish(ax: Axes, axis: TimeAxis, ylabel: str) -> None:
    ax.set_xlabel(axis.label)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def thin(n: int, cap: int) -> npt.NDArray[np.int64]:
    """Indices of at most ``cap`` of ``n`` items, evenly spaced, first and last kept."""
    if n <= cap:
        return np.arange(n, dtype=np.int64)
    return np.unique(np.linspace(0, n - 1, cap).round().astype(np.int64))


def zone_runs(zones: Sequence[str], x: F64) -> dict[str, list[tuple[float, float]]]:
    """Contiguous runs of one zone as ``(start, width)`` spans on the x axis.

    Tick i covers ``[x_i, x_{i+1})``; the last tick is given the median tick spacing.
    """
    spans: dict[str, list[tuple[float, float]]] = {}
    n = len(zones)
    if n == 0:
        return spans
    step = float(np.median(np.diff(x))) if n > 1 else 1.0
    ends = np.append(x[1:], x[-1] + step)
    start = 0
    for i in range(1, n + 1):
        if i == n or zones[i] != zones[start]:
            spans.setdefault(zones[start], []).append(
                (float(x[start]), float(ends[i - 1] - x[start]))
            )
            start = i
    return spans


def _zone_bands(ax: Axes, frame: pd.DataFrame, x: F64) -> None:
    for zone, spans in zone_runs(list(frame["zone"]), x).items():
        ax.broken_barh(
            spans,
            (0, 1),
            transform=ax.get_xaxis_transform(),
            facecolors=ZONE_COLOURS.get(zone, "#eeeeee"),
            edgecolors="none",
            label=zone,
            zorder=0,
        )


def _slo_line(ax: Axes, x: F64, frame: pd.DataFrame, col: str, scale: float, **kw: object) -> None:
    values = _col(frame, col) * scale
    if np.isfinite(values).any():
        ax.step(x, values, where="post", linestyle="--", linewidth=1.2, **kw)  # type: ignore[arg-type]


def rate_chart(frame: pd.DataFrame, axis: TimeAxis) -> Chart:
    fig, ax = new_figure()
    x = axis.of(frame["epoch_ms"])
    dx, dy = minmax_downsample(x, _col(frame, "new_rate"), MAX_POINTS)
    ax.step(dx, dy, where="post", color="#2b5c8a", linewidth=1.4, label="commanded new_rate")
    _line(ax, x, _col(frame, "rps"), color="#e08214", linewidth=1.1, label="achieved rps")
    new_rate = _col(frame, "new_rate")
    thinned = False
    for action, (marker, colour) in ACTION_MARKERS.items():
        idx = np.flatnonzero((frame["action"] == action).to_numpy())
        if len(idx) == 0:
            continue
        shown = idx[thin(len(idx), MAX_MARKERS)]
        thinned = thinned or len(shown) < len(idx)
        ax.scatter(
            x[shown], new_rate[shown], marker=marker, s=16, color=colour, zorder=3,
            label=f"{action} ({len(idx)})", linewidths=0,
        )  # fmt: skip
    _finish(ax, axis, "requests / s")
    caption = (
        "Commanded rate (the rate pushed after each tick) and the achieved rate over the "
        f"window ({WINDOW_SAMPLES}); markers show each tick's action, counts in the legend."
    )
    if thinned:
        caption += f" At most {MAX_MARKERS} markers per action are drawn."
    return Chart("rate", "Rate over time", caption, fig)


def latency_chart(frame: pd.DataFrame, axis: TimeAxis) -> Chart:
    fig, ax = new_figure()
    x = axis.of(frame["epoch_ms"])
    _zone_bands(ax, frame, x)
    _line(ax, x, _col(frame, "p95_ms"), color="#2b5c8a", linewidth=1.2, label="p95")
    _line(ax, x, _col(frame, "p99_ms"), color="#8c2d04", linewidth=1.0, label="p99")
    _slo_line(ax, x, frame, "slo_p95_ms", 1.0, color="#2b5c8a", label="SLO p95")
    _slo_line(ax, x, frame, "slo_p99_ms", 1.0, color="#8c2d04", label="SLO p99")
    _finish(ax, axis, "ms")
    caption = (
        f"Window p95 and p99 ({WINDOW_SAMPLES}) against the SLO thresholds (dashed); the "
        "background shows the zone of each tick: SAFE green, NEAR yellow, BREACH red, "
        "NO_DATA grey."
    )
    return Chart("latency", "p95 and p99 against the SLO", caption, fig)


def error_chart(frame: pd.DataFrame, axis: TimeAxis) -> Chart:
    fig, ax = new_figure()
    x = axis.of(frame["epoch_ms"])
    _line(ax, x, _col(frame, "error_rate") * 100.0, color="#d73027", linewidth=1.2, label="errors")
    _slo_line(ax, x, frame, "slo_error_rate", 100.0, color="#7f0000", label="SLO")
    _finish(ax, axis, "error rate (%)")
    caption = (
        f"Share of failed samples in each window ({WINDOW_SAMPLES}), against the "
        "error-rate SLO (dashed)."
    )
    return Chart("errors", "Error rate against the SLO", caption, fig)


def throughput_chart(frame: pd.DataFrame, axis: TimeAxis, per_second: pd.DataFrame | None) -> Chart:
    fig, ax = new_figure()
    caption = (
        "Window throughput from the decision log: all samples (rps) and successful "
        f"(ok_rps), {WINDOW_SAMPLES}."
    )
    if per_second is not None and len(per_second):
        xs = axis.of(per_second.index.to_numpy(np.float64) * 1000.0 + 1000.0)
        ys = per_second["count"].to_numpy(np.float64)
        _line(ax, xs, ys, color="#bdbdbd", linewidth=0.7, label="JTL completions / s")
        caption += (
            " Grey: completions per second counted from every counted row of the JTL, "
            "keyed on the completion second."
        )
    x = axis.of(frame["epoch_ms"])
    _line(ax, x, _col(frame, "rps"), color="#2b5c8a", linewidth=1.3, label="rps")
    _line(ax, x, _col(frame, "ok_rps"), color="#1a9850", linewidth=1.1, label="ok_rps")
    _finish(ax, axis, "samples / s")
    return Chart("throughput", "Throughput", caption, fig)


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)


def svg_text(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element (no prolog, no metadata, fixed ids)."""
    buf = io.StringIO()
    with style():
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = _METADATA.sub("", _PROLOG.sub("", buf.getvalue(), count=1), count=1)
    return text.strip()


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    with style():
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


#: What the knee chart's points are, said on the chart itself.
KNEE_SAMPLES = f"one point per tick: {WINDOW_SAMPLES}"


@dataclass(frozen=True)
class KneeMarks:
    """What the knee chart marks besides the points (all req/s; None: not marked)."""

    capacity_rps: float | None = None
    capacity_ci90: tuple[float, float] | None = None
    #: "estimate", or "lower bound" (capacity above ``capacity_rps``)
    capacity_kind: str = "estimate"
    held_rps: float | None = None
    held_label: str = "held rate"

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any] | None) -> KneeMarks:
        """From summary.json: the controller's ``capacity``/``held_rate`` when present,
        else today's ``max_compliant_rate`` as the rate held."""
        if not summary:
            return cls()
        cap: Mapping[str, Any] = summary.get("capacity") or {}
        held: Mapping[str, Any] = summary.get("held_rate") or {}
        cap = cap if isinstance(cap, Mapping) else {}
        held = held if isinstance(held, Mapping) else {}
        rps = _finite(cap.get("rps"))
        ci_raw = cap.get("ci90_rps")
        ci = None
        if isinstance(ci_raw, list | tuple) and len(ci_raw) == 2:
            lo, hi = _finite(ci_raw[0]), _finite(ci_raw[1])
            ci = (lo, hi) if lo is not None and hi is not None else None
        kind = "lower bound" if cap.get("status") == "lower_bound" else "estimate"
        held_rps = _finite(held.get("rps"))
        label = "held rate"
        if held_rps is None:
            held_rps = _finite(summary.get("max_compliant_rate"))
            label = "highest rate held within every SLO"
        return cls(rps, ci, kind, held_rps, label)


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if np.isfinite(value) else None


def _mark_rates(ax: Axes, marks: KneeMarks, legend: bool) -> None:
    if marks.capacity_ci90 is not None:
        lo, hi = marks.capacity_ci90
        ax.axvspan(lo, hi, color="#9ecae1", alpha=0.35, lw=0,
                   label="capacity 90 % CI" if legend else None, zorder=0)  # fmt: skip
    if marks.capacity_rps is not None:
        style = "-" if marks.capacity_kind == "estimate" else (0, (4, 2))
        name = "capacity at the SLO" if marks.capacity_kind == "estimate" else "capacity above"
        ax.axvline(marks.capacity_rps, color="#08519c", linewidth=1.3, linestyle=style,
                   label=name if legend else None)  # fmt: skip
    if marks.held_rps is not None:
        ax.axvline(marks.held_rps, color="#238b45", linewidth=1.5, linestyle=":",
                   label=marks.held_label if legend else None)  # fmt: skip


def knee_chart(frame: pd.DataFrame, axis: TimeAxis, marks: KneeMarks) -> Chart:
    """p95 (and p99 when it is an SLO) against achieved throughput, one point per tick,
    coloured by time; error rate against throughput beside it."""
    fig = Figure(figsize=(10.0, 3.9))
    fig.subplots_adjust(left=0.07, right=0.86, top=0.93, bottom=0.15, wspace=0.28)
    grid = fig.add_gridspec(1, 2, width_ratios=(2.1, 1.0))
    ax, ax_err = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    judged = (frame["zone"] != "NO_DATA").to_numpy() & (_col(frame, "rps") > 0)
    sub = frame[judged]
    x = _col(sub, "rps")
    t = axis.of(sub["epoch_ms"])
    idx = thin(len(sub), MAX_MARKERS * 2)
    x, t = x[idx], t[idx]
    p95 = _col(sub, "p95_ms")[idx]
    scatter = ax.scatter(x, p95, c=t, cmap="viridis", s=18, marker="o", linewidths=0,
                         label="window p95", zorder=3)  # fmt: skip
    slo95 = frame["slo_p95_ms"].dropna()
    slo99 = frame["slo_p99_ms"].dropna()
    if len(slo99):
        ax.scatter(x, _col(sub, "p99_ms")[idx], c=t, cmap="viridis", s=16, marker="^",
                   linewidths=0, alpha=0.8, label="window p99", zorder=3)  # fmt: skip
        ax.axhline(float(slo99.iloc[-1]), color="#8c2d04", linestyle="--", linewidth=1.2,
                   label=f"SLO p99 {float(slo99.iloc[-1]):g} ms")  # fmt: skip
    if len(slo95):
        ax.axhline(float(slo95.iloc[-1]), color="#b01e12", linestyle="--", linewidth=1.2,
                   label=f"SLO p95 {float(slo95.iloc[-1]):g} ms")  # fmt: skip
    _mark_rates(ax, marks, legend=True)
    ax.set_xlabel("achieved throughput (req/s, window rps)")
    ax.set_ylabel("latency (ms)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title("latency against throughput", fontsize=9, loc="left")
    err = _col(sub, "error_rate")[idx] * 100.0
    ax_err.scatter(x, err, c=t, cmap="viridis", s=14, linewidths=0, zorder=3)
    slo_err = frame["slo_error_rate"].dropna()
    if len(slo_err):
        ax_err.axhline(float(slo_err.iloc[-1]) * 100.0, color="#7f0000", linestyle="--",
                       linewidth=1.2)  # fmt: skip
    _mark_rates(ax_err, marks, legend=False)
    ax_err.set_xlabel("achieved throughput (req/s)")
    ax_err.set_ylabel("error rate (%)")
    ax_err.set_xlim(left=0)
    top = max(1.0, float(np.nanmax(err)) * 1.15 if len(err) and np.isfinite(err).any() else 1.0)
    if len(slo_err):
        top = max(top, float(slo_err.iloc[-1]) * 100.0 * 1.3)
    ax_err.set_ylim(0, top)
    ax_err.set_title("errors against throughput", fontsize=9, loc="left")
    cbar = fig.colorbar(scatter, ax=[ax, ax_err], fraction=0.025, pad=0.02)
    cbar.set_label(axis.label)
    ax.legend(loc="upper left", fontsize=7.5, frameon=True, framealpha=0.85)
    caption = (
        f"Each point is a judged window ({KNEE_SAMPLES}); colour: time since the start. "
        "Dashed: the SLO thresholds. "
    )
    if marks.capacity_rps is not None:
        caption += (
            "Blue: the controller's capacity estimate and its 90 % confidence band. "
            if marks.capacity_kind == "estimate"
            else "Blue dashed: capacity is above this rate (the knee was not reached). "
        )
    if marks.held_rps is not None:
        caption += f"Green dotted: the {marks.held_label}."
    if len(sub) > len(idx):
        caption += f" {len(idx):,} of {len(sub):,} windows drawn, evenly spaced."
    return Chart("knee", "Latency against throughput (the knee)", caption.strip(), fig)


LABEL_PALETTE = ("#d73027", "#4575b4", "#fdae61", "#1a9850", "#762a83", "#8c510a", "#01665e")
#: Labels drawn in the per-label chart (the worst first; the table lists every label).
MAX_LABEL_LINES = 7


def bucket_seconds(span_ms: float) -> int:
    """A round bucket giving at most about 300 points over the run: 1, 2, 5, 10, 30, 60 s."""
    for b in (1, 2, 5, 10, 30, 60, 300):
        if span_ms / (b * 1000.0) <= 300:
            return b
    return 600


def label_p95_chart(
    series: Sequence[tuple[str, F64, F64]], axis: TimeAxis, slo_p95: float | None, bucket_s: int
) -> Chart:
    """p95 over time of the labels that breached: one line per label."""
    fig, ax = new_figure()
    for i, (label, end_ms, p95) in enumerate(series[:MAX_LABEL_LINES]):
        ax.plot(axis.of(end_ms), p95, color=LABEL_PALETTE[i % len(LABEL_PALETTE)],
                linewidth=1.2, marker=".", markersize=3, label=label)  # fmt: skip
    if slo_p95 is not None:
        ax.axhline(slo_p95, color="#b01e12", linestyle="--", linewidth=1.2, label="SLO p95")
    _finish(ax, axis, "p95 (ms)")
    caption = (
        f"p95 of each breached label's samples completing in each {bucket_s} s bucket "
        "(keyed on completion time, timeStamp + elapsed; every sample of the label, "
        "exact), against the overall p95 SLO (dashed)."
    )
    if len(series) > MAX_LABEL_LINES:
        caption += f" The {MAX_LABEL_LINES} worst of {len(series)} breached labels are drawn."
    return Chart("labels", "p95 over time of the labels that breached", caption, fig)
