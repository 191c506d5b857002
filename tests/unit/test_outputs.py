"""The live outputs' pieces: line protocol, write URLs and credentials, the ``[outputs]``
table, the non-blocking writer (against loopback sockets that hang or fail), and the
Prometheus endpoint. The real servers are in tests/integration/test_outputs_real.py."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import requests

from loadguard.actuator.engines import PushResult
from loadguard.errors import UsageError
from loadguard.loop import TickResult, row_from
from loadguard.observation import Action, Observation, Zone
from loadguard.outputs import OutputConfig, OutputSet, open_outputs
from loadguard.outputs.influx import (
    InfluxSink,
    InfluxTarget,
    OutputUnavailable,
    decision_text,
    end_text,
    line,
    tick_fields,
)
from loadguard.outputs.prometheus import PrometheusSink
from loadguard.policies.base import Decision
from loadguard.stats import LabelStats, WindowStats

THRESHOLDS = {"p95_ms": 250.0, "p99_ms": None, "mean_ms": None, "error_rate": 0.01}


def tick_result(
    wall_ms: int,
    *,
    tick: int = 1,
    old: float = 40.0,
    new: float = 48.0,
    zone: Zone = Zone.SAFE,
    p95: float | None = 120.0,
    detail: Mapping[str, float | str] | None = None,
) -> TickResult:
    """A tick as the loop builds it (``row_from``), for a window with ``p95``."""
    stats = LabelStats(200, 39.5, 39.0, 0.0125, 80.0, 70.0, 100.0, p95, 180.0, 300.0)
    obs = Observation(wall_ms, WindowStats(wall_ms, 5000, stats), zone, (), (), 10, old)
    action = Action.INCREASE if new > old else Action.DECREASE if new < old else Action.HOLD
    decision = Decision(action, old, new, zone, "safe", obs, dict(detail or {}))
    push = PushResult(new, True, ())
    return TickResult(tick, decision, push, row_from(decision, push, tick, THRESHOLDS))


# ------------------------------------------------------------------ line protocol
def test_line_escapes_tags_and_strings_and_keeps_float_fields_floats() -> None:
    text = line(
        "events",
        {"application": "my app,v=2", "title": "LoadGuard"},
        {"text": 'cut "fast"\\now', "rate": 5.0, "samples": 3, "p95": None},
        1234,
    )
    assert text == (
        "events,application=my\\ app\\,v\\=2,title=LoadGuard "
        'text="cut \\"fast\\"\\\\now",rate=5.0,samples=3i 1234'
    )


def test_line_leaves_out_non_finite_fields() -> None:
    assert line("m", {}, {"a": float("nan"), "b": 1.5}, 1) == "m b=1.5 1"


def test_tick_fields_carry_the_capacity_estimate_only_when_the_policy_has_one() -> None:
    without = tick_fields(tick_result(1000), THRESHOLDS)
    assert "capacity_rps" not in without
    assert without["slo_p95_ms"] == 250.0 and without["slo_p99_ms"] is None
    with_estimate = tick_fields(
        tick_result(
            1000,
            detail={
                "capacity_rps": 151.2,
                "capacity_lo_rps": 146.0,
                "capacity_hi_rps": 155.0,
                "predicted_violation_share": 0.03,
                "inner_reason": "safe",
            },
        ),
        THRESHOLDS,
    )
    assert with_estimate["capacity_rps"] == 151.2
    assert with_estimate["capacity_lo_rps"] == 146.0
    assert with_estimate["capacity_hi_rps"] == 155.0
    assert with_estimate["predicted_violation_share"] == 0.03
    assert "inner_reason" not in with_estimate


def test_decision_text_says_the_change_and_the_figures_against_the_slo() -> None:
    text = decision_text(tick_result(1000, old=80.0, new=60.0, p95=312.0))
    assert text.startswith("DECREASE 80.0 -> 60.0 req/s (safe): p95 312 ms (SLO 250 ms)")
    assert "errors 1.25 % (SLO 1.00 %)" in text


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        (
            {"status": "estimated", "rps": 151.2, "ci90_rps": [146.0, 155.0]},
            "capacity 151.2 req/s (90 % CI 146.0-155.0)",
        ),
        ({"status": "lower_bound", "rps": 60.0, "ci90_rps": None}, "capacity above 60.0 req/s"),
        ({"status": "unknown", "rps": None, "ci90_rps": None}, "max SLO-compliant rate 27.4"),
    ],
)
def test_end_annotation_names_the_summarys_capacity_estimate(
    capacity: dict[str, Any], expected: str
) -> None:
    summary = {
        "verdict": "INCONCLUSIVE",
        "stop_reason": "duration",
        "capacity": capacity,
        "max_compliant_rate": 27.4,
    }
    text = end_text(summary)
    assert text.startswith("LoadGuard ended (duration): verdict INCONCLUSIVE, ")
    assert expected in text


# ------------------------------------------------------------------ URLs and credentials
def test_a_1x_url_is_written_with_ms_precision() -> None:
    t = InfluxTarget.parse("http://127.0.0.1:8086/write?db=jmeter&precision=s", None)
    assert t.version == 1
    assert t.write_url == "http://127.0.0.1:8086/write?db=jmeter&precision=ms"
    assert "Authorization" not in t.headers and t.auth is None


def test_a_2x_url_sends_the_token_in_the_header_only() -> None:
    t = InfluxTarget.parse("http://127.0.0.1:8086/api/v2/write?org=perf&bucket=jm", "s3cr3t")
    assert t.version == 2
    assert t.headers["Authorization"] == "Token s3cr3t"
    assert "s3cr3t" not in t.write_url and "s3cr3t" not in t.shown


def test_a_1x_user_password_token_is_basic_auth_and_the_user_is_not_shown() -> None:
    t = InfluxTarget.parse("http://h:8086/write?db=x&u=bob", "pw")
    assert t.auth == ("bob", "pw")
    assert t.shown == "http://h:8086/write?db=x"
    assert InfluxTarget.parse("http://h:8086/write?db=x", "ann:pw2").auth == ("ann", "pw2")


@pytest.mark.parametrize(
    "url",
    [
        "http://h:8086/write?db=x&p=hunter2",
        "http://bob:hunter2@h:8086/write?db=x",
        "http://h:8086/api/v2/write?org=o&bucket=b&token=hunter2",
    ],
)
def test_a_credential_in_the_url_is_refused_without_showing_it(url: str) -> None:
    with pytest.raises(UsageError) as err:
        InfluxTarget.parse(url, None)
    assert "hunter2" not in str(err.value)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://h:8086/query?db=x", "not a write URL"),
        ("http://h:8086/write", "?db=NAME"),
        ("http://h:8086/api/v2/write?bucket=b", "org="),
        ("ftp://h/write?db=x", "http(s)"),
        ("http://h:99999/write?db=x", "http(s)"),
    ],
)
def test_a_bad_write_url_is_unavailable_with_the_reason(url: str, why: str) -> None:
    with pytest.raises(OutputUnavailable, match=re_escape(why)):
        InfluxTarget.parse(url, None)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


# ------------------------------------------------------------------ the [outputs] table
def test_outputs_table_is_read_and_options_override_it(tmp_path: Path) -> None:
    f = tmp_path / "slo.toml"
    f.write_text(
        '[slo]\np95 = "250ms"\n[outputs]\ninflux = "http://h:1/write?db=a"\n'
        'application = "shop"\nprometheus_port = 9464\n'
    )
    cfg = OutputConfig.load(f, influx="http://h:2/write?db=b", application=None)
    assert cfg.influx == "http://h:2/write?db=b"
    assert cfg.application == "shop" and cfg.prometheus_port == 9464
    assert cfg.prometheus_host == "127.0.0.1"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ('influx_token = "x"', "never goes in this file"),
        ('infux = "x"', "unknown key 'infux'"),
        ('prometheus_port = "9464"', "wrong type"),
    ],
)
def test_outputs_table_refuses_tokens_unknown_keys_and_wrong_types(
    tmp_path: Path, body: str, match: str
) -> None:
    f = tmp_path / "slo.toml"
    f.write_text(f'[slo]\np95 = "250ms"\n[outputs]\n{body}\n')
    with pytest.raises(UsageError, match=match):
        OutputConfig.load(f)


def test_token_comes_from_the_environment_before_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "token"
    f.write_text("from-file\n")
    cfg = OutputConfig(influx="http://h:1/write?db=a", influx_token_file=f)
    monkeypatch.delenv("LOADGUARD_INFLUX_TOKEN", raising=False)
    assert cfg.token() == "from-file"
    monkeypatch.setenv("LOADGUARD_INFLUX_TOKEN", "from-env")
    assert cfg.token() == "from-env"


# ------------------------------------------------------------------ the writer
@pytest.fixture()
def hanging_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers (a hung database)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for c in held:
            c.close()
        srv.close()


def _sink(port: int, **kwargs: Any) -> InfluxSink:
    target = InfluxTarget.parse(f"http://127.0.0.1:{port}/write?db=x", None)
    return InfluxSink(target, None, application="app", thresholds=THRESHOLDS, **kwargs)


def test_a_hung_database_never_delays_a_tick_and_unsent_points_are_counted(
    hanging_port: int,
) -> None:
    sink = _sink(hanging_port, queue_max=20, timeout_s=5.0, flush_s=0.05)
    sink.start()
    now = int(time.time() * 1000)
    slowest = 0.0
    for i in range(100):
        t0 = time.perf_counter()
        sink.tick(tick_result(now + i, tick=i + 1))  # each: a point and an INCREASE event
        slowest = max(slowest, time.perf_counter() - t0)
    assert slowest < 0.05
    t0 = time.perf_counter()
    sink.end({"verdict": "PASS", "stop_reason": "duration"})
    sink_end = time.perf_counter() - t0
    assert sink_end < sink.end_timeout_s + 1.0
    assert sink.written == 0
    assert sink.dropped == 201  # 100 ticks x 2 points + the end event, none sent


class _Flaky(BaseHTTPRequestHandler):
    answers: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        code = self.answers.pop(0) if self.answers else 204
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture()
def flaky_server() -> Iterator[tuple[int, type[_Flaky]]]:
    handler = type("Handler", (_Flaky,), {"answers": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], handler
    finally:
        server.shutdown()
        server.server_close()


def test_one_line_when_the_database_goes_away_and_one_when_it_is_back(
    flaky_server: tuple[int, type[_Flaky]], caplog: pytest.LogCaptureFixture
) -> None:
    port, handler = flaky_server
    handler.answers[:] = [204, 503, 503, 503, 204]
    sink = _sink(port, flush_s=0.01)
    sink.start()
    now = int(time.time() * 1000)
    caplog.set_level(logging.WARNING, logger="loadguard.outputs.influx")
    for i in range(6):
        sink.tick(tick_result(now + i, tick=i + 1, old=40.0, new=40.0))  # HOLD: one point
        time.sleep(0.15)  # one batch per tick
    sink.end({"verdict": "PASS", "stop_reason": "duration"})
    went = [r for r in caplog.records if "went away" in r.message]
    back = [r for r in caplog.records if "answers again" in r.message]
    assert len(went) == 1 and len(back) == 1
    assert sink.outages == 1
    assert sink.dropped == 3 and sink.written == 4  # 6 ticks + end = 7 points


def test_a_refused_token_at_start_leaves_the_output_out(
    flaky_server: tuple[int, type[_Flaky]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, handler = flaky_server
    handler.answers[:] = [401]
    monkeypatch.setenv("LOADGUARD_INFLUX_TOKEN", "bad-token-123")
    cfg = OutputConfig(influx=f"http://127.0.0.1:{port}/write?db=x")
    outputs = open_outputs(cfg, thresholds=THRESHOLDS, application="app")
    assert outputs.sinks == []
    reason = outputs.summary_json()["outputs"]["influx"]
    assert reason["status"] == "unavailable" and "credentials refused" in reason["reason"]
    assert "bad-token-123" not in str(reason)


def test_influx_required_turns_an_unreachable_database_into_a_usage_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once closed
    cfg = OutputConfig(influx=f"http://127.0.0.1:{port}/write?db=x", influx_required=True)
    with pytest.raises(UsageError, match=r"cannot connect") as refused:
        open_outputs(cfg, thresholds=THRESHOLDS, application="app")
    assert refused.value.setting == "influx_required"
    outputs = open_outputs(
        OutputConfig(influx=f"http://127.0.0.1:{port}/write?db=x"),
        thresholds=THRESHOLDS,
        application="app",
    )
    assert len(outputs.sinks) == 1  # not required: kept, points dropped until it answers
    outputs.end({})


def test_a_failing_sink_is_left_out_and_the_others_go_on() -> None:
    class Broken:
        name = "broken"
        ticks = 0

        def start(self) -> None: ...

        def tick(self, result: TickResult) -> None:
            self.ticks += 1
            raise RuntimeError("boom")

        def end(self, summary: Mapping[str, Any]) -> None: ...

        def summary_json(self) -> dict[str, Any]:
            return {}

    broken = Broken()
    outputs = OutputSet([broken])
    for i in range(3):
        outputs.tick(tick_result(1000 + i))
    assert broken.ticks == 1


# ------------------------------------------------------------------ Prometheus
def test_metrics_bind_to_loopback_and_carry_the_ticks_figures_until_the_end() -> None:
    sink = PrometheusSink.open("127.0.0.1", 0, application="shop", thresholds=THRESHOLDS)
    try:
        assert sink.address.startswith("127.0.0.1:")
        sink.tick(tick_result(1000, old=40.0, new=48.0, detail={"capacity_rps": 151.0}))
        body = requests.get(f"http://{sink.address}/metrics", timeout=5).text
    finally:
        sink.end({})
    assert 'loadguard_rate{application="shop"} 40.0' in body
    assert 'loadguard_new_rate{application="shop"} 48.0' in body
    assert 'loadguard_capacity_rps{application="shop"} 151.0' in body
    assert 'loadguard_slo_p95_ms{application="shop"} 250.0' in body
    assert 'loadguard_decisions_total{action="INCREASE",application="shop"} 1.0' in body
    assert 'loadguard_zone{application="shop",loadguard_zone="SAFE"} 1.0' in body
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://{sink.address}/metrics", timeout=2)
