"""A distributed JMeter fleet as one elastic load (the adapter around ``engine_health``).

``FleetActuator`` is an ``EngineSet`` that knows which engines are alive. Every push
splits the total over the *live* engines only (``engine_health.allocate``: weights, an
optional per-engine ceiling) and gives lost engines the floor rate. It learns of a loss
from two places:

* its own pushes (an engine that stops answering), inside ``push``; the share is moved
  by a second push in the same call;
* the controller's JTL, through ``FleetSource``: each poll's samples are attributed to
  engines by their ``threadName`` prefix (the ``-R`` entry), and an engine whose samples
  vanished is marked lost (or, once its samples are back and it answers, live again).

The fleet never pushes on its own. A loss or a return found in the JTL makes
``membership_changed()`` true: the shares the engines run are no longer the split of
the rate in force. The loop reads that every tick, marks the rate in force unconfirmed
(``RateInForce.reassert``), and its next push, even of an unchanged rate, goes through
this actuator over the live engines; its acks are that tick's ``engine_ack``, so every
change of membership is in the decision log, e.g.
``127.0.0.1:13201=0.1!lost: no samples for 5.2s ...``.

``JtlLagWatch`` warns (once) when samples keep reaching the JTL long after they ended:
the sample sender (``mode=StrippedBatch``, JMeter's default) or a buffered writer.

Clocks: the loss rules' silences and grace periods are timed on the monotonic clock
(``mono_ms``), so a system clock that steps never marks the whole fleet lost; a change's
``at_epoch_ms`` and the lag watch (row end times are epoch ms) use the wall clock.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from loadguard.actuator.elastic_timer import TPM_PER_RPS
from loadguard.actuator.engine_health import (
    EngineChange,
    EngineState,
    FleetHealth,
    HealthSettings,
    allocate,
)
from loadguard.actuator.engine_info import EngineInfo, describe_engines
from loadguard.actuator.engines import Engine, EngineAck, EngineSet, PushResult
from loadguard.errors import ConfigError
from loadguard.jtl.sample import SampleBatch, SampleSource
from loadguard.stop_reason import StopReason

log = logging.getLogger(__name__)

#: Most threads pushing at once (EngineSet would use two per engine).
MAX_PUSH_WORKERS = 128


def system_wall_ms() -> int:
    return int(time.time() * 1000)


def system_mono_ms() -> int:
    return int(time.monotonic() * 1000)


def thread_owner(thread_name: str, prefixes: Sequence[str]) -> int | None:
    """Index of the longest prefix ``thread_name`` starts with (``None``: none); the
    prefixes are the engines' ``-R`` entries and a dash (``RemoteEngine.thread_prefix``)."""
    best: int | None = None
    for i, p in enumerate(prefixes):
        if thread_name.startswith(p) and (best is None or len(p) > len(prefixes[best])):
            best = i
    return best


