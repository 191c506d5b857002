"""A CSV JTL as a byte stream: bytes in any split, rows out (pure core).

``CsvStreamDecoder.feed(data)`` takes whatever bytes were appended since the last call
and returns the rows of the records they complete; it holds the partial last record
(which may end inside a quoted field, past a raw newline) until the rest arrives.
``finish()`` is end-of-file: the held tail is read as a final record.

The first record decides the columns: a header line names them (and, unless the format
gives one, the delimiter: the character after its leading column name); otherwise they come
from the ``JtlFormat`` (saveservice settings, ``--jtl-columns`` or the 5.6.3 default). A
first row whose field count disagrees with defaulted columns is reported in
``warnings`` (and switched to JMeter 2.13's 12 columns when it has exactly 12 fields).
"""

from __future__ import annotations

import csv
import logging
import re
from datetime import tzinfo

from loadguard.errors import JtlError
from loadguard.jtl.columns import (
    JMETER_2_13_COLUMNS,
    PREFIX,
    REQUIRED_COLUMNS,
    JtlFormat,
    header_columns,
    sniff_delimiter,
)
from loadguard.jtl.csv_rows import (
    CsvChunkParser,
    CsvLayout,
    IncompleteChunk,
    iter_records,
    record_boundary,
)
from loadguard.jtl.raw_rows import BadRowLog, RawRows

log = logging.getLogger(__name__)

CHUNK_BYTES = 8 << 20
MAX_RECORD_BYTES = 4 << 20


# A headerless row's leading epoch-ms timestamp and the character after it.
_LEADING_MS = re.compile(r"\d{1,15}([^\w\"\r\n.:/+-])")


def _fields(record: str | None, delimiter: str) -> list[str]:
    if not record:
        return []
    try:
        return next(csv.reader([record], delimiter=delimiter), [])
    except csv.Error:
        return []  # not even a CSV record (a bare CR...): no header; rows count it


