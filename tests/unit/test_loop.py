"""The tick loop with a fake clock, a fake sample source and a fake actuator."""

from __future__ import annotations

import csv
import itertools
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from loadguard.actuator.engines import EngineAck, PushResult
from loadguard.decisions import DecisionLogWriter
from loadguard.jtl.sample import SampleBatch
from loadguard.loop import ControlLoop, LoopSettings
from loadguard.observation import Observation
from loadguard.policies import DEFAULT_POLICY, build_policy
from loadguard.policies.base import Decision, Policy
from loadguard.slo import SloSpec
from loadguard.summary import SummaryBuilder
from loadguard.window import Window

T0 = 1_796_000_000_000


class FakeClock:
    def __init__(self) -> None:
        self.ms = T0

    def wall_ms(self) -> int:
        return self.ms

    def mono_ms(self) -> int:
        return self.ms - T0  # another origin, the same pace

    def wait_ms(self, ms: int, stop: threading.Event) -> None:
        self.ms += max(ms, 0)


@dataclass
class PlantSource:
    """A generator at the rate last pushed, against a server whose latency is
    ``base`` below ``knee`` req/s and ``slow`` above it."""

    clock: FakeClock
    actuator: FakeActuator
    knee: float = 50.0
    base: int = 20
    slow: int = 900
    fail: bool = False
    last_ms: int = T0
    malformed_rows: int = 0

    def poll(self) -> SampleBatch:
        now = self.clock.wall_ms()
        rate = self.actuator.rate
        n = int(rate * (now - self.last_ms) / 1000)
        starts = (
            np.linspace(self.last_ms, now - 1, n).astype(np.int64) if n else np.empty(0, np.int64)
        )
        self.last_ms = now
        elapsed = np.full(n, self.slow if rate > self.knee else self.base, np.int64)
        starts = starts - elapsed
        ok = np.full(n, not self.fail)
        return SampleBatch.of(starts, elapsed, ok, ["home"] * n)


@dataclass
class FakeActuator:
    rate: float = 0.0
    engine_rate: float | None = None
    reachable: bool = True
    pushes: list[float] = field(default_factory=list)
    engines_changed: bool = False

    def push(self, rate_rps: float) -> PushResult:
        self.pushes.append(rate_rps)
        if not self.reachable:
            ack = EngineAck("fake:1", False, None, "connection refused", 1.0)
            return PushResult(rate_rps, False, (ack,))
        self.rate = rate_rps
        return PushResult(rate_rps, True, (EngineAck("fake:1", True, rate_rps, None, 1.0),))

    def read_rate(self) -> float | None:
        if self.engine_rate is not None:
            self.rate = self.engine_rate
        return self.engine_rate

    def membership_changed(self) -> bool:
        return self.engines_changed


SPEC = SloSpec.from_options(p95="250ms", error_rate="1%", window="5s", max_rate="500")


def make_loop(  # type: ignore[no-untyped-def]
    tmp_path: Path,
    actuator: FakeActuator,
    clock: FakeClock,
    policy: Policy | None = None,
    **src: object,
):
    spec = SPEC
    writer = DecisionLogWriter(tmp_path / "d.csv")
    writer.open()
    loop = ControlLoop(
        source=PlantSource(clock, actuator, **src),  # type: ignore[arg-type]
        window=Window(spec.window_ms),
        evaluator=spec,
        policy=policy or build_policy("threezone", spec, lag_ms=1000),
        actuator=actuator,
        writer=writer,
        summary=SummaryBuilder(spec.window_ms, spec.log_thresholds()),
        settings=LoopSettings(tick_ms=1000, max_duration_ms=120_000),
        clock=clock,
    )
    return loop, writer


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_default_policy_finds_the_plants_cliff_and_cuts_only_past_it(tmp_path: Path) -> None:
    clock, act = FakeClock(), FakeActuator()
    policy = build_policy(DEFAULT_POLICY, SPEC, lag_ms=1000)
    loop, writer = make_loop(tmp_path, act, clock, policy=policy)
    outcome = loop.run(5.0)
    writer.close()
    assert outcome.stop_reason == "duration"
    got = rows(tmp_path / "d.csv")
    assert len(got) == outcome.ticks
    assert {r["action"] for r in got} >= {"INCREASE", "HOLD", "DECREASE"}
    # The plant: every rate <= CLIFF (50 req/s) is SAFE (p95 20 ms against 250 ms), every
    # rate above it BREACHes (900 ms). So a loop that finds the cliff cuts only rates above
    # it, cuts each of those within the lag and two windows (1 s + 2 x 5 s), comes back
    # to the cliff after each cut, and reports a compliant rate at or under it. A loop that
    # settles low, runs away, or cuts without a breach fails one of these.
    cliff = PlantSource.knee
    cuts = [r for r in got if r["action"] == "DECREASE"]
    assert cuts and all(float(r["old_rate"]) > cliff for r in cuts), cuts
    over_since: int | None = None
    for r in got:
        rate, tick = float(r["old_rate"]), int(r["tick"])
        if rate > cliff:
            over_since = tick if over_since is None else over_since
            assert tick - over_since <= 11, f"{rate} req/s held past the cliff since {over_since}"
        else:
            over_since = None
    crossings = [
        a for a, b in itertools.pairwise(float(r["new_rate"]) for r in got) if a <= cliff < b
    ]
    assert len(crossings) >= 3  # the cliff is probed again and again, not once
    found = outcome.summary.max_compliant_rate
    assert found is not None and cliff / 2 < found <= cliff


