"""A wall clock that steps by an hour mid-run: the loop schedules on the monotonic clock."""

from __future__ import annotations

import csv
import io
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from loadguard.actuator.engines import EngineAck, PushResult
from loadguard.clock import Staleness, WallSteps
from loadguard.console import ConsoleReporter
from loadguard.decisions import DecisionLogWriter
from loadguard.jtl.sample import SampleBatch
from loadguard.loop import ControlLoop, LoopSettings, TickResult
from loadguard.policies import build_policy
from loadguard.slo import SloSpec
from loadguard.summary import SummaryBuilder
from loadguard.window import Window

T0 = 1_796_000_000_000
HOUR_MS = 3_600_000


@dataclass
class SteppingClock:
    """Monotonic time advances only by waiting; wall time = T0 + mono, plus ``step_ms``
    from monotonic time ``step_at`` on (an NTP step, a resumed VM)."""

    step_at: int
    step_ms: int
    mono: int = 0
    waits: list[int] = field(default_factory=list)

    def wall_at(self, mono: int) -> int:
        return T0 + mono + (self.step_ms if mono >= self.step_at else 0)

    def wall_ms(self) -> int:
        return self.wall_at(self.mono)

    def mono_ms(self) -> int:
        return self.mono

    def wait_ms(self, ms: int, stop: threading.Event) -> None:
        self.waits.append(ms)
        self.mono += max(ms, 0)


@dataclass
class Engine:
    rate: float = 0.0

    def push(self, rate_rps: float) -> PushResult:
        self.rate = rate_rps
        return PushResult(rate_rps, True, (EngineAck("fake:1", True, rate_rps, None, 1.0),))

    def read_rate(self) -> float | None:
        return None

    def membership_changed(self) -> bool:
        return False


@dataclass
class WallStampedSource:
    """Samples at the engine's rate, 20 ms each, stamped (as JMeter does) with the wall
    clock of the moment they ended."""

    clock: SteppingClock
    engine: Engine
    last_mono: int = 0
    malformed_rows: int = 0

    def poll(self) -> SampleBatch:
        mono = self.clock.mono_ms()
        n = int(self.engine.rate * (mono - self.last_mono) / 1000)
        ends_mono = np.linspace(self.last_mono + 1, mono, n).astype(np.int64)
        self.last_mono = mono
        ends = np.array([self.clock.wall_at(int(m)) for m in ends_mono], np.int64)
        elapsed = np.full(n, 20, np.int64)
        return SampleBatch.of(ends - elapsed, elapsed, np.full(n, True), ["home"] * n)


