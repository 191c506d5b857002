"""Which engines of a distributed JMeter test are alive, and how the total is shared (pure).

A distributed test is ``n`` ``jmeter-server`` engines driven by one controller; the policy
decides one **total** rate ``R``. This module holds the two pieces of that which need no
I/O: telling a lost engine from a live one, and sharing ``R`` among the live ones.

**Loss.** An engine is *lost* when either signal says so:

* it stopped answering: ``fail_after`` consecutive failed pushes to its BeanShell port;
* its samples vanished from the controller's JTL while another engine's still arrive:
  no sample of its for ``silence_i`` ms, where the silence allowed grows when its share
  ``r_i`` is small (few samples are expected at a low rate),

      silence_i = max(silence_ms, 1000 * min_expected / r_i).

  "Another engine's still arrive" keeps a JTL that lags as a whole (sample sender,
  buffering) from condemning every engine at once. An engine never seen yet is judged
  only ``startup_grace_ms`` after the fleet started (or after it rejoined).

A lost engine comes back (*live*) when it answers a push again and, if it was lost for
silence, once a sample of its arrives after the loss.

**Sharing.** With live set ``L``, weights ``w_i`` and an optional per-engine ceiling
``c`` (what one engine's threads can carry), the shares are water-filled:

    r_i = min(c, R_rest * w_i / sum_{j in U} w_j)   for i in U (uncapped live engines),

repeated until no live engine exceeds ``c``; ``R_rest`` is ``R`` minus what capped
engines carry. So ``sum_L r_i = min(R, |L| * c)``: survivors take a lost engine's
share, never past the ceiling. Lost engines get the positive ``floor`` (never 0: a
rate of 0 breaks pacing), so one that returns restarts gently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from loadguard.errors import UsageError


class EngineState(StrEnum):
    LIVE = "LIVE"
    LOST = "LOST"


@dataclass(frozen=True)
class HealthSettings:
    """Knobs of the loss detector (all times in ms)."""

    fail_after: int = 2
    silence_ms: int = 5000
    min_expected: float = 5.0
    startup_grace_ms: int = 15_000
    track_samples: bool = True

    def __post_init__(self) -> None:
        if self.fail_after < 1:
            raise UsageError("fail_after must be >= 1")
        if self.silence_ms <= 0 or self.startup_grace_ms < 0 or self.min_expected <= 0:
            raise UsageError("silence, grace and min_expected must be positive")

    def silence_for(self, share_rps: float) -> int:
        """``silence_i = max(silence_ms, 1000 * min_expected / r_i)``."""
        if share_rps <= 0:
            return self.silence_ms
        return max(self.silence_ms, math.ceil(1000.0 * self.min_expected / share_rps))


@dataclass(frozen=True)
class EngineChange:
    """One engine changed state at ``at_ms``; ``reason`` is one line for logs."""

    engine: str
    state: EngineState
    reason: str
    at_ms: int


@dataclass
class _Engine:
    name: str
    state: EngineState = EngineState.LIVE
    failures: int = 0
    last_seen_ms: int | None = None  # poll time when its samples last arrived
    since_ms: int = 0  # when it became LIVE (start or rejoin) or LOST
    lost_for: str = ""  # "push" or "silence"
    answered_since_loss: bool = False
    seen_since_loss: bool = False


class FleetHealth:
    """Per-engine state machine. Time is a parameter; nothing here reads a clock."""

    def __init__(
        self, names: Sequence[str], settings: HealthSettings | None = None, start_ms: int = 0
    ) -> None:
        if not names:
            raise UsageError("no engine given")
        if len(set(names)) != len(names):
            raise UsageError(f"engine listed twice: {', '.join(names)}")
        self.settings = settings or HealthSettings()
        self._engines = {n: _Engine(n, since_ms=start_ms) for n in names}
        self.names = tuple(names)

    def state(self, name: str) -> EngineState:
        return self._engines[name].state

    def live(self) -> tuple[str, ...]:
        return tuple(n for n in self.names if self._engines[n].state is EngineState.LIVE)

    def last_seen_ms(self, name: str) -> int | None:
        return self._engines[name].last_seen_ms

    def seen_again(self, name: str) -> bool:
        """A lost engine's samples arrived after its loss."""
        return self._engines[name].seen_since_loss

    def answered_again(self, name: str) -> bool:
        """A lost engine answered a push after its loss."""
        return self._engines[name].answered_since_loss

    def record_push(self, name: str, ok: bool) -> None:
        e = self._engines[name]
        if ok:
            e.failures = 0
            if e.state is EngineState.LOST:
                e.answered_since_loss = True
        else:
            e.failures += 1

    def record_samples(self, names: Sequence[str], mono_ms: int) -> None:
        """Samples of these engines arrived in the poll done at ``mono_ms``."""
        for name in names:
            e = self._engines[name]
            e.last_seen_ms = mono_ms
            if e.state is EngineState.LOST and mono_ms > e.since_ms:
                e.seen_since_loss = True

    def evaluate(self, mono_ms: int, shares: Mapping[str, float]) -> tuple[EngineChange, ...]:
        """Apply the loss and return rules at ``mono_ms``; returns the transitions made.

        ``shares``: the rate (req/s) each engine is currently assigned."""
        s = self.settings
        changes: list[EngineChange] = []
        for name in self.names:
            e = self._engines[name]
            if e.state is EngineState.LIVE:
                reason = self._loss_reason(e, mono_ms, shares.get(name, 0.0))
                if reason is not None:
                    e.state = EngineState.LOST
                    e.since_ms = mono_ms
                    e.lost_for = "push" if reason.startswith("not answering") else "silence"
                    e.answered_since_loss = False
                    e.seen_since_loss = False
                    changes.append(EngineChange(name, EngineState.LOST, reason, mono_ms))
            else:
                back = e.answered_since_loss and (
                    e.lost_for == "push" or not s.track_samples or e.seen_since_loss
                )
                if back:
                    e.state = EngineState.LIVE
                    e.since_ms = mono_ms
                    e.failures = 0
                    what = "samples arrive again" if e.lost_for == "silence" else "answers again"
                    changes.append(EngineChange(name, EngineState.LIVE, what, mono_ms))
        return tuple(changes)

    def _loss_reason(self, e: _Engine, mono_ms: int, share_rps: float) -> str | None:
        s = self.settings
        if e.failures >= s.fail_after:
            return f"not answering ({e.failures} failed pushes)"
        if not s.track_samples:
            return None
        allowed = s.silence_for(share_rps)
        if e.last_seen_ms is None or e.last_seen_ms < e.since_ms:
            # Never seen since it (re)joined: give it the startup grace first.
            if mono_ms - e.since_ms < max(s.startup_grace_ms, allowed):
                return None
            silent = mono_ms - e.since_ms
        else:
            silent = mono_ms - e.last_seen_ms
            if silent <= allowed:
                return None
        others_fresh = any(
            o.name != e.name
            and o.state is EngineState.LIVE
            and o.last_seen_ms is not None
            and mono_ms - o.last_seen_ms <= s.silence_ms
            for o in self._engines.values()
        )
        if not others_fresh:
            return None
        return f"no samples for {silent / 1000:.1f}s (allowed {allowed / 1000:.1f}s)"


