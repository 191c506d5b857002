"""Durations as people type them on the command line: ``300ms``, ``1.5s``, ``2m``, ``1h``.

CLI durations go through ``parse_duration_s`` (``--service 50ms``, ``--duration 10m``,
``metrics --window 10s`` ...). A unit is required, except for a bare ``0`` and where a
command documents a default unit (``bare_unit``). The SLO's values -- its thresholds and
its window, also ``run``/``attach --window`` -- have their own stricter parser in
``loadguard.slo`` (ms or s only, with the key in the error).
"""

from __future__ import annotations

import math
import re

from loadguard.errors import UsageError

_UNITS_S: dict[str, float] = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|ms|s|min|m|h)?\s*$")


def parse_duration_s(text: str, *, what: str = "duration", bare_unit: str | None = None) -> float:
    """Seconds in ``text`` (``300ms`` -> 0.3); raises ``UsageError`` on anything else.

    ``bare_unit``: the unit of a number written without one (``None``: not allowed)."""
    if text.strip() == "0":
        return 0.0
    match = _DURATION.match(text)
    if match is not None and match.group(2) is None:
        if bare_unit is None:
            match = None
        else:
            return float(match.group(1)) * _UNITS_S[bare_unit]
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
