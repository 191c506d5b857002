"""Simulator speed: 10 simulated minutes at 200 req/s, against a reference in the same run.

The reference is the bare target: the same 120,000 Poisson arrivals through one
``FcfsQueue.offer`` call (the least the simulation must do). The full run adds the
generator, the JTL flush, the ``Window``, ``SloSpec.evaluate`` and the guarded policy at
every 1 s tick, plus the summary.

    .venv/bin/python benchmarks/simulate_speed.py [--repeat 3]

Prints wall seconds, simulated-seconds per wall-second, and the ratio to the reference.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadguard.lab.simulate.fcfs import FcfsQueue
from loadguard.lab.simulate.run import simulate
from loadguard.lab.simulate.scenario import Scenario
from loadguard.lab.simulate.summary import summarize
from loadguard.policies import build_policy
from loadguard.slo import SloSpec

RATE, DURATION, SERVERS = 200.0, 600.0, 16


def reference() -> float:
    rng = np.random.default_rng(1)
    n = int(RATE * DURATION)
    arrivals = np.cumsum(rng.exponential(1 / RATE, n))
    service = rng.exponential(0.05, n)
    t = time.perf_counter()
    FcfsQueue(SERVERS, 200).offer(arrivals, service)
    return time.perf_counter() - t


def full(policy: str) -> float:
    # p95 SLO far above what 16 servers give at 200 req/s: the rate stays near 200 req/s.
    spec = SloSpec.from_options(p95="250ms", max_rate="200")
    scenario = Scenario(servers=SERVERS, start_rate=RATE, duration_s=DURATION, seed=1)
    t = time.perf_counter()
    summarize(simulate(scenario, spec, build_policy(policy, spec)))
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--policy", default="tally")
    args = parser.parse_args()
    ref = min(reference() for _ in range(args.repeat))
    sim = min(full(args.policy) for _ in range(args.repeat))
    print(f"reference FcfsQueue.offer, {int(RATE * DURATION)} requests: {ref:.3f} s")
    print(f"full simulation ({args.policy}, {DURATION:.0f} s at {RATE:.0f} req/s): {sim:.3f} s")
    print(f"simulated s per wall s: {DURATION / sim:.0f}")
    print(f"full / reference: {sim / ref:.1f}x")


if __name__ == "__main__":
    main()
