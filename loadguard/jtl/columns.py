"""Which columns a CSV JTL holds, from JMeter's saveservice settings (pure core).

JMeter writes CSV columns in a fixed order (``CSVSaveService.printableFieldNamesToString``
in 5.6.3); each is present when its ``jmeter.save.saveservice.*`` flag is on:

    timeStamp elapsed label responseCode responseMessage threadName dataType success
    failureMessage bytes sentBytes grpThreads allThreads URL Filename Latency Encoding
    SampleCount ErrorCount Hostname IdleTime Connect  "<sample_variables>"...

The flags' 5.6.3 defaults give the 17-column list ``DEFAULT_COLUMNS``. Properties come
from ``jmeter.properties`` / ``user.properties`` files (read with ``read_properties``) and
``-J`` overrides, later sources winning, exactly as JMeter layers them.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from loadguard.errors import JtlError

PREFIX = "jmeter.save.saveservice."

# (flag, default, columns) in JMeter's write order.
_FLAGS: tuple[tuple[str, bool, tuple[str, ...]], ...] = (
    ("time", True, ("elapsed",)),
    ("label", True, ("label",)),
    ("response_code", True, ("responseCode",)),
    ("response_message", True, ("responseMessage",)),
    ("thread_name", True, ("threadName",)),
    ("data_type", True, ("dataType",)),
    ("successful", True, ("success",)),
    ("assertion_results_failure_message", True, ("failureMessage",)),
    ("bytes", True, ("bytes",)),
    ("sent_bytes", True, ("sentBytes",)),
    ("thread_counts", True, ("grpThreads", "allThreads")),
    ("url", True, ("URL",)),
    ("filename", False, ("Filename",)),
    ("latency", True, ("Latency",)),
    ("encoding", False, ("Encoding",)),
    ("sample_count", False, ("SampleCount", "ErrorCount")),
    ("hostname", False, ("Hostname",)),
    ("idle_time", True, ("IdleTime",)),
    ("connect_time", True, ("Connect",)),
)

KNOWN_COLUMNS: frozenset[str] = frozenset(
    ["timeStamp", *(c for _, _, cols in _FLAGS for c in cols)]
)

DEFAULT_COLUMNS: tuple[str, ...] = (
    "timeStamp", "elapsed", "label", "responseCode", "responseMessage", "threadName",
    "dataType", "success", "failureMessage", "bytes", "sentBytes", "grpThreads",
    "allThreads", "URL", "Latency", "IdleTime", "Connect",
)  # fmt: skip

# JMeter 2.13's defaults (no header): a common reason for a "wrong" field count.
JMETER_2_13_COLUMNS: tuple[str, ...] = (
    "timeStamp", "elapsed", "label", "responseCode", "responseMessage", "threadName",
    "dataType", "success", "bytes", "grpThreads", "allThreads", "Latency",
)  # fmt: skip

REQUIRED_COLUMNS: tuple[str, ...] = ("timeStamp", "elapsed", "label", "success")


@dataclass(frozen=True, slots=True)
class JtlFormat:
    """How a JTL is written.

    ``columns`` is the expected CSV column list (a header line, when present, overrides
    it); ``timestamp_format`` is ``"ms"`` (epoch ms) or a SimpleDateFormat pattern;
    ``columns_given`` says whether the columns came from the user (settings or
    ``--jtl-columns``) rather than from the 5.6.3 default; ``delimiter_given`` whether the
    delimiter did (``default_delimiter`` among the properties). A delimiter not given is
    read from the JTL's header line when that line uses another one (``sniff_delimiter``).
    """

    columns: tuple[str, ...] = DEFAULT_COLUMNS
    delimiter: str = ","
    header: bool = True
    timestamp_format: str = "ms"
    output_format: str = "csv"
    autoflush: bool = False
    columns_given: bool = False
    delimiter_given: bool = False

    def __post_init__(self) -> None:
        if len(self.delimiter) != 1 or self.delimiter in '"\r\n':
            raise JtlError(f"JTL delimiter must be one character, not {self.delimiter!r}")
        if self.output_format not in ("csv", "xml"):
            raise JtlError(f"unknown JTL output_format {self.output_format!r} (csv or xml)")
        missing = [c for c in REQUIRED_COLUMNS if c not in self.columns]
        if self.output_format == "csv" and missing:
            raise JtlError(f"JTL columns lack {', '.join(missing)}: LoadGuard needs them")


def _flag(props: Mapping[str, str], name: str, default: bool) -> bool:
    value = props.get(PREFIX + name)
    if value is None:
        return default
    return value.strip().lower() == "true"


def _delimiter(raw: str) -> str:
    # JMeter accepts "\t" and the literal word "TAB" (SampleSaveConfiguration).
    value = raw.strip() if raw.strip() else raw
    if value in ("\\t", "TAB", "\t"):
        return "\t"
    return value


def format_from_properties(props: Mapping[str, str]) -> JtlFormat:
    """The JTL format JMeter would write with these (merged) properties."""
    ts = props.get(PREFIX + "timestamp_format", "ms").strip() or "ms"
    columns: list[str] = [] if ts.lower() == "none" else ["timeStamp"]
    for flag, default, cols in _FLAGS:
        if _flag(props, flag, default):
            columns.extend(cols)
    variables = props.get("sample_variables", "").strip()
    if variables:
        columns.extend(v.strip() for v in variables.split(",") if v.strip())
    return JtlFormat(
        columns=tuple(columns),
        delimiter=_delimiter(props.get(PREFIX + "default_delimiter", ",")),
        header=_flag(props, "print_field_names", True),
        timestamp_format="ms" if ts.lower() in ("ms", "none") else ts,
        output_format=props.get(PREFIX + "output_format", "csv").strip().lower() or "csv",
        autoflush=_flag(props, "autoflush", False),
        columns_given=True,
        delimiter_given=PREFIX + "default_delimiter" in props,
    )


def parse_columns(text: str) -> tuple[str, ...]:
    """``--jtl-columns timeStamp,elapsed,...`` (names as in a JTL header)."""
    columns = tuple(c.strip() for c in text.split(",") if c.strip())
    if not columns:
        raise JtlError("is empty", setting="jtl_columns")
    if len(set(columns)) != len(columns):
        raise JtlError("names a column twice", setting="jtl_columns")
    return columns


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` syntax: ``key=value``, ``key: value``, ``key value``,
    ``#``/``!`` comments, backslash line continuations and escapes."""
    props: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for line in logical:
        m = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]?\s*(.*)$", line)
        if m is None or not m.group(1):
            continue
        props[_unescape(m.group(1))] = _unescape(m.group(2))
    return props


