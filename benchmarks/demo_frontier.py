"""The demo target's fixed-rate frontier on real JMeter (docs/controller-jmeter.md).

For each fraction of the demo target's analytic lambda* (144.4 req/s, M/M/8, 50 ms,
p95 <= 250 ms): a fresh demo target (``loadguard.lab.demo.demo_target_args``, as ``loadguard
demo`` starts it) and ``loadguard run`` of the elastic plan with ``--policy fixed
--initial-rate R`` (the open loop at R) for ``--duration`` seconds. On the JTL, on the
run's clock (t = 0 at the first sample start, samples completed by D; the run lasts
``STARTUP_MARGIN_S`` longer so that its JTL covers D):

* violations: the suite's ``violation_share`` of the tumbling 10 s windows
  (``suite_metrics.window_table``; judged from 30 s on, >= 5 samples);
* ok_rps: successful completions in (30 s, D] per second;
* efficiency: ok_rps / lambda*.

F(B) is the best efficiency of a point whose violation share <= B. Writes
``frontier.json`` in ``--out`` and prints the table.

    nice .venv/bin/python -m benchmarks.demo_frontier --out /tmp/frontier \\
        --fractions 0.70,0.80,0.85,0.90,0.95,1.00 --duration 200
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from loadguard.lab.demo import DemoOptions, demo_properties, demo_target_args, elastic_plan
from loadguard.lab.evaluate.runner import read_jtl
from loadguard.lab.evaluate.suite_metrics import SKIP_S, violation_share, window_table
from loadguard.lab.target.process import spawn_target

BUDGET = 0.05
#: The run's --duration counts from the first tick, before JMeter's first sample: this
#: much longer, so the JTL covers [0, D] on its own clock.
STARTUP_MARGIN_S = 20.0


def point(out: Path, fraction: float, duration_s: float, lam: float) -> dict[str, float | int]:
    opts = DemoOptions(out_dir=out, duration_s=duration_s)
    rate = round(fraction * lam, 1)
    run_dir = out / f"rate-{rate:g}"
    load0 = os.getloadavg()[0]
    with spawn_target(demo_target_args(opts)) as target:
        cmd = [
            sys.executable, "-m", "loadguard", "run", str(elastic_plan()),
            "--out", str(run_dir), "--force", "--no-dashboard", "-q",
            "--p95", opts.p95, "--error-rate", opts.error_rate,
            "--max-rate", str(opts.max_rate),
            "--policy", "fixed", "--initial-rate", f"{rate:g}",
            "--duration", f"{duration_s + STARTUP_MARGIN_S:g}s",
        ]  # fmt: skip
        for key, value in demo_properties(target.port, opts).items():
            cmd += ["-J", f"{key}={value}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1, 5):
        raise SystemExit(f"loadguard run exited {proc.returncode}: {proc.stderr[-2000:]}")
    batch = read_jtl(run_dir / "results.jtl")
    t0 = int(batch.start_ms.min())
    end = (batch.end_ms - t0).astype(np.float64) / 1000.0
    elapsed = (batch.end_ms - batch.start_ms).astype(np.float64)
    ok = batch.success.astype(np.bool_)
    done = end <= duration_s
    if float(end.max()) < duration_s:
        raise SystemExit(f"{run_dir}: the JTL ends at {end.max():.1f}s, before D = {duration_s}s")
    rows = window_table(elapsed[done], end[done], ok[done], duration_s)
    share, judged = violation_share(rows, 250.0)
    span = (end > SKIP_S) & done
    ok_rps = float(np.count_nonzero(ok[span])) / (duration_s - SKIP_S)
    return {
        "fraction": fraction,
        "rate_rps": rate,
        "violation_share": share if share is not None else float("nan"),
        "windows": judged,
        "ok_rps": round(ok_rps, 2),
        "efficiency": round(ok_rps / lam, 4),
        "errors": round(1.0 - float(np.count_nonzero(ok[span])) / max(int(span.sum()), 1), 5),
        "load_start": load0,
        "load_end": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--fractions", default="0.70,0.80,0.85,0.90,0.95,1.00")
    ap.add_argument("--duration", type=float, default=200.0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with spawn_target(demo_target_args(DemoOptions(out_dir=args.out))) as probe:
        lam = probe.ready.lambda_star_rps
    assert lam is not None
    points = []
    for f in (float(x) for x in args.fractions.split(",")):
        p = point(args.out, f, args.duration, lam)
        points.append(p)
        print(json.dumps(p), flush=True)
        (args.out / "frontier.json").write_text(json.dumps({"points": points}, indent=2))
    keep = [p["efficiency"] for p in points if p["violation_share"] <= BUDGET]
    f_b = max(keep) if keep else None
    result = {
        "lambda_star_rps": lam,
        "budget": BUDGET,
        "duration_s": args.duration,
        "F_B": f_b,
        "F_B_lambda_star_rps": None if f_b is None else round(f_b * lam, 2),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "points": points,
    }
    (args.out / "frontier.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "points"}))


if __name__ == "__main__":
    main()
