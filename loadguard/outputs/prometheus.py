"""The Prometheus output: ``/metrics`` with the tick's figures as gauges, and counters.

Served by ``prometheus_client`` (its exposition format and HTTP server) from a registry
of our own, on 127.0.0.1 unless ``--prometheus-host`` says otherwise, from before JMeter
starts until the run's end. Gauges carry the last tick's figures (the names of the
InfluxDB fields, with a ``loadguard_`` prefix); ``loadguard_decisions_total{action}``
counts decisions, ``loadguard_zone{loadguard_zone}`` is the zone as an enum. Every series
has the label ``application`` (the same value as InfluxDB's tag).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, start_http_server

from loadguard.loop import TickResult
from loadguard.outputs.influx import CAPACITY_FIELDS, tick_fields

ZONES = ["NO_DATA", "SAFE", "NEAR", "BREACH"]
ACTIONS = ["INCREASE", "HOLD", "DECREASE", "STOP"]
#: Gauge name (after ``loadguard_``) -> help; the InfluxDB field of the same name.
GAUGES = {
    "rate": "Rate in force before this tick's decision, req/s.",
    "new_rate": "Rate decided at this tick, req/s.",
    "achieved_rps": "Achieved rate over the window, req/s.",
    "ok_rps": "Successful samples per second over the window.",
    "p95_ms": "Window p95 of elapsed time, ms (absent: too few samples).",
    "p99_ms": "Window p99 of elapsed time, ms (absent: too few samples).",
    "error_rate": "Share of failed samples in the window (0..1).",
    "samples": "Samples in the window.",
    "slo_p95_ms": "SLO threshold on p95, ms.",
    "slo_p99_ms": "SLO threshold on p99, ms.",
    "slo_mean_ms": "SLO threshold on the mean, ms.",
    "slo_error_rate": "SLO threshold on the error rate (0..1).",
    "capacity_rps": "The policy's capacity estimate, req/s (once it has one).",
    "capacity_lo_rps": "Lower end of its 90 % interval, req/s.",
    "capacity_hi_rps": "Upper end of its 90 % interval, req/s.",
    "predicted_violation_share": "Predicted share of windows over the SLO at the held rate.",
    "tick": "Number of the last tick.",
}


class PrometheusSink:
    name = "prometheus"

    def __init__(
        self, host: str, port: int, *, application: str, thresholds: Mapping[str, float | None]
    ) -> None:
        self.host = host
        self.application = application
        self.thresholds = dict(thresholds)
        self.registry = CollectorRegistry(auto_describe=True)
        self.gauges = {
            name: Gauge(f"loadguard_{name}", doc, ["application"], registry=self.registry)
            for name, doc in GAUGES.items()
        }
        self.decisions = Counter(
            "loadguard_decisions",
            "Decisions taken, by action.",
            ["application", "action"],
            registry=self.registry,
        )
        self.zone = Enum(
            "loadguard_zone",
            "Zone of the last window.",
            ["application"],
            states=ZONES,
            registry=self.registry,
        )
        for action in ACTIONS:  # every counter exists from the start (rate() needs a 0)
            self.decisions.labels(application, action)
        self.zone.labels(application).state("NO_DATA")
        for key, value in self.thresholds.items():
            if value is not None and f"slo_{key}" in self.gauges:
                self.gauges[f"slo_{key}"].labels(application).set(value)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port = port
        self.ticks = 0

    @classmethod
    def open(
        cls, host: str, port: int, *, application: str, thresholds: Mapping[str, float | None]
    ) -> PrometheusSink:
        """Bind now (``OSError`` if the port is taken), before JMeter starts."""
        sink = cls(host, port, application=application, thresholds=thresholds)
        sink._server, sink._thread = start_http_server(port, addr=host, registry=sink.registry)
        sink.port = int(sink._server.server_address[1])
        return sink

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        return None

    def tick(self, result: TickResult) -> None:
        app = self.application
        fields = tick_fields(result, result.row.slo or self.thresholds)
        for name, gauge in self.gauges.items():
            value = fields.get(name)
            child = gauge.labels(app)
            if isinstance(value, int | float):
                child.set(float(value))
            elif name in ("p95_ms", "p99_ms", *CAPACITY_FIELDS):
                child.set(float("nan"))  # no value this tick: NaN, not the last one's
        self.decisions.labels(app, result.row.action).inc()
        if result.row.zone in ZONES:
            self.zone.labels(app).state(result.row.zone)
        self.ticks += 1

    def end(self, summary: Mapping[str, Any]) -> None:
        self.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(2.0)
            self._thread = None

    def summary_json(self) -> dict[str, Any]:
        return {"address": self.address, "ticks_exported": self.ticks}
