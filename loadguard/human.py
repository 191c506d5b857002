"""Figures for people: every number with its unit, rounded to what it can support.

One place for the rounding rules the report's tables, the headline and the console share
(a leaf: it imports nothing from LoadGuard). Machines read ``summary.json``, which keeps
every figure unrounded.

* a rate: whole req/s from 10 up (a window of a few hundred samples does not support a
  tenth), one decimal from 1 to 10, two significant digits below: ``137.335`` ->
  ``137 req/s``;
* a run length or a time span: ``850 ms``, ``22 s``, ``2 min 58 s``, ``1 h 02 min``
  (whole seconds from 10 s; the next unit down is dropped past an hour);
* a latency: whole ms from 10 ms, one decimal below, seconds with one decimal from 10 s;
* a share (0..1) in percent: whole percent from 10 %, one decimal from 1 % to 10 %, two
  significant digits below; a share that is not exactly 0 or 1 never prints as ``0 %`` or
  ``100 %`` (``0.9996`` -> ``99.96 %``);
* a count with thousands separators: ``12,345``.

Missing values (None, NaN) print as an em dash.
"""

from __future__ import annotations

import math

DASH = "—"


def _missing(value: float | None) -> bool:
    return value is None or not math.isfinite(float(value))


def _sig(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits, no exponent, no trailing zeros."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def number(value: float | None) -> str:
    """A plain figure rounded like a rate, without a unit (``137``, ``4.5``, ``0.38``)."""
    if value is None or _missing(value):
        return DASH
    v = float(value)
    if abs(v) >= 10:
        return f"{round(v):,}"
    if abs(v) >= 1:
        return f"{v:.1f}".removesuffix(".0")
    return _sig(v, 2)


def rate(rps: float | None) -> str:
    """``137.335`` -> ``137 req/s``."""
    return DASH if rps is None or _missing(rps) else f"{number(rps)} req/s"


def count(n: float | None) -> str:
    return DASH if n is None or _missing(n) else f"{round(float(n)):,}"


def duration(seconds: float | None) -> str:
    """``178.146`` -> ``2 min 58 s``; ``0.85`` -> ``850 ms``; ``3725`` -> ``1 h 02 min``."""
    if seconds is None or _missing(seconds):
        return DASH
    s = float(seconds)
    if s < 0:
        return "-" + duration(-s)
    if s == 0:
        return "0 s"
    if s < 1:
        return f"{round(s * 1000)} ms"
    if s < 10:
        return f"{s:.1f} s".replace(".0 s", " s")
    whole = round(s)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, secs = divmod(whole, 60)
        return f"{minutes} min" if secs == 0 else f"{minutes} min {secs:02d} s"
    minutes = round(s / 60)
    hours, mins = divmod(minutes, 60)
    return f"{hours} h" if mins == 0 else f"{hours} h {mins:02d} min"


def latency(ms: float | None) -> str:
    """``249.6`` -> ``250 ms``; ``4.25`` -> ``4.2 ms``; ``12500`` -> ``12.5 s``."""
    if ms is None or _missing(ms):
        return DASH
    v = float(ms)
    if v >= 10_000:
        return f"{v / 1000:.1f} s"
    if v >= 10:
        return f"{round(v):,} ms"
    return f"{v:.1f} ms".replace(".0 ms", " ms")


def percent(share: float | None) -> str:
    """A share 0..1 in percent: ``0.118`` -> ``12 %``, ``0.0042`` -> ``0.42 %``."""
    if share is None or _missing(share):
        return DASH
    p = float(share) * 100.0
    if p == 0:
        return "0 %"
    if p == 100:
        return "100 %"
    if abs(p) < 1:
        text = _sig(p, 2)
    elif abs(p) < 10:
        text = f"{p:.1f}".removesuffix(".0")
    else:
        text = f"{round(p)}"
    # Never round a share that is not exactly 0 or 1 onto 0 % or 100 %.
    digits = 1
    while float(text) in (0.0, 100.0) and digits < 8:
        text = f"{p:.{digits}f}"
        digits += 1
    return f"{text} %"


def rate_interval(lo: float | None, hi: float | None) -> str:
    """``146.0, 155.2`` -> ``146–155 req/s``."""
    if lo is None or hi is None or _missing(lo) or _missing(hi):
        return DASH
    return f"{number(lo)}–{number(hi)} req/s"
