"""The live console's panel (rich's own capture): progress, sparklines, capacity, 80 cols."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from loadguard.console import BLOCKS, ConsoleReporter, capacity_text, sparkline
from loadguard.loop import TickResult
from tests.unit.test_clock_steps import SteppingClock, run_loop


def ticks(tmp_path: Path) -> list[TickResult]:
    """Real TickResults of a 120 s loop (gradient policy, a fake engine on a fake clock)."""
    got: list[TickResult] = []
    run_loop(tmp_path, SteppingClock(step_at=10**9, step_ms=0), on_tick=got.append)
    return got


def capture(reporter: ConsoleReporter, results: list[TickResult]) -> str:
    for t in results:
        reporter.update(t)
    elapsed = (
        results[-1].decision.observation.timer_ms - results[0].decision.observation.timer_ms
    ) / 1000
    screen = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    screen.print(reporter.render(results[-1], elapsed))
    return screen.export_text()


def test_panel_shows_progress_against_the_duration_and_rate_sparklines(tmp_path: Path) -> None:
    results = ticks(tmp_path)[:60]
    reporter = ConsoleReporter(stream=io.StringIO(), live=True, duration_ms=180_000)
    text = capture(reporter, results)
    assert "59 s of 3 min, 2 min 01 s left" in text
    assert "━" in text  # rich's progress bar
    lines = {ln.split()[0]: ln for ln in text.splitlines() if ln.strip()}
    for name in ("commanded", "achieved", "p95"):
        spark = lines[name].split()[1]
        assert len(spark) >= 40 and set(spark) <= set(BLOCKS), lines[name]
    assert lines["capacity"].split(None, 1)[1].strip() == "no estimate yet"
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 80


def test_panel_shows_the_controllers_capacity_estimate_when_the_detail_has_it(
    tmp_path: Path,
) -> None:
    results = ticks(tmp_path)[:10]
    detail = {"capacity_rps": 151.2, "capacity_lo_rps": 146.0, "capacity_hi_rps": 155.4,
              "predicted_violation_share": 0.03}  # fmt: skip
    last = results[-1]
    results[-1] = replace(last, decision=replace(last.decision, detail=detail))
    reporter = ConsoleReporter(stream=io.StringIO(), live=True, duration_ms=None)
    text = capture(reporter, results)
    assert "≈ 151 req/s (90 % CI 146–155 req/s)" in text
    assert "no --duration" in text


def test_without_a_terminal_the_console_stays_one_plain_line_per_tick(tmp_path: Path) -> None:
    out = io.StringIO()
    reporter = ConsoleReporter(stream=out, live=False, duration_ms=120_000)
    results = ticks(tmp_path)
    for t in results:
        reporter.update(t)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(results) and all(ln.startswith("t=") for ln in lines)
    assert not any(ch in out.getvalue() for ch in BLOCKS + "━")


def test_sparkline_scales_to_the_top_and_leaves_gaps_for_missing() -> None:
    assert sparkline([0.0, 50.0, 100.0, None], top=100.0) == "▁▅█ "
    assert capacity_text({}) is None
