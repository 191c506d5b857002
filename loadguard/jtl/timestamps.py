"""JTL ``timeStamp`` values in JMeter's formats, as epoch milliseconds (pure core).

JMeter writes ms since the epoch by default (``timestamp_format=ms``). Any other value of
``jmeter.save.saveservice.timestamp_format`` is a Java ``SimpleDateFormat`` pattern,
formatted in the JVM's time zone. ``strptime_pattern`` translates the common pattern
letters (y M d H h m s S a Z X, quoted literals); a pattern without a zone letter is read
in ``tz`` (the reader's local zone unless told otherwise).
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

import numpy as np
import numpy.typing as npt
import pandas as pd

from loadguard.errors import JtlError

# Longest letter runs first; values are strptime directives.
_LETTERS: dict[str, str] = {
    "yyyy": "%Y", "yy": "%y", "y": "%Y",
    "MMMM": "%B", "MMM": "%b", "MM": "%m", "M": "%m",
    "dd": "%d", "d": "%d",
    "HH": "%H", "H": "%H", "hh": "%I", "h": "%I", "a": "%p",
    "mm": "%M", "m": "%M",
    "ss": "%S", "s": "%S",
    "SSS": "%f", "SS": "%f", "S": "%f",
    "Z": "%z", "XXX": "%z", "XX": "%z", "X": "%z",
    "EEE": "%a", "EEEE": "%A",
}  # fmt: skip


def strptime_pattern(pattern: str) -> str:
    """Translate a SimpleDateFormat pattern to a strptime pattern."""
    out: list[str] = []
    for token in re.finditer(r"'([^']*)'|([A-Za-z])\2*|(.)", pattern, re.DOTALL):
        quoted, letters, other = token.group(1), token.group(0), token.group(3)
        if quoted is not None:
            out.append(quoted.replace("%", "%%") if quoted else "'")
        elif other is not None:
            out.append("%%" if other == "%" else other)
        else:
            directive = _LETTERS.get(letters)
            if directive is None:
                raise JtlError(f"unsupported letters {letters!r} in timestamp_format {pattern!r}")
            out.append(directive)
    return "".join(out)


def parse_timestamps(
    values: npt.NDArray[np.object_], pattern: str, tz: str | tzinfo | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Epoch ms for each value and a mask of the values that did not parse."""
    if pattern == "ms":
        numbers = pd.Series(pd.to_numeric(pd.Series(values, dtype=object), errors="coerce"))
        floats = numbers.to_numpy(np.float64, na_value=np.nan)
        bad = np.isnan(floats) | (np.nan_to_num(floats) % 1 != 0)
        return np.nan_to_num(floats).astype(np.int64), bad
    fmt = strptime_pattern(pattern)
    parsed = pd.to_datetime(pd.Series(values, dtype=object), format=fmt, errors="coerce")
    if parsed.dt.tz is None:
        zone = tz or _local_zone()
        parsed = parsed.dt.tz_localize(zone, ambiguous="NaT", nonexistent="NaT")
    bad = parsed.isna().to_numpy()
    seconds = (
        parsed.dt.tz_convert("UTC").dt.tz_localize(None) - pd.Timestamp(0)
    ).dt.total_seconds()
    floats = np.nan_to_num(seconds.to_numpy(np.float64, na_value=np.nan))
    return (floats * 1000).round().astype(np.int64), bad


def _local_zone() -> tzinfo:
    # The reader's current UTC offset: JMeter formats in its JVM's zone, usually this one.
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    return zone