class FleetActuator(EngineSet):
    """Pushes a total rate to the live engines of a fleet; see the module docstring.

    ``prefixes[i]`` is engine ``i``'s threadName prefix in the controller JTL (empty:
    no sample tracking, loss is judged from pushes only). ``engine_max_rps`` is the most
    one engine may be given (its threads' capacity)."""

    def __init__(
        self,
        engines: Sequence[Engine],
        *,
        prefixes: Sequence[str] = (),
        health: HealthSettings | None = None,
        engine_max_rps: float | None = None,
        mono_ms: Callable[[], int] = system_mono_ms,
        wall_ms: Callable[[], int] = system_wall_ms,
        **kwargs: object,
    ) -> None:
        super().__init__(engines, **kwargs)  # type: ignore[arg-type]
        if 2 * len(self.engines) > MAX_PUSH_WORKERS:
            # Hundreds of engines: a bounded pool; a push then takes ~n/k round trips.
            self._pool.shutdown(wait=False)
            self._pool = ThreadPoolExecutor(
                max_workers=MAX_PUSH_WORKERS, thread_name_prefix="loadguard-push"
            )
        if prefixes and len(prefixes) != len(engines):
            raise ConfigError(
                "remotes",
                f"{len(prefixes)} remote engine(s) for {len(engines)} BeanShell engine(s)",
            )
        if engine_max_rps is not None and not (
            math.isfinite(engine_max_rps) and engine_max_rps > 0
        ):
            raise ConfigError("engine_max_rate", "must be a positive rate")
        settings = health or HealthSettings()
        if not prefixes:
            settings = replace(settings, track_samples=False)
        self.prefixes = tuple(prefixes)
        self.cap = engine_max_rps
        self._mono_ms = mono_ms
        self._wall_ms = wall_ms
        self.health = FleetHealth([e.name for e in self.engines], settings, mono_ms())
        self.total: float | None = None
        self.shares: dict[str, float] = {}
        self.changes: list[EngineChange] = []
        self._lost_reason: dict[str, str] = {}
        self._owner: dict[str, int | None] = {}
        self._unknown_warned = False
        self._membership_changed = False

    # -- pushing -----------------------------------------------------------------------

    def push(self, rate_rps: float) -> PushResult:
        if not (isinstance(rate_rps, int | float) and math.isfinite(rate_rps)):
            return super().push(rate_rps)  # the refusal path
        rate = max(float(rate_rps), self.floor_rps)
        self.total = rate
        result = self._push_total(rate)
        if self._evaluate(self._mono_ms()):
            result = self._push_total(rate)  # move the lost engine's share now
        self._membership_changed = False  # this push split the rate over the live engines
        return result

    def membership_changed(self) -> bool:
        """An engine was lost or came back (seen in the JTL) since the last push, or a
        lost engine's samples are back and a push must find out whether it answers: the
        engines no longer run the split of the rate in force, so it must be pushed again."""
        return self._membership_changed

    def _push_total(self, rate: float) -> PushResult:
        live_names = set(self.health.live())
        live = [e.name in live_names for e in self.engines]
        shares = allocate(
            rate, [e.weight for e in self.engines], live, cap_rps=self.cap, floor_rps=self.floor_rps
        )
        acks = self._fan_out(
            [
                (e, functools.partial(self._set_one, tpm=s * TPM_PER_RPS))
                for e, s in zip(self.engines, shares, strict=True)
            ]
        )
        for a in acks:
            self.health.record_push(a.engine, a.ok)
        self.shares = {e.name: s for e, s in zip(self.engines, shares, strict=True)}
        everyone = not any(live)
        out: list[EngineAck] = []
        for a, is_live in zip(acks, live, strict=True):
            if is_live or everyone:
                out.append(a)
            else:
                note = f"lost: {self._lost_reason.get(a.engine, 'unknown')}"
                out.append(EngineAck(a.engine, False, a.rate_rps, note, a.elapsed_ms))
        counted = [a for a, is_live in zip(acks, live, strict=True) if is_live or everyone]
        pushed = sum(s for s, is_live in zip(shares, live, strict=True) if is_live or everyone)
        return PushResult(pushed, all(a.ok for a in counted), tuple(out))

    # -- watching the JTL ----------------------------------------------------------------

    def observe(self, batch: SampleBatch, mono_ms: int) -> None:
        """Attribute a poll's samples to engines by threadName prefix."""
        if not self.prefixes or not len(batch):
            return
        names = np.unique(batch.thread_name.astype(str))
        seen: set[int] = set()
        for name in names:
            key = str(name)
            if key not in self._owner:
                self._owner[key] = thread_owner(key, self.prefixes)
            owner = self._owner[key]
            if owner is not None:
                seen.add(owner)
            elif not self._unknown_warned:
                self._unknown_warned = True
                log.warning(
                    "JTL thread %r matches no --remote entry (%s): its samples count in the "
                    "window but not for any engine",
                    key,
                    ", ".join(self.prefixes),
                )
        self.health.record_samples([self.engines[i].name for i in sorted(seen)], mono_ms)

    def check(self, mono_ms: int) -> tuple[EngineChange, ...]:
        """Apply the loss rules (nothing is pushed here); a change, or a lost engine
        whose samples came back, makes ``membership_changed()`` true until the next push."""
        if self.total is None:
            return ()  # nothing pushed yet: no share to move
        waiting = any(
            self.health.state(e.name) is EngineState.LOST
            and self.health.seen_again(e.name)
            and not self.health.answered_again(e.name)
            for e in self.engines
        )
        changes = self._evaluate(mono_ms)
        if waiting or changes:
            self._membership_changed = True
        return changes

    def timer_ms(self) -> int:
        """Now on the clock the loss rules are timed on (monotonic)."""
        return self._mono_ms()

    def _evaluate(self, mono_ms: int) -> tuple[EngineChange, ...]:
        stamp = self._wall_ms()  # when it happened, for people: wall-clock epoch ms
        changes = tuple(replace(c, at_ms=stamp) for c in self.health.evaluate(mono_ms, self.shares))
        for c in changes:
            self.changes.append(c)
            if c.state is EngineState.LOST:
                self._lost_reason[c.engine] = c.reason
                live = len(self.health.live())
                log.warning(
                    "engine %s lost: %s; its share moves to %d live engine(s)",
                    c.engine,
                    c.reason,
                    live,
                )
            else:
                self._lost_reason.pop(c.engine, None)
                log.warning("engine %s is back: %s; shares rebalanced", c.engine, c.reason)
        return changes

    def summary_json(self) -> dict[str, object]:
        """The fleet for summary.json: each engine's weight, final state and share, and
        every loss/return in order (``at_epoch_ms``, one-line ``reason``)."""
        return {
            "engines": [
                {
                    "engine": e.name,
                    "weight": e.weight,
                    "state": str(self.health.state(e.name)),
                    "final_share_rps": self.shares.get(e.name),
                }
                for e in self.engines
            ],
            "engine_changes": [
                {
                    "engine": c.engine,
                    "state": str(c.state),
                    "reason": c.reason,
                    "at_epoch_ms": c.at_ms,
                }
                for c in self.changes
            ],
        }


