"""The decision-log columns, defined once: name, dtype and meaning, in file order.

A public contract (docs/decision-log.md documents every column; a test checks that it
does). The writer (``loadguard.decisions``) writes them in this order and the report
(``loadguard.report.decision_frame``) reads them back with these dtypes. A leaf module:
it imports nothing from LoadGuard, so both layers can depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Column:
    """One decision-log column. ``dtype``: ``float`` (empty cell: missing) or ``str``."""

    name: str
    dtype: Literal["float", "str"]
    meaning: str


def _f(name: str, meaning: str) -> Column:
    return Column(name, "float", meaning)


def _s(name: str, meaning: str) -> Column:
    return Column(name, "str", meaning)


DECISION_COLUMNS: tuple[Column, ...] = (
    _s("iso_time", "tick time, UTC ISO-8601 with ms"),
    _f("epoch_ms", "tick time, epoch ms"),
    _f("tick", "tick number, 1-based, continues across restarts"),
    _s("action", "INCREASE, HOLD, DECREASE or STOP"),
    _s("zone", "SAFE, NEAR, BREACH or NO_DATA"),
    _s("reason", "machine-readable reason (safe, settling, clamp_max, auto_stop, ...)"),
    _f("old_rate", "total request rate before the decision, req/s"),
    _f("new_rate", "total request rate after the decision, req/s"),
    _s("applied", "true when every engine acknowledged the new rate"),
    _s("engine_ack", "per engine host:port=rate, !error on failure, ;-separated"),
    _f("samples", "the window's sample count"),
    _f("rps", "the window's achieved rate, req/s"),
    _f("ok_rps", "the window's successful rate, req/s"),
    _f("error_rate", "the window's error fraction, 0..1"),
    _f("mean_ms", "the window's mean latency (empty when no sample)"),
    _f("p50_ms", "the window's p50 latency (empty when no sample)"),
    _f("p90_ms", "the window's p90 latency (empty when no sample)"),
    _f("p95_ms", "the window's p95 latency (empty when no sample)"),
    _f("p99_ms", "the window's p99 latency (empty when no sample)"),
    _f("max_ms", "the window's largest latency (empty when no sample)"),
    _f("offered_rps", "rate in force at the engines during the window (commanded)"),
    _f("staleness_ms", "tick time minus the newest sample's completion time"),
    _f("slo_p95_ms", "the overall p95 threshold (empty when not set)"),
    _f("slo_p99_ms", "the overall p99 threshold (empty when not set)"),
    _f("slo_mean_ms", "the overall mean threshold (empty when not set)"),
    _f("slo_error_rate", "the overall error-rate threshold (empty when not set)"),
    _s("breaches", "SLOs over threshold, ;-separated (p95_ms, label=/cart:p95_ms, ...)"),
    _s("breached_labels", "labels in breach, ;-separated"),
    _s("detail", "policy internals as key=value;..., enough to replay the run"),
)

#: The column names, in order: the header line's fields.
COLUMNS: tuple[str, ...] = tuple(c.name for c in DECISION_COLUMNS)
#: Columns the report reads as numbers (an empty cell is missing).
NUMERIC: tuple[str, ...] = tuple(c.name for c in DECISION_COLUMNS if c.dtype == "float")
#: Columns the report keeps as text.
TEXT: tuple[str, ...] = tuple(c.name for c in DECISION_COLUMNS if c.dtype == "str")
