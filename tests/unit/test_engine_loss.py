"""Engine loss and share reassignment: FleetHealth, allocate, FleetActuator (fake clock,
fake BeanShell clients: no sockets), and the loop as the only pusher of a loss or a
return (its decision rows carry the acks)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadguard.actuator.bsh import BeanShellClient
from loadguard.actuator.engine_health import (
    EngineState,
    FleetHealth,
    HealthSettings,
    allocate,
)
from loadguard.actuator.engine_info import EngineInfo
from loadguard.actuator.engines import Engine, PushResult
from loadguard.actuator.fleet import (
    MAX_PUSH_WORKERS,
    FleetActuator,
    FleetSource,
    RemoteTestEndProbe,
)
from loadguard.decisions import DecisionLogWriter
from loadguard.errors import ActuatorError, UsageError
from loadguard.jtl.sample import SampleBatch
from loadguard.loop import ControlLoop, LoopSettings, format_acks
from loadguard.policies import build_policy
from loadguard.slo import SloSpec
from loadguard.summary import SummaryBuilder
from loadguard.window import Window

# -- allocate -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "weights", "live", "cap", "shares"),
    [
        (30.0, [1, 1], [True, True], None, [15.0, 15.0]),
        (30.0, [1, 2], [True, True], None, [10.0, 20.0]),
        (30.0, [1, 1], [True, False], None, [30.0, 0.1]),
        (30.0, [1, 1], [True, False], 24.0, [24.0, 0.1]),
        (30.0, [1, 1, 1], [True, True, False], 12.0, [12.0, 12.0, 0.1]),
        (30.0, [1, 3], [True, True], 20.0, [10.0, 20.0]),
        (30.0, [1, 5], [True, True], 20.0, [10.0, 20.0]),
        (30.0, [1, 1], [False, False], None, [15.0, 15.0]),
        (0.0, [1, 1], [True, True], None, [0.1, 0.1]),
    ],
)
def test_allocate_moves_lost_shares_to_the_live_up_to_the_cap(
    total: float, weights: list[float], live: list[bool], cap: float | None, shares: list[float]
) -> None:
    assert allocate(total, weights, live, cap_rps=cap) == pytest.approx(shares)


@given(
    total=st.floats(0.0, 10_000.0),
    weights=st.lists(st.floats(0.1, 10.0), min_size=1, max_size=8),
    data=st.data(),
    cap=st.one_of(st.none(), st.floats(0.5, 5_000.0)),
)
def test_allocate_live_sum_is_the_total_or_every_live_engine_at_the_cap(
    total: float, weights: list[float], data: st.DataObject, cap: float | None
) -> None:
    live = data.draw(st.lists(st.booleans(), min_size=len(weights), max_size=len(weights)))
    shares = allocate(total, weights, live, cap_rps=cap, floor_rps=0.1)
    alive = live if any(live) else [True] * len(live)
    n = sum(alive)
    live_sum = sum(s for s, a in zip(shares, alive, strict=True) if a)
    expected = total if cap is None else min(total, n * cap)
    # The floor may lift tiny shares; otherwise the live engines carry exactly the total.
    assert live_sum >= expected - 1e-6 * max(1.0, expected)
    assert live_sum <= expected + 0.1 * n + 1e-6 * max(1.0, expected)
    for s, a in zip(shares, alive, strict=True):
        assert s >= 0.1 - 1e-12
        if not a:
            assert s == 0.1
        if cap is not None:
            assert s <= max(cap, 0.1) + 1e-9


@pytest.mark.parametrize(("total", "cap"), [(math.nan, None), (-1.0, None), (5.0, 0.0)])
def test_allocate_refuses_bad_input(total: float, cap: float | None) -> None:
    with pytest.raises(UsageError):
        allocate(total, [1.0], [True], cap_rps=cap)


# -- FleetHealth ----------------------------------------------------------------------

S = HealthSettings(fail_after=2, silence_ms=5000, min_expected=5.0, startup_grace_ms=15_000)
SHARES = {"a": 10.0, "b": 10.0}


def fleet_health() -> FleetHealth:
    return FleetHealth(["a", "b"], S, start_ms=0)


def test_consecutive_failed_pushes_lose_an_engine() -> None:
    h = fleet_health()
    h.record_push("b", ok=False)
    assert h.evaluate(1000, SHARES) == ()
    h.record_push("b", ok=False)
    (change,) = h.evaluate(2000, SHARES)
    assert (change.engine, change.state) == ("b", EngineState.LOST)
    assert "not answering" in change.reason
    assert h.live() == ("a",)


def test_a_success_between_failures_resets_the_count() -> None:
    h = fleet_health()
    for ok in (False, True, False):
        h.record_push("b", ok=ok)
    assert h.evaluate(1000, SHARES) == ()


def test_vanished_samples_lose_an_engine_while_others_arrive() -> None:
    h = fleet_health()
    h.record_samples(["a", "b"], 1000)
    for t in range(2000, 7000, 1000):
        h.record_samples(["a"], t)
        assert h.evaluate(t, SHARES) == ()
    h.record_samples(["a"], 7000)
    (change,) = h.evaluate(7000, SHARES)
    assert change.engine == "b" and "no samples for 6.0s" in change.reason


def test_a_jtl_silent_as_a_whole_loses_nobody() -> None:
    h = fleet_health()
    h.record_samples(["a", "b"], 1000)
    assert h.evaluate(60_000, SHARES) == ()


@pytest.mark.parametrize(("share", "allowed_ms"), [(10.0, 5000), (0.5, 10_000), (0.1, 50_000)])
def test_silence_allowed_grows_at_low_shares(share: float, allowed_ms: int) -> None:
    assert S.silence_for(share) == allowed_ms


def test_a_never_seen_engine_gets_the_startup_grace() -> None:
    h = fleet_health()
    for t in range(1000, 15_000, 1000):
        h.record_samples(["a"], t)
        assert h.evaluate(t, SHARES) == ()
    h.record_samples(["a"], 15_000)
    (change,) = h.evaluate(15_000, SHARES)
    assert change.engine == "b"


def test_a_silence_lost_engine_returns_when_it_answers_and_its_samples_come_back() -> None:
    h = fleet_health()
    h.record_samples(["a", "b"], 0)
    h.record_samples(["a"], 6000)
    h.evaluate(6000, SHARES)
    assert h.state("b") is EngineState.LOST
    h.record_push("b", ok=True)
    assert h.evaluate(7000, SHARES) == ()  # answers, but no sample yet
    h.record_samples(["a", "b"], 8000)
    (change,) = h.evaluate(8000, SHARES)
    assert change.state is EngineState.LIVE and h.live() == ("a", "b")


def test_a_push_lost_engine_returns_when_it_answers() -> None:
    h = FleetHealth(["a", "b"], HealthSettings(track_samples=False))
    h.record_push("b", ok=False)
    h.record_push("b", ok=False)
    h.evaluate(1000, SHARES)
    h.record_push("b", ok=True)
    (change,) = h.evaluate(2000, SHARES)
    assert change.state is EngineState.LIVE


@pytest.mark.parametrize("names", [[], ["a", "a"]])
def test_fleet_health_refuses_bad_engine_lists(names: list[str]) -> None:
    with pytest.raises(UsageError):
        FleetHealth(names)


# -- FleetActuator ----------------------------------------------------------------------


@dataclass
class FakeClient:
    """Stands in for BeanShellClient: records the property, or fails when ``down``."""

    state: dict[str, Any]
    name: str

    def set_property(self, prop: str, value: float) -> float:
        if self.name in self.state["down"]:
            raise ActuatorError(f"{self.name}: connection refused")
        self.state["props"][self.name] = value
        return value

    def get_property(self, prop: str) -> str | None:
        if self.name in self.state["down"]:
            raise ActuatorError(f"{self.name}: connection refused")
        v = self.state["props"].get(self.name)
        return None if v is None else repr(v)


@dataclass
class Clock:
    ms: int = 0
    mono: float = 0.0
    log: list[int] = field(default_factory=list)

    def wall_ms(self) -> int:
        return self.ms

    def mono_ms(self) -> int:
        return self.ms  # the same pace; a test steps ``ms`` for both

    def monotonic(self) -> float:
        return self.ms / 1000.0


A, B = Engine("10.0.0.1", 9001), Engine("10.0.0.2", 9001)
PREFIXES = ["10.0.0.1:1099-", "10.0.0.2:1099-"]


def make_fleet(
    clock: Clock, cap: float | None = None, prefixes: list[str] = PREFIXES
) -> tuple[FleetActuator, dict[str, Any]]:
    state: dict[str, Any] = {"down": set(), "props": {}}

    def factory(e: Engine) -> BeanShellClient:
        return cast(BeanShellClient, FakeClient(state, e.name))

    fleet = FleetActuator(
        [A, B],
        prefixes=prefixes,
        engine_max_rps=cap,
        mono_ms=clock.mono_ms,
        wall_ms=clock.wall_ms,
        client_factory=factory,
        clock=clock.monotonic,
        timeout_s=1.0,
    )
    return fleet, state


def batch(at_ms: int, *threads: str) -> SampleBatch:
    n = len(threads)
    return SampleBatch.of([at_ms - 10] * n, [5] * n, [True] * n, ["r"] * n, list(threads))


def test_push_splits_over_live_engines_in_samples_per_minute() -> None:
    clock = Clock()
    fleet, state = make_fleet(clock)
    result = fleet.push(20.0)
    assert result.applied and result.rate_rps == pytest.approx(20.0)
    assert state["props"] == {A.name: pytest.approx(600.0), B.name: pytest.approx(600.0)}
    fleet.close()


def lose_b_by_pushes(clock: Clock) -> tuple[FleetActuator, dict[str, Any], PushResult]:
    """B stops answering after the first push; the third push (at 5 s) finds it lost."""
    fleet, state = make_fleet(clock)
    fleet.push(20.0)
    state["down"].add(B.name)
    clock.ms = 2000
    first = fleet.push(22.0)  # one failure: not lost yet
    assert not first.applied
    clock.ms = 5000  # past the EngineSet backoff
    return fleet, state, fleet.push(24.0)


def test_an_engine_that_stops_answering_has_its_share_moved_in_the_same_push() -> None:
    fleet, state, second = lose_b_by_pushes(Clock())
    assert second.applied
    assert state["props"][A.name] == pytest.approx(24.0 * 60)
    acks = {a.engine: a for a in second.acks}
    assert not acks[B.name].ok
    assert (acks[B.name].error or "").startswith("lost: not answering")
    fleet.close()


def test_summary_lists_each_engine_and_every_loss_in_order() -> None:
    fleet, _, _ = lose_b_by_pushes(Clock())
    got = fleet.summary_json()
    assert got["engines"] == [
        {"engine": A.name, "weight": 1.0, "state": "LIVE", "final_share_rps": 24.0},
        {"engine": B.name, "weight": 1.0, "state": "LOST", "final_share_rps": fleet.floor_rps},
    ]
    changes = got["engine_changes"]
    assert isinstance(changes, list) and len(changes) == 1
    assert changes[0]["engine"] == B.name and changes[0]["state"] == "LOST"
    assert changes[0]["at_epoch_ms"] == 5000
    assert str(changes[0]["reason"]).startswith("not answering")
    fleet.close()


BOTH = ("10.0.0.1:1099-tg 1-1", "10.0.0.2:1099-tg 1-2")


def lose_b_by_samples(clock: Clock, source: FleetSource, until_ms: int = 8000) -> None:
    """Both engines' samples at 1 s, then only A's, polled every second."""
    for t in range(1000, until_ms, 1000):
        clock.ms = t
        source.inner = _ListSource([batch(t, *(BOTH if t < 2000 else BOTH[:1]))])
        source.poll()


def test_vanished_samples_mark_the_membership_changed_without_a_push() -> None:
    clock = Clock()
    fleet, state = make_fleet(clock, cap=15.0)
    fleet.push(20.0)
    assert not fleet.membership_changed()
    lose_b_by_samples(clock, FleetSource(_ListSource([]), fleet, wall_ms=clock.wall_ms))
    assert fleet.health.state(B.name) is EngineState.LOST
    assert fleet.membership_changed()
    # The source only judged the loss: the engines still run the old split.
    assert state["props"] == {A.name: pytest.approx(600.0), B.name: pytest.approx(600.0)}


def test_the_push_after_a_loss_moves_the_share_and_names_the_lost_engine() -> None:
    clock = Clock()
    fleet, state = make_fleet(clock, cap=15.0)
    fleet.push(20.0)
    lose_b_by_samples(clock, FleetSource(_ListSource([]), fleet, wall_ms=clock.wall_ms))
    result = fleet.push(20.0)
    # The survivor gets the whole total, capped at its ceiling.
    assert state["props"][A.name] == pytest.approx(15.0 * 60)
    note = format_acks(result.acks)
    assert f"{A.name}=15.0" in note and f"{B.name}=0.1!lost: no samples" in note
    assert result.applied and not fleet.membership_changed()


def test_a_wall_clock_step_back_does_not_keep_a_lost_engine_lost() -> None:
    # The loss rules run on the fleet's (monotonic) clock; the source's wall clock, which
    # steps an hour back at 9 s, only serves the lag watch. (On the wall clock, B's return
    # would wait until the clock passed the moment it was lost again: an hour.)
    clock = Clock()
    fleet, _ = make_fleet(clock)
    fleet.push(20.0)
    source = FleetSource(
        _ListSource([]), fleet, wall_ms=lambda: clock.ms - (3_600_000 if clock.ms >= 9000 else 0)
    )
    both = ("10.0.0.1:1099-tg 1-1", "10.0.0.2:1099-tg 1-2")
    for t in range(1000, 16_000, 1000):
        clock.ms = t
        threads = both if t < 2000 or t >= 9000 else both[:1]
        source.inner = _ListSource([batch(source._wall_ms(), *threads)])
        source.poll()
        if fleet.membership_changed():
            fleet.push(20.0)  # as the loop's next tick does
        if t == 8000:
            assert fleet.health.state(B.name) is EngineState.LOST
    assert fleet.health.live() == (A.name, B.name)
    assert [str(c.state) for c in fleet.changes] == ["LOST", "LIVE"]
    fleet.close()


def test_unknown_thread_names_count_for_no_engine() -> None:
    clock = Clock()
    fleet, _ = make_fleet(clock)
    fleet.observe(batch(1000, "somewhere-else 1-1"), 1000)
    assert fleet.health.last_seen_ms(A.name) is None and fleet.health.last_seen_ms(B.name) is None


def test_a_fleet_of_hundreds_pushes_through_a_bounded_pool() -> None:
    state: dict[str, Any] = {"down": set(), "props": {}}
    engines = [Engine(f"10.0.{i // 250}.{i % 250 + 1}", 9001) for i in range(300)]

    def factory(e: Engine) -> BeanShellClient:
        return cast(BeanShellClient, FakeClient(state, e.name))

    with FleetActuator(engines, client_factory=factory, timeout_s=5.0) as fleet:
        assert fleet._pool._max_workers == MAX_PUSH_WORKERS
        result = fleet.push(600.0)
    assert result.applied and len(result.acks) == 300
    assert sum(state["props"].values()) == pytest.approx(600.0 * 60)


def test_remote_test_end_probe_ends_when_no_engine_runs_threads() -> None:
    source = FleetSource(_ListSource([SampleBatch.empty(), batch(1000, "x 1-1")]))
    threads = {A.name: 10, B.name: 0}
    asked: list[float] = []
    clock = Clock()

    def describe(engines: Any, timeout_s: float) -> list[EngineInfo]:
        asked.append(clock.monotonic())
        return [EngineInfo(e.name, True, "5.6.3", threads[e.name]) for e in engines]

    probe = RemoteTestEndProbe(source, [A, B], describe=describe, clock=clock.monotonic)
    source.poll()
    assert probe.check() is None and not asked  # no sample yet: controller starting
    source.poll()
    assert probe.check() is None  # engine A still runs threads
    threads[A.name] = 0
    clock.ms = 3000
    assert probe.check() is None and len(asked) == 1  # asked at most every 5 s
    clock.ms = 5000
    assert probe.check() == "jmeter_gone"


def test_prefix_count_must_match_engines() -> None:
    with pytest.raises(UsageError):
        make_fleet(Clock(), prefixes=["only-one-"])


class _ListSource:
    def __init__(self, batches: list[SampleBatch]) -> None:
        self.batches = batches

    @property
    def malformed_rows(self) -> int:
        return 0

    @property
    def illegal_xml_chars(self) -> int:
        return 0

    def poll(self) -> SampleBatch:
        return self.batches.pop(0) if self.batches else SampleBatch.empty()


# -- the loop pushes a loss or a return ------------------------------------------------


class LoopClock:
    """The loop's clock, on the fleet's test clock (wall = monotonic here)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def wall_ms(self) -> int:
        return self.clock.ms

    def mono_ms(self) -> int:
        return self.clock.ms

    def wait_ms(self, ms: int, stop: Any) -> None:
        self.clock.ms += max(ms, 0)