def test_failed_push_is_logged_not_applied_and_reasserted(tmp_path: Path) -> None:
    clock, act = FakeClock(), FakeActuator(reachable=False)
    loop, writer = make_loop(tmp_path, act, clock)
    loop.start(5.0)
    act.rate = 5.0  # the engine runs at its configured rate all along
    for _ in range(15):
        clock.ms += 1000
        loop.tick()
    assert (loop.rate.value, loop.rate.change) == (5.0, None)  # a failed push is no change
    unapplied = [r for r in rows(tmp_path / "d.csv") if r["applied"] == "false"]
    assert unapplied and all("connection refused" in r["engine_ack"] for r in unapplied)
    act.reachable = True
    for _ in range(5):
        clock.ms += 1000
        loop.tick()
    writer.close()
    assert loop.rate.value > 5.0
    assert rows(tmp_path / "d.csv")[-1]["applied"] == "true"


def test_a_membership_change_makes_the_loop_push_an_unchanged_rate(tmp_path: Path) -> None:
    clock, act = FakeClock(), FakeActuator()
    loop, writer = make_loop(tmp_path, act, clock)
    loop.policy = build_policy("fixed", SloSpec.from_options(p95="250ms", max_rate="500"))
    loop.start(5.0)
    clock.ms += 1000
    loop.tick()
    before = len(act.pushes)
    act.engines_changed = True  # a fleet engine lost or back
    clock.ms += 1000
    result = loop.tick()
    writer.close()
    assert len(act.pushes) == before + 1 and act.pushes[-1] == 5.0
    assert result.row.action == "HOLD" and result.row.engine_ack == "fake:1=5.0"
    assert loop.rate.confirmed and loop.rate.change is None  # re-asserted, not changed


def test_a_change_is_stamped_with_the_pushing_ticks_monotonic_time(tmp_path: Path) -> None:
    clock, act = FakeClock(), FakeActuator()
    loop, writer = make_loop(tmp_path, act, clock)
    loop.start(5.0)
    for _ in range(20):
        clock.ms += 1000
        loop.tick()
    writer.close()
    changed = [
        r for r in rows(tmp_path / "d.csv") if r["applied"] == "true" and r["action"] != "HOLD"
    ]
    assert changed, "the loop never changed the rate"
    last = changed[-1]
    assert loop.rate.change is not None
    assert loop.rate.change.at_ms == int(last["epoch_ms"]) - T0  # the clock's mono_ms
    assert loop.rate.change.rose == (last["action"] == "INCREASE")
    assert loop.rate.change.serial == len(changed)
    assert loop.rate.value == pytest.approx(float(last["new_rate"]))


def test_start_resumes_from_the_engine_rate(tmp_path: Path) -> None:
    clock, act = FakeClock(), FakeActuator(engine_rate=42.0)
    loop, writer = make_loop(tmp_path, act, clock)
    assert loop.start(5.0) is None
    writer.close()
    assert loop.rate.value == 42.0
    assert act.pushes == []


def test_errors_never_raise_the_rate(tmp_path: Path) -> None:
    clock, act = FakeClock(), FakeActuator()
    loop, writer = make_loop(tmp_path, act, clock, fail=True)
    loop.start(20.0)
    for _ in range(30):
        clock.ms += 1000
        loop.tick()
    writer.close()
    got = rows(tmp_path / "d.csv")
    assert all(r["action"] != "INCREASE" for r in got)
    assert act.rate < 20.0


class GoneProbe:
    def __init__(self, reason: str, after: int) -> None:
        self.reason, self.after, self.calls = reason, after, 0

    def check(self) -> str | None:
        self.calls += 1
        return self.reason if self.calls > self.after else None


@pytest.mark.parametrize(("reason", "code"), [("engine_lost", 3), ("jmeter_exited", 1)])
def test_engine_probe_ends_the_loop(tmp_path: Path, reason: str, code: int) -> None:
    clock, act = FakeClock(), FakeActuator()
    loop, writer = make_loop(tmp_path, act, clock, fail=True)
    loop.probe = GoneProbe(reason, after=3)
    outcome = loop.run(5.0)
    writer.close()
    assert outcome.stop_reason == reason
    assert outcome.ticks == 4
    assert outcome.exit_code == code


def test_request_stop_ends_before_the_next_tick(tmp_path: Path) -> None:
    clock, act = FakeClock(), FakeActuator()
    loop, writer = make_loop(tmp_path, act, clock)
    loop.request_stop("signal")
    outcome = loop.run(5.0)
    writer.close()
    assert outcome.ticks == 0 and outcome.stop_reason == "signal"


@dataclass
class Recording:
    """The real default policy, keeping every observation it was given."""

    inner: Policy
    seen: list[Observation] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    def decide(self, obs: Observation) -> Decision:
        self.seen.append(obs)
        return self.inner.decide(obs)


def test_each_tick_builds_one_observation_with_its_whole_input(tmp_path: Path) -> None:
    clock, act = FakeClock(), FakeActuator()
    policy = Recording(build_policy(DEFAULT_POLICY, SPEC, lag_ms=1000))
    loop, writer = make_loop(tmp_path, act, clock, policy=policy)
    loop.start(5.0)
    for _ in range(12):
        clock.ms += 1000
        rate_before = loop.rate.value
        change_before = loop.rate.change
        loop.tick()
        obs = policy.seen[-1]
        # Both clocks, the rate in force with its last change, the carried staleness and
        # the ledger's view: all in the one value the policy decides from.
        assert (obs.wall_ms, obs.mono_ms) == (clock.wall_ms(), clock.mono_ms())
        assert (obs.commanded_rps, obs.rate_change) == (rate_before, change_before)
        assert obs.staleness_ms is not None and obs.staleness_ms >= 0
        assert obs.ledger is not None
    writer.close()
    assert len(policy.seen) == 12
    assert any(o.rate_change is not None for o in policy.seen)  # the rate did change