class JtlLagWatch:
    """Warns once when samples keep reaching the JTL late.

    A row that ended before the previous poll but shows up only now was late. Per
    non-empty poll, with ``t_prev`` the previous poll's time and ``e`` the new rows' end
    times,

        late = t_prev - median(e)

    is <= 0 for a JTL written as samples complete (they end between the polls), and
    about half a batch span for a batching sample sender or a buffered writer (the newest
    row of a batch is fresh, its older rows are not, so the *median* is judged, not the
    newest). The warning comes after ``polls`` consecutive late polls over
    ``threshold_ms``; the first non-empty poll (a backlog) is not judged."""

    def __init__(self, threshold_ms: int = 3000, polls: int = 3) -> None:
        self.threshold_ms = threshold_ms
        self.lags: deque[int] = deque(maxlen=polls)
        self.polls = 0
        self.prev_poll_ms: int | None = None
        self.warning: str | None = None

    def observe(self, batch: SampleBatch, wall_ms: int) -> str | None:
        prev, self.prev_poll_ms = self.prev_poll_ms, wall_ms
        if not len(batch):
            return None
        self.polls += 1
        if self.polls == 1 or prev is None or self.warning is not None:
            return None
        self.lags.append(prev - int(np.median(batch.end_ms)))
        if len(self.lags) == self.lags.maxlen and min(self.lags) > self.threshold_ms:
            self.warning = (
                f"the JTL lags the test: rows arrive {min(self.lags) / 1000:.1f}s or more after "
                "their samples ended, so every window describes the past. A distributed "
                "controller batches them (mode=StrippedBatch): run it with "
                "-Jmode=StrippedAsynch (loadguard run --remote does); a single JMeter needs "
                "-Jjmeter.save.saveservice.autoflush=true"
            )
            log.warning("%s", self.warning)
            return self.warning
        return None


