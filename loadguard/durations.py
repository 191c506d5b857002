"""Durations as people type them: ``300ms``, ``1.5s``, ``2m``, ``1h``: the one parser.

Every duration LoadGuard reads goes through ``parse_duration_s``: every CLI duration
option (through ``loadguard.cli.options.DURATION``), the SLO thresholds and window of
``loadguard.slo``, service times, capacity changes. A unit is always required (``0s``, not
``0``), so ``--timeout 5`` is refused instead of being read as seconds in one command and
milliseconds in another. A parsed value is a ``Seconds``, so code that also reads
strings (an SLO file) knows it has already been checked.
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
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|ms|s|min|m|h)\s*$")
_BARE = re.compile(r"^\s*-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?\s*$")
#: What every duration error says a duration looks like.
EXPECTED = "a number with a unit (us, ms, s, m, h), e.g. 300ms or 2s"


class Seconds(float):
    """A duration already parsed (in seconds). It prints as a plain float, so it can go
    anywhere a float goes; ``format_duration`` gives it back with its unit."""


def parse_duration_s(text: object, *, what: str = "duration") -> Seconds:
    """Seconds in ``text`` (``300ms`` -> 0.3); raises ``UsageError`` on anything else.

    A ``Seconds`` passes through unchanged. The message is one line and names ``what``."""
    if isinstance(text, Seconds):
        return text
    raw = str(text)
    match = _DURATION.match(raw)
    if match is None:
        why = "missing unit" if _BARE.match(raw) else "bad duration"
        if raw.strip().startswith("-"):
            why = "negative duration"
        raise UsageError(f"{what}: {why} {raw!r}: expected {EXPECTED}")
    value = float(match.group(1)) * _UNITS_S[match.group(2)]
    if not math.isfinite(value):
        raise UsageError(f"{what}: {raw!r} is not finite")
    return Seconds(value)


def format_duration(seconds: float) -> str:
    """Shortest exact-enough form, always with a unit: 0.05 -> ``50ms``, 120 -> ``120s``."""
    if seconds == 0:
        return "0s"
    if seconds < 1.0:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"
