"""The InfluxDB output: every tick and every rate change, in line protocol, ms precision.

Per tick, measurement ``loadguard`` (tags ``application``, ``zone``; the fields in
``TICK_FIELDS`` plus the SLO thresholds and, once the policy has one, its capacity
estimate). Every INCREASE and DECREASE, and the run's start and end, go to ``events``
in the shape JMeter's Backend Listener gives its start/end annotations (tags
``application`` and ``title``, a string field ``text``), so Grafana dashboard 5496 and
``examples/grafana/loadguard-influxdb.json`` show them as annotations.

Writes never delay a tick: ``tick`` formats the lines and puts them into a bounded
queue; a daemon thread sends them in batches. A point that cannot be queued (the queue is
full) or sent (the database is down, slow past the timeout, or rejects it) is dropped and
counted. One warning line when the database goes away, one when it is back.

Credentials: a token (``$LOADGUARD_INFLUX_TOKEN`` or a file) goes in the
``Authorization`` header only; 1.x ``user:password`` as HTTP basic auth. A URL carrying
``p=``/``token=`` or a password is refused (it would sit in the shell history and the
process list). Nothing logged or reported holds the token: URLs are shown without their
credentials, and errors by kind, never by the library's message.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests

from loadguard.errors import ConfigError
from loadguard.loop import TickResult

log = logging.getLogger(__name__)

MEASUREMENT = "loadguard"
EVENTS = "events"
#: The ``title`` tag of LoadGuard's annotations (the Backend Listener writes ApacheJMeter).
TITLE = "LoadGuard"
#: Decision-detail keys written as fields when the policy reports them (floats).
CAPACITY_FIELDS = (
    "capacity_rps",
    "capacity_lo_rps",
    "capacity_hi_rps",
    "predicted_violation_share",
)
#: The zone as a number, for a state-timeline panel (the tag holds the name).
ZONE_LEVEL = {"NO_DATA": 0, "SAFE": 1, "NEAR": 2, "BREACH": 3}
_CREDENTIAL_PARAMS = ("p", "password", "token", "u")


class OutputUnavailable(Exception):
    """The output cannot be used for this run (bad URL, token refused, no database)."""


# ------------------------------------------------------------------ line protocol
def _escape_tag(value: str) -> str:
    out = value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=").replace(" ", "\\ ")
    return out.replace("\n", "\\ ")


def _escape_str(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def _field(value: float | int | str | bool) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}i"
    if isinstance(value, float):
        return repr(float(value)) if math.isfinite(value) else None
    return f'"{_escape_str(value)}"'


def line(
    measurement: str,
    tags: Mapping[str, str],
    fields: Mapping[str, float | int | str | bool | None],
    ms: int,
) -> str:
    """One point; tags sorted (as InfluxDB prefers), ``None`` and non-finite fields left out.

    A float field is always written as a float (``5.0``, never ``5``): InfluxDB refuses a
    point whose field changes type within a shard."""
    tag_part = "".join(
        f",{_escape_tag(k)}={_escape_tag(v)}" for k, v in sorted(tags.items()) if v != ""
    )
    parts = []
    for k, v in fields.items():
        text = None if v is None else _field(v)
        if text is not None:
            parts.append(f"{_escape_tag(k)}={text}")
    if not parts:
        raise ValueError("a point needs at least one field")
    return f"{_escape_tag(measurement)}{tag_part} {','.join(parts)} {int(ms)}"


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def tick_fields(
    result: TickResult, thresholds: Mapping[str, float | None]
) -> dict[str, float | int | str | None]:
    """The ``loadguard`` measurement's fields for one tick."""
    r = result.row
    fields: dict[str, float | int | str | None] = {
        "rate": float(r.old_rate),
        "new_rate": float(r.new_rate),
        "achieved_rps": float(r.rps),
        "ok_rps": float(r.ok_rps),
        "p95_ms": _float(r.p95_ms),
        "p99_ms": _float(r.p99_ms),
        "error_rate": float(r.error_rate),
        "samples": int(r.samples),
        "zone_level": ZONE_LEVEL.get(r.zone, 0),
        "action": r.action,
        "reason": r.reason,
        "tick": int(r.tick),
    }
    for key, value in thresholds.items():
        fields[f"slo_{key}"] = _float(value)
    detail = result.decision.detail
    for key in CAPACITY_FIELDS:
        figure = detail.get(key)
        if isinstance(figure, int | float) and not isinstance(figure, bool):
            fields[key] = float(figure)
    return fields


