"""CSV JTL rows: complete records in, ``RawRows`` out (pure core).

JMeter's CSV writer (``CSVSaveService``) quotes a field holding the delimiter, a quote, CR
or LF, doubles the quotes inside and writes newlines raw. A *record* therefore ends at a
``\\n`` outside quotes, which is not always the end of a line.

Two paths parse a chunk of complete records:

* the fast path hands the bytes to pandas' C tokenizer, reading only the columns the
  window needs (labels and thread names dictionary-encoded, never one Python object per
  row). A record with too few fields leaves the last column empty; one shifted by an
  extra field puts text where an integer or a boolean belongs. Any surprise (a column that
  is not all integers / booleans, a negative elapsed, a tokenizer error) sends the chunk
  down
* the exact path: records split by quote parity and read one by one with ``csv``, each bad
  record counted with its reason and text (``BadRowLog``). A bad record that spans several
  lines (a stray quote swallowed its neighbours) is re-read line by line, so one broken
  line cannot take good rows with it.

Both paths give the same rows for the same valid input; tests pin that. Blank lines are
not records (JMeter never writes them) and are skipped by both.
"""

from __future__ import annotations

import csv
import io
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo

import numpy as np
import pandas as pd

from loadguard.jtl.raw_rows import (
    CUT_SHORT,
    MAX_ELAPSED_MS,
    MAX_TIMESTAMP_MS,
    SUBRESULT_LABEL,
    TRANSACTION_PREFIX,
    BadRowLog,
    RawRows,
)
from loadguard.jtl.timestamps import parse_timestamps

QUOTE = 0x22
NEWLINE = 0x0A

# Columns JMeter always writes as integers (CSVSaveService).
INTEGER_COLUMNS = frozenset(
    ["elapsed", "bytes", "sentBytes", "grpThreads", "allThreads", "Latency", "IdleTime",
     "Connect", "SampleCount", "ErrorCount"]
)  # fmt: skip

_TX_BYTES = TRANSACTION_PREFIX.encode()


class IncompleteChunk(Exception):
    """The chunk ends inside a quoted field: its last newline is not a record boundary."""


def record_boundary(buf: bytes) -> int:
    """Offset just past the last complete record in ``buf`` (0: none).

    ``buf`` must start at a record boundary. A ``\\n`` ends a record when an even number of
    quotes precede it (doubled quotes count twice, so they never change parity).
    """
    p = buf.rfind(b"\n")
    if p < 0:
        return 0
    arr = np.frombuffer(buf, np.uint8)
    quotes = np.flatnonzero(arr[:p] == QUOTE)
    while p >= 0:
        if (np.searchsorted(quotes, p) & 1) == 0:
            return p + 1
        p = buf.rfind(b"\n", 0, p)
    return 0


def iter_records(text: str) -> Iterator[str]:
    """Records of a decoded chunk (quote-aware), without their line terminators."""
    pending: list[str] = []
    odd = False
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the terminator of the last record
    for line in lines:
        pending.append(line)
        if line.count('"') % 2 == 1:
            odd = not odd
        if not odd:
            yield "\n".join(pending).removesuffix("\r")
            pending = []
    if pending and any(pending):
        yield "\n".join(pending).removesuffix("\r")


@dataclass(frozen=True, slots=True)
class CsvLayout:
    """Where the needed columns are, for one column list."""

    columns: tuple[str, ...]
    delimiter: str = ","
    timestamp_format: str = "ms"
    tz: str | tzinfo | None = None
    # Fill thread names on the fast path even when no row needs them (see CsvChunkParser).
    thread_names: bool = False

    def index(self, name: str) -> int | None:
        try:
            return self.columns.index(name)
        except ValueError:
            return None


