"""The decision log's columns, in order: a public contract (docs/decision-log.md).

A leaf module, so both the writer (``loadguard.decisions``) and the readers below it
(``loadguard.report``) take the one list without the report layer importing the loop's
side of the pipeline.
"""

from __future__ import annotations

__all__ = ["COLUMNS"]

#: The decision-log columns, in order (public contract).
COLUMNS: tuple[str, ...] = (
    "iso_time",
    "epoch_ms",
    "tick",
    "action",
    "zone",
    "reason",
    "old_rate",
    "new_rate",
    "applied",
    "engine_ack",
    "samples",
    "rps",
    "ok_rps",
    "error_rate",
    "mean_ms",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "offered_rps",
    "staleness_ms",
    "slo_p95_ms",
    "slo_p99_ms",
    "slo_mean_ms",
    "slo_error_rate",
    "breaches",
    "breached_labels",
    "detail",
)
