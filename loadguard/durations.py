"""Durations as people type them: ``300ms``, ``1.5s``, ``2m``.

The target's options (``--service 50ms``, ``--degrade-at 120s``, ``?p95=300ms``) all take
durations with a unit; a bare ``0`` is the one unit-less value accepted.
"""

from __future__ import annotations

import math
import re

from loadguard.errors import UsageError

_UNITS_S: dict[str, float] = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|ms|s|min|m)\s*$")


def parse_duration_s(text: str, *, what: str = "duration") -> float:
    """Seconds in ``text`` (``300ms`` -> 0.3); raises ``UsageError`` on anything else."""
    if text.strip() == "0":
        return 0.0
    match = _DURATION.match(text)
    if match is None:
        raise UsageError(f"bad {what} {text!r}: expected a number with a unit, e.g. 300ms or 2s")
    value = float(match.group(1)) * _UNITS_S[match.group(2)]
    if not math.isfinite(value):
        raise UsageError(f"bad {what} {text!r}: not finite")
    return value


def format_duration(seconds: float) -> str:
    """Shortest exact-enough form: 0.05 -> ``50ms``, 120 -> ``120s``."""
    if seconds == 0:
        return "0"
    if seconds < 1.0:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"
