"""Step functions of time, as ``(from_s, value)`` pairs (a leaf: imports nothing)."""

from __future__ import annotations

from collections.abc import Sequence


def step_value(steps: Sequence[tuple[float, float]], t_s: float) -> float:
    """The value of the last step (in order) that starts at or before ``t_s``; the first
    step's value before any has started."""
    value = steps[0][1]
    for at, v in steps:
        if at <= t_s:
            value = v
    return value