def allocate(
    total_rps: float,
    weights: Sequence[float],
    live: Sequence[bool],
    *,
    cap_rps: float | None = None,
    floor_rps: float = 0.1,
) -> list[float]:
    """Water-filled shares (see the module docstring); lost engines get ``floor_rps``.

    With no live engine at all every engine counts as live: there is nothing better to
    push to, and the pushes themselves then tell which ones answer."""
    if len(weights) != len(live):
        raise ValueError("weights and live differ in length")
    if not (math.isfinite(total_rps) and total_rps >= 0):
        raise UsageError(f"bad total rate {total_rps!r}")
    if cap_rps is not None and not cap_rps > 0:
        raise UsageError("the per-engine ceiling must be positive")
    alive = list(live) if any(live) else [True] * len(live)
    shares = [floor_rps] * len(weights)
    open_set = [i for i, a in enumerate(alive) if a]
    rest = total_rps
    while open_set:
        wsum = sum(weights[i] for i in open_set)
        over = [i for i in open_set if cap_rps is not None and rest * weights[i] / wsum > cap_rps]
        if not over:
            for i in open_set:
                shares[i] = max(rest * weights[i] / wsum, floor_rps)
            break
        assert cap_rps is not None
        for i in over:
            shares[i] = cap_rps
            rest -= cap_rps
        open_set = [i for i in open_set if i not in over]
        rest = max(rest, 0.0)
    return shares