def decision_text(result: TickResult) -> str:
    """An annotation's text: the change and why, e.g. ``DECREASE 80.0 -> 60.0 req/s
    (breach): p95 312 ms (SLO 250 ms), errors 0.10 % (SLO 1.00 %)``."""
    r = result.row
    out = f"{r.action} {r.old_rate:.1f} -> {r.new_rate:.1f} req/s ({r.reason})"
    figures = []
    if r.p95_ms is not None:
        slo = r.slo.get("p95_ms")
        figures.append(f"p95 {r.p95_ms:.0f} ms" + ("" if slo is None else f" (SLO {slo:.0f} ms)"))
    slo_err = r.slo.get("error_rate")
    figures.append(
        f"errors {r.error_rate * 100:.2f} %"
        + ("" if slo_err is None else f" (SLO {slo_err * 100:.2f} %)")
    )
    figures.append(f"achieved {r.rps:.1f} req/s")
    return f"{out}: {', '.join(figures)}"


def event_line(application: str, text: str, kind: str, ms: int) -> str:
    """A point of ``events`` in the Backend Listener's shape (plus a ``tags`` tag naming
    the kind: INCREASE, DECREASE, start, end; Grafana shows it as the annotation's tag)."""
    return line(
        EVENTS, {"application": application, "title": TITLE, "tags": kind}, {"text": text}, ms
    )


def start_text(thresholds: Mapping[str, float | None]) -> str:
    slos = []
    for key, value in thresholds.items():
        if value is None:
            continue
        shown = f"{value * 100:g} %" if key == "error_rate" else f"{value:g} ms"
        slos.append(f"{key.removesuffix('_ms')} <= {shown}")
    return "LoadGuard started" + (f": SLO {', '.join(slos)}" if slos else "")


def end_text(summary: Mapping[str, Any]) -> str:
    parts = [f"verdict {summary.get('verdict', '?')}"]
    capacity = summary.get("capacity")
    if isinstance(capacity, Mapping) and capacity.get("rps") is not None:
        rps = float(capacity["rps"])
        ci = capacity.get("ci90_rps")
        if capacity.get("status") == "lower_bound":
            parts.append(f"capacity above {rps:.1f} req/s")
        elif isinstance(ci, Sequence) and len(ci) == 2 and None not in ci:
            parts.append(
                f"capacity {rps:.1f} req/s (90 % CI {float(ci[0]):.1f}-{float(ci[1]):.1f})"
            )
        else:
            parts.append(f"capacity {rps:.1f} req/s")
    elif summary.get("max_compliant_rate") is not None:
        parts.append(f"max SLO-compliant rate {float(summary['max_compliant_rate']):.1f} req/s")
    return f"LoadGuard ended ({summary.get('stop_reason', '?')}): {', '.join(parts)}"


