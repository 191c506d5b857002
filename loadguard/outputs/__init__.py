"""Live outputs beside the decision log: InfluxDB (``influx``) and Prometheus (``prometheus``).

A *sink* sees the run as the dashboards do: ``start()`` once before the first tick,
``tick(TickResult)`` after every decision (from the loop's thread: it must not block),
and ``end(summary)`` once after the last tick with the summary's JSON. ``OutputSet``
fans a run out to the sinks the user asked for; the sidecar composes it in one place.

The run never depends on an output (docs/dashboards.md): one that cannot start is a
one-line warning and is left out, unless it is required (``--influx-required``: then
``UsageError``, exit 2, before JMeter starts). A sink that raises is logged and left
out too; no credential is ever part of what a sink logs or reports.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from loadguard.errors import ConfigError, UsageError
from loadguard.loop import TickResult

log = logging.getLogger(__name__)

#: The environment variable holding the InfluxDB token (never an option's value).
TOKEN_ENV = "LOADGUARD_INFLUX_TOKEN"
#: ``application`` when ``attach`` has no plan to name it after.
DEFAULT_APPLICATION = "loadguard"


class Sink(Protocol):
    """One live output."""

    name: str

    def start(self) -> None: ...

    def tick(self, result: TickResult) -> None: ...

    def end(self, summary: Mapping[str, Any]) -> None: ...

    def summary_json(self) -> dict[str, Any]:
        """What ``summary.json`` says of this output (under ``outputs``)."""
        ...


@dataclass(frozen=True)
class OutputConfig:
    """``--influx`` & co., or the ``[outputs]`` table of the ``--slo-file`` TOML file."""

    influx: str | None = None
    influx_token_file: Path | None = None
    influx_required: bool = False
    application: str | None = None
    prometheus_port: int | None = None
    prometheus_host: str = "127.0.0.1"

    @property
    def any(self) -> bool:
        return self.influx is not None or self.prometheus_port is not None

    def __post_init__(self) -> None:
        if self.influx_required and self.influx is None:
            raise ConfigError("influx_required", "no InfluxDB URL to require")
        if self.prometheus_port is not None and not 0 <= self.prometheus_port <= 65535:
            raise ConfigError("prometheus_port", f"must be 0..65535, got {self.prometheus_port}")
        if self.application is not None and not self.application.strip():
            raise ConfigError("application", "must not be empty")

    @classmethod
    def load(cls, path: Path | None, **options: Any) -> OutputConfig:
        """The ``[outputs]`` table of ``path`` (if it has one), overridden by the options
        given (``None`` or ``False``: not given)."""
        data: dict[str, Any] = {}
        if path is not None:
            data = _read_outputs_table(path)
        data.update({k: v for k, v in options.items() if v is not None and v is not False})
        if "influx_token_file" in data:
            data["influx_token_file"] = Path(data["influx_token_file"])
        return cls(**data)

    def token(self) -> str | None:
        """The InfluxDB token: ``$LOADGUARD_INFLUX_TOKEN``, else the token file's first line."""
        env = os.environ.get(TOKEN_ENV)
        if env:
            return env.strip()
        if self.influx_token_file is None:
            return None
        try:
            text = self.influx_token_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                "influx_token_file",
                f"cannot read {self.influx_token_file}: "
                f"{getattr(exc, 'strerror', None) or type(exc).__name__}",
            ) from None
        first = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not first:
            raise ConfigError("influx_token_file", f"{self.influx_token_file} is empty")
        return first


_TOML_KEYS = {f.name: f.type for f in fields(OutputConfig)}


