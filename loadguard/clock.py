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
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


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
