"""The Decision Log Writer: an append-only CSV, one row per tick, flushed per row.

The column list is a public contract, defined once in ``loadguard.decision_columns``
(documented in docs/decision-log.md); tests pin it. Rows are
appended, never rewritten. Each row is formatted in memory and handed to the kernel in a
single ``os.write`` followed by ``fsync``, so a crash of the sidecar loses nothing already
decided and never leaves half a row. If the disk fills mid-write the partial bytes are cut
off again (``ftruncate`` to the previous length) before ``DecisionLogError`` is raised.

A restarted sidecar opens the same file in append mode: the header is checked, a partial
last line left by a crash of the *machine* is cut off (with a warning), and tick numbers
continue from the last row.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from loadguard.decision_columns import COLUMNS
from loadguard.errors import DecisionLogError, OutputPathError
from loadguard.headline import Cause, failure_cause

log = logging.getLogger(__name__)

HEADER = ",".join(COLUMNS) + "\n"


@dataclass(frozen=True)
class DecisionRow:
    """One row of the log, already reduced to plain values (see ``COLUMNS``)."""

    epoch_ms: int
    tick: int
    action: str
    zone: str
    reason: str
    old_rate: float
    new_rate: float
    applied: bool
    engine_ack: str
    samples: int
    rps: float
    ok_rps: float
    error_rate: float
    mean_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    offered_rps: float
    staleness_ms: int | None
    slo: Mapping[str, float | None]
    breaches: Sequence[str]
    breached_labels: Sequence[str]
    detail: str = ""

    def cells(self) -> list[str]:
        iso = datetime.fromtimestamp(self.epoch_ms / 1000.0, tz=UTC).isoformat(
            timespec="milliseconds"
        )
        return [
            iso,
            str(self.epoch_ms),
            str(self.tick),
            self.action,
            self.zone,
            self.reason,
            _num(self.old_rate),
            _num(self.new_rate),
            "true" if self.applied else "false",
            self.engine_ack,
            str(self.samples),
            _num(self.rps),
            _num(self.ok_rps),
            _num(self.error_rate, 6),
            _num(self.mean_ms),
            _num(self.p50_ms),
            _num(self.p90_ms),
            _num(self.p95_ms),
            _num(self.p99_ms),
            _num(self.max_ms),
            _num(self.offered_rps),
            "" if self.staleness_ms is None else str(self.staleness_ms),
            _num(self.slo.get("p95_ms")),
            _num(self.slo.get("p99_ms")),
            _num(self.slo.get("mean_ms")),
            _num(self.slo.get("error_rate"), 6),
            ";".join(self.breaches),
            ";".join(self.breached_labels),
            self.detail,
        ]


def _num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return ""
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def format_row(row: DecisionRow) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row.cells())
    return buf.getvalue().encode("utf-8")


def check_writable(path: Path) -> None:
    """Fail before a run starts if the log cannot be written (checked up front)."""
    directory = path.parent if str(path.parent) else Path(".")
    if directory.exists() and not directory.is_dir():
        raise OutputPathError(f"cannot write {path}: {directory} is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"cannot create {directory}: {exc.strerror}") from exc
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputPathError(f"decision log {path} is not writable")
    if not os.access(directory, os.W_OK):
        raise OutputPathError(f"directory {directory} is not writable")


class DecisionLogWriter:
    """Append-only CSV writer; use as a context manager."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_writable(self.path)
        self._fd = -1
        self.last_tick = 0
        self.rows_written = 0

    def __enter__(self) -> DecisionLogWriter:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> None:
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise DecisionLogError(f"cannot open {self.path}: {exc.strerror}") from exc
        size = os.fstat(self._fd).st_size
        if size == 0:
            self._write(HEADER.encode())
            return
        self._resume(size)

    def _resume(self, size: int) -> None:
        with open(self.path, "rb") as fh:
            first = fh.readline()
            if first.decode("utf-8", "replace") != HEADER:
                self.close()
                raise DecisionLogError(
                    f"{self.path} exists but is not a LoadGuard decision log (header differs)"
                )
            tail_len = min(size, 65536)
            fh.seek(size - tail_len)
            tail = fh.read()
        if not tail.endswith(b"\n"):
            cut = size - (len(tail) - tail.rfind(b"\n") - 1)
            log.warning("decision log %s ended in a partial row; cut it off", self.path)
            os.ftruncate(self._fd, cut)
            tail = tail[: tail.rfind(b"\n") + 1]
        lines = [ln for ln in tail.decode("utf-8", "replace").splitlines() if ln.strip()]
        if len(lines) > 1 or (lines and lines[-1] + "\n" != HEADER):
            try:
                last = next(csv.reader([lines[-1]]))
                self.last_tick = int(last[COLUMNS.index("tick")])
            except (StopIteration, ValueError, IndexError):
                self.last_tick = 0

    def _write(self, data: bytes) -> None:
        before = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(28, "short write (disk full?)")
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, before)
            raise DecisionLogError(
                f"writing {self.path} failed: {exc.strerror or exc}; no partial row kept"
            ) from exc

    def next_tick(self) -> int:
        return self.last_tick + 1

    def append(self, row: DecisionRow) -> None:
        if self._fd < 0:
            raise DecisionLogError("decision log is not open")
        self._write(format_row(row))
        self.last_tick = row.tick
        self.rows_written += 1

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def log_cause(path: Path) -> Cause | None:
    """``headline.failure_cause`` over a decision log's rows, streamed; ``None`` when the
    log cannot be read (the headline then names the SLO without its onset)."""
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            return failure_cause(csv.DictReader(fh))
    except OSError:
        return None
