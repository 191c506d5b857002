"""Samples as they cross module boundaries: a columnar batch.

A JTL at 2,000 samples/s for an hour is 7.2M rows; one Python object per row would cost
more than the rest of the pipeline together. Readers therefore hand out ``SampleBatch``
values: one numpy array per field, all of the same length, in file order. The window,
the simulator and the tests all speak this one type.

Fields (JMeter's names in brackets):

* ``start_ms``: sample start, epoch ms [timeStamp, with ``sampleresult.timestamp.start``];
* ``elapsed_ms``: response time, ms [elapsed];
* ``success``: [success];
* ``label``: [label], a numpy object array of ``str``;
* ``thread_name``: [threadName], object array of ``str`` ("" when not saved);
* ``all_threads``: active threads in all groups [allThreads], -1 when not saved.

``end_ms = start_ms + elapsed_ms`` is the completion time that windows are keyed on.

A ``SampleSource`` hands out batches: the JTL follower, the fleet's wrapper around it,
the tests' fakes. The loop polls one each tick.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
BOOL = npt.NDArray[np.bool_]
OBJ = npt.NDArray[np.object_]


@dataclass(frozen=True, slots=True, eq=False)
class SampleBatch:
    start_ms: I64
    elapsed_ms: I64
    success: BOOL
    label: OBJ
    thread_name: OBJ
    all_threads: I32

    def __post_init__(self) -> None:
        n = len(self.start_ms)
        for name in ("elapsed_ms", "success", "label", "thread_name", "all_threads"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"SampleBatch column {name} has a different length")

    def __len__(self) -> int:
        return len(self.start_ms)

    @property
    def end_ms(self) -> I64:
        return self.start_ms + self.elapsed_ms

    @classmethod
    def empty(cls) -> SampleBatch:
        return cls(
            np.empty(0, np.int64),
            np.empty(0, np.int64),
            np.empty(0, np.bool_),
            np.empty(0, object),
            np.empty(0, object),
            np.empty(0, np.int32),
        )

    @classmethod
    def of(
        cls,
        start_ms: Sequence[int] | I64,
        elapsed_ms: Sequence[int] | I64,
        success: Sequence[bool] | BOOL,
        label: Sequence[str] | OBJ,
        thread_name: Sequence[str] | OBJ | None = None,
        all_threads: Sequence[int] | I32 | None = None,
    ) -> SampleBatch:
        """Build a batch from plain sequences (tests, simulator)."""
        n = len(start_ms)
        labels = np.empty(n, object)
        labels[:] = list(label)
        threads = np.empty(n, object)
        threads[:] = [""] * n if thread_name is None else list(thread_name)
        return cls(
            np.asarray(start_ms, np.int64),
            np.asarray(elapsed_ms, np.int64),
            np.asarray(success, np.bool_),
            labels,
            threads,
            np.full(n, -1, np.int32) if all_threads is None else np.asarray(all_threads, np.int32),
        )

    def select(self, mask: BOOL) -> SampleBatch:
        return SampleBatch(
            self.start_ms[mask],
            self.elapsed_ms[mask],
            self.success[mask],
            self.label[mask],
            self.thread_name[mask],
            self.all_threads[mask],
        )

    @staticmethod
    def concat(batches: Sequence[SampleBatch]) -> SampleBatch:
        if not batches:
            return SampleBatch.empty()
        return SampleBatch(
            np.concatenate([b.start_ms for b in batches]),
            np.concatenate([b.elapsed_ms for b in batches]),
            np.concatenate([b.success for b in batches]),
            np.concatenate([b.label for b in batches]),
            np.concatenate([b.thread_name for b in batches]),
            np.concatenate([b.all_threads for b in batches]),
        )


class SampleSource(Protocol):
    """Where the loop's samples come from: each ``poll`` returns the rows that arrived
    since the last one; the counters are the rows skipped so far."""

    def poll(self) -> SampleBatch: ...

    @property
    def malformed_rows(self) -> int: ...

    @property
    def illegal_xml_chars(self) -> int: ...