class CsvStreamDecoder:
    def __init__(
        self,
        fmt: JtlFormat,
        bad: BadRowLog,
        *,
        tz: str | tzinfo | None = None,
        chunk_bytes: int = CHUNK_BYTES,
        max_record_bytes: int = MAX_RECORD_BYTES,
        thread_names: bool = False,
    ) -> None:
        self.fmt = fmt
        self.thread_names = thread_names
        self.bad = bad
        self.tz = tz
        self.chunk_bytes = chunk_bytes
        self.max_record_bytes = max_record_bytes
        self.columns: tuple[str, ...] | None = None
        # The configured delimiter, or the one the header line (or first row) shows.
        self.delimiter = fmt.delimiter
        self.has_header: bool | None = None
        self.warnings: list[str] = []
        self.records = 0
        self._parser: CsvChunkParser | None = None
        self._buf = b""
        self._skipping = False  # inside an oversized record: drop up to the next newline

    @property
    def held_bytes(self) -> int:
        return len(self._buf)

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning("%s", message)

    def _sniff(self, first: str, fields: list[str]) -> list[str]:
        """The first record split on the delimiter its header line shows
        (``sniff_delimiter``), when that is not the one configured. A delimiter the user
        gave is kept, with a warning."""
        configured = self.delimiter
        found = sniff_delimiter(first)
        if found is None or found == configured:
            return fields
        if self.fmt.delimiter_given:
            self._warn(
                f"the JTL header line is delimited by {found!r}, not by the configured "
                f"default_delimiter {configured!r}: reading it with {configured!r} as "
                "configured (rows will count as malformed if that is wrong)"
            )
            return fields
        log.info("JTL header line is delimited by %r: reading the JTL with it", found)
        self.delimiter = found
        return _fields(first, found)

    def _delimiter_hint(self, first: str, columns: int) -> str:
        """For a headerless first row of the wrong width: the delimiter that would split it
        into ``columns`` fields (after a leading epoch-ms timestamp), as advice. Rows are
        not read with a guessed delimiter."""
        m = _LEADING_MS.match(first)
        if m is None or m.group(1) == self.delimiter or len(_fields(first, m.group(1))) != columns:
            return ""
        shown = "\\t" if m.group(1) == "\t" else m.group(1)
        return (
            f" (it splits into {columns} fields on {m.group(1)!r}: "
            f"-J {PREFIX}default_delimiter={shown}?)"
        )

    def _decide_columns(self, final: bool) -> bool:
        """Read the first record: a header, or the first data row. False: need more bytes."""
        head = self._buf[: self.max_record_bytes + 1]
        text = head.decode("utf-8", errors="replace")
        first: str | None = None
        for rec in iter_records(text):
            end = text.find("\n", len(rec))
            complete = end >= 0 or final
            if not complete:
                break
            first = rec
            break
        if first is None:
            if len(self._buf) > self.max_record_bytes:
                first = ""  # an oversized first line: no header, let the rows path count it
            else:
                return False
        fields = _fields(first, self.delimiter)
        named = header_columns(fields)
        if named is None and first:
            fields = self._sniff(first, fields)
            named = header_columns(fields)
        if named is not None:
            missing = [c for c in REQUIRED_COLUMNS if c not in named]
            if missing:
                raise JtlError(f"the JTL header lacks {', '.join(missing)}: LoadGuard needs them")
            if self.fmt.columns_given and named != self.fmt.columns:
                log.info("JTL header overrides the configured columns: %s", ",".join(named))
            self.columns = named
            self.has_header = True
            nl = self._buf.find(b"\n")
            self._buf = self._buf[nl + 1 :] if nl >= 0 else b""
            self.records += 1
        else:
            self.has_header = False
            self.columns = self.fmt.columns
            if fields and len(fields) != len(self.columns):
                if not self.fmt.columns_given and len(fields) == len(JMETER_2_13_COLUMNS):
                    self.columns = JMETER_2_13_COLUMNS
                    self._warn(
                        f"JTL has no header and {len(fields)} fields per row: reading it with "
                        "JMeter 2.13's default columns; pass --jtl-columns to be sure"
                    )
                else:
                    source = "configured" if self.fmt.columns_given else "JMeter 5.6.3 default"
                    hint = self._delimiter_hint(first or "", len(self.columns))
                    self._warn(
                        f"JTL has no header and its first row has {len(fields)} fields, but "
                        f"the {source} columns are {len(self.columns)}: rows will count as "
                        f"malformed; pass --jtl-columns or --jmeter-properties{hint}"
                    )
        self._parser = CsvChunkParser(
            CsvLayout(
                self.columns,
                self.delimiter,
                self.fmt.timestamp_format,
                self.tz,
                thread_names=self.thread_names,
            )
        )
        return True

    def _parse(self, chunk: bytes, exact: bool = False) -> RawRows:
        assert self._parser is not None
        before = self.bad.records
        if exact:
            rows = self._parser.parse_exact(chunk, self.records + 1, self.bad)
        else:
            rows = self._parser.parse(chunk, self.records + 1, self.bad)
        self.records += len(rows) + self.bad.records - before
        return rows

    def _drain(self, final: bool) -> list[RawRows]:
        out: list[RawRows] = []
        buf = self._buf
        pos = 0  # bytes of buf consumed; sliced off once at the end (no quadratic copying)
        while pos < len(buf):
            if self._skipping:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    pos = len(buf)
                    break
                pos = nl + 1
                self._skipping = False
                continue
            if self._parser is None:
                self._buf = buf[pos:]
                if not self._decide_columns(final):
                    return out
                buf, pos = self._buf, 0
                continue
            end = min(len(buf), pos + self.chunk_bytes)
            more = end < len(buf)
            cut = buf.rfind(b"\n", pos, end) + 1
            if cut == 0:
                # No newline within the chunk: one long line (or a record still arriving).
                nl = buf.find(b"\n", end)
                if nl >= 0 and nl + 1 - pos <= self.max_record_bytes:
                    cut = end = nl + 1
                    more = end < len(buf)
                elif nl < 0 and final and len(buf) - pos <= self.max_record_bytes:
                    out.append(self._parse(buf[pos:], exact=True))
                    pos = len(buf)
                    break
                elif len(buf) - pos > self.max_record_bytes:
                    self.bad.add(
                        self.records + 1,
                        f"record longer than {self.max_record_bytes} bytes",
                        buf[pos : pos + 200].decode("utf-8", errors="replace"),
                    )
                    self.records += 1
                    if nl >= 0:
                        pos = nl + 1
                    else:
                        pos = len(buf)
                        self._skipping = not final
                    continue
                else:
                    break  # wait for the rest of the line
            try:
                out.append(self._parse(buf[pos:cut]))
            except IncompleteChunk:
                # The chunk's last newline is inside quotes: cut at the last true boundary.
                piece = buf[pos:end]
                rel = record_boundary(piece)
                if rel == 0 and more:
                    piece = buf[pos : pos + max(self.max_record_bytes, end - pos)]
                    more = pos + len(piece) < len(buf)
                    rel = record_boundary(piece)
                if rel == 0:
                    if final and not more:
                        out.append(self._parse(piece, exact=True))
                        pos += len(piece)
                        continue
                    if len(buf) - pos > self.max_record_bytes:
                        # A stray quote (or a monster record): judge the lines one by one.
                        rel = piece.rfind(b"\n") + 1 or len(piece)
                        out.append(self._parse(piece[:rel], exact=True))
                        pos += rel
                        continue
                    break  # a quoted field still being written
                try:
                    out.append(self._parse(piece[:rel]))
                except IncompleteChunk:
                    # pandas still sees an open quote where record_boundary saw none (a
                    # quote inside an unquoted field): judge those records one by one.
                    out.append(self._parse(piece[:rel], exact=True))
                cut = pos + rel
            pos = cut
        self._buf = buf[pos:]
        return out

    def feed(self, data: bytes) -> list[RawRows]:
        """Rows completed by ``data`` (appended bytes, split anywhere), in file order."""
        if data:
            self._buf = self._buf + data if self._buf else bytes(data)
        return [r for r in self._drain(final=False) if len(r)]

    def finish(self) -> list[RawRows]:
        """End of file: the held tail, if any, is the last record."""
        rows = self._drain(final=False)
        rows += self._drain(final=True)
        return [r for r in rows if len(r)]
