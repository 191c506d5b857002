"""Cost per tick of each live output, as a ratio against the same tick without it.

One real ``ControlLoop`` (window, SLO, the default policy, the decision log on disk, the
summary; a dry-run actuator) is fed a synthetic load: ``--rate`` samples/s, lognormal
elapsed times, 1 % failures, one tick per simulated second. Its ``on_tick`` changes tick
by tick between the configurations below (every round runs each once, in a shuffled
order), so all of them are measured in the same run, on the same window sizes and under
the same machine load:

* ``none``: no output (the reference);
* ``influx``: writing to a real InfluxDB 1.x (``--influx URL``, or an ``influxd`` started
  here on a free loopback port with a temporary data folder);
* ``influx-down``: a port that refuses connections (the database is gone);
* ``influx-hung``: a port that accepts and never answers (a hung database);
* ``prometheus``: ``/metrics`` served on loopback and scraped every 0.2 s meanwhile.

Per configuration: the median and p99 wall time of ``loop.tick()`` (what the controller
waits for) and its CPU time in the loop's thread; for InfluxDB also the writer thread's
CPU time per point sent, measured on that thread's own clock.

    .venv/bin/python -m benchmarks.output_cost
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import requests

from loadguard.actuator.engines import DryRunActuator
from loadguard.decisions import DecisionLogWriter
from loadguard.jtl.sample import SampleBatch
from loadguard.loop import ControlLoop, LoopSettings, TickResult
from loadguard.outputs import OutputConfig, OutputSet, open_outputs
from loadguard.outputs.influx import InfluxSink
from loadguard.policies import DEFAULT_POLICY, build_policy
from loadguard.slo import SloSpec
from loadguard.summary import SummaryBuilder
from loadguard.window import Window


class SimClock:
    """Wall-clock epoch ms that advance one tick per ``tick``; never sleeps."""

    def __init__(self) -> None:
        self.ms = int(time.time() * 1000)

    def wall_ms(self) -> int:
        return self.ms

    def mono_ms(self) -> int:
        return self.ms

    def wait_ms(self, ms: int, stop: threading.Event) -> None:
        self.ms += max(ms, 0)


class SynthSource:
    """``rate`` samples per simulated second, completion times spread over it."""

    malformed_rows = 0
    illegal_xml_chars = 0

    def __init__(self, clock: SimClock, rate: int, seed: int = 7) -> None:
        self.clock = clock
        self.rate = rate
        self.rng = np.random.default_rng(seed)

    def poll(self) -> SampleBatch:
        now = self.clock.wall_ms()
        end = now - 1000 + self.rng.integers(1, 1001, self.rate)
        elapsed = np.maximum(1, self.rng.lognormal(4.0, 0.5, self.rate)).astype(np.int64)
        ok = self.rng.random(self.rate) > 0.01
        return SampleBatch.of(end - elapsed, elapsed, ok, ["/api"] * self.rate)


@contextlib.contextmanager
def local_influx(url: str | None) -> Iterator[str]:
    """``url``, or a temporary ``influxd`` on loopback with database ``bench``."""
    if url is not None:
        yield url
        return
    from tests.servers import influx_server

    folder = Path(tempfile.mkdtemp(prefix="lg-bench-influx-"))
    try:
        with influx_server(folder) as server:
            server.query("CREATE DATABASE bench")
            yield server.write_url("bench")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def hung_port() -> Iterator[int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1024)  # connections complete in the backlog; nothing ever answers
    try:
        yield int(srv.getsockname()[1])
    finally:
        srv.close()


def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def thread_cpu_s(thread: threading.Thread | None) -> float:
    if thread is None or thread.ident is None or not thread.is_alive():
        return 0.0
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate", type=int, default=500, help="samples per simulated second")
    ap.add_argument("--ticks", type=int, default=300, help="ticks per configuration")
    ap.add_argument("--pause", type=float, default=0.02, help="real seconds between ticks")
    ap.add_argument("--influx", help="a 1.x write URL (default: start influxd here)")
    args = ap.parse_args()

    spec = SloSpec.from_options(p95="250ms", error_rate="1%", window="10s", max_rate="5000")
    thresholds = spec.log_thresholds()
    folder = Path(tempfile.mkdtemp(prefix="lg-bench-"))
    clock = SimClock()
    with (
        local_influx(args.influx) as influx_url,
        hung_port() as hung,
        DecisionLogWriter(folder / "decisions.csv") as writer,
    ):
        outputs: dict[str, OutputSet | None] = {"none": None}
        for name, url in (
            ("influx", influx_url),
            ("influx-down", f"http://127.0.0.1:{refused_port()}/write?db=bench"),
            ("influx-hung", f"http://127.0.0.1:{hung}/write?db=bench"),
        ):
            outputs[name] = open_outputs(
                OutputConfig(influx=url), thresholds=thresholds, application=f"bench-{name}"
            )
        outputs["prometheus"] = open_outputs(
            OutputConfig(prometheus_port=0), thresholds=thresholds, application="bench"
        )
        prom = outputs["prometheus"].sinks[0]
        scraping = threading.Event()
        scrapes: list[float] = []

        def scrape() -> None:
            while not scraping.is_set():
                t = time.perf_counter()
                requests.get(f"http://{prom.address}/metrics", timeout=5)  # type: ignore[attr-defined]
                scrapes.append(time.perf_counter() - t)
                scraping.wait(0.2)

        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()

        inside: dict[str, list[float]] = {name: [] for name in outputs}

        def timed(name: str, call: Callable[[TickResult], None]) -> Callable[[TickResult], None]:
            def run(result: TickResult) -> None:
                t = time.perf_counter()
                call(result)
                inside[name].append((time.perf_counter() - t) * 1000)

            return run

        on_tick: dict[str, Callable[[TickResult], None] | None] = {
            name: (None if out is None else timed(name, out.tick)) for name, out in outputs.items()
        }
        loop = ControlLoop(
            source=SynthSource(clock, args.rate),
            window=Window(spec.window_ms),
            evaluator=spec,
            policy=build_policy(DEFAULT_POLICY, spec, lag_ms=1000),
            actuator=DryRunActuator(),
            writer=writer,
            summary=SummaryBuilder(spec.window_ms, thresholds),
            settings=LoopSettings(tick_ms=1000),
            clock=clock,
        )
        loop.start(50.0)
        names = list(on_tick)
        for _ in range(15):  # fill the window first
            clock.ms += 1000
            loop.tick()
        influx_sinks = {n: o.sinks[0] for n, o in outputs.items() if o and n.startswith("influx")}
        cpu0 = {n: thread_cpu_s(s._thread) for n, s in influx_sinks.items()}  # type: ignore[attr-defined]
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        order = np.random.default_rng(11)
        rounds = [list(order.permutation(names)) for _ in range(args.ticks)]
        for name in (n for r in rounds for n in r):
            loop.on_tick = on_tick[name]
            clock.ms += 1000
            c = time.thread_time()
            t = time.perf_counter()
            loop.tick()
            wall[name].append((time.perf_counter() - t) * 1000)
            cpu[name].append((time.thread_time() - c) * 1000)
            time.sleep(args.pause)
        time.sleep(1.0)  # let the live writer send its last batches
        writer_cpu = {
            n: thread_cpu_s(s._thread) - cpu0[n]  # type: ignore[attr-defined]
            for n, s in influx_sinks.items()
        }
        scraping.set()
        scraper.join(5)
        sent: dict[str, Any] = {}
        for name, out in outputs.items():
            if out is not None:
                out.end({"verdict": "PASS", "stop_reason": "duration"})
                sent[name] = out.summary_json()["outputs"]
    shutil.rmtree(folder, ignore_errors=True)

    base_wall = float(np.median(wall["none"]))
    base_cpu = float(np.median(cpu["none"]))
    result: dict[str, Any] = {"rate": args.rate, "ticks_per_config": args.ticks}
    print(f"{args.ticks} ticks per configuration, shuffled rounds, {args.rate} samples/s, "
          f"10 s window ({args.rate * 10} samples)")  # fmt: skip
    print(f"{'output':<12} {'wall med':>9} {'p99':>8} {'CPU med':>8} {'in output':>10}"
          "  ratio wall / CPU / (tick+output)/tick")  # fmt: skip
    for name in names:
        w, c = float(np.median(wall[name])), float(np.median(cpu[name]))
        p99 = float(np.percentile(wall[name], 99))
        own = float(np.median(inside[name])) if inside[name] else 0.0
        row = {"wall_ms_median": w, "wall_ms_p99": p99, "cpu_ms_median": c,
               "output_ms_median": own, "wall_ratio": w / base_wall, "cpu_ratio": c / base_cpu,
               "own_ratio": (base_wall + own) / base_wall}  # fmt: skip
        result[name] = row
        print(f"{name:<12} {w:8.3f}ms {p99:7.3f}ms {c:7.3f}ms {own:8.4f}ms  {w / base_wall:5.3f} / "
              f"{c / base_cpu:5.3f} / {row['own_ratio']:6.4f}")  # fmt: skip
    live: InfluxSink = influx_sinks["influx"]  # type: ignore[assignment]
    per_point = writer_cpu["influx"] / max(live.written, 1) * 1e6
    result["influx"]["points_written"] = live.written
    result["influx"]["points_dropped"] = live.dropped
    result["influx"]["writer_cpu_us_per_point"] = per_point
    result["influx-down"]["points_dropped"] = influx_sinks["influx-down"].dropped  # type: ignore[attr-defined]
    result["influx-hung"]["points_dropped"] = influx_sinks["influx-hung"].dropped  # type: ignore[attr-defined]
    result["prometheus"]["scrape_ms_median"] = float(np.median(scrapes)) * 1000
    result["prometheus"]["scrapes"] = len(scrapes)
    print(f"influx writer thread: {per_point:.0f} us CPU per point sent "
          f"({live.written} written, {live.dropped} dropped); "
          f"down: {result['influx-down']['points_dropped']} dropped, "
          f"hung: {result['influx-hung']['points_dropped']} dropped")  # fmt: skip
    print(
        f"prometheus: {len(scrapes)} scrapes, "
        f"median {result['prometheus']['scrape_ms_median']:.2f} ms"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
