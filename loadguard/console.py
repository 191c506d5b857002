"""Live console for the sidecar (an adapter).

On a terminal: a compact panel redrawn each tick with rich (it handles redraws, colour
and terminal width far better than hand-written escape codes), at most 80 columns wide:
a progress bar against ``--duration`` (elapsed and remaining), the tick's table,
sparklines of the recent commanded and achieved rate and of p95 against the SLO, and the
controller's running capacity estimate with its 90 % interval once its decision detail
has one (``capacity_rps``, ``capacity_lo_rps``, ``capacity_hi_rps``). Without a
terminal (CI): one plain line per tick, so logs stay greppable. ``-q`` silences both;
``-v`` adds the policy's internals and per-engine acknowledgements.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from loadguard import human
from loadguard.loop import TickResult

ARROWS = {"INCREASE": "↑", "DECREASE": "↓", "HOLD": "→", "STOP": "■"}
ZONE_STYLE = {"SAFE": "green", "NEAR": "yellow", "BREACH": "bold red", "NO_DATA": "dim"}


#: The panel's width: it must fit an 80-column terminal.
WIDTH = 80
#: Ticks of history the sparklines show.
HISTORY = 48
BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None], top: float | None = None) -> str:
    """One block character per value, scaled to ``top`` (default: the largest value);
    a missing value is a space."""
    known = [v for v in values if v is not None]
    scale = top if top is not None else max(known, default=0.0)
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        elif scale <= 0:
            out.append(BLOCKS[0])
        else:
            out.append(BLOCKS[min(len(BLOCKS) - 1, max(0, int(v / scale * len(BLOCKS))))])
    return "".join(out)


def capacity_text(detail: Mapping[str, object]) -> str | None:
    """The controller's running estimate from its decision detail, if it has one."""

    def num(key: str) -> float | None:
        v = detail.get(key)
        try:
            return None if v is None or v == "" else float(str(v))
        except ValueError:
            return None

    rps = num("capacity_rps")
    if rps is None:
        return None
    lo, hi = num("capacity_lo_rps"), num("capacity_hi_rps")
    interval = (
        f" (90 % CI {human.rate_interval(lo, hi)})" if lo is not None and hi is not None else ""
    )
    return f"≈ {human.rate(rps)}{interval}"


