"""Step sweep: the demo target at fixed offered rates (real JMeter) -> p95, beside the theory.

The target runs as ``loadguard target --model mmc`` (c workers, exponential service, a
K-deep queue) in a child process. For each rate a fresh JMeter 5.6.3 run offers it with
a Constant Throughput Timer, calcMode 4 (all threads of the group, shared), reading
``${__P(loadguard.tpm)}``; the first ``--warmup`` seconds are dropped (every thread's
first sample is undelayed, and the queue needs to fill).

Printed per rate: achieved rate, measured p95 and error rate, and two references at the
achieved rate (the CTT's shared modes space samples by whole ms, round(60000/tpm), so
offered 150/s runs at 1000/7 = 142.9/s):

* M/M/c analytic p95 (``loadguard.lab.simulate.mmc``): Poisson arrivals -- what λ* assumes;
* D/M/c simulated p95 (``FcfsQueue``, arrivals exactly 1/λ apart): the CTT's pacing.

    .venv/bin/python benchmarks/target_sweep.py
    .venv/bin/python benchmarks/target_sweep.py --rates 40,80,120,140,150 --seconds 20
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from loadguard.jmeter.home import find_jmeter_home, jmeter_command
from loadguard.lab.simulate import mmc
from loadguard.lab.simulate.fcfs import FcfsQueue
from loadguard.lab.target.pages import BASE
from loadguard.lab.target.process import spawn_target

PLAN = """<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3">
  <hashTree>
    <TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="fixed rate">
      <elementProp name="TestPlan.user_defined_variables" elementType="Arguments">
        <collectionProp name="Arguments.arguments"/>
      </elementProp>
    </TestPlan>
    <hashTree>
      <ThreadGroup guiclass="ThreadGroupGui" testclass="ThreadGroup" testname="TG">
        <stringProp name="ThreadGroup.num_threads">${__P(threads,150)}</stringProp>
        <stringProp name="ThreadGroup.ramp_time">${__P(rampUp,5)}</stringProp>
        <boolProp name="ThreadGroup.scheduler">true</boolProp>
        <stringProp name="ThreadGroup.duration">${__P(duration,20)}</stringProp>
        <stringProp name="ThreadGroup.on_sample_error">continue</stringProp>
        <elementProp name="ThreadGroup.main_controller" elementType="LoopController">
          <intProp name="LoopController.loops">-1</intProp>
          <boolProp name="LoopController.continue_forever">false</boolProp>
        </elementProp>
      </ThreadGroup>
      <hashTree>
        <HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy"
                          testname="product">
          <stringProp name="HTTPSampler.domain">127.0.0.1</stringProp>
          <stringProp name="HTTPSampler.port">${__P(port)}</stringProp>
          <stringProp name="HTTPSampler.path">{path}</stringProp>
          <stringProp name="HTTPSampler.method">GET</stringProp>
          <boolProp name="HTTPSampler.use_keepalive">true</boolProp>
          <stringProp name="HTTPSampler.response_timeout">30000</stringProp>
        </HTTPSamplerProxy>
        <hashTree/>
        <ConstantThroughputTimer guiclass="TestBeanGUI" testclass="ConstantThroughputTimer"
                                 testname="ctt">
          <intProp name="calcMode">4</intProp>
          <stringProp name="throughput">${__P(loadguard.tpm)}</stringProp>
        </ConstantThroughputTimer>
        <hashTree/>
      </hashTree>
    </hashTree>
  </hashTree>
