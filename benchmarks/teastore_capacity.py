"""TeaStore's capacity on this machine: a fixed-rate step sweep of the browse plan.

    .venv/bin/python benchmarks/teastore_capacity.py --layout single
    .venv/bin/python benchmarks/teastore_capacity.py --layout per-service --rates 20,40,60,80

One TeaStore (``loadguard teastore``, the cached build) is started per invocation; its
start time and the RSS of its JVMs are recorded. The browse plan
(examples/teastore/teastore-browse.jmx) then runs at ``--warmup-rate`` for ``--warmup``
seconds (the JIT's warm-up: p95 falls several-fold in the first minute), and then at each rate
of ``--rates`` (samples/s, ascending) for ``--step`` seconds, one JMeter per step, paced
by the plan's Elastic Timer. A step's p95, error rate and achieved rate count the
top-level samples started after its first ``--settle`` seconds. The sweep stops at the
first step past the collapse (p95 over 4x the SLO or over 10 % errors): TeaStore does
not recover from one at the same rate, so later steps would measure the collapse.

λ* is ``loadguard.lab.evaluate.lambda_star``'s: the largest achieved rate with p95 <= SLO
and errors <= 1 %, interpolated towards the first failing step. Rates are **samples**
per second (one sampler of the plan; a redirecting POST is one sample of two HTTP
requests, so the server sees about 1.5 requests per sample). JMeter runs on the same
2 cores as TeaStore, so the figures are this machine's, load average included.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadguard.jmeter.home import JMeterHome, find_jmeter_home, jmeter_command
from loadguard.lab.evaluate.lambda_star import SweepPoint, lambda_star_from_sweep
from loadguard.lab.teastore.build import ensure_build
from loadguard.lab.teastore.runner import TeaStoreOptions, running_teastore
from loadguard.lab.teastore.source import resolve_source

PLAN = Path(__file__).resolve().parents[1] / "examples" / "teastore" / "teastore-browse.jmx"


def point_from_jtl(jtl: Path, rate: float, seconds: float, settle: float) -> SweepPoint:
    """The step's point: top-level samples started in [t0 + settle, min(t0 + seconds,
    the last start)) -- the plan's scheduler may stop the threads before t0 + seconds,
    as its clock starts before the first sample."""
    df = pd.read_csv(jtl)
    top = df[~df["label"].astype(str).str.contains(r"-\d+$")]
    if top.empty:
        return SweepPoint(rate, 0.0, float("inf"), 1.0, 0)
    t0 = int(top["timeStamp"].min())
    lo = t0 + settle * 1000
    hi = min(t0 + seconds * 1000, int(top["timeStamp"].max()))
    steady = top[(top["timeStamp"] >= lo) & (top["timeStamp"] < hi)]
    if steady.empty or hi <= lo:
        return SweepPoint(rate, 0.0, float("inf"), 1.0, 0)
    ok = steady["success"].astype(str).str.lower() == "true"
    return SweepPoint(
        offered_rps=rate,
        achieved_rps=len(steady) / ((hi - lo) / 1000.0),
        p95_ms=float(np.quantile(steady["elapsed"].to_numpy(dtype=float), 0.95)),
        error_rate=float(1.0 - ok.mean()),
        samples=len(steady),
    )


def run_step(
    home: JMeterHome, port: int, rate: float, seconds: float, settle: float, out: Path
) -> tuple[SweepPoint, float]:
    """Hold ``rate`` samples/s for ``seconds``; returns the point and the load average."""
    out.mkdir(parents=True, exist_ok=True)
    jtl = out / "results.jtl"
    args = ["-n", "-t", str(PLAN), "-l", str(jtl), "-j", str(out / "jmeter.log")]
    props = {
        "hostname": "127.0.0.1",
        "port": port,
        "numUser": 100,  # TeaStore generates user1..user100
        "rampUp": 1,
        "duration": int(seconds) + 15,  # JMeter's start and the timer's compile come first
        "loadguard.tpm": f"{rate * 60:g}",
        "jmeterengine.force.system.exit": "true",
    }
    args += [f"-J{k}={v}" for k, v in props.items()]
    with (out / "jmeter.out").open("w") as fh:
        subprocess.run(
            jmeter_command(home, args), stdout=fh, stderr=subprocess.STDOUT, timeout=seconds + 180
        )
    return point_from_jtl(jtl, rate, seconds, settle), os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layout", choices=["single", "per-service"], default="single")
    ap.add_argument("--rates", default="10,20,30,40,60,80,100,120,140,160")
    ap.add_argument("--step", type=float, default=40.0, help="seconds per step")
    ap.add_argument("--settle", type=float, default=10.0, help="seconds cut from each step")
    ap.add_argument("--warmup", type=float, default=90.0, help="seconds of warm-up")
    ap.add_argument("--warmup-rate", type=float, default=5.0, help="samples/s of the warm-up")
    ap.add_argument("--p95-ms", type=float, default=500.0)
    ap.add_argument("--heap", default="512m")
    ap.add_argument("--max-threads", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    rates = [float(r) for r in a.rates.split(",")]
    out = a.out or Path("results") / f"teastore-capacity-{a.layout}-{time.strftime('%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    home = find_jmeter_home()
    built = ensure_build(resolve_source(None), log=print)
    print(f"build: {'reused' if built.reused else 'built'} in {built.seconds:.1f}s")
    opts = TeaStoreOptions(
        layout=a.layout, port=0, heap=a.heap, max_threads=a.max_threads, logs=out / "logs"
    )
    result: dict[str, object] = {
        "layout": a.layout,
        "heap": a.heap,
        "max_threads": a.max_threads,
        "build_s": built.seconds,
        "build_reused": built.reused,
        "load_at_start": os.getloadavg()[0],
    }
    t = time.monotonic()
    with running_teastore(built.build, opts, log=print) as ts:
        result["start_s"] = time.monotonic() - t
        result["load_at_ready"] = os.getloadavg()[0]
        result["rss_ready_mib"] = ts.rss_bytes() / 2**20
        print(f"ready after {result['start_s']:.0f}s, RSS {result['rss_ready_mib']:.0f} MiB")
        warm, load = run_step(home, ts.port, a.warmup_rate, a.warmup, a.settle, out / "warmup")
        result["warmup"] = {**warm.__dict__, "load": load}
        print(f"warm-up {a.warmup_rate:g}/s: p95 {warm.p95_ms:.0f} ms, load {load:.1f}")
        points: list[SweepPoint] = []
        loads: list[float] = []
        for rate in rates:
            p, load = run_step(home, ts.port, rate, a.step, a.settle, out / f"rate-{rate:g}")
            points.append(p)
            loads.append(load)
            print(
                f"{rate:g}/s: achieved {p.achieved_rps:.1f}/s, p95 {p.p95_ms:.0f} ms, "
                f"errors {p.error_rate:.2%}, load {load:.1f}",
                flush=True,
            )
            if p.p95_ms > 4 * a.p95_ms or p.error_rate > 0.10:
                break
        result["rss_end_mib"] = ts.rss_bytes() / 2**20
    lam = lambda_star_from_sweep(points, a.p95_ms, 0.01)
    result["points"] = [{**p.__dict__, "load": ld} for p, ld in zip(points, loads, strict=True)]
    result["lambda_star"] = lam.rps
    result["bounded"] = lam.bounded
    (out / "capacity.json").write_text(json.dumps(result, indent=2) + "\n")
    lam_text = "-" if lam.rps is None else f"{lam.rps:.1f} samples/s"
    print(f"lambda* ({a.layout}, p95 <= {a.p95_ms:g} ms): {lam_text}; {out / 'capacity.json'}")


if __name__ == "__main__":
    main()
