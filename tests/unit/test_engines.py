"""EngineSet / DryRunActuator: splitting, parallel pushes, timeouts and backoff."""

from __future__ import annotations

import math
import time

import pytest

from loadguard.actuator.bsh import BeanShellClient
from loadguard.actuator.elastic_timer import MIN_RATE_RPS, RATE_PROPERTY
from loadguard.actuator.engines import DryRunActuator, Engine, EngineSet, split_rate
from loadguard.errors import UsageError
from tests.bsh_fake import fake_bsh, free_port


@pytest.mark.parametrize(
    ("spec", "engine"),
    [
        ("127.0.0.1:9001", Engine("127.0.0.1", 9001, 1.0)),
        ("jm-1:9001:2.5", Engine("jm-1", 9001, 2.5)),
        ("[::1]:9001", Engine("::1", 9001, 1.0)),
        ("[::1]:9001:3", Engine("::1", 9001, 3.0)),
    ],
)
def test_parse_engine_spec(spec: str, engine: Engine) -> None:
    assert Engine.parse(spec) == engine


@pytest.mark.parametrize(
    "spec", ["host", "host:", ":9001", "h:0", "h:70000", "h:x", "h:1:0", "h:1:-2", "h:1:2:3"]
)
def test_bad_engine_spec_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageError):
        Engine.parse(spec)


@pytest.mark.parametrize(
    ("rate", "weights", "shares"),
    [
        (100.0, [1.0], [100.0]),
        (100.0, [1.0, 1.0], [50.0, 50.0]),
        (90.0, [1.0, 2.0], [30.0, 60.0]),
        (0.0, [1.0, 1.0], [MIN_RATE_RPS, MIN_RATE_RPS]),
        (0.1, [1.0, 9.0], [MIN_RATE_RPS, MIN_RATE_RPS]),
    ],
)
def test_split_rate_by_weight_never_below_floor(
    rate: float, weights: list[float], shares: list[float]
) -> None:
    assert split_rate(rate, weights) == pytest.approx(shares)


def test_push_splits_total_over_engines_in_samples_per_minute() -> None:
    with fake_bsh() as a, fake_bsh() as b:
        engines = [Engine("127.0.0.1", a.port, 1), Engine("127.0.0.1", b.port, 3)]
        with EngineSet(engines) as actuator:
            result = actuator.push(40.0)
            assert result.applied and result.rate_rps == 40.0
            assert [ack.rate_rps for ack in result.acks] == pytest.approx([10.0, 30.0])
            assert a.properties[RATE_PROPERTY] == "600.0"
            assert b.properties[RATE_PROPERTY] == "1800.0"
            assert actuator.read_rate() == pytest.approx(40.0)


@pytest.mark.parametrize("rate", [0.0, -5.0, 1e-9])
def test_push_never_sends_zero(rate: float) -> None:
    with fake_bsh() as fake, EngineSet([Engine("127.0.0.1", fake.port)]) as actuator:
        result = actuator.push(rate)
        assert result.applied and result.rate_rps == MIN_RATE_RPS
        assert float(fake.properties[RATE_PROPERTY]) == pytest.approx(MIN_RATE_RPS * 60)


@pytest.mark.parametrize("rate", [math.nan, math.inf])
def test_push_of_non_finite_rate_is_not_applied_and_sends_nothing(rate: float) -> None:
    with fake_bsh() as fake, EngineSet([Engine("127.0.0.1", fake.port)]) as actuator:
        result = actuator.push(rate)
        assert not result.applied
        assert fake.connections == 0


def test_unreachable_engine_fails_its_ack_and_others_still_apply() -> None:
    dead = free_port()
    with fake_bsh() as live:
        engines = [Engine("127.0.0.1", live.port), Engine("127.0.0.1", dead)]
        with EngineSet(engines, timeout_s=0.6) as actuator:
            result = actuator.push(20.0)
    assert not result.applied
    ok, failed = result.acks
    assert ok.ok and ok.rate_rps == pytest.approx(10.0)
    assert not failed.ok and failed.error is not None and "refused" in failed.error
    assert live.properties[RATE_PROPERTY] == "600.0"


def test_hung_engine_does_not_block_push_past_timeout() -> None:
    with fake_bsh(delay_s=3.0) as hung, fake_bsh() as live:
        engines = [Engine("127.0.0.1", hung.port), Engine("127.0.0.1", live.port)]
        with EngineSet(engines, timeout_s=0.5) as actuator:
            start = time.monotonic()
            result = actuator.push(10.0)
            elapsed = time.monotonic() - start
    assert elapsed < 1.2
    assert [ack.ok for ack in result.acks] == [False, True]
    assert result.acks[0].error is not None


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_failed_engine_backs_off_exponentially_then_recovers() -> None:
    port = free_port()
    clock = _Clock()
    engine = Engine("127.0.0.1", port)
    actuator = EngineSet(
        [engine],
        timeout_s=0.3,
        backoff_s=1.0,
        max_backoff_s=4.0,
        clock=clock,
        client_factory=lambda e: BeanShellClient(
            e.host, e.port, connect_timeout=0.05, read_timeout=0.2
        ),
    )
    try:
        assert "refused" in (actuator.push(5).acks[0].error or "")  # failure 1 -> wait 1 s
        assert "backing off" in (actuator.push(5).acks[0].error or "")
        clock.now += 1.01
        assert "refused" in (actuator.push(5).acks[0].error or "")  # failure 2 -> wait 2 s
        clock.now += 1.5
        assert "backing off" in (actuator.push(5).acks[0].error or "")
        clock.now += 0.6
        actuator.push(5)  # failure 3 -> wait 4 s
        actuator.push(5)
        clock.now += 4.01
        actuator.push(5)  # failure 4 -> capped at 4 s
        clock.now += 3.9
        assert "backing off" in (actuator.push(5).acks[0].error or "")
        with fake_bsh(port=port):
            clock.now += 0.2
            assert actuator.push(5).applied
            assert actuator.push(6).applied  # no backoff left after a success
    finally:
        actuator.close()


def test_read_rate_is_none_when_unset_or_unreachable() -> None:
    with fake_bsh() as fake, EngineSet([Engine("127.0.0.1", fake.port)]) as actuator:
        assert actuator.read_rate() is None
        actuator.push(3.0)
        assert actuator.read_rate() == pytest.approx(3.0)
    with EngineSet([Engine("127.0.0.1", free_port())], timeout_s=0.3) as actuator:
        assert actuator.read_rate() is None


def test_duplicate_engines_are_refused() -> None:
    with pytest.raises(UsageError, match="twice"):
        EngineSet([Engine("h", 1), Engine("h", 1, 2.0)])


def test_dry_run_records_rates_and_pushes_nothing() -> None:
    dry = DryRunActuator()
    assert dry.read_rate() is None
    assert dry.push(12.0).applied
    assert dry.push(0.0).rate_rps == MIN_RATE_RPS
    assert not dry.push(math.nan).applied
    assert dry.history == [12.0, MIN_RATE_RPS]
    assert dry.read_rate() == MIN_RATE_RPS


def test_push_after_close_reports_instead_of_raising() -> None:
    with fake_bsh() as fake:
        actuator = EngineSet([Engine("127.0.0.1", fake.port)])
        actuator.close()
        result = actuator.push(5.0)
        assert not result.applied
        assert "not sent" in (result.acks[0].error or "")
        assert actuator.read_rate() is None
        assert fake.connections == 0
