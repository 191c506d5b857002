"""Window statistics: the values the Metrics Listener hands to everything downstream.

These are public contracts. Their JSON form is the ``loadguard metrics --json`` line
schema (docs/metrics.md); the decision log copies the overall fields into its columns.

Percentile definition: see ``loadguard.window`` (exact, within the window).
Times are milliseconds; rates are per second; ``error_rate`` is a fraction in 0..1.
A label or window with ``count == 0`` has ``None`` for every latency field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LATENCY_FIELDS: tuple[str, ...] = (
    "mean_ms",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
)
STAT_FIELDS: tuple[str, ...] = ("count", "rps", "ok_rps", "error_rate", *LATENCY_FIELDS)


@dataclass(frozen=True, slots=True)
class LabelStats:
    """Statistics of one label (or of all labels) over one window."""

    count: int
    rps: float
    ok_rps: float
    error_rate: float
    mean_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None

    @classmethod
    def empty(cls) -> LabelStats:
        return cls(0, 0.0, 0.0, 0.0, None, None, None, None, None, None)

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in STAT_FIELDS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LabelStats:
        def opt(name: str) -> float | None:
            value = data.get(name)
            return None if value is None else float(value)

        return cls(
            count=int(data["count"]),
            rps=float(data["rps"]),
            ok_rps=float(data["ok_rps"]),
            error_rate=float(data["error_rate"]),
            mean_ms=opt("mean_ms"),
            p50_ms=opt("p50_ms"),
            p90_ms=opt("p90_ms"),
            p95_ms=opt("p95_ms"),
            p99_ms=opt("p99_ms"),
            max_ms=opt("max_ms"),
        )

    def metric(self, name: str) -> float | None:
        """A field by its public name (``p95_ms``, ``error_rate`` ...)."""
        if name not in STAT_FIELDS:
            raise KeyError(name)
        value = getattr(self, name)
        return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class WindowStats:
    """One window's statistics, overall and per label.

    ``window_end_ms`` is the window's right edge in epoch ms (sample *completion* time
    ``timeStamp + elapsed``); the window covers ``(window_end_ms - window_ms, window_end_ms]``.
    ``newest_sample_ms`` is the newest completion time seen so far (for staleness), and
    ``malformed_rows`` the running count of rows the reader could not use, and
    ``illegal_xml_chars`` that of characters XML 1.0 forbids that it replaced (binary
    response data in an XML JTL; the samples holding them count).
    """

    window_end_ms: int
    window_ms: int
    overall: LabelStats
    labels: Mapping[str, LabelStats] = field(default_factory=dict)
    malformed_rows: int = 0
    newest_sample_ms: int | None = None
    illegal_xml_chars: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "window_end_ms": self.window_end_ms,
            "window_ms": self.window_ms,
            "overall": self.overall.to_json(),
            "labels": {name: s.to_json() for name, s in sorted(self.labels.items())},
            "malformed_rows": self.malformed_rows,
            "illegal_xml_chars": self.illegal_xml_chars,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WindowStats:
        return cls(
            window_end_ms=int(data["window_end_ms"]),
            window_ms=int(data["window_ms"]),
            overall=LabelStats.from_json(data["overall"]),
            labels={k: LabelStats.from_json(v) for k, v in data.get("labels", {}).items()},
            malformed_rows=int(data.get("malformed_rows", 0)),
            illegal_xml_chars=int(data.get("illegal_xml_chars", 0)),
        )