class JtlMissingWatch:
    """Warns while the JTL the loop follows does not exist: a ``--jtl`` that is not the
    file given to ``jmeter -l`` would otherwise look like a test that has not started.

    The first warning comes ``after_ms`` after the first poll that found no file, then one
    every ``every_ms`` while it is still missing; none once a sample has arrived (JMeter
    may rotate the file)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        after_ms: int = 10_000,
        every_ms: int = 60_000,
        exists: Callable[[str | os.PathLike[str]], bool] = os.path.exists,
    ) -> None:
        self.path = path
        self.after_ms = after_ms
        self.every_ms = every_ms
        self._exists = exists
        self._since_ms: int | None = None
        self._next_ms: int | None = None

    def observe(self, samples_seen: int, wall_ms: int) -> str | None:
        if samples_seen or self._exists(self.path):
            self._since_ms = self._next_ms = None
            return None
        if self._since_ms is None:
            self._since_ms, self._next_ms = wall_ms, wall_ms + self.after_ms
            return None
        assert self._next_ms is not None
        if wall_ms < self._next_ms:
            return None
        self._next_ms = wall_ms + self.every_ms
        waited = (wall_ms - self._since_ms) / 1000.0
        message = (
            f"no JTL at {os.fspath(self.path)} after {waited:.0f}s: JMeter creates it when "
            "its test starts; is --jtl the file given to jmeter -l? Until samples arrive "
            "the rate is held, then lowered to the floor (stale)"
        )
        log.warning("%s", message)
        return message


class FleetSource:
    """A ``SampleSource`` that feeds each poll to the fleet and the lag watch.

    ``wall_ms`` is the wall clock the lag watch compares row end times with; the fleet's
    loss rules run on the fleet's own (monotonic) clock."""

    def __init__(
        self,
        inner: SampleSource,
        fleet: FleetActuator | None = None,
        lag: JtlLagWatch | None = None,
        wall_ms: Callable[[], int] = system_wall_ms,
        missing: JtlMissingWatch | None = None,
    ) -> None:
        self.inner = inner
        self.fleet = fleet
        self.lag = lag if lag is not None else JtlLagWatch()
        self.missing = missing
        self._wall_ms = wall_ms
        self.samples_seen = 0

    @property
    def malformed_rows(self) -> int:
        return self.inner.malformed_rows

    @property
    def illegal_xml_chars(self) -> int:
        return self.inner.illegal_xml_chars

    def poll(self) -> SampleBatch:
        batch = self.inner.poll()
        self.samples_seen += len(batch)
        wall = self._wall_ms()
        self.lag.observe(batch, wall)
        if self.missing is not None:
            self.missing.observe(self.samples_seen, wall)
        if self.fleet is not None:
            mono = self.fleet.timer_ms()
            self.fleet.observe(batch, mono)
            self.fleet.check(mono)
        return batch


class RemoteTestEndProbe:
    """``attach --remote``: is the distributed test still running?

    The engines outlive the test, so an engine that answers says nothing about its end,
    and a batching sample sender leaves the JTL idle for long stretches mid-test. This
    probe asks the engines (at most every ``every_s``) how many JMeter threads they run:
    once samples have arrived and no reachable engine runs any, the test is gone and the
    loop ends when the JTL has also been idle for ``idle_exit_ms``."""

    def __init__(
        self,
        source: FleetSource,
        engines: Sequence[Engine],
        *,
        every_s: float = 5.0,
        timeout_s: float = 2.0,
        describe: Callable[..., list[EngineInfo]] = describe_engines,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.engines = tuple(engines)
        self.every_s = every_s
        self.timeout_s = timeout_s
        self._describe = describe
        self._clock = clock
        self._next = 0.0
        self._last: StopReason | None = None

    def check(self) -> StopReason | None:
        if self.source.samples_seen == 0:
            return None  # the controller may still be starting
        now = self._clock()
        if now < self._next:
            return self._last
        self._next = now + self.every_s
        infos = self._describe(self.engines, timeout_s=self.timeout_s)
        running = any(i.reachable and (i.active_threads or 0) > 0 for i in infos)
        self._last = None if running else StopReason.JMETER_GONE
        return self._last
