"""Live outputs against the real servers: a real ``loadguard run`` (JMeter 5.6.3, the demo
target) writing to a real InfluxDB 1.x and scraped by a real Prometheus, both started here
on free loopback ports (tests/servers.py).

One run feeds the read-back tests (module fixture ``live_run``): its ticks and decisions
are read back with InfluxQL, every query of the shipped Grafana dashboard is run against
its database, and Prometheus' HTTP API returns what it scraped from ``/metrics``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loadguard.jmeter.home import JMeterHome
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from loadguard.loop import TickResult
from loadguard.outputs.influx import InfluxSink
from tests.jmeter_runner import read_decisions
from tests.servers import (
    InfluxServer,
    PrometheusServer,
    free_port,
    influx_server,
    prometheus_server,
)

pytestmark = pytest.mark.jmeter

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "jmx_templates" / "elastic_plan.jmx"
DASHBOARD = REPO / "examples" / "grafana" / "loadguard-influxdb.json"
LOADGUARD = [sys.executable, "-m", "loadguard"]
APP = "elastic_plan"  # the default application tag: the plan's name
DB = "jmeter"


def run_args(out: Path, target_port: int, duration: str, *extra: str) -> list[str]:
    return [
        *LOADGUARD,
        "run",
        str(PLAN),
        "--out",
        str(out),
        "--p95",
        "250ms",
        "--error-rate",
        "1%",
        "--window",
        "5s",
        "--tick",
        "1s",
        "--initial-rate",
        "10",
        "--max-rate",
        "150",
        "--duration",
        duration,
        "-q",
        "-J",
        f"target.port={target_port}",
        "-J",
        "threads=80",
        "-J",
        "duration=600",
        *extra,
    ]


@dataclass
class LiveRun:
    influx: InfluxServer
    prometheus: PrometheusServer
    metrics_port: int
    out: Path
    proc: subprocess.CompletedProcess[str]
    rows: list[dict[str, str]]
    summary: dict[str, Any]
    started_ms: int
    ended_ms: int


@pytest.fixture(scope="module")
def target() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=4, queue=400, service_s=0.050)) as t:
        yield t


@pytest.fixture(scope="module")
def live_run(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveRun]:
    tmp = tmp_path_factory.mktemp("live")
    metrics_port = free_port()
    with (
        influx_server(tmp / "influx") as influx,
        prometheus_server(tmp / "prometheus", [f"127.0.0.1:{metrics_port}"]) as prom,
    ):
        influx.query(f"CREATE DATABASE {DB}")
        out = tmp / "run"
        started = int(time.time() * 1000)
        proc = subprocess.run(
            run_args(
                out,
                target.port,
                "30s",
                "--influx",
                influx.write_url(DB),
                "--prometheus-port",
                str(metrics_port),
            ),
            capture_output=True,
            text=True,
            timeout=180,
            cwd=tmp,
        )
        ended = int(time.time() * 1000)
        assert proc.returncode in (0, 1, 5), proc.stderr[
            -3000:
        ]  # a verdict: PASS, FAIL, INCONCLUSIVE
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        print(f"\n{proc.stderr.strip()}")
        yield LiveRun(
            influx,
            prom,
            metrics_port,
            out,
            proc,
            read_decisions(out / "decisions.csv"),
            json.loads((out / "summary.json").read_text()),
            started,
            ended,
        )


def test_every_tick_is_a_loadguard_point_with_the_decision_logs_figures(live_run: LiveRun) -> None:
    points = live_run.influx.points(
        f"SELECT * FROM loadguard WHERE application = '{APP}' ORDER BY time", DB
    )
    rows = live_run.rows
    assert len(rows) >= 20
    assert len(points) == len(rows)
    rates = [p["rate"] for p in points]
    print(f"\ninfluxdb: {len(points)} loadguard points for {len(rows)} decision rows; "
          f"rate {rates[0]:.1f} -> max {max(rates):.1f} -> last {rates[-1]:.1f} req/s; "
          f"zones {sorted({p['zone'] for p in points})}")  # fmt: skip
    by_time = {int(p["time"]): p for p in points}
    for r in rows:
        p = by_time[int(r["epoch_ms"])]  # ms precision: the row's own timestamp
        assert p["zone"] == r["zone"]
        assert p["action"] == r["action"]
        assert p["rate"] == pytest.approx(float(r["old_rate"]), abs=1e-3)
        assert p["new_rate"] == pytest.approx(float(r["new_rate"]), abs=1e-3)
        assert p["achieved_rps"] == pytest.approx(float(r["rps"]), abs=1e-3)
        assert p["samples"] == int(r["samples"])
        assert p["slo_p95_ms"] == 250.0 and p["slo_error_rate"] == pytest.approx(0.01)
        if r["p95_ms"]:
            assert p["p95_ms"] == pytest.approx(float(r["p95_ms"]), abs=1e-3)


def test_every_rate_change_and_the_start_and_end_are_backend_listener_events(
    live_run: LiveRun,
) -> None:
    events = live_run.influx.points(
        f"SELECT * FROM events WHERE application = '{APP}' ORDER BY time", DB
    )
    assert {e["title"] for e in events} == {"LoadGuard"}
    assert all(isinstance(e["text"], str) and e["text"] for e in events)
    kinds = [e["tags"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    changes = [r for r in live_run.rows if r["action"] in ("INCREASE", "DECREASE")]
    assert changes, "the run should have changed the rate"
    assert kinds[1:-1] == [r["action"] for r in changes]
    for e, r in zip(events[1:-1], changes, strict=True):
        assert int(e["time"]) == int(r["epoch_ms"])
        assert e["text"].startswith(f"{r['action']} {float(r['old_rate']):.1f} -> ")
    assert live_run.summary["verdict"] in events[-1]["text"]


def test_summary_counts_every_point_written_and_none_dropped(live_run: LiveRun) -> None:
    influx = live_run.summary["outputs"]["influx"]
    changes = sum(r["action"] in ("INCREASE", "DECREASE") for r in live_run.rows)
    assert influx["points_written"] == len(live_run.rows) + changes + 2
    assert influx["points_dropped"] == 0
    assert "influx: " in live_run.proc.stderr and "0 dropped" in live_run.proc.stderr


def _dashboard_queries() -> list[tuple[str, str]]:
    """(where, InfluxQL) of every query in the shipped dashboard: panels, annotations,
    template variables."""
    dash = json.loads(DASHBOARD.read_text())
    out = [
        (f"panel {p['title']!r} {t['refId']}", t["query"])
        for p in dash["panels"]
        for t in p.get("targets", [])
    ]
    out += [
        (f"annotation {a['name']!r}", a["query"])
        for a in dash["annotations"]["list"]
        if "query" in a
    ]
    out += [(f"variable ${v['name']}", v["query"]) for v in dash["templating"]["list"]]
    return out


def _grafana_expand(query: str, start_ms: int, end_ms: int, application: str) -> str:
    """What Grafana sends for the InfluxQL macros the dashboard uses."""
    query = query.replace("$timeFilter", f"time >= {start_ms}ms and time <= {end_ms}ms")
    query = query.replace("$__interval", "1s")
    return query.replace("$application", re.escape(application))


def test_every_query_of_the_shipped_grafana_dashboard_returns_the_runs_series(
    live_run: LiveRun,
) -> None:
    queries = _dashboard_queries()
    assert len(queries) >= 10
    has_capacity = any("capacity_rps=" in r["detail"] for r in live_run.rows)
    for where, query in queries:
        text = _grafana_expand(query, live_run.started_ms, live_run.ended_ms, APP)
        assert not re.search(r"\$\w", text), f"{where}: unexpanded macro in {text}"
        points = live_run.influx.points(text, DB)
        if "capacity_rps" in query and not has_capacity:
            # The policy gave no estimate in this run: the panel is empty, as the log is.
            assert points == [], where
            continue
        assert points, f"{where} returned no series: {text}"
        if query.startswith("SHOW TAG VALUES"):
            assert {p["value"] for p in points} == {APP}, where
        else:
            # Some column besides time holds a value (tags are not columns).
            series = [s for r in live_run.influx.query(text, DB)["results"] for s in r["series"]]
            values = [v for s in series for row in s["values"] for v in row[1:]]
            assert any(v is not None for v in values), f"{where}: only nulls: {text}"


def test_the_dashboards_capacity_queries_return_the_controllers_estimate(
    live_run: LiveRun, tmp_path: Path
) -> None:
    """Ticks whose decision detail carries the counting controller's estimate (the
    contract's keys) land in the fields the dashboard's capacity query reads."""
    from tests.unit.test_outputs import tick_result

    db = "capacity"
    live_run.influx.query(f"CREATE DATABASE {db}")
    sink = InfluxSink.open(
        live_run.influx.write_url(db),
        None,
        application="cap",
        thresholds={"p95_ms": 250.0},
        flush_s=0.05,
    )
    sink.start()
    now = int(time.time() * 1000)
    ticks: list[TickResult] = [
        tick_result(
            now + i * 1000,
            tick=i + 1,
            detail={"capacity_rps": 150.0 + i, "capacity_lo_rps": 140.0, "capacity_hi_rps": 160.0},
        )
        for i in range(5)
    ]
    for t in ticks:
        sink.tick(t)
    sink.end({"verdict": "PASS", "stop_reason": "duration"})
    assert sink.dropped == 0
    query = next(q for _, q in _dashboard_queries() if "capacity_rps" in q)
    points = live_run.influx.points(_grafana_expand(query, now - 1000, now + 10_000, "cap"), db)
    estimates = [p["capacity"] for p in points if p["capacity"] is not None]
    assert estimates == [150.0, 151.0, 152.0, 153.0, 154.0]
    assert {p["capacity 90% lo"] for p in points if p["capacity"] is not None} == {140.0}


def test_prometheus_scraped_the_runs_gauges_and_decision_counters(live_run: LiveRun) -> None:
    prom = live_run.prometheus
    start, end = live_run.started_ms / 1000, live_run.ended_ms / 1000 + 5
    data = prom.api(
        "query_range",
        query=f'loadguard_rate{{application="{APP}"}}',
        start=str(start),
        end=str(end),
        step="1",
    )
    assert len(data["result"]) == 1, data
    series = data["result"][0]
    assert series["metric"]["job"] == "loadguard"
    scraped = {round(float(v), 3) for _, v in series["values"]}
    logged = {round(float(r["old_rate"]), 3) for r in live_run.rows}
    assert len(series["values"]) >= 10
    assert scraped <= logged, (scraped, logged)
    assert len(scraped) >= 2  # the rate moved, and Prometheus saw it move
    counters = prom.api(
        "query",
        query=f'max_over_time(loadguard_decisions_total{{application="{APP}"}}[10m])',
        time=str(end),
    )
    seen = {s["metric"]["action"]: float(s["value"][1]) for s in counters["result"]}
    assert set(seen) == {"INCREASE", "HOLD", "DECREASE", "STOP"}
    for action, count in seen.items():
        logged_count = sum(r["action"] == action for r in live_run.rows)
        # The last scrape comes at most a scrape interval (1 s = one tick) before the end.
        assert logged_count - 2 <= count <= logged_count, (action, count, logged_count)
    assert seen["INCREASE"] >= 1
    print(
        f"\nprometheus: loadguard_rate {len(series['values'])} samples, values "
        f"{sorted(scraped)}; loadguard_decisions_total {seen}"
    )
    p95 = prom.api(
        "query_range",
        query=f'loadguard_p95_ms{{application="{APP}"}}',
        start=str(start),
        end=str(end),
        step="1",
    )
    assert any(v != "NaN" and 0 < float(v) < 5000 for _, v in p95["result"][0]["values"])


def test_metrics_port_is_closed_when_the_run_ends(live_run: LiveRun) -> None:
    assert live_run.summary["outputs"]["prometheus"]["address"] == (
        f"127.0.0.1:{live_run.metrics_port}"
    )
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection(("127.0.0.1", live_run.metrics_port), timeout=2),
    ):
        pass