# ------------------------------------------------------------------ the target
@dataclass(frozen=True)
class InfluxTarget:
    """Where the points go: the write URL (``precision=ms`` set), its version, and how to
    show it (without credentials)."""

    write_url: str
    version: int
    shown: str
    auth: tuple[str, str] | None
    headers: Mapping[str, str]

    @classmethod
    def parse(cls, url: str, token: str | None) -> InfluxTarget:
        """A 1.x ``http://host:8086/write?db=NAME`` or 2.x
        ``http://host:8086/api/v2/write?org=ORG&bucket=BUCKET`` URL.

        Raises ``UsageError`` for a credential in the URL (refused whatever happens) and
        ``OutputUnavailable`` for a URL that is not a write URL."""
        parts = urlsplit(url.strip())
        query = parse_qsl(parts.query, keep_blank_values=True)
        if parts.password is not None or any(k in ("p", "password", "token") for k, _ in query):
            raise ConfigError(
                "influx.credentials",
                "a password or token in the URL is refused: it would show in the process list",
            )
        host = parts.hostname or ""
        port = parts.port if _port_ok(parts) else None
        shown_q = urlencode([(k, v) for k, v in query if k not in _CREDENTIAL_PARAMS])
        netloc = host if port is None else f"{host}:{port}"
        shown = urlunsplit((parts.scheme, netloc, parts.path, shown_q, ""))
        if parts.scheme not in ("http", "https") or not host or not _port_ok(parts):
            raise OutputUnavailable(f"{shown}: not an http(s)://HOST[:PORT]/... URL")
        keys = {k for k, _ in query}
        path = parts.path.rstrip("/")
        if path.endswith("/api/v2/write"):
            version = 2
            if "bucket" not in keys or not keys & {"org", "orgID"}:
                raise OutputUnavailable(f"{shown}: a 2.x write URL needs ?org=...&bucket=...")
        elif path.endswith("/write"):
            version = 1
            if "db" not in keys:
                raise OutputUnavailable(f"{shown}: a 1.x write URL needs ?db=NAME")
        else:
            raise OutputUnavailable(
                f"{shown}: not a write URL (1.x: /write?db=NAME, 2.x: /api/v2/write?org=&bucket=)"
            )
        user = next((v for k, v in query if k == "u"), None)
        kept = [(k, v) for k, v in query if k not in ("precision", "u")] + [("precision", "ms")]
        write_url = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept), ""))
        headers = {"Content-Type": "text/plain; charset=utf-8"}
        auth = None
        if token:
            if version == 1 and (user is not None or ":" in token):
                name, _, password = token.partition(":") if user is None else (user, "", token)
                auth = (name, password)
            else:
                headers["Authorization"] = f"Token {token}"
        return cls(write_url, version, shown, auth, headers)


def _port_ok(parts: Any) -> bool:
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class SendResult:
    ok: bool
    #: The database is there but refuses these points or this client (4xx): not an outage.
    refused: bool = False
    why: str = ""


def send(
    session: requests.Session,
    target: InfluxTarget,
    lines: Sequence[str],
    timeout_s: float,
    secret: str | None = None,
) -> SendResult:
    """POST ``lines``; the answer reduced to ok / refused / down with a reason that holds
    no credential (``secret`` is blanked out of a server's message too)."""
    body = ("\n".join(lines) + "\n").encode("utf-8")
    try:
        resp = session.post(
            target.write_url,
            data=body,
            headers=dict(target.headers),
            auth=target.auth,
            timeout=(min(1.0, timeout_s), timeout_s),
        )
    except requests.Timeout:
        return SendResult(False, why=f"no answer within {timeout_s:g} s")
    except requests.ConnectionError:
        return SendResult(False, why="cannot connect")
    except requests.RequestException as exc:
        return SendResult(False, why=type(exc).__name__)
    if 200 <= resp.status_code < 300:
        return SendResult(True)
    message = _server_message(resp)
    if secret:
        message = message.replace(secret, "***")
    code = resp.status_code
    if code in (401, 403):
        return SendResult(False, refused=True, why=f"credentials refused (HTTP {code})")
    if 400 <= code < 500:
        return SendResult(False, refused=True, why=f"HTTP {code}: {message}".rstrip(": "))
    return SendResult(False, why=f"HTTP {code}")


def _server_message(resp: requests.Response) -> str:
    try:
        data = resp.json()
        text = str(data.get("error") or data.get("message") or "")
    except ValueError:
        text = resp.text
    return " ".join(text.split())[:160]


