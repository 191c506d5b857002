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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

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
        "window; markers show each tick's action, counts in the legend."
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
        "Window p95 and p99 against the SLO thresholds (dashed); the background shows the "
        "zone of each tick: SAFE green, NEAR yellow, BREACH red, NO_DATA grey."
    )
    return Chart("latency", "p95 and p99 against the SLO", caption, fig)


def error_chart(frame: pd.DataFrame, axis: TimeAxis) -> Chart:
    fig, ax = new_figure()
    x = axis.of(frame["epoch_ms"])
    _line(ax, x, _col(frame, "error_rate") * 100.0, color="#d73027", linewidth=1.2, label="errors")
    _slo_line(ax, x, frame, "slo_error_rate", 100.0, color="#7f0000", label="SLO")
    _finish(ax, axis, "error rate (%)")
    caption = "Share of failed samples in each window, against the error-rate SLO (dashed)."
    return Chart("errors", "Error rate against the SLO", caption, fig)


def throughput_chart(frame: pd.DataFrame, axis: TimeAxis, per_second: pd.DataFrame | None) -> Chart:
    fig, ax = new_figure()
    caption = "Window throughput from the decision log: all samples (rps) and successful (ok_rps)."
    if per_second is not None and len(per_second):
        xs = axis.of(per_second.index.to_numpy(np.float64) * 1000.0 + 1000.0)
        ys = per_second["count"].to_numpy(np.float64)
        _line(ax, xs, ys, color="#bdbdbd", linewidth=0.7, label="JTL completions / s")
        caption += " Grey: completions per second counted from every row of the JTL."
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
