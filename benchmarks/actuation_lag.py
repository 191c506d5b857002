"""Actuation lag of a pacing timer on the real JMeter: push rates, read the JTL.

Prints, per push, the lag until the achieved rate holds within +-15 % of the new target
and the mean rate held from 2 s after the push. The Elastic Timer and the stock Constant
Throughput Timer run in the same invocation, so their figures compare on the same load.

    .venv/bin/python benchmarks/actuation_lag.py --timer ctt4 --timer elastic \\
        --threads 120 --schedule 0:10,8:40 --duration 20

``--schedule`` lists offset_s:rate_rps pairs (offset from the first samples; the first one
is also the rate the run starts at); ``--duration`` is the span analysed from there, after
which JMeter is killed (JTL autoflush is on, so every sample so far is on disk).
``--sampler debug`` uses JMeter's Debug Sampler instead of a loopback HTTP server (for rates
the Python server cannot serve).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadguard.jmeter.home import find_jmeter_home
from tests.elastic_harness import (
    analyse,
    arrivals_ms,
    http_ok_server,
    paced_plan,
    push_schedule,
    start_jmeter,
    tpm,
    wait_for_engine,
)


def burstiness(ts: npt.NDArray[np.int64], start_ms: int, end_ms: int, rate: float) -> str:
    """Inter-arrival CV (0: a metronome, 1: Poisson, >1: bursts) and the busiest 100 ms
    against its expected count, over the held part of a segment."""
    held = ts[(ts >= start_ms) & (ts < end_ms)]
    if len(held) < 10:
        return "too few arrivals for burstiness"
    gaps = np.diff(held).astype(float)
    cv = float(gaps.std() / gaps.mean()) if gaps.mean() > 0 else float("inf")
    per_100ms = np.searchsorted(held, held + 100) - np.arange(len(held))
    return f"inter-arrival CV {cv:.2f}, max {int(per_100ms.max())}/100ms (mean {rate / 10:.1f})"


def run_one(
    timer: str, threads: int, schedule: list[tuple[float, float]], duration: int, sampler: str
) -> None:
    home = find_jmeter_home()
    with tempfile.TemporaryDirectory() as tmp, http_ok_server() as port:
        out = Path(tmp)
        plan = out / "plan.jmx"
        plan.write_text(paced_plan(threads, timer, sampler))
        props: dict[str, str | int | float] = {
            "target.port": port,
            "duration": duration + 60,  # startup margin: the run is cut at the span's end
            "loadguard.tpm": tpm(schedule[0][1]),
        }
        with start_jmeter(home, plan, out, props) as jm:
            t0 = wait_for_engine(jm.engine, jm.jtl)
            jvm = psutil.Process(jm.proc.pid)
            cpu0 = jvm.cpu_times()
            wall0 = time.monotonic()
            pushes = push_schedule([jm.engine], schedule, t0)
            rest = duration - (time.monotonic() - t0)
            if rest > 0:
                time.sleep(rest)
            cpu1 = jvm.cpu_times()
            cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (time.monotonic() - wall0)
            end_ms = int(time.time() * 1000)
            jm.kill()
        ts = arrivals_ms([jm.jtl])
        if os.environ.get("LAG_KEEP"):
            import shutil

            shutil.copy(jm.jtl, f"{os.environ['LAG_KEEP']}-{timer}.jtl")
            print("  pushes at", [(p.at_ms - int(ts[0])) / 1000 for p in pushes])
        print(f"{timer}: {threads} threads, {sampler} sampler, JVM CPU {cpu * 100:.0f}% of a core")
        bounds = [p.at_ms for p in pushes[1:]] + [end_ms]
        for push, seg, seg_end in zip(pushes, analyse(ts, pushes, end_ms), bounds, strict=True):
            lag = "never" if seg.lag_s is None else f"{seg.lag_s:.2f}s"
            lag += "" if seg.switch_s is None else f" (re-timed after {seg.switch_s:.3f}s)"
            burst = burstiness(ts, push.at_ms + 2000, seg_end, push.rate_rps)
            print(
                f"  push {push.rate_rps:7.1f} req/s: lag {lag}, held {seg.held_rps:7.1f} "
                f"req/s, {burst}"
            )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timer", action="append", choices=["elastic", "ctt4", "ctt2", "ptt"])
    parser.add_argument("--threads", type=int, default=120)
    parser.add_argument("--schedule", default="0:10,8:40")
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--sampler", choices=["http", "debug"], default="http")
    args = parser.parse_args()
    schedule = [(float(a), float(b)) for a, b in (p.split(":") for p in args.schedule.split(","))]
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    for timer in args.timer or ["ctt4", "elastic"]:
        run_one(timer, args.threads, schedule, args.duration, args.sampler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