# ------------------------------------------------------------------ the sink
class InfluxSink:
    """The background writer. ``open`` checks the database with the run's first point."""

    name = "influx"

    def __init__(
        self,
        target: InfluxTarget,
        token: str | None,
        *,
        application: str,
        thresholds: Mapping[str, float | None],
        queue_max: int = 10_000,
        batch_max: int = 1000,
        flush_s: float = 0.5,
        timeout_s: float = 2.0,
        end_timeout_s: float = 5.0,
    ) -> None:
        self.target = target
        self._secret = token
        self.application = application
        self.thresholds = dict(thresholds)
        self.batch_max = batch_max
        self.flush_s = flush_s
        self.timeout_s = timeout_s
        self.end_timeout_s = end_timeout_s
        self._queue: queue.Queue[str] = queue.Queue(maxsize=queue_max)
        self._session = requests.Session()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._abandoned = False
        self._thread: threading.Thread | None = None
        self._in_flight = 0
        self.written = 0
        self.dropped = 0
        self.outages = 0
        self.down = False
        self.refusals = 0
        self.check_error: str | None = None

    @classmethod
    def open(
        cls,
        url: str,
        token: str | None,
        *,
        application: str,
        thresholds: Mapping[str, float | None],
        **kwargs: Any,
    ) -> InfluxSink:
        """Parse ``url`` and write the start annotation at once (a short timeout).

        A refused token, a missing database or a bad URL raises ``OutputUnavailable``; an
        unreachable database leaves ``check_error`` set and the sink running (it may come
        up later: points are dropped and counted until then)."""
        sink = cls(
            InfluxTarget.parse(url, token),
            token,
            application=application,
            thresholds=thresholds,
            **kwargs,
        )
        first = event_line(application, start_text(thresholds), "start", _wall_ms())
        result = send(sink._session, sink.target, [first], sink.timeout_s, token)
        if result.ok:
            sink.written += 1
        elif result.refused:
            sink._session.close()
            raise OutputUnavailable(f"{sink.target.shown}: {result.why}")
        else:
            sink.dropped += 1
            sink.down = True
            sink.outages = 1
            sink.check_error = f"{sink.target.shown}: {result.why}"
            log.warning(
                "influx: %s; points are dropped and counted until it answers", sink.check_error
            )
        return sink

    # -- the loop's side: never blocks ----------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="loadguard-influx", daemon=True)
        self._thread.start()

    def submit(self, lines: Sequence[str]) -> None:
        for text in lines:
            try:
                self._queue.put_nowait(text)
            except queue.Full:
                with self._lock:
                    self.dropped += 1

    def tick(self, result: TickResult) -> None:
        r = result.row
        tags = {"application": self.application, "zone": r.zone}
        lines = [line(MEASUREMENT, tags, tick_fields(result, r.slo or self.thresholds), r.epoch_ms)]
        if r.action in ("INCREASE", "DECREASE"):
            lines.append(event_line(self.application, decision_text(result), r.action, r.epoch_ms))
        self.submit(lines)

    def end(self, summary: Mapping[str, Any]) -> None:
        self.submit([event_line(self.application, end_text(summary), "end", _wall_ms())])
        self.close(self.end_timeout_s)
        log.info(
            "influx: %d points written, %d dropped%s",
            self.written,
            self.dropped,
            f" ({self.outages} outage(s))" if self.outages else "",
        )

    def close(self, timeout_s: float) -> None:
        """Send what is queued within ``timeout_s``; what is left is dropped and counted."""
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        with self._lock:
            self._abandoned = True
            left = self._queue.qsize() + self._in_flight
            self.dropped += left
            self._in_flight = 0
            while not self._queue.empty():
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break
        self._session.close()

    def close_now(self) -> None:
        self.close(0.0)

    def summary_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "url": self.target.shown,
                "points_written": self.written,
                "points_dropped": self.dropped,
                "outages": self.outages,
            }

    # -- the writer thread ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=self.flush_s)
            except queue.Empty:
                if self._closing.is_set():
                    return
                continue
            batch = [first]
            while len(batch) < self.batch_max:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            with self._lock:
                if self._abandoned:
                    return
                self._in_flight = len(batch)
            result = send(self._session, self.target, batch, self.timeout_s, self._secret)
            self._account(len(batch), result)

    def _account(self, n: int, result: SendResult) -> None:
        with self._lock:
            if self._abandoned:
                return
            self._in_flight = 0
            if result.ok:
                self.written += n
                if self.down:
                    self.down = False
                    log.warning(
                        "influx: %s answers again; writes resumed (%d points dropped so far)",
                        self.target.shown,
                        self.dropped,
                    )
                return
            self.dropped += n
            if result.refused:
                self.refusals += 1
                if self.refusals == 1:
                    log.warning(
                        "influx: %s refused %d point(s): %s", self.target.shown, n, result.why
                    )
                return
            if not self.down:
                self.down = True
                self.outages += 1
                log.warning(
                    "influx: %s went away (%s); points are dropped and counted until it is back",
                    self.target.shown,
                    result.why,
                )


def _wall_ms() -> int:
    return int(time.time() * 1000)
