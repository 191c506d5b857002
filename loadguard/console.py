"""Live console for the sidecar (an adapter).

On a terminal: a compact panel redrawn each tick with rich (it handles redraws, colour
and terminal width far better than hand-written escape codes). Without a terminal (CI):
one plain line per tick, so logs stay greppable. ``-q`` silences both; ``-v`` adds the
policy's internals and per-engine acknowledgements.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from loadguard.loop import TickResult

ARROWS = {"INCREASE": "↑", "DECREASE": "↓", "HOLD": "→", "STOP": "■"}
ZONE_STYLE = {"SAFE": "green", "NEAR": "yellow", "BREACH": "bold red", "NO_DATA": "dim"}


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
    ) -> None:
        self.quiet = quiet
        self.verbose = verbose
        self.stream = stream or sys.stderr
        self.live_mode = (self.stream.isatty() if live is None else live) and not quiet
        self.console = Console(file=self.stream)
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
        if self._live is None:
            print(plain_line(t, elapsed, self.verbose), file=self.stream, flush=True)
            return
        self._live.update(self._panel(t, elapsed))

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