def fleet_loop(tmp_path: Path, clock: Clock) -> tuple[ControlLoop, FleetActuator, dict[str, Any]]:
    """A loop holding 20 req/s (``fixed`` policy) over A and B, each poll a second later."""
    fleet, state = make_fleet(clock)
    source = FleetSource(_ListSource([]), fleet, wall_ms=clock.wall_ms)
    spec = SloSpec.from_options(p95="1s", window="5s", max_rate="100", min_samples="1")
    writer = DecisionLogWriter(tmp_path / "d.csv")
    writer.open()
    loop = ControlLoop(
        source=source,
        window=Window(spec.window_ms),
        evaluator=spec,
        policy=build_policy("fixed", spec),
        actuator=fleet,
        writer=writer,
        summary=SummaryBuilder(spec.window_ms, spec.log_thresholds()),
        settings=LoopSettings(tick_ms=1000),
        clock=LoopClock(clock),  # type: ignore[arg-type]
    )
    loop.start(20.0)
    return loop, fleet, state


def tick_at(loop: ControlLoop, clock: Clock, t: int, threads: tuple[str, ...]) -> Any:
    clock.ms = t
    source = cast(FleetSource, loop.source)
    source.inner = _ListSource([batch(t, *threads)])
    return loop.tick()


def test_engine_loss_is_pushed_by_the_loop(tmp_path: Path) -> None:
    clock = Clock()
    loop, fleet, state = fleet_loop(tmp_path, clock)
    results = [
        tick_at(loop, clock, t, BOTH if t < 2000 else BOTH[:1]) for t in range(1000, 8000, 1000)
    ]
    assert fleet.health.state(B.name) is EngineState.LOST
    pushed = [r for r in results if r.push.acks]
    assert len(pushed) == 1  # the rate held: the loss is the only push
    row = pushed[0].row
    assert row.action == "HOLD" and row.applied
    assert f"{B.name}=0.1!lost: no samples" in row.engine_ack
    assert state["props"][A.name] == pytest.approx(20.0 * 60)
    cast(Any, loop.writer).close()
    fleet.close()