class CsvChunkParser:
    """Parses chunks of complete CSV records for one ``CsvLayout``."""

    def __init__(self, layout: CsvLayout) -> None:
        self.layout = layout
        cols = layout.columns
        self._n = len(cols)
        self._ts = cols.index("timeStamp")
        self._elapsed = cols.index("elapsed")
        self._label = cols.index("label")
        self._success = cols.index("success")
        self._thread = layout.index("threadName")
        # Thread names only matter for telling sub-results apart; the fast path reads them
        # from the first chunk that has a label shaped like one ("<x>-<n>") onwards.
        self._threads_on = layout.thread_names
        self._message = layout.index("responseMessage")
        self._all = layout.index("allThreads")
        self._last = self._n - 1
        self._delim_bytes = layout.delimiter.encode()
        self._delim: int = self._delim_bytes[0] if len(self._delim_bytes) == 1 else -1
        self._last_is_int = cols[self._last] in INTEGER_COLUMNS or (
            cols[self._last] == "timeStamp" and layout.timestamp_format == "ms"
        )
        # Integer columns checked on every row: the ones used, and the last column (a row
        # with too few fields leaves it empty; a shifted row puts text into one of them).
        ints = {self._elapsed}
        if layout.timestamp_format == "ms":
            ints.add(self._ts)
        if self._all is not None:
            ints.add(self._all)
        if self._last_is_int:
            ints.add(self._last)
        self._int_checks: tuple[int, ...] = tuple(sorted(ints))
        self.fast_chunks = 0
        self.exact_chunks = 0

    # -- fast path -------------------------------------------------------------------
    def _fast(self, chunk: bytes) -> RawRows | None:
        with_message = self._message is not None and chunk.find(_TX_BYTES) >= 0
        wanted = {self._ts, self._elapsed, self._label, self._success, self._last}
        wanted.update(self._int_checks)
        thread = self._thread if self._threads_on else None
        for extra in (thread, self._all, self._message if with_message else None):
            if extra is not None:
                wanted.add(extra)
        dtype: dict[int, str] = {self._label: "category"}
        for cat in (thread, self._message if with_message else None):
            if cat is not None:
                dtype[cat] = "category"
        if self.layout.timestamp_format != "ms":
            dtype[self._ts] = "object"
        na_values: dict[int, list[str]] = {}
        if not self._last_is_int:
            na_values[self._last] = [""]
            dtype.setdefault(self._last, "category")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                df = pd.read_csv(  # type: ignore[call-overload]
                    io.BytesIO(chunk),
                    header=None,
                    names=list(range(self._n)),
                    usecols=sorted(wanted),
                    dtype=dtype,
                    sep=self.layout.delimiter,
                    quotechar='"',
                    doublequote=True,
                    keep_default_na=False,
                    na_values=na_values,
                    skip_blank_lines=True,
                    engine="c",
                    encoding="utf-8",
                    encoding_errors="replace",
                )
        except pd.errors.ParserError as exc:
            if "EOF inside string" in str(exc):
                raise IncompleteChunk(str(exc)) from exc
            return None
        except (ValueError, pd.errors.ParserWarning):
            return None
        n = len(df)
        if n == 0:
            return RawRows.empty()
        if not self._field_count_ok(chunk, n):
            return None
        if not self._last_is_int and bool(df[self._last].isna().any()):
            return None  # too few fields (or an empty last field): let the exact path judge
        # Every integer column read must be all integers: a row with too few fields leaves
        # the last one empty, and a shifted row puts text into one of them.
        for col in self._int_checks:
            if df[col].dtype != np.int64:
                return None
        if df[self._success].dtype != np.bool_:
            return None
        elapsed = df[self._elapsed].to_numpy(np.int64)
        if int(elapsed.min()) < 0 or int(elapsed.max()) >= MAX_ELAPSED_MS:
            return None
        if self.layout.timestamp_format == "ms":
            start = df[self._ts].to_numpy(np.int64)
        else:
            start, bad = parse_timestamps(
                df[self._ts].to_numpy(object), self.layout.timestamp_format, self.layout.tz
            )
            if bad.any():
                return None
        if int(start.min()) < 0 or int(start.max()) >= MAX_TIMESTAMP_MS:
            return None  # implausible times: let the exact path judge each row
        label_cat = df[self._label].array
        label_names = np.asarray(label_cat.categories, dtype=object)
        if (
            thread is None
            and self._thread is not None
            and any(SUBRESULT_LABEL.match(str(name)) for name in label_names)
        ):
            self._threads_on = True
            return self._fast(chunk)
        if thread is not None:
            thread_cat = df[thread].array
            thread_code = thread_cat.codes.astype(np.int64)
            thread_names = np.asarray(thread_cat.categories, dtype=object)
            if (thread_code < 0).any():  # an empty thread name is an empty category
                return None
        else:
            thread_code = np.zeros(n, np.int64)
            thread_names = np.asarray([""], dtype=object)
        label_code = label_cat.codes.astype(np.int64)
        if (label_code < 0).any():
            return None
        if with_message:
            msg = df[self._message].array
            tx_cats = [
                i for i, m in enumerate(msg.categories) if str(m).startswith(TRANSACTION_PREFIX)
            ]
            transaction = np.isin(msg.codes, np.asarray(tx_cats, np.int64))
        else:
            transaction = np.zeros(n, np.bool_)
        if self._all is not None and not (
            int(df[self._all].min()) >= -1 and int(df[self._all].max()) < 2**31
        ):
            return None  # would not fit the int32 column: the exact path judges each row
        all_threads = (
            df[self._all].to_numpy(np.int32) if self._all is not None else np.full(n, -1, np.int32)
        )
        return RawRows(
            start,
            elapsed,
            df[self._success].to_numpy(np.bool_),
            label_code,
            label_names,
            thread_code,
            thread_names,
            all_threads,
            transaction,
        )

    def _field_count_ok(self, chunk: bytes, records: int) -> bool:
        """Every record has exactly ``n - 1`` delimiters outside quotes, checked as a total.

        pandas ignores fields past the last column it reads, so this is what catches a
        record with too many fields. A record short of fields leaves the last (integer)
        column empty, which the caller checks, so a short and a long record cannot cancel
        out. Quoted spans run from an odd quote to the next one (a doubled quote inside a
        field closes and reopens a span, which changes nothing).
        """
        arr = np.frombuffer(chunk, np.uint8)
        delim = self._delim
        if delim >= 0:
            total = int(np.count_nonzero(arr == delim))
        else:  # a delimiter outside ASCII: several bytes in UTF-8
            total = chunk.count(self._delim_bytes)
        expected = records * (self._n - 1)
        if chunk.find(b'"') < 0:
            return total == expected
        quotes = np.flatnonzero(arr == QUOTE)
        if len(quotes) % 2:
            return False
        starts = quotes[0::2] + 1
        lengths = quotes[1::2] - starts
        inside_bytes = int(lengths.sum())
        if inside_bytes == 0:
            return total == expected
        if delim < 0:
            inside = sum(chunk.count(self._delim_bytes, int(a), int(a + n))
                         for a, n in zip(starts, lengths, strict=True))  # fmt: skip
            return total - inside == expected
        # Positions of every byte inside a quoted span, without a Python loop.
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
        offsets += np.arange(inside_bytes)
        inside = int(np.count_nonzero(arr[offsets] == delim))
        return total - inside == expected

    # -- exact path ------------------------------------------------------------------
    def _record(self, text: str) -> tuple[tuple[int, int, bool, str, str, int, bool] | None, str]:
        try:
            rows = list(csv.reader([text], delimiter=self.layout.delimiter, strict=True))
        except csv.Error as exc:
            return None, f"bad quoting ({exc})"
        if len(rows) != 1:
            return None, "not one record"
        fields = rows[0]
        if len(fields) != self._n:
            return None, f"{len(fields)} fields, expected {self._n}"
        try:
            if self.layout.timestamp_format == "ms":
                start = int(fields[self._ts])
            else:
                ms, bad = parse_timestamps(
                    np.asarray([fields[self._ts]], object),
                    self.layout.timestamp_format,
                    self.layout.tz,
                )
                if bad[0]:
                    return None, f"timeStamp {fields[self._ts][:40]!r} is not a time"
                start = int(ms[0])
        except ValueError:
            return None, f"timeStamp {fields[self._ts][:40]!r} is not a number"
        if not 0 <= start < MAX_TIMESTAMP_MS:
            return None, f"timeStamp {fields[self._ts][:40]!r} is out of range"
        try:
            elapsed = int(fields[self._elapsed])
        except ValueError:
            return None, f"elapsed {fields[self._elapsed][:40]!r} is not a number"
        if elapsed < 0:
            return None, CUT_SHORT
        if elapsed >= MAX_ELAPSED_MS:
            return None, f"elapsed {fields[self._elapsed][:40]!r} is out of range"
        success_text = fields[self._success].lower()
        if success_text not in ("true", "false"):
            return None, f"success {fields[self._success][:40]!r} is not true/false"
        all_threads = -1
        if self._all is not None:
            try:
                all_threads = int(fields[self._all])
            except ValueError:
                return None, f"allThreads {fields[self._all][:40]!r} is not a number"
            if not -1 <= all_threads < 2**31:
                return None, f"allThreads {fields[self._all][:40]!r} is out of range"
        for i in self._int_checks:
            if i not in (self._ts, self._elapsed, self._all):
                try:
                    int(fields[i])
                except ValueError:
                    return None, f"{self.layout.columns[i]} {fields[i][:40]!r} is not a number"
        message = fields[self._message] if self._message is not None else ""
        return (
            start,
            elapsed,
            success_text == "true",
            fields[self._label],
            fields[self._thread] if self._thread is not None else "",
            all_threads,
            message.startswith(TRANSACTION_PREFIX),
        ), ""

    def parse_exact(self, chunk: bytes, first_record: int, bad: BadRowLog) -> RawRows:
        """The exact path alone (also for a tail that may end inside a quote)."""
        text = chunk.decode("utf-8", errors="replace")
        good: list[tuple[int, int, bool, str, str, int, bool]] = []
        record = first_record
        for rec in iter_records(text):
            if not rec.strip():
                continue
            row, reason = self._record(rec)
            if row is not None:
                good.append(row)
                record += 1
                continue
            lines = rec.split("\n")
            if len(lines) > 1:
                # A stray quote may have joined good lines to a bad one: judge each line.
                for line in lines:
                    line = line.removesuffix("\r")
                    if not line.strip():
                        continue
                    row, reason = self._record(line)
                    if row is not None:
                        good.append(row)
                    else:
                        bad.add(record, reason, line)
                    record += 1
                continue
            bad.add(record, reason, rec)
            record += 1
        return RawRows.from_records(good)

    def parse(self, chunk: bytes, first_record: int, bad: BadRowLog) -> RawRows:
        """Rows of ``chunk`` (complete records only); bad records go to ``bad``.

        Raises ``IncompleteChunk`` when the chunk's end is inside a quoted field.
        """
        rows = self._fast(chunk)
        if rows is not None:
            self.fast_chunks += 1
            return rows
        self.exact_chunks += 1
        return self.parse_exact(chunk, first_record, bad)