def _fmt(value: float | None, unit: str = "", digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def plain_line(t: TickResult, elapsed_s: float, verbose: bool = False) -> str:
    r = t.row
    slo95 = r.slo.get("p95_ms")
    slo_err = r.slo.get("error_rate")
    parts = [
        f"t={elapsed_s:6.0f}s",
        f"tick={r.tick}",
        f"{r.action:<8}",
        f"rate={r.old_rate:.1f}->{r.new_rate:.1f}/s",
        f"achieved={r.rps:.1f}/s",
        f"p95={_fmt(r.p95_ms, 'ms')}" + (f"/{slo95:.0f}ms" if slo95 is not None else ""),
        f"err={r.error_rate * 100:.2f}%"
        + (f"/{slo_err * 100:.2f}%" if slo_err is not None else ""),
        f"zone={r.zone}",
        f"reason={r.reason}",
        f"n={r.samples}",
        f"stale={_fmt(None if r.staleness_ms is None else r.staleness_ms / 1000, 's', 1)}",
    ]
    if not r.applied:
        parts.append("NOT-APPLIED")
    if verbose:
        parts.append(f"ack=[{r.engine_ack}]")
        if r.detail:
            parts.append(f"detail=[{r.detail}]")
    return " ".join(parts)


class ConsoleReporter:
    """Call ``update`` once per tick; use as a context manager around the loop."""

    def __init__(
        self,
        quiet: bool = False,
        verbose: bool = False,
        stream: TextIO | None = None,
        live: bool | None = None,
        duration_ms: int | None = None,
    ) -> None:
        self.duration_ms = duration_ms
        self.commanded: deque[float] = deque(maxlen=HISTORY)
        self.achieved: deque[float] = deque(maxlen=HISTORY)
        self.p95: deque[float | None] = deque(maxlen=HISTORY)
        self.quiet = quiet
        self.verbose = verbose
        self.stream = stream or sys.stderr
        self.live_mode = (self.stream.isatty() if live is None else live) and not quiet
        self.console = Console(file=self.stream, width=min(WIDTH, Console(file=self.stream).width))
        self._live: Live | None = None
        self.started_ms: int | None = None

    def __enter__(self) -> ConsoleReporter:
        if self.live_mode:
            self._live = Live(console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def update(self, t: TickResult) -> None:
        if self.quiet:
            return
        now = t.decision.observation.timer_ms  # monotonic: a clock step is no jump here
        if self.started_ms is None:
            self.started_ms = now
        elapsed = (now - self.started_ms) / 1000.0
        self.commanded.append(t.row.new_rate)
        self.achieved.append(t.row.rps)
        self.p95.append(t.row.p95_ms)
        if self._live is None:
            print(plain_line(t, elapsed, self.verbose), file=self.stream, flush=True)
            return
        self._live.update(self.render(t, elapsed))

    def render(self, t: TickResult, elapsed: float) -> Group:
        """The whole live panel: progress, the tick's table, history, capacity."""
        return Group(self._progress(elapsed), self._panel(t, elapsed), self._history(t))

    def _progress(self, elapsed: float) -> Table:
        grid = Table.grid(padding=(0, 1))
        if self.duration_ms:
            total = self.duration_ms / 1000.0
            done = min(elapsed, total)
            grid.add_row(
                ProgressBar(total=total, completed=done, width=36),
                f"{human.duration(done)} of {human.duration(total)}, "
                f"{human.duration(max(0.0, total - elapsed))} left",
            )
        else:
            grid.add_row(f"elapsed {human.duration(elapsed)} (no --duration: until JMeter ends)")
        return grid

    def _history(self, t: TickResult) -> Table:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", width=9)
        grid.add_column(width=HISTORY)
        grid.add_column()
        top = max([*self.commanded, *self.achieved, 0.0])
        grid.add_row("commanded", sparkline(list(self.commanded), top), human.rate(t.row.new_rate))
        grid.add_row("achieved", sparkline(list(self.achieved), top), human.rate(t.row.rps))
        slo = t.row.slo.get("p95_ms")
        known = [v for v in self.p95 if v is not None]
        ptop = max([*known, slo or 0.0, 1.0])
        line = Text()
        for v, ch in zip(self.p95, sparkline(list(self.p95), ptop), strict=True):
            over = v is not None and slo is not None and v > slo
            line.append(ch, style="red" if over else "green")
        slo_note = f" / SLO {human.latency(slo)}" if slo is not None else ""
        grid.add_row("p95", line, f"{human.latency(t.row.p95_ms)}{slo_note}")
        cap = capacity_text(t.decision.detail)
        grid.add_row("capacity", cap or "no estimate yet", "")
        return grid

    def _panel(self, t: TickResult, elapsed: float) -> Table:
        r = t.row
        table = Table(title="LoadGuard", show_header=False, expand=False)
        table.add_column("k", style="bold")
        table.add_column("v")
        table.add_row("elapsed", f"{elapsed:.0f} s   tick {r.tick}")
        table.add_row(
            "rate",
            f"{ARROWS.get(r.action, '')} {r.new_rate:.1f} req/s (was {r.old_rate:.1f}), "
            f"achieved {r.rps:.1f}",
        )
        slo95 = r.slo.get("p95_ms")
        table.add_row("p95", f"{_fmt(r.p95_ms, ' ms')}  SLO {_fmt(slo95, ' ms')}")
        slo_err = r.slo.get("error_rate")
        slo_err_pct = None if slo_err is None else slo_err * 100
        table.add_row("errors", f"{r.error_rate * 100:.2f}%  SLO {_fmt(slo_err_pct, '%', 2)}")
        style = ZONE_STYLE.get(r.zone, "")
        table.add_row("zone", f"[{style}]{r.zone}[/]  {r.action} ({r.reason})")
        table.add_row("window", f"{r.samples} samples")
        stale = None if r.staleness_ms is None else r.staleness_ms / 1000.0
        table.add_row("staleness", _fmt(stale, " s", 1))
        if not r.applied:
            table.add_row("push", "[bold red]not applied[/] " + r.engine_ack)
        elif self.verbose:
            table.add_row("engines", r.engine_ack or "-")
        if self.verbose and r.detail:
            table.add_row("policy", r.detail)
        return table
