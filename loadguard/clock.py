r"""The loop's two clocks: wall time for timestamps, monotonic time for scheduling.

JMeter stamps every JTL row with the wall clock (epoch ms), so the window's edges and the
decision log's timestamps must be wall-clock epoch ms too. Everything that *measures
elapsed time* -- the tick schedule, ``--duration``, idle exit, the policies' settling,
probe and auto-stop timers -- runs on a monotonic clock instead, so a system clock that
steps (NTP, a VM resumed, an operator) by an hour neither sleeps for an hour nor ends a
run early or late.

``Staleness`` carries the window's staleness across such a step. Wall staleness
:math:`s = t_{wall} - e_{newest}` is right while the wall clock runs smoothly (JMeter and
the loop read the same clock), but a step of Δ shifts it by Δ until rows stamped after the
step arrive: forward, a false "stale" that floors the rate; back, a negative staleness for
as long as Δ, so a test that stalls is never seen as stale. With :math:`m_k` the monotonic
time of tick k, it is carried on the monotonic clock,

.. math::

    s_k = \begin{cases}
        s_{k-1} + (m_k - m_{k-1}) & \text{no new rows} \\
        \max(0, \min(t_{wall} - e_{newest},\ s_{k-1} + (m_k - m_{k-1}))) & \text{new rows}
    \end{cases}

since new rows can make the data fresher, never staler.

``WallSteps`` puts the exceedance ledger on a *steady* clock: the wall clock less the
steps seen so far. The ledger attributes each sample to the rate in force when it was
sent, comparing JTL send times with the push times of the rates; after a step back of Δ
every later sample would be stamped before the epoch it was sent in, and the counting
policies would find no evidence at the rate in force until the wall clock came back
(an hour, for an hour's step). With :math:`o_k = t_{wall} - m_k` at tick k, the shift is
:math:`σ_k = o_k - o_0`, and a new step is recorded when it moves by more than 1 % of
the window (a sample moved by that crosses a sub-window's edge with a probability of
4 %, at ``PARTS`` = 4). Rates in force and reading times are fed as :math:`t - σ`.
A sample's stamp is on whichever side of a step it was taken: of the recent shifts
:math:`σ_j`, its steady completion is the latest :math:`e - σ_j` not after the steady
time it was read at, since a row is written before it is read (a sample stamped before
a step back would land after that time with the new shift; one stamped after a step
forward, with the old).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

import numpy as np

from loadguard.jtl.sample import SampleBatch

#: The recent shifts a sample's stamp is matched against (a step is rare; a sample
#: read after several is older than any window the ledger still judges).
RECENT_SHIFTS = 8


class Clock(Protocol):
    def wall_ms(self) -> int:
        """Wall-clock epoch ms: timestamps and window edges only."""
        ...

    def mono_ms(self) -> int:
        """Monotonic ms (any origin): scheduling, durations and timers."""
        ...

    def wait_ms(self, ms: int, stop: threading.Event) -> None:
        """Sleep ``ms`` of monotonic time, or until ``stop`` is set."""
        ...


class WallClock:
    """The real clocks. ``Event.wait`` times out on the monotonic clock."""

    def wall_ms(self) -> int:
        return int(time.time() * 1000)

    def mono_ms(self) -> int:
        return int(time.monotonic() * 1000)

    def wait_ms(self, ms: int, stop: threading.Event) -> None:
        if ms > 0:
            stop.wait(ms / 1000.0)


class Staleness:
    """Window staleness that a wall-clock step cannot fake (see the module docstring)."""

    def __init__(self) -> None:
        self._staleness: int | None = None
        self._mono: int = 0

    def update(self, wall_staleness: int | None, grew: bool, mono_ms: int) -> int | None:
        """This tick's staleness; ``wall_staleness`` is ``now - newest`` (``None``: no
        sample yet), ``grew``: this tick read new rows."""
        if wall_staleness is None:
            return None
        if self._staleness is None:
            staleness = max(0, wall_staleness)
        else:
            carried = self._staleness + max(0, mono_ms - self._mono)
            staleness = max(0, min(wall_staleness, carried)) if grew else carried
        self._staleness, self._mono = staleness, mono_ms
        return staleness


class WallSteps:
    """The wall clock's steps since the start, and the ledger's steady time (module
    docstring). ``observe`` once per tick, before the ledger is fed or read."""

    def __init__(self, window_ms: int) -> None:
        self.tolerance_ms = max(1, window_ms // 100)
        self._origin: int | None = None
        self.shifts: list[int] = [0]

    @property
    def shift_ms(self) -> int:
        return self.shifts[-1]

    def observe(self, wall_ms: int, mono_ms: int) -> int:
        """Record a step if the wall clock moved against the monotonic one; the shift."""
        offset = wall_ms - mono_ms
        if self._origin is None:
            self._origin = offset
        shift = offset - self._origin
        if abs(shift - self.shifts[-1]) > self.tolerance_ms:
            self.shifts.append(shift)
            del self.shifts[:-RECENT_SHIFTS]
        return self.shifts[-1]

    def steady(self, wall_ms: int) -> int:
        return wall_ms - self.shifts[-1]

    def steady_batch(self, batch: SampleBatch, read_at_wall_ms: int) -> SampleBatch:
        """``batch`` with every start on the steady clock."""
        if len(batch) == 0 or self.shifts == [0]:
            return batch
        now = self.steady(read_at_wall_ms) + self.tolerance_ms
        shifts = np.asarray(self.shifts, np.int64)
        ends = batch.start_ms.astype(np.int64) + batch.elapsed_ms.astype(np.int64)
        steady_end = ends[:, None] - shifts[None, :]
        fits = steady_end <= now
        latest = np.where(fits, steady_end, np.iinfo(np.int64).min).argmax(axis=1)
        chosen = np.where(fits.any(axis=1), shifts[latest], shifts[-1])
        return SampleBatch(
            batch.start_ms - chosen, batch.elapsed_ms, batch.success, batch.label,
            batch.thread_name, batch.all_threads,
        )  # fmt: skip
