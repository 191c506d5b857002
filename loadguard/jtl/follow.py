"""Follow a JTL that JMeter is still writing (the adapter around the pure decoders).

``JtlFollower.poll()`` reads only the bytes appended since the last call and returns the
rows they complete, already selected (each request once, see ``selection``). It:

* may start before the file exists (``poll`` returns an empty batch until it does);
* holds a partial last record (CSV records may span lines inside quotes);
* notices truncation (size below what was read, or the first bytes changed: truncated
  and rewritten past the read position between two polls) or replacement (another inode
  at the path: JMeter started again) and starts over with a log message; a replaced
  file's old handle is read to its end first, so its last rows are not lost. After a
  restart a leading run of NUL bytes is skipped: JMeter does not open the JTL in append
  mode, so after ``: > results.jtl`` it keeps writing at its old offset and the file
  starts with a hole. The restarted CSV decoder keeps the column layout learnt so far
  (the rows after a truncation have no header);
* tells CSV from XML by the first byte (``<``), unless the format says; a CSV's delimiter
  comes from its header line unless the format gives one (``CsvStreamDecoder``);
* counts bad rows (``malformed_rows``) and keeps the first ones (``bad_rows``), and the
  characters XML 1.0 forbids that the XML reader replaced (``illegal_xml_chars``: binary
  response bodies; their samples count);
* fills ``SampleBatch.thread_name`` from CSV only with ``thread_names=True`` or once a
  label shaped like a sub-result (``<x>-<n>``) has been seen: thread names cost a fifth of
  the parse and only sub-result detection needs them (XML always has them);
* warns once when the file looks buffered: JMeter's default ``autoflush=false`` makes
  rows arrive in 8 KiB blocks that end mid-record, so the window lags the test.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import Protocol

from loadguard.jtl.columns import JtlFormat
from loadguard.jtl.csv_stream import CHUNK_BYTES, MAX_RECORD_BYTES, CsvStreamDecoder
from loadguard.jtl.raw_rows import BadRow, BadRowLog, RawRows
from loadguard.jtl.sample import SampleBatch
from loadguard.jtl.selection import RowSelector
from loadguard.jtl.xml_rows import XmlStreamDecoder

log = logging.getLogger(__name__)

READ_BYTES = 64 << 20
# Polls that must end mid-record before the file is called buffered.
BUFFERED_AFTER = 3
# Bytes at the start of the file compared on every poll to spot a rewrite.
HEAD_BYTES = 256


class _Decoder(Protocol):
    @property
    def held_bytes(self) -> int: ...

    def feed(self, data: bytes) -> list[RawRows]: ...

    def finish(self) -> list[RawRows]: ...


@dataclass(frozen=True, slots=True)
class FollowerStatus:
    """Counters for the run summary and the decision log."""

    path: str
    format: str | None
    columns: tuple[str, ...] | None
    has_header: bool | None
    bytes_read: int
    records: int
    rows_counted: int
    skipped_transactions: int
    skipped_subresults: int
    filtered: int
    malformed_rows: int
    bad_rows: tuple[BadRow, ...]
    restarts: int
    held_bytes: int
    buffered_suspected: bool
    warnings: tuple[str, ...]
    transaction_labels: tuple[str, ...]
    #: CSV: the delimiter in use (configured, or read from the header line).
    delimiter: str | None = None
    #: XML: characters XML 1.0 forbids (binary response data), replaced so the samples
    #: holding them still count.
    illegal_xml_chars: int = 0
    #: Rows JMeter wrote for a sample cut short at stop (negative elapsed): left out,
    #: not malformed (``raw_rows.CUT_SHORT``).
    cut_short_rows: int = 0


class JtlFollower:
    def __init__(
        self,
        path: str | Path,
        *,
        fmt: JtlFormat | None = None,
        transactions: bool = False,
        labels: str | None = None,
        exclude_labels: str | None = None,
        tz: str | tzinfo | None = None,
        read_bytes: int = READ_BYTES,
        chunk_bytes: int = CHUNK_BYTES,
        max_record_bytes: int = MAX_RECORD_BYTES,
        bad_rows_kept: int = 20,
        thread_names: bool = False,
    ) -> None:
        self.path = Path(path)
        self.fmt = fmt or JtlFormat()
        self.tz = tz
        self.read_bytes = read_bytes
        self.chunk_bytes = chunk_bytes
        self.max_record_bytes = max_record_bytes
        self.thread_names = thread_names
        self.selector = RowSelector(
            transactions=transactions, labels=labels, exclude_labels=exclude_labels
        )
        self.bad = BadRowLog(keep=bad_rows_kept)
        self.bytes_read = 0
        self.restarts = 0
        self.format: str | None = None
        self.buffered_suspected = False
        self._warnings: list[str] = []
        self._fd: int | None = None
        self._ino: tuple[int, int] | None = None
        self._pos = 0
        self._head = b""  # the file's first bytes as read (rewrite detection)
        self._skip_hole = False  # after a restart: skip leading NUL bytes
        self._in_hole = False  # the last chunk fed was all hole
        self._carry_columns: tuple[str, ...] | None = None
        self._carry_delimiter: str | None = None
        self._decoder: _Decoder | None = None
        self._csv: CsvStreamDecoder | None = None
        self._xml: XmlStreamDecoder | None = None
        self._illegal_before = 0  # illegal XML characters of the decoders before a restart
        self._records_before = 0
        self._growth_polls = 0
        self._midrecord_polls = 0

    # -- counters --------------------------------------------------------------------
    @property
    def malformed_rows(self) -> int:
        return self.bad.count

    @property
    def bad_rows(self) -> tuple[BadRow, ...]:
        return tuple(self.bad.samples)

    @property
    def illegal_xml_chars(self) -> int:
        """Characters XML 1.0 forbids, replaced (U+FFFD) so their samples still count."""
        return self._illegal_before + (self._xml.illegal_chars if self._xml is not None else 0)

    @property
    def warnings(self) -> tuple[str, ...]:
        csv_warnings = tuple(self._csv.warnings) if self._csv is not None else ()
        xml_warnings: tuple[str, ...] = ()
        if self.illegal_xml_chars:
            xml_warnings = (
                f"JTL {self.path} holds {self.illegal_xml_chars} characters XML 1.0 forbids "
                "(binary response data saved with jmeter.save.saveservice.response_data?): "
                "they were replaced and their samples still count",
            )
        return tuple(self._warnings) + csv_warnings + xml_warnings

    @property
    def transaction_labels(self) -> frozenset[str]:
        """Labels seen on Transaction Controller rows (for ``Window(overall_excludes=)``)."""
        return frozenset(self.selector.transaction_labels)

    def status(self) -> FollowerStatus:
        dec = self._decoder
        records = self._records_before + (getattr(dec, "records", 0) if dec else 0)
        return FollowerStatus(
            path=str(self.path),
            format=self.format,
            columns=self._csv.columns if self._csv is not None else None,
            has_header=self._csv.has_header if self._csv is not None else None,
            bytes_read=self.bytes_read,
            records=records,
            rows_counted=self.selector.counted,
            skipped_transactions=self.selector.skipped_transactions,
            skipped_subresults=self.selector.skipped_subresults,
            filtered=self.selector.filtered,
            malformed_rows=self.bad.count,
            bad_rows=self.bad_rows,
            restarts=self.restarts,
            held_bytes=dec.held_bytes if dec is not None else 0,
            buffered_suspected=self.buffered_suspected,
            warnings=self.warnings,
            transaction_labels=tuple(sorted(self.selector.transaction_labels)),
            delimiter=self._csv.delimiter if self._csv is not None else None,
            illegal_xml_chars=self.illegal_xml_chars,
            cut_short_rows=self.bad.cut_short,
        )

    # -- file handling ---------------------------------------------------------------
    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        except OSError as exc:
            log.warning("cannot open JTL %s: %s", self.path, exc.strerror)
            return False
        st = os.fstat(fd)
        self._fd = fd
        self._ino = (st.st_dev, st.st_ino)
        self._pos = 0
        self._head = b""
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> JtlFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _new_decoder(self, first: bytes) -> _Decoder:
        is_xml = self.fmt.output_format == "xml" or first.lstrip()[:1] == b"<"
        self.format = "xml" if is_xml else "csv"
        if is_xml:
            self._csv = None
            self._xml = XmlStreamDecoder(
                self.bad,
                timestamp_format=self.fmt.timestamp_format,
                tz=self.tz,
                max_record_bytes=self.max_record_bytes,
            )
            return self._xml
        fmt = self.fmt
        if self._carry_columns is not None:
            fmt = dataclasses.replace(fmt, columns=self._carry_columns, columns_given=True)
        if self._carry_delimiter is not None:
            # Headerless rows after a truncation use the delimiter learnt so far; a new
            # header line may still show another one.
            fmt = dataclasses.replace(fmt, delimiter=self._carry_delimiter)
        self._csv = CsvStreamDecoder(
            fmt,
            self.bad,
            tz=self.tz,
            chunk_bytes=self.chunk_bytes,
            max_record_bytes=self.max_record_bytes,
            thread_names=self.thread_names,
        )
        return self._csv

    def _restart(self, why: str) -> None:
        self.restarts += 1
        log.warning("JTL %s %s: reading it again from the start", self.path, why)
        if self._decoder is not None:
            self._records_before += getattr(self._decoder, "records", 0)
        if self._xml is not None:
            self._illegal_before += self._xml.illegal_chars
            self._xml = None
        if self._csv is not None and self._csv.columns:
            self._carry_columns = tuple(self._csv.columns)
            self._carry_delimiter = self._csv.delimiter
        self._decoder = None
        self._head = b""
        self._skip_hole = True
        self.selector.reset()
        self._growth_polls = 0
        self._midrecord_polls = 0

    def _read(self, limit: int) -> bytes:
        assert self._fd is not None
        data = os.pread(self._fd, limit, self._pos)
        self._pos += len(data)
        self.bytes_read += len(data)
        return data

    def _feed(self, data: bytes) -> list[RawRows]:
        self._in_hole = False
        if self._decoder is None:
            if self._skip_hole:
                hole = len(data) - len(data := data.lstrip(b"\0"))
                if hole and not data:
                    self._in_hole = True  # all hole so far: consumed, read on
                    return []
            if not data.strip():
                # Nothing to sniff yet: give the bytes back by rewinding.
                self._pos -= len(data)
                self.bytes_read -= len(data)
                return []
            self._decoder = self._new_decoder(data)
            self._skip_hole = False
        return self._decoder.feed(data)

    def _select(self, parts: list[RawRows]) -> SampleBatch:
        batches = [self.selector.select(p) for p in parts]
        batches = [b for b in batches if len(b)]
        if not batches:
            return SampleBatch.empty()
        return batches[0] if len(batches) == 1 else SampleBatch.concat(batches)

    def _check_buffering(self, grew: bool) -> None:
        if not grew or self._decoder is None or self.buffered_suspected:
            return
        self._growth_polls += 1
        if self._decoder.held_bytes > 0:
            self._midrecord_polls += 1
        if (
            self._midrecord_polls >= BUFFERED_AFTER
            and self._midrecord_polls * 2 > self._growth_polls
        ):
            self.buffered_suspected = True
            message = (
                f"JTL {self.path} looks buffered (it keeps ending mid-row): JMeter's "
                "jmeter.save.saveservice.autoflush=false delays rows, so windows lag the test; "
                "run JMeter with -Jjmeter.save.saveservice.autoflush=true"
            )
            self._warnings.append(message)
            log.warning("%s", message)

    def poll(self) -> SampleBatch:
        """Counted rows completed since the last poll (empty when nothing new)."""
        if self._fd is None and not self._open():
            return SampleBatch.empty()
        assert self._fd is not None
        try:
            st_path = os.stat(self.path)
        except FileNotFoundError:
            st_path = None
        if st_path is not None and (st_path.st_dev, st_path.st_ino) != self._ino:
            # Replaced: finish the old file, then start on the new one.
            batch = self._select(self._drain())
            self.close()
            self._restart("was replaced")
            self._open()
            return SampleBatch.concat([batch, self.poll()]) if self._fd is not None else batch
        size = os.fstat(self._fd).st_size
        if size < self._pos:
            self._restart(f"shrank from {self._pos} to {size} bytes (truncated)")
            self._pos = 0
        elif self._head and os.pread(self._fd, len(self._head), 0) != self._head:
            self._restart("was rewritten from the start (truncated and refilled)")
            self._pos = 0
        parts: list[RawRows] = []
        grew = False
        caught_up = False
        remaining = self.read_bytes
        while remaining > 0:
            data = self._read(min(remaining, self.chunk_bytes))
            if not data:
                caught_up = True
                break
            grew = True
            remaining -= len(data)
            parts += self._feed(data)
            if self._decoder is None and not self._in_hole:
                break
        # Only a poll that reached the end of what JMeter has written says anything about
        # how JMeter writes (reading a long file in pieces always ends mid-row).
        self._check_buffering(grew and caught_up)
        if len(self._head) < HEAD_BYTES and self._pos > len(self._head):
            self._head = os.pread(self._fd, min(self._pos, HEAD_BYTES), 0)
        return self._select(parts)

    def batches(self) -> Iterator[SampleBatch]:
        """Offline replay: the file as it is now, batch by batch, then its held tail.

        Batches are one chunk (``chunk_bytes``) each, so a replay holds at most one
        chunk's rows beyond the window (``poll`` reads up to ``read_bytes`` to catch up).
        """
        live_limit = self.read_bytes
        self.read_bytes = self.chunk_bytes
        try:
            while True:
                before = self.bytes_read
                batch = self.poll()
                if len(batch):
                    yield batch
                if self.bytes_read == before:
                    break
        finally:
            self.read_bytes = live_limit
        tail = self.finish()
        if len(tail):
            yield tail

    def finish(self) -> SampleBatch:
        """End of input (offline replay): everything left, the held tail included."""
        if self._fd is None and not self._open():
            return SampleBatch.empty()
        return self._select(self._drain())

    def row_chunks(self) -> Iterator[RawRows]:
        """Offline reading at the row level: the file as it is now, ``chunk_bytes`` at a
        time, then its held tail, as the decoder's rows *before* the row selection: for
        a reader that applies ``self.selector`` itself (the report's digest keeps labels
        as codes). The file is taken as finished: no truncation or rewrite detection."""
        if self._fd is None and not self._open():
            return
        yield from self._rows_left(self.chunk_bytes)

    def _rows_left(self, limit: int) -> Iterator[RawRows]:
        """Every row left in the open file, ``limit`` bytes a read, the decoder's held
        tail included."""
        while data := self._read(limit):
            yield from self._feed(data)
            if self._decoder is None and not self._in_hole:
                break  # only whitespace, given back: nothing more to read
        if self._decoder is not None:
            yield from self._decoder.finish()

    def _drain(self) -> list[RawRows]:
        """Every row left in the open file, the decoder's held tail included."""
        return list(self._rows_left(self.read_bytes))
