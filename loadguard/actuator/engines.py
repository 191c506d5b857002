"""Pushing one total rate to one or more JMeter engines.

An ``Actuator`` turns the controller's total rate ``R`` (req/s) into property writes.
``EngineSet`` splits it by weight over ``n`` engines,

    r_i = max(R * w_i / sum_j w_j, MIN_RATE_RPS),     property_i = r_i * 60  (samples/min)

writes every engine in parallel, and waits at most ``timeout_s`` in total. It never
raises and never blocks past its timeout: a slow or dead engine gives a failed
``EngineAck`` and the ``PushResult`` says ``applied=False``. An engine that failed is
retried on later pushes after a bounded exponential backoff,

    wait_k = min(backoff_s * 2**(k-1), max_backoff_s)   after k consecutive failures,

so the loop keeps ticking while an engine is down and picks it up again when it returns.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Protocol

from loadguard.actuator.bsh import (
    BeanShellClient,
    PropertyValueError,
    check_property_name,
    property_number,
)
from loadguard.actuator.elastic_timer import MIN_RATE_RPS, RATE_PROPERTY, TPM_PER_RPS
from loadguard.errors import LoadGuardError, UsageError


@dataclass(frozen=True)
class Engine:
    """One JMeter engine: ``port`` is its BeanShell *session* port
    (``beanshell.server.port + 1``); ``weight`` its share of the total rate."""

    host: str
    port: int
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not self.host:
            raise UsageError("engine host is empty")
        if not 0 < self.port < 65536:
            raise UsageError(f"bad engine port {self.port}")
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise UsageError(f"bad engine weight {self.weight}: must be > 0")

    @classmethod
    def parse(cls, spec: str) -> Engine:
        """``host:port[:weight]``; an IPv6 host goes in brackets: ``[::1]:9001:2``."""
        text = spec.strip()
        if text.startswith("["):
            host, sep, rest = text[1:].partition("]")
            if not sep or not rest.startswith(":"):
                raise UsageError(f"bad engine {spec!r}: expected [host]:port[:weight]")
            parts = [host, *rest[1:].split(":")]
        else:
            parts = text.split(":")
        if len(parts) not in (2, 3) or not parts[0]:
            raise UsageError(f"bad engine {spec!r}: expected host:port[:weight]")
        try:
            port = int(parts[1])
            weight = float(parts[2]) if len(parts) == 3 else 1.0
        except ValueError:
            raise UsageError(f"bad engine {spec!r}: port and weight must be numbers") from None
        return cls(parts[0], port, weight)

    @property
    def name(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class EngineAck:
    """One engine's answer to one push: ``rate_rps`` is the rate it confirmed."""

    engine: str
    ok: bool
    rate_rps: float | None
    error: str | None
    elapsed_ms: float


@dataclass(frozen=True)
class PushResult:
    """``rate_rps``: the total pushed (after the floor); ``applied``: every engine acked."""

    rate_rps: float
    applied: bool
    acks: tuple[EngineAck, ...]


class Actuator(Protocol):
    """What the loop pushes through (and ``sidecar.drive`` winds down): the one path by
    which a rate reaches the engines."""

    def push(self, rate_rps: float) -> PushResult:
        """Set the total rate; never raises, bounded by the actuator's timeout."""
        ...

    def read_rate(self) -> float | None:
        """Total rate (req/s) currently set; ``None`` if unset or unreachable."""
        ...

    def membership_changed(self) -> bool:
        """Did the engines that carry the rate change since the last push (an engine
        lost or back)? Then the loop pushes the rate in force again."""
        ...

    def summary_json(self) -> dict[str, object]:
        """What this actuator adds to summary.json (``{}``: nothing)."""
        ...

    def close(self) -> None:
        """Release its threads and sockets; idempotent."""
        ...


def split_rate(
    rate_rps: float, weights: Sequence[float], floor: float = MIN_RATE_RPS
) -> list[float]:
    """``r_i = max(R * w_i / sum(w), floor)``: never 0 for any engine."""
    total = sum(weights)
    return [max(rate_rps * w / total, floor) for w in weights]


@dataclass
class _Health:
    failures: int = 0
    retry_at: float = 0.0
    busy: Future[float] | None = field(default=None, repr=False)


ClientFactory = Callable[[Engine], BeanShellClient]


