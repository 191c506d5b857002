"""The demo target over real HTTP on loopback: browse flow, 503, degrade, model endpoint."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from loadguard.errors import EngineError
from loadguard.lab.simulate import mmc
from loadguard.lab.target.distributions import ServiceDist
from loadguard.lab.target.model import ENDPOINTS, TargetModel, build_model
from loadguard.lab.target.process import spawn_target
from loadguard.lab.target.runner import running_target


def _const_model(workers: int, queue: int, service_s: float, **kw: float) -> TargetModel:
    dist = ServiceDist("const", service_s)
    return TargetModel(
        kind="mmc", workers=workers, queue=queue, service={n: dist for n in ENDPOINTS}, **kw
    )


def _timed_get(url: str) -> tuple[int, float]:
    start = time.perf_counter()
    status = requests.get(url, timeout=10).status_code
    return status, time.perf_counter() - start


def test_browse_session_logs_in_adds_to_cart_and_logs_out() -> None:
    with running_target(build_model("shop", workers=4, queue=50, service_s=0.005)) as target:
        s = requests.Session()
        assert "category=1&page=1" in s.get(target.base_url + "/", timeout=5).text
        login = s.post(
            target.base_url + "/loginAction",
            data={"username": "user7", "password": "password"},
            allow_redirects=False,
            timeout=5,
        )
        assert login.status_code == 302
        assert login.headers["Location"] == "/tools.descartes.teastore.webui/"
        assert "Signed in as user7" in s.get(target.base_url + "/", timeout=5).text
        listing = s.get(target.base_url + "/category?category=2&page=3", timeout=5)
        assert listing.status_code == 200
        assert 'name="productid" value="141"' in listing.text
        added = s.post(
            target.base_url + "/cartAction", data={"addToCart": "", "productid": "141"}, timeout=5
        )
        assert added.history[0].status_code == 302
        assert added.url.endswith("/cart") and "Green Tea No. 41" in added.text
        s.post(target.base_url + "/loginAction", data={"logout": ""}, timeout=5)
        assert "Sign in" in s.get(target.base_url + "/", timeout=5).text
        assert target.counters().served == 9


@pytest.mark.parametrize(
    "path",
    [
        "/category?category=&page=1",
        "/category?category=99&page=1",
        "/category?category=1&page=0",
        "/product?id=NOT_FOUND",
        "/product?id=0",
        "/cartAction?productid=1",
        "/cartAction?addToCart=&productid=x",
    ],
)
def test_bad_parameters_answer_400_without_a_worker(path: str) -> None:
    with running_target(build_model("mmc", workers=1, queue=1, service_s=0.01)) as target:
        assert requests.get(target.base_url + path, timeout=5).status_code == 400
        assert target.counters().served == 0


def test_wrong_password_redirects_to_the_login_page() -> None:
    with running_target(build_model("mmc", workers=1, queue=1, service_s=0.0)) as target:
        r = requests.post(
            target.base_url + "/loginAction",
            data={"username": "user1", "password": "nope"},
            allow_redirects=False,
            timeout=5,
        )
        assert (r.status_code, r.headers["Location"]) == (
            302,
            "/tools.descartes.teastore.webui/login",
        )


def test_queue_overflow_answers_503_at_once() -> None:
    # c=1, K=2, 400 ms each: of 6 concurrent requests 3 are served (in turn) and 3 rejected.
    with running_target(_const_model(1, 2, 0.4)) as target:
        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(_timed_get, [target.base_url + "/"] * 6))
        ok = sorted(t for status, t in results if status == 200)
        rejected = [t for status, t in results if status == 503]
        assert len(ok) == 3 and len(rejected) == 3
        assert max(rejected) < 0.35  # answered at once, not after a worker
        # FCFS on one worker: the three finish about 0.4, 0.8 and 1.2 s in.
        assert ok[0] == pytest.approx(0.4, abs=0.2)
        assert ok[2] == pytest.approx(1.2, abs=0.3)
        assert target.counters().rejected == 3


def test_degrade_halves_capacity_mid_run() -> None:
    model = _const_model(2, 10, 0.3, degrade_at_s=0.6, degrade_factor=0.5)
    with running_target(model) as target:
        with ThreadPoolExecutor(2) as pool:
            before = list(pool.map(_timed_get, [target.base_url + "/"] * 2))
        time.sleep(max(0.0, 0.7 - max(t for _, t in before)))
        with ThreadPoolExecutor(2) as pool:
            after = list(pool.map(_timed_get, [target.base_url + "/"] * 2))
        stats = requests.get(f"http://127.0.0.1:{target.port}/_loadguard/stats", timeout=5).json()
    assert max(t for _, t in before) < 0.5  # two workers: both in parallel
    assert max(t for _, t in after) > 0.5  # one worker: the second waits for the first
    assert stats["workers_now"] == 1


def test_model_endpoint_reports_the_analytic_lambda_star() -> None:
    model = build_model(
        "mmc", workers=8, queue=100, service_s=0.05, degrade_at_s=120, degrade_factor=0.5
    )
    with running_target(model) as target:
        base = f"http://127.0.0.1:{target.port}/_loadguard/model"
        body = requests.get(base + "?p95=300ms", timeout=10).json()
        p99 = requests.get(base + "?p99=1s", timeout=10).json()
        bad = requests.get(base + "?p95=300", timeout=10)
    assert body["model"] == "mmc" and body["workers"] == 8 and body["queue"] == 100
    assert body["lambda_star_method"] == "analytic"
    assert body["lambda_star"] == pytest.approx(mmc.lambda_star(8, 0.05, 0.3))
    assert body["lambda_star_degraded"] == pytest.approx(mmc.lambda_star(4, 0.05, 0.3))
    assert body["lambda_star_now"] == body["lambda_star"] and body["workers_now"] == 8
    assert body["saturation_rps"] == pytest.approx(160.0)
    assert p99["slo"] == {"quantile": 0.99, "ms": 1000.0}
    assert p99["lambda_star"] == pytest.approx(mmc.lambda_star(8, 0.05, 1.0, q=0.99))
    assert bad.status_code == 400 and "unit" in bad.json()["error"]


def test_subprocess_target_prints_its_port_and_lambda_star_and_stops_cleanly() -> None:
    options = ["--model", "mmc", "--workers", "4", "--service", "20ms", "--p95", "200ms"]
    with spawn_target(options) as target:
        assert target.ready.method == "analytic"
        assert target.ready.lambda_star_rps == pytest.approx(
            mmc.lambda_star(4, 0.02, 0.2), rel=1e-3
        )
        assert requests.get(target.base_url + "/", timeout=5).status_code == 200
        served = requests.get(f"http://127.0.0.1:{target.port}/_loadguard/model", timeout=5)
        assert served.json()["lambda_star"] == pytest.approx(target.ready.lambda_star_rps, 1e-3)
        code = target.stop()
    assert code == 0
    assert any("stopped after" in line and "served 1" in line for line in target.output)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--service", "5"], "unit"),
        (["--workers", "0"], "--workers"),
        (["--model", "mmc", "--endpoint-service", "home=exp:5ms"], "shop"),
        (["--endpoint-service", "bogus=exp:5ms"], "unknown endpoint"),
        (["--port", "70000"], "--port"),
    ],
)
def test_bad_cli_options_exit_2_with_one_line(args: list[str], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "loadguard", "target", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_busy_port_is_an_engine_error_not_a_traceback() -> None:
    model = build_model("mmc", workers=1, queue=1, service_s=0.0)
    with (
        running_target(model) as first,
        pytest.raises(EngineError, match="cannot listen"),
        running_target(model, port=first.port),
    ):
        pass


def test_stop_does_not_wait_for_requests_asleep_in_a_long_queue() -> None:
    with ThreadPoolExecutor(1) as pool:
        with running_target(_const_model(1, 10, 30.0)) as target:
            pending = pool.submit(_timed_get, target.base_url + "/")
            time.sleep(0.5)
            stopping = time.perf_counter()
        stopped_in = time.perf_counter() - stopping
        with pytest.raises(requests.RequestException):
            pending.result(timeout=30)
    assert stopped_in < 6.0