def run_loop(
    tmp_path: Path,
    clock: SteppingClock,
    policy: str = "tally",
    on_tick: Callable[[TickResult], None] | None = None,
) -> list[dict[str, str]]:
    spec = SloSpec.from_options(p95="250ms", error_rate="1%", window="5s", max_rate="500")
    engine = Engine()
    writer = DecisionLogWriter(tmp_path / "d.csv")
    writer.open()
    loop = ControlLoop(
        source=WallStampedSource(clock, engine),
        window=Window(spec.window_ms),
        evaluator=spec,
        policy=build_policy(policy, spec, lag_ms=1000),
        actuator=engine,
        writer=writer,
        summary=SummaryBuilder(spec.window_ms, spec.log_thresholds()),
        settings=LoopSettings(tick_ms=1000, max_duration_ms=120_000),
        clock=clock,
        on_tick=on_tick,
    )
    outcome = loop.run(20.0)
    writer.close()
    assert outcome.stop_reason == "duration"
    with (tmp_path / "d.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("step_ms", [HOUR_MS, -HOUR_MS])
def test_a_wall_clock_step_changes_neither_the_schedule_nor_the_duration(
    tmp_path: Path, step_ms: int
) -> None:
    clock = SteppingClock(step_at=40_500, step_ms=step_ms)
    got = run_loop(tmp_path, clock)
    assert len(got) == 120  # --duration 120s at one tick a second, on monotonic time
    assert clock.mono == 120_000
    assert max(clock.waits) <= 1000  # never a sleep the size of the step
    stamps = [int(r["epoch_ms"]) for r in got]
    assert stamps[39] == T0 + 40_000 and stamps[40] == T0 + 41_000 + step_ms


@pytest.mark.parametrize("step_ms", [HOUR_MS, -HOUR_MS])
def test_a_wall_clock_step_makes_the_window_neither_stale_nor_frozen(
    tmp_path: Path, step_ms: int
) -> None:
    clock = SteppingClock(step_at=40_500, step_ms=step_ms)
    got = run_loop(tmp_path, clock)
    staleness = [int(r["staleness_ms"]) for r in got if r["staleness_ms"]]
    assert max(staleness) <= 1000 and min(staleness) >= 0
    assert not any(r["reason"] == "stale" for r in got)


def test_staleness_is_carried_on_the_monotonic_clock() -> None:
    s = Staleness()
    assert s.update(None, False, 0) is None
    assert s.update(300, True, 1000) == 300
    assert s.update(300 + HOUR_MS, False, 2000) == 1300  # a forward step: still 1.3 s
    assert s.update(HOUR_MS, True, 3000) == 2300  # old rows only: never fresher than carried
    assert s.update(-HOUR_MS, True, 4000) == 0  # a backward step with new rows: fresh
    assert s.update(-HOUR_MS + 1000, False, 5000) == 1000  # then it ages normally


@pytest.mark.parametrize("policy", ["tally", "budget", "aimd", "threezone"])
@pytest.mark.parametrize("step_ms", [HOUR_MS, -HOUR_MS])
def test_policy_timers_run_through_a_wall_clock_step(
    tmp_path: Path, policy: str, step_ms: int
) -> None:
    # Stepped mid-ramp (at 10.5 s, while settling): the run decides as if it never stepped.
    # (A settling timer on the wall clock held a backward step's rate for the hour; so did
    # the counting policies' ledger, its epochs and the samples' send times on the wall
    # clock, until the loop fed it steady time: loadguard.clock.WallSteps.)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    smooth = run_loop(tmp_path / "a", SteppingClock(step_at=10_500, step_ms=0), policy)
    stepped = run_loop(tmp_path / "b", SteppingClock(step_at=10_500, step_ms=step_ms), policy)
    assert [r["new_rate"] for r in stepped] == [r["new_rate"] for r in smooth]
    # ...and goes on rising after it (a rate held from the step on would be frozen).
    assert float(stepped[-1]["new_rate"]) > float(stepped[10]["new_rate"])


def test_the_console_counts_elapsed_time_through_a_step(tmp_path: Path) -> None:
    out = io.StringIO()
    console = ConsoleReporter(stream=out, live=False)
    run_loop(tmp_path, SteppingClock(step_at=40_500, step_ms=-HOUR_MS), on_tick=console.update)
    elapsed = [int(t) for t in re.findall(r"t=\s*(-?\d+)s", out.getvalue())]
    assert elapsed == list(range(120))


def _batch(ends: list[int], elapsed: int = 100) -> SampleBatch:
    e = np.asarray(ends, np.int64)
    n = len(e)
    return SampleBatch.of(e - elapsed, np.full(n, elapsed, np.int64), np.full(n, True), ["a"] * n)


@pytest.mark.parametrize("step_ms", [HOUR_MS, -HOUR_MS, 3000, -3000])
def test_wall_steps_put_samples_from_both_sides_of_a_step_on_one_steady_clock(
    step_ms: int,
) -> None:
    steps = WallSteps(window_ms=10_000)
    steps.observe(T0, 0)
    steps.observe(T0 + 10_000, 10_000)
    # stepped at 10.5 s of monotonic time; read at 11 s: one row stamped at 10.4 s on the
    # old clock, one at 10.9 s on the new
    wall = T0 + 11_000 + step_ms
    assert steps.observe(wall, 11_000) == step_ms
    got = steps.steady_batch(_batch([T0 + 10_400, T0 + 10_900 + step_ms]), wall)
    assert (got.start_ms + got.elapsed_ms).tolist() == [T0 + 10_400, T0 + 10_900]
    assert steps.steady(wall) == T0 + 11_000


def test_wall_steps_take_a_jitter_under_one_percent_of_the_window_for_no_step() -> None:
    steps = WallSteps(window_ms=10_000)
    steps.observe(T0, 0)
    assert steps.observe(T0 + 1_099, 1_000) == 0  # 99 ms: not a step
    batch = _batch([T0 + 1_000])
    assert steps.steady_batch(batch, T0 + 1_099) is batch
    assert steps.observe(T0 + 2_150, 2_000) == 150  # 150 ms: a step
