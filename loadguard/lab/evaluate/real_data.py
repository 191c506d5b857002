r"""A real run as the suite's judge sees it (pure): ``RunData`` from a JTL and a decision log,
the plant's λ*(t) and events on the run's clock, and where the real sweep goes next.

**The run's clock.** t = 0 is the earliest sample start in the JTL (t0): a sample's
``sent`` is its start − t0, its ``end`` start + elapsed − t0 (whole ms, as the simulator's
``elapsed_ms`` reads them back). A tick is a decision-log row at ``epoch_ms`` − t0 ≥ 0
with the rate in force after it (``new_rate`` when applied, else the one before:
``schedule_from_decisions``) -- the simulator's ``(t, decision.new_rate)``.

**The plant's clock** starts when the target reported ready, ``offset`` = t0 − ready
seconds earlier (JMeter's start-up). A plant time T is run time T − offset; λ*(t) and
the events are shifted so (``shift_capacity``, ``shift_events``).

**The sweep** (``next_fraction``): fractions of the nominal λ* tried in order
``SWEEP_FRACTIONS``, ending at the first failing point above a passing one; while none
fails it goes on at ``SWEEP_EXTEND``, and while none passes it goes down
``SWEEP_BELOW``. λ* is then ``lambda_star_from_sweep`` over the points.

A target that is shared between the points and slow to recover from an overload (the
real TeaStore: a flood's backlog keeps its thread pools busy for minutes after its
status page answers again) is swept **from below** (``ascending``): ``SWEEP_UP`` in
order, ending at the first failing point, so at most one point overloads it (the
caller warms a cold store at the lowest rate first). Its nominal λ* is a guess; 0.8 of
it was past a cold store's knee (docs/controller-jmeter.md, run 5).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from loadguard.jtl.sample import SampleBatch
from loadguard.lab.evaluate.lambda_star import SweepPoint
from loadguard.lab.evaluate.offered import OfferedSchedule
from loadguard.lab.evaluate.suite_metrics import Capacity, RunData

SWEEP_FRACTIONS: tuple[float, ...] = (0.8, 0.95, 1.1)
SWEEP_EXTEND: tuple[float, ...] = (1.3, 1.6, 2.0)
SWEEP_BELOW: tuple[float, ...] = (0.6, 0.4, 0.2, 0.1)
SWEEP_UP: tuple[float, ...] = (0.1, 0.2, 0.4, 0.6, 0.8, 0.95, 1.1, 1.3, 1.6, 2.0)


def run_data(batch: SampleBatch, schedule: OfferedSchedule, duration_s: float) -> RunData:
    """The run on its own clock (see the module doc). Raises ``ValueError`` on no sample."""
    if len(batch) == 0:
        raise ValueError("the run has no sample")
    t0 = int(batch.start_ms.min())
    sent = (batch.start_ms - t0).astype(np.float64) / 1000.0
    end = (batch.end_ms - t0).astype(np.float64) / 1000.0
    ticks = tuple(
        ((int(ms) - t0) / 1000.0, float(rate))
        for ms, rate in zip(schedule.change_ms, schedule.rate, strict=True)
        if ms >= t0
    )
    return RunData(sent, end, batch.success.astype(np.bool_), duration_s, ticks)


def first_start_ms(batch: SampleBatch) -> int:
    return int(batch.start_ms.min())


def shift_capacity(steps: Sequence[tuple[float, float]], offset_s: float) -> Capacity:
    """λ*(t) of plant-time ``steps`` on the run's clock (a step before t0 starts at 0)."""
    shifted: list[tuple[float, float]] = []
    for at, lam in steps:
        t = max(0.0, at - offset_s)
        if shifted and shifted[-1][0] == t:
            shifted[-1] = (t, lam)
        else:
            shifted.append((t, lam))
    if shifted[0][0] != 0.0:
        shifted.insert(0, (0.0, steps[0][1]))
    return Capacity(tuple(shifted))


def shift_events(
    events: Sequence[tuple[float, float]], offset_s: float
) -> tuple[tuple[float, float], ...]:
    return tuple((a - offset_s, b - offset_s) for a, b in events)


def point_passes(point: SweepPoint, p95_ms: float) -> bool:
    """A sweep point within the plant's SLO: its p95 and at most 1 % errors."""
    return point.p95_ms <= p95_ms and point.error_rate <= 0.01


def next_fraction(
    done: Sequence[tuple[float, SweepPoint]], p95_ms: float, ascending: bool = False
) -> float | None:
    """The next fraction of the nominal λ* to hold, given ``(fraction, point)`` so far;
    ``None`` when the sweep is done. ``ascending``: from below, to the first failure."""
    tried = [f for f, _ in done]
    passed = [f for f, p in done if point_passes(p, p95_ms)]
    failed = [f for f, p in done if not point_passes(p, p95_ms)]
    if ascending:
        if failed:
            return None
        return next((f for f in SWEEP_UP if f not in tried), None)
    if passed and any(f > max(passed) for f in failed):
        return None
    if done and not passed:
        below = [f for f in SWEEP_BELOW if f < min(tried)]
        return below[0] if below else None
    for f in (*SWEEP_FRACTIONS, *SWEEP_EXTEND):
        if f not in tried and (not passed or f > max(passed)):
            return f
    return None