class EngineSet:
    """Pushes one total rate, split by weight, to several engines in parallel."""

    def __init__(
        self,
        engines: Sequence[Engine],
        *,
        property_name: str = RATE_PROPERTY,
        timeout_s: float = 2.0,
        backoff_s: float = 1.0,
        max_backoff_s: float = 10.0,
        floor_rps: float = MIN_RATE_RPS,
        client_factory: ClientFactory | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not engines:
            raise UsageError("no engine given")
        names = [e.name for e in engines]
        if len(set(names)) != len(names):
            raise UsageError(f"engine listed twice: {', '.join(names)}")
        if not (timeout_s > 0 and backoff_s > 0 and max_backoff_s >= backoff_s):
            raise UsageError("timeout and backoff must be positive")
        if not floor_rps > 0:
            raise UsageError("the rate floor must be positive: never push 0")
        self.engines = tuple(engines)
        self.property_name = check_property_name(property_name)
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.floor_rps = floor_rps
        self._clock = clock
        # Connect and read share the push budget, so one push is bounded by timeout_s.
        self._factory: ClientFactory = client_factory or (
            lambda e: BeanShellClient(
                e.host, e.port, connect_timeout=timeout_s * 0.5, read_timeout=timeout_s * 0.9
            )
        )
        self._health = {e.name: _Health() for e in self.engines}
        self._pool = ThreadPoolExecutor(
            max_workers=2 * len(self.engines), thread_name_prefix="loadguard-push"
        )
        self._lock = threading.Lock()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def membership_changed(self) -> bool:
        """A fixed set of engines: never (``FleetActuator`` tracks losses)."""
        return False

    def summary_json(self) -> dict[str, object]:
        return {}

    def __enter__(self) -> EngineSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def push(self, rate_rps: float) -> PushResult:
        """Split ``rate_rps`` over the engines and set it; never raises."""
        if not (isinstance(rate_rps, int | float) and math.isfinite(rate_rps)):
            acks = tuple(
                EngineAck(e.name, False, None, f"refused to push rate {rate_rps!r}", 0.0)
                for e in self.engines
            )
            return PushResult(self.floor_rps, False, acks)
        rate = max(float(rate_rps), self.floor_rps)
        shares = split_rate(rate, [e.weight for e in self.engines], self.floor_rps)
        acks = self._fan_out(
            [
                (engine, functools.partial(self._set_one, tpm=share * TPM_PER_RPS))
                for engine, share in zip(self.engines, shares, strict=True)
            ]
        )
        return PushResult(rate, all(a.ok for a in acks), acks)

    def read_rate(self) -> float | None:
        """Sum of the engines' current rates (req/s); ``None`` if any is unset/unreachable."""
        acks = self._fan_out([(e, self._read_one) for e in self.engines])
        if not all(a.ok and a.rate_rps is not None for a in acks):
            return None
        return sum(a.rate_rps for a in acks if a.rate_rps is not None)

    def read_acks(self) -> tuple[EngineAck, ...]:
        """Each engine's current rate, as acks (for ``loadguard push --get``)."""
        return self._fan_out([(e, self._read_one) for e in self.engines])

    def _set_one(self, client: BeanShellClient, tpm: float) -> float:
        return client.set_property(self.property_name, tpm)

    def _read_one(self, client: BeanShellClient) -> float:
        return property_number(self.property_name, client.get_property(self.property_name))

    def _fan_out(
        self, jobs: Sequence[tuple[Engine, Callable[[BeanShellClient], float]]]
    ) -> tuple[EngineAck, ...]:
        start = self._clock()
        futures: dict[str, Future[float]] = {}
        skipped: dict[str, str] = {}
        with self._lock:
            for engine, job in jobs:
                health = self._health[engine.name]
                if health.busy is not None and not health.busy.done():
                    skipped[engine.name] = "previous request still running"
                elif start < health.retry_at:
                    skipped[engine.name] = (
                        f"backing off after {health.failures} failure(s), "
                        f"retry in {health.retry_at - start:.1f}s"
                    )
                else:
                    try:
                        future = self._pool.submit(job, self._factory(engine))
                    except Exception as exc:  # closed pool, bad factory: report, never raise
                        skipped[engine.name] = f"not sent: {type(exc).__name__}: {exc}"
                        continue
                    health.busy = future
                    futures[engine.name] = future
        wait_futures(list(futures.values()), timeout=self.timeout_s)
        acks: list[EngineAck] = []
        with self._lock:
            for engine, _ in jobs:
                elapsed = (self._clock() - start) * 1000.0
                if engine.name in skipped:
                    acks.append(EngineAck(engine.name, False, None, skipped[engine.name], 0.0))
                    continue
                ack = self._ack(engine, futures[engine.name], elapsed)
                self._record(engine.name, ack.ok)
                acks.append(ack)
        return tuple(acks)

    @staticmethod
    def _ack(engine: Engine, future: Future[float], elapsed_ms: float) -> EngineAck:
        if not future.done():
            return EngineAck(engine.name, False, None, "timed out", elapsed_ms)
        exc = future.exception()
        if exc is None:
            return EngineAck(engine.name, True, future.result() / TPM_PER_RPS, None, elapsed_ms)
        if isinstance(exc, PropertyValueError):  # it answered: unset or not a number
            return EngineAck(engine.name, True, None, str(exc), elapsed_ms)
        message = exc.message if isinstance(exc, LoadGuardError) else f"{type(exc).__name__}: {exc}"
        return EngineAck(engine.name, False, None, message, elapsed_ms)

    def _record(self, name: str, ok: bool) -> None:
        health = self._health[name]
        if ok:
            health.failures = 0
            health.retry_at = 0.0
            return
        health.failures += 1
        wait = min(self.backoff_s * 2 ** (health.failures - 1), self.max_backoff_s)
        health.retry_at = self._clock() + wait


class DryRunActuator:
    """Records the rates it is asked to push and pushes nothing (``--dry-run``)."""

    def __init__(self, floor_rps: float = MIN_RATE_RPS) -> None:
        self.floor_rps = floor_rps
        self.history: list[float] = []

    def push(self, rate_rps: float) -> PushResult:
        if not (isinstance(rate_rps, int | float) and math.isfinite(rate_rps)):
            ack = EngineAck("dry-run", False, None, f"refused to push rate {rate_rps!r}", 0.0)
            return PushResult(self.floor_rps, False, (ack,))
        rate = max(float(rate_rps), self.floor_rps)
        self.history.append(rate)
        return PushResult(rate, True, (EngineAck("dry-run", True, rate, None, 0.0),))

    def read_rate(self) -> float | None:
        return self.history[-1] if self.history else None

    def membership_changed(self) -> bool:
        return False

    def summary_json(self) -> dict[str, object]:
        return {}

    def close(self) -> None:
        pass