def _read_outputs_table(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}  # the [slo] reader reports an unreadable file with its own message
    table = doc.get("outputs", {})
    if not isinstance(table, Mapping):
        raise UsageError(f"{path}: [outputs] must be a table")
    if any("token" in k and k != "influx_token_file" for k in table):
        raise UsageError(
            f"[outputs] of {path}: a token never goes in this file; use ${TOKEN_ENV} "
            "or influx_token_file"
        )
    unknown = [k for k in table if k not in _TOML_KEYS]
    if unknown:
        raise UsageError(
            f"unknown key {unknown[0]!r} in [outputs] of {path} "
            f"(known: {', '.join(sorted(_TOML_KEYS))})"
        )
    expect: dict[str, type | tuple[type, ...]] = {
        "influx": str,
        "influx_token_file": str,
        "influx_required": bool,
        "application": str,
        "prometheus_port": int,
        "prometheus_host": str,
    }
    for key, value in table.items():
        kind = expect[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise UsageError(f"[outputs] {key} in {path}: wrong type {type(value).__name__}")
    return dict(table)


class OutputSet:
    """The sinks of one run, called from the sidecar's loop; each failure is contained."""

    def __init__(self, sinks: Sequence[Sink] = ()) -> None:
        self.sinks = list(sinks)
        self._failed: set[str] = set()
        self.ended = False
        #: Outputs asked for but left out at start, and why (no credential in it).
        self.unavailable: dict[str, str] = {}

    def _call(self, sink: Sink, what: str, *args: Any) -> None:
        if sink.name in self._failed:
            return
        try:
            getattr(sink, what)(*args)
        except Exception as exc:  # an output never stops the controller
            self._failed.add(sink.name)
            log.warning(
                "%s output failed (%s), left out for the rest of the run",
                sink.name,
                type(exc).__name__,
            )

    def tick(self, result: TickResult) -> None:
        for sink in self.sinks:
            self._call(sink, "tick", result)

    def end(self, summary: Mapping[str, Any]) -> None:
        """Once: the end annotation, the last points sent (bounded), the server closed."""
        if self.ended:
            return
        self.ended = True
        for sink in self.sinks:
            self._call(sink, "end", summary)

    @contextlib.contextmanager
    def ended_on_failure(self) -> Iterator[None]:
        """For the ``with`` block: if it ends before the run's own ``end`` (JMeter did not
        start, a usage error), the outputs are ended anyway (no port left bound)."""
        try:
            yield
        finally:
            self.end({"stop_reason": "not_started", "verdict": "NO_DATA"})

    def summary_json(self) -> dict[str, Any]:
        """``{"outputs": {...}}`` for ``summary.json``; nothing without an output."""
        if not self.sinks and not self.unavailable:
            return {}
        out: dict[str, Any] = {
            name: {"status": "unavailable", "reason": why} for name, why in self.unavailable.items()
        }
        for sink in self.sinks:
            try:
                out[sink.name] = {"status": "on", **sink.summary_json()}
            except Exception:
                out[sink.name] = {"status": "failed"}
        return {"outputs": out}


def open_outputs(
    cfg: OutputConfig | None, *, thresholds: Mapping[str, float | None], application: str
) -> OutputSet:
    """Build and start the sinks ``cfg`` asks for (before JMeter starts).

    Each one checks what it can at once (a 1.x/2.x write URL, the database answering, the
    token accepted, the port free). A failure is one warning line and the sink is left
    out; with ``influx_required`` a failed InfluxDB check raises ``UsageError``."""
    if cfg is None or not cfg.any:
        return OutputSet()
    app = cfg.application or application or DEFAULT_APPLICATION
    sinks: list[Sink] = []
    unavailable: dict[str, str] = {}
    if cfg.influx is not None:
        from loadguard.outputs.influx import InfluxSink, OutputUnavailable

        try:
            influx = InfluxSink.open(
                cfg.influx, cfg.token(), application=app, thresholds=thresholds
            )
        except OutputUnavailable as exc:
            if cfg.influx_required:
                raise ConfigError("influx_required", str(exc)) from None
            log.warning("influx: %s; the run goes on without it", exc)
            unavailable["influx"] = str(exc)
        else:
            if influx.check_error is not None and cfg.influx_required:
                influx.close_now()
                raise ConfigError("influx_required", influx.check_error)
            sinks.append(influx)
    if cfg.prometheus_port is not None:
        from loadguard.outputs.prometheus import PrometheusSink

        try:
            sinks.append(
                PrometheusSink.open(
                    cfg.prometheus_host, cfg.prometheus_port, application=app, thresholds=thresholds
                )
            )
        except OSError as exc:
            unavailable["prometheus"] = f"{cfg.prometheus_host}:{cfg.prometheus_port}: " + (
                exc.strerror or type(exc).__name__
            )
            log.warning(
                "prometheus: cannot serve /metrics on %s:%d (%s); the run goes on without it",
                cfg.prometheus_host,
                cfg.prometheus_port,
                exc.strerror or type(exc).__name__,
            )
    outputs = OutputSet(sinks)
    outputs.unavailable = unavailable
    for sink in sinks:
        outputs._call(sink, "start")
    return outputs