</jmeterTestPlan>
"""


def dmc_p95(rate: float, servers: int, queue: int, mean_s: float, n: int = 100_000) -> float:
    """p95 of D/M/c/K: arrivals exactly 1/rate apart, exponential service (rejected = inf)."""
    rng = np.random.default_rng(11)
    arrivals = np.arange(n) / rate
    _, end, rejected = FcfsQueue(servers, queue).offer(arrivals, rng.exponential(mean_s, n))
    response = np.where(rejected, np.inf, end - arrivals)[n // 10 :]
    return float(np.quantile(response, 0.95))


def dmc_lambda_star(servers: int, queue: int, mean_s: float, slo_s: float) -> float:
    lo, hi = 0.0, servers / mean_s
    while hi - lo > 0.1:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if dmc_p95(mid, servers, queue, mean_s) <= slo_s else (lo, mid)
    return lo


def run_rate(port: int, rate: float, seconds: int, warmup: int, work: Path) -> dict[str, float]:
    home = find_jmeter_home()
    plan = work / "fixed_rate.jmx"
    plan.write_text(PLAN.replace("{path}", BASE + "/product?id=1"))
    jtl = work / f"rate_{rate:g}.jtl"
    args = [
        "-n", "-t", str(plan), "-l", str(jtl), "-j", str(work / f"rate_{rate:g}.log"),
        f"-Jport={port}", f"-Jloadguard.tpm={rate * 60:g}", f"-Jduration={seconds}",
        "-Jjmeterengine.force.system.exit=true",
    ]  # fmt: skip
    subprocess.run(jmeter_command(home, args), capture_output=True, timeout=seconds + 60)
    df = pd.read_csv(jtl)
    t0 = df["timeStamp"].min() + warmup * 1000
    end = df["timeStamp"].max()
    steady = df[df["timeStamp"] >= t0]
    return {
        "achieved": len(steady) / ((end - t0) / 1000.0),
        "p95_ms": float(np.percentile(steady["elapsed"], 95)),
        "error_rate": float((~steady["success"]).mean()),
        "n": float(len(steady)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # Rates whose CTT interval is a whole number of ms (25, 12.5, 10, 9, 8, 7, 6 ms).
    parser.add_argument("--rates", default="40,80,100,111.11,125,142.86,166.67")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--service-ms", type=float, default=50.0)
    parser.add_argument("--queue", type=int, default=100)
    parser.add_argument("--slo-ms", type=float, default=300.0)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=8)
    args = parser.parse_args()
    c, mean_s, k = args.workers, args.service_ms / 1000.0, args.queue
    rates = [float(r) for r in args.rates.split(",")]
    options = ["--model", "mmc", "--workers", str(c), "--service", f"{args.service_ms:g}ms"]
    options += ["--queue", str(k), "--p95", f"{args.slo_ms:g}ms"]
    print(f"target: M/M/{c}/K={k}, mean service {args.service_ms:g} ms, p95 SLO {args.slo_ms:g} ms")
    print("load average at start: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()), flush=True)
    with tempfile.TemporaryDirectory() as tmp, spawn_target(options) as target:
        lam_mmc = target.ready.lambda_star_rps or float("inf")
        lam_dmc = dmc_lambda_star(c, k, mean_s, args.slo_ms / 1000.0)
        print(f"lambda_star: M/M/c analytic {lam_mmc:.1f} req/s, D/M/c simulated {lam_dmc:.1f}")
        print(
            "offered  achieved  measured_p95  M/M/c_p95  D/M/c_p95  errors   "
            "measured/D/M/c  (ms; rates req/s; theory at the achieved rate)"
        )
        for rate in rates:
            m = run_rate(target.port, rate, args.seconds, args.warmup, Path(tmp))
            # The queue sees the achieved rate (the CTT's shared modes step in whole ms:
            # 150/s offered is round(6.67) = 7 ms = 142.9/s), so compare there.
            lam = m["achieved"]
            analytic = (
                mmc.response_quantile(0.95, lam, c, mean_s) * 1000.0
                if lam < c / mean_s
                else float("inf")
            )
            sim = dmc_p95(lam, c, k, mean_s) * 1000.0
            print(
                f"{rate:7.1f}  {lam:8.1f}  {m['p95_ms']:12.0f}  {analytic:9.0f}  "
                f"{sim:9.0f}  {m['error_rate']:6.1%}   {m['p95_ms'] / sim:6.2f}",
                flush=True,
            )
    print("load average at end: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