def read_properties(
    paths: Sequence[Path], overrides: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Merge properties files in order, then ``-J`` overrides (later wins)."""
    merged: dict[str, str] = {}
    for path in paths:
        try:
            merged.update(parse_properties(path.read_text(encoding="latin-1")))
        except OSError as exc:
            raise JtlError(f"cannot read properties file {path}: {exc.strerror}") from exc
    merged.update(overrides or {})
    return merged


def parse_override(text: str) -> tuple[str, str]:
    """``-J name=value`` (as on JMeter's command line)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise JtlError(f"-J expects name=value, got {text!r}")
    return name.strip(), value


def header_columns(fields: Sequence[str]) -> tuple[str, ...] | None:
    """The columns a first CSV record names, or ``None`` when it is not a header.

    A header starts with a known column name and every field is a known column or a
    sample variable; JMeter quotes variable names in the header.
    """
    if not fields or fields[0] not in KNOWN_COLUMNS:
        return None
    known = sum(1 for f in fields if f in KNOWN_COLUMNS)
    return tuple(fields) if known >= 2 else None


# Known column names, longest first: the first field of a header starts with one of them.
_BY_LENGTH = sorted(KNOWN_COLUMNS, key=len, reverse=True)


def sniff_delimiter(line: str) -> str | None:
    """The delimiter of a header line written with JMeter's ``default_delimiter``, or
    ``None`` when ``line`` is not such a header.

    JMeter writes the header as the enabled column names in a fixed order, joined by the
    delimiter (``timeStamp<TAB>elapsed<TAB>label...``), so the character right after the leading
    column name is the delimiter; the line must then split into a header
    (``header_columns``) on it.
    """
    for name in _BY_LENGTH:
        if not line.startswith(name) or len(line) <= len(name):
            continue
        delim = line[len(name)]
        if delim.isalnum() or delim in '_"\r\n':
            continue
        try:
            fields = next(csv.reader([line], delimiter=delim), [])
        except csv.Error:
            continue  # a bare CR ...: not a header
        if header_columns(fields) is not None:
            return delim
    return None
