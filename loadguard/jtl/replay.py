"""Replay a finished JTL through the window, one ``WindowStats`` per step (pure core).

Windows end at multiples of ``step_ms`` (epoch-aligned, so runs are comparable), from the
first one at or after the earliest completion time to the first one at or after the
latest. A step ``t`` is reported once the reader has seen a sample ending at or after
``t + reorder_slack_ms``: rows are written in completion order give or take the
threads' jitter, so every sample of the window has arrived by then. Samples that still
arrive later are counted in ``Window.late_samples``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from loadguard.jtl.sample import SampleBatch
from loadguard.stats import WindowStats
from loadguard.window import Window


def _ceil_to(value: int, step: int) -> int:
    return -(-value // step) * step


def replay(
    batches: Iterable[SampleBatch],
    window: Window,
    step_ms: int,
    *,
    reorder_slack_ms: int = 5_000,
) -> Iterator[WindowStats]:
    if step_ms <= 0:
        raise ValueError("step_ms must be positive")
    next_end: int | None = None
    newest: int | None = None
    for batch in batches:
        if len(batch) == 0:
            continue
        end = batch.end_ms
        if next_end is None:
            next_end = _ceil_to(int(end.min()), step_ms)
        top = int(end.max())
        newest = top if newest is None else max(newest, top)
        window.add(batch)
        while next_end + reorder_slack_ms <= newest:
            yield window.stats(next_end)
            next_end += step_ms
    if next_end is None or newest is None:
        return
    last = _ceil_to(newest, step_ms)
    while next_end <= last:
        yield window.stats(next_end)
        next_end += step_ms
