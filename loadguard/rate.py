r"""The rate in force: one owner, one tolerance.

The rate in force r is the total rate the engines last acknowledged (what JMeter really
runs), not what a policy wished for. ``RateInForce`` owns it: its value, whether the
engines confirmed it, and its last change, ``RateChange(at_ms, rose, serial)``. The loop
(and the simulator) own the one instance and update it from push results; policies and
guards read the change from ``Observation.rate_change`` and keep no copy of the rate.

The owner has no clock: time comes with each update, the monotonic ms of the observation
(``Observation.timer_ms``) whose decision was pushed. With ε = ``RATE_EPSILON``,

.. math::

    \mathrm{same}(a, b) \iff |b - a| \le ε\,|a|

is the one tolerance for "has the rate changed?" (``same_rate``). The updates:

* ``start(r_0, confirmed)``: :math:`r \leftarrow r_0`, no change recorded (the start
  rate is in force from the first sample on);
* ``acknowledged(r', t)``: if :math:`\mathrm{same}(r, r')` the push only re-asserted r
  (not a change); else :math:`r \leftarrow r'` and the change becomes
  :math:`(\max(t, t_{prev}),\ r' > r,\ n + 1)`. Either way r is confirmed;
* ``push_failed()``: r is kept and unconfirmed. A failed push is not a change, but its
  reply may have been lost after the write, so what is decided next is pushed even when
  it leaves r unchanged (``needs_push``), until an acknowledgement confirms it;
* ``reassert()``: the same, when the engines that carry r changed (a fleet engine lost or
  back, ``Actuator.membership_changed``): r still holds as a total, but its split over
  the engines does not, so the next decision is pushed even if it leaves r unchanged.

Each update ends in a clamp where a bound applies: a change time never goes back before
the previous change (a clock stepping back cannot make "time since the change" grow).
The value itself is not clamped into the SLO's ``[min_rate, max_rate]``: it is what the
engines acknowledged (an engine resumed from outside the bounds runs outside them), and a
clamp would make the owner lie; the ``Bounds`` guard bounds decisions instead. A value
that is not a finite rate >= 0 is refused (``PolicyError``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loadguard.errors import PolicyError

__all__ = ["RATE_EPSILON", "RateChange", "RateInForce", "same_rate"]

#: Relative change below which a new rate counts as "the same" (HOLD). The one tolerance
#: for "has the rate in force changed?": the owner, the policies and the guards all ask
#: ``same_rate``.
RATE_EPSILON = 1e-9


def same_rate(old_rate: float, new_rate: float) -> bool:
    """``new_rate`` is ``old_rate`` within ``RATE_EPSILON`` (relative to ``old_rate``)."""
    return abs(new_rate - old_rate) <= RATE_EPSILON * abs(old_rate)


@dataclass(frozen=True, slots=True)
class RateChange:
    """The last change of the rate in force: ``at_ms`` (monotonic ms of the observation
    whose push the engines acknowledged), whether it ``rose``, and its ``serial`` (1 for
    the first change, then +1), so two changes at the same ms are still told apart."""

    at_ms: int
    rose: bool
    serial: int

    def since_ms(self, mono_ms: int) -> int:
        """Time since the change at ``mono_ms`` (the same monotonic clock)."""
        return mono_ms - self.at_ms


def _checked(rate: float) -> float:
    if not (isinstance(rate, int | float) and math.isfinite(rate) and rate >= 0):
        raise PolicyError(f"the rate in force must be a finite rate >= 0, got {rate!r}")
    return float(rate)


class RateInForce:
    """Owns the rate in force; see the module docstring for the update rules."""

    def __init__(self, value: float = 0.0, *, confirmed: bool = False) -> None:
        self._value = _checked(value)
        self._confirmed = confirmed
        self._change: RateChange | None = None

    @property
    def value(self) -> float:
        """The rate the engines last acknowledged (req/s)."""
        return self._value

    @property
    def confirmed(self) -> bool:
        """The engines acknowledged ``value`` and no push failed since."""
        return self._confirmed

    @property
    def change(self) -> RateChange | None:
        """The last change; ``None`` while the start rate is in force."""
        return self._change

    def start(self, value: float, *, confirmed: bool) -> None:
        """The start rate: in force from the first sample on, so not a change."""
        self._value = _checked(value)
        self._confirmed = confirmed
        self._change = None

    def needs_push(self, target: float) -> bool:
        """Push ``target``? Yes if it changes the rate or the rate is unconfirmed."""
        return not (self._confirmed and same_rate(self._value, target))

    def acknowledged(self, rate: float, at_ms: int) -> bool:
        """The engines acknowledged ``rate``, pushed at monotonic ``at_ms``; ``True`` if
        that changed the rate in force."""
        rate = _checked(rate)
        self._confirmed = True
        if same_rate(self._value, rate):
            return False
        serial = 1 if self._change is None else self._change.serial + 1
        if self._change is not None:
            at_ms = max(at_ms, self._change.at_ms)
        self._change = RateChange(at_ms, rate > self._value, serial)
        self._value = rate
        return True

    def push_failed(self) -> None:
        """A push failed: the rate is kept, unconfirmed (re-asserted on the next push)."""
        self.reassert()

    def reassert(self) -> None:
        """Keep the rate but unconfirm it: the next decision is pushed even if unchanged."""
        self._confirmed = False

    def __repr__(self) -> str:
        return f"RateInForce({self._value!r}, confirmed={self._confirmed}, change={self._change})"