def test_engine_return_is_pushed_by_the_loop(tmp_path: Path) -> None:
    clock = Clock()
    loop, fleet, state = fleet_loop(tmp_path, clock)
    for t in range(1000, 8000, 1000):
        tick_at(loop, clock, t, BOTH if t < 2000 else BOTH[:1])
    assert fleet.health.state(B.name) is EngineState.LOST
    back = [tick_at(loop, clock, t, BOTH) for t in range(8000, 12_000, 1000)]
    assert fleet.health.live() == (A.name, B.name)
    assert state["props"] == {A.name: pytest.approx(600.0), B.name: pytest.approx(600.0)}
    rows = [r.row for r in back if r.push.acks]
    assert rows and all(r.applied for r in rows)
    assert f"{B.name}=10.0" in rows[-1].engine_ack and "lost" not in rows[-1].engine_ack
    assert not fleet.membership_changed()
    cast(Any, loop.writer).close()
    fleet.close()


def test_fleet_source_poll_pushes_nothing() -> None:
    clock = Clock()
    fleet, _ = make_fleet(clock)
    fleet.push(20.0)
    pushes: list[float] = []
    fleet._push_total = lambda rate: pushes.append(rate)  # type: ignore[method-assign,assignment,return-value]
    source = FleetSource(_ListSource([]), fleet, wall_ms=clock.wall_ms)
    lose_b_by_samples(clock, source, until_ms=12_000)
    source.inner = _ListSource([batch(12_000, *BOTH)])
    source.poll()  # B's samples are back: waiting for a push to find it answering
    assert fleet.membership_changed() and pushes == []
    fleet.close()
