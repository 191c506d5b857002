"""Rows as a reader parsed them, before the window's row selection (pure core).

Like ``SampleBatch`` but with the facts row selection needs: the row's response message
marks a Transaction Controller row, and string columns stay dictionary-encoded (codes
into a small table of names) so that selecting by label or thread costs a lookup per
distinct name rather than per row.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from loadguard.jtl.sample import SampleBatch

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
BOOL = npt.NDArray[np.bool_]
OBJ = npt.NDArray[np.object_]

# TransactionController.NUMBER_OF_SAMPLES_IN_TRANSACTION_PREFIX (JMeter 5.6.3).
TRANSACTION_PREFIX = "Number of samples in transaction : "
# Plausibility bounds: a row outside them is malformed (and the int64 sums
# ``start + elapsed`` downstream can never overflow). 1e14 ms is the year 5138.
MAX_TIMESTAMP_MS = 10**14
MAX_ELAPSED_MS = 10**11
# Since JMeter 5.0 a sub-result row is labelled "<parent label>-<index>".
SUBRESULT_LABEL = re.compile(r"^(.*)-\d+$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class BadRow:
    """A row that could not be used: where it was, why, and (the start of) its text."""

    record: int
    reason: str
    text: str

    def __str__(self) -> str:
        return f"record {self.record}: {self.reason}: {self.text!r}"


@dataclass(frozen=True, slots=True, eq=False)
class RawRows:
    """Parsed rows in file order; ``*_code`` index into ``*_names``.

    ``transaction``: the row is a Transaction Controller result. ``subresult``: the reader
    knows the row is a sub-result from the file's structure (XML nesting); ``None`` when it
    must be inferred from labels (CSV).
    """

    start_ms: I64
    elapsed_ms: I64
    success: BOOL
    label_code: I64
    label_names: OBJ
    thread_code: I64
    thread_names: OBJ
    all_threads: I32
    transaction: BOOL
    subresult: BOOL | None = None

    def __len__(self) -> int:
        return len(self.start_ms)

    @staticmethod
    def empty() -> RawRows:
        return RawRows.build([], [], [], [], [], [], [])

    @staticmethod
    def build(
        start_ms: Sequence[int] | I64,
        elapsed_ms: Sequence[int] | I64,
        success: Sequence[bool] | BOOL,
        label: Sequence[str],
        thread_name: Sequence[str],
        all_threads: Sequence[int] | I32,
        transaction: Sequence[bool] | BOOL,
        subresult: Sequence[bool] | BOOL | None = None,
    ) -> RawRows:
        """From plain per-row values (the XML reader, tests)."""
        label_code, label_names = encode(label)
        thread_code, thread_names = encode(thread_name)
        return RawRows(
            np.asarray(start_ms, np.int64),
            np.asarray(elapsed_ms, np.int64),
            np.asarray(success, np.bool_),
            label_code,
            label_names,
            thread_code,
            thread_names,
            np.asarray(all_threads, np.int32),
            np.asarray(transaction, np.bool_),
            None if subresult is None else np.asarray(subresult, np.bool_),
        )

    @staticmethod
    def from_records(records: Sequence[Sequence[object]]) -> RawRows:
        """From per-row tuples in ``build``'s argument order (the readers' parsed rows)."""
        if not records:
            return RawRows.empty()
        return RawRows.build(*zip(*records, strict=True))

    def labels(self) -> OBJ:
        out: OBJ = self.label_names[self.label_code]
        return out

    def to_batch(self, mask: BOOL | None = None) -> SampleBatch:
        """The rows (those ``mask`` keeps; all for none) with their names decoded."""
        rows = slice(None) if mask is None else mask
        return SampleBatch(
            self.start_ms[rows],
            self.elapsed_ms[rows],
            self.success[rows],
            self.label_names[self.label_code[rows]],
            self.thread_names[self.thread_code[rows]],
            self.all_threads[rows],
        )

    @staticmethod
    def concat(parts: Sequence[RawRows]) -> RawRows:
        parts = [p for p in parts if len(p)]
        if not parts:
            return RawRows.empty()
        if len(parts) == 1:
            return parts[0]
        labels = np.concatenate([p.labels() for p in parts])
        threads = np.concatenate([p.thread_names[p.thread_code] for p in parts])
        subs = [p.subresult for p in parts]
        return RawRows.build(
            np.concatenate([p.start_ms for p in parts]),
            np.concatenate([p.elapsed_ms for p in parts]),
            np.concatenate([p.success for p in parts]),
            list(labels),
            list(threads),
            np.concatenate([p.all_threads for p in parts]),
            np.concatenate([p.transaction for p in parts]),
            None
            if any(s is None for s in subs)
            else np.concatenate([s for s in subs if s is not None]),
        )


def encode(values: Sequence[str] | OBJ) -> tuple[I64, OBJ]:
    """Dictionary-encode strings: ``names[codes] == values``."""
    if len(values) == 0:
        return np.empty(0, np.int64), np.empty(0, object)
    arr = np.empty(len(values), object)
    arr[:] = list(values)
    codes, uniques = pd.factorize(arr, use_na_sentinel=False)
    names = np.empty(len(uniques), object)
    names[:] = [str(u) for u in uniques]
    return codes.astype(np.int64, copy=False), names


#: Why a row with a negative elapsed is left out, and not counted as malformed. JMeter
#: writes one when a sample's end time was never set: a Transaction Controller cut short
#: as the test stops writes ``elapsed = -timeStamp`` with an empty response message
#: (measured with JMeter 5.6.3: ``1796115133184,-1796115133184,tx_outer,,,TG 1-1,...``).
#: It is no latency, and the file around it is fine.
CUT_SHORT = "negative elapsed (a sample cut short at stop)"


class BadRowLog:
    """Running count of unusable rows plus the first ``keep`` of them, for the report.

    Rows JMeter itself writes for a sample cut short at stop (``CUT_SHORT``) are counted
    apart, in ``cut_short``: left out of every figure, but not malformed."""

    def __init__(self, keep: int = 20, max_text: int = 200) -> None:
        self.count = 0
        self.cut_short = 0
        self.samples: list[BadRow] = []
        self._keep = keep
        self._max_text = max_text

    @property
    def records(self) -> int:
        """Every record left out: malformed ones and cut-short ones."""
        return self.count + self.cut_short

    def add(self, record: int, reason: str, text: str) -> None:
        if reason == CUT_SHORT:
            self.cut_short += 1
            return
        self.count += 1
        if len(self.samples) < self._keep:
            clipped = text if len(text) <= self._max_text else text[: self._max_text] + "..."
            self.samples.append(BadRow(record, reason, clipped))
