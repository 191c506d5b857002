"""The controller figures of docs/controller.md: every policy on the reference scenario.

Scenario: M/M/8, 50 ms mean service, queue 200, p95 <= 250 ms, Poisson arrivals, 2 s
actuation lag, start 5 req/s, 600 s (lambda* = 144.4 req/s); and the same with the
capacity halved at 300 s. Each row is the mean (and worst) over seeds 1..N.

    .venv/bin/python benchmarks/controller_figures.py [--seeds 20]

Prints a Markdown table. Same as running ``loadguard simulate ... --seed S --json`` per
seed and averaging.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadguard.lab.simulate.run import simulate
from loadguard.lab.simulate.scenario import CapacityChange, Scenario
from loadguard.lab.simulate.summary import summarize
from loadguard.policies import build_policy
from loadguard.slo import SloSpec

ROWS: list[tuple[str, str, dict[str, Any]]] = [
    ("tally", "tally (defaults)", {}),
    ("aimd", "aimd (defaults)", {}),
    ("threezone", "threezone (paper rule, with guard rails)", {}),
    ("threezone", "threezone, no settling (settle_ms=0)", {"settle_ms": 0}),
]


def figures(policy: str, params: dict[str, Any], seeds: int, halved: bool) -> dict[str, Any]:
    spec = SloSpec.from_options(p95="250ms")
    changes = (CapacityChange(300.0, 0.5),) if halved else ()
    runs = [
        summarize(
            simulate(Scenario(seed=s, changes=changes), spec, build_policy(policy, spec, **params))
        ).to_json()
        for s in range(1, seeds + 1)
    ]

    def col(key: str) -> list[float]:
        return [float("inf") if r[key] is None else float(r[key]) for r in runs]

    return {
        "viol": col("violation_share_p95"),
        "eff": col("efficiency"),
        "steady": col("steady_efficiency"),
        "t90": col("time_to_90pct_s"),
        "rec": col("recovery_s") if halved else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    mean = statistics.mean
    print(f"Steady capacity (seeds 1..{args.seeds}; mean, worst in brackets)\n")
    print("| policy | violating windows | steady efficiency | efficiency | time to 90% λ* |")
    print("|---|---|---|---|---|")
    for policy, label, params in ROWS:
        f = figures(policy, params, args.seeds, halved=False)
        print(
            f"| {label} | {mean(f['viol']):.1%} ({max(f['viol']):.1%}) "
            f"| {mean(f['steady']):.1%} ({min(f['steady']):.1%}) | {mean(f['eff']):.1%} "
            f"| {mean(f['t90']):.0f} s ({max(f['t90']):.0f} s) |"
        )
    print(f"\nCapacity halved at 300 s (seeds 1..{args.seeds})\n")
    print("| policy | violating windows | recovery | efficiency | steady efficiency |")
    print("|---|---|---|---|---|")
    for policy, label, params in ROWS:
        f = figures(policy, params, args.seeds, halved=True)
        print(
            f"| {label} | {mean(f['viol']):.1%} ({max(f['viol']):.1%}) "
            f"| {mean(f['rec']):.0f} s ({max(f['rec']):.0f} s) | {mean(f['eff']):.1%} "
            f"| {mean(f['steady']):.1%} |"
        )


if __name__ == "__main__":
    main()
