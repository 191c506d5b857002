"""Cost of one tick of the window at 5,000 samples/s over a 10 s window (50,000 samples).

Each simulated second adds one batch of 5,000 samples (6 labels, lognormal elapsed, ~1%
failures, completion times shuffled within the second like threads finishing out of order),
then asks ``Window.stats(now)``. After 10 s of warm-up the window holds 50,000 samples; the
next 120 ticks are timed, in CPU time (what the tick costs) and wall time (what it takes
on this shared machine). The reference, measured in the same run, is the irreducible
numpy work on the same window: one ``np.sort`` of the 50,000 elapsed values plus
``np.percentile`` of them. The budget is 50 ms per tick.

    .venv/bin/python -m benchmarks.tick_cost
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from loadguard.jtl.sample import SampleBatch
from loadguard.window import PERCENTILES, Window

LABELS = np.array(["/api/login", "/api/search", "/api/cart", "/api/checkout", "/static/app.js",
                   "/api/items/{id}"], object)  # fmt: skip
BUDGET_MS = 50.0


def second(rng: np.random.Generator, t_ms: int, rate: int) -> SampleBatch:
    end = t_ms - 1000 + rng.integers(1, 1001, rate)
    elapsed = np.maximum(1, rng.lognormal(3.5, 0.8, rate)).astype(np.int64)
    return SampleBatch.of(end - elapsed, elapsed, rng.random(rate) > 0.01,
                          LABELS[rng.integers(0, len(LABELS), rate)])  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate", type=int, default=5_000)
    ap.add_argument("--window-ms", type=int, default=10_000)
    ap.add_argument("--ticks", type=int, default=120)
    args = ap.parse_args()
    rng = np.random.default_rng(5)
    t0 = 1_700_000_000_000
    window = Window(args.window_ms)
    warm = args.window_ms // 1000
    batches = [second(rng, t0 + (i + 1) * 1000, args.rate) for i in range(warm + args.ticks)]
    for i in range(warm):
        window.add(batches[i])
        window.stats(t0 + (i + 1) * 1000)
    stats_ms: list[float] = []
    tick_ms: list[float] = []
    tick_cpu_ms: list[float] = []
    ref_ms: list[float] = []
    held: list[int] = []
    for i in range(warm, warm + args.ticks):
        now = t0 + (i + 1) * 1000
        cpu = time.thread_time()
        a = time.perf_counter()
        window.add(batches[i])
        b = time.perf_counter()
        s = window.stats(now)
        c = time.perf_counter()
        tick_cpu_ms.append((time.thread_time() - cpu) * 1000)
        stats_ms.append((c - b) * 1000)
        tick_ms.append((c - a) * 1000)
        held.append(s.overall.count)
        # Reference: the bare numpy work on the same samples.
        elapsed = np.concatenate([x.elapsed_ms for x in batches[i - warm + 1 : i + 1]])
        d = time.perf_counter()
        np.percentile(np.sort(elapsed), PERCENTILES)
        ref_ms.append((time.perf_counter() - d) * 1000)
    result = {
        "samples_in_window": int(np.median(held)),
        "tick_ms_median": float(np.median(tick_ms)),
        "tick_ms_p99": float(np.percentile(tick_ms, 99)),
        "tick_ms_max": float(np.max(tick_ms)),
        "tick_cpu_ms_median": float(np.median(tick_cpu_ms)),
        "tick_cpu_ms_p99": float(np.percentile(tick_cpu_ms, 99)),
        "stats_ms_median": float(np.median(stats_ms)),
        "reference_numpy_ms_median": float(np.median(ref_ms)),
        "tick_cpu_over_reference": float(np.median(tick_cpu_ms) / np.median(ref_ms)),
        "tick_p99_over_budget": float(np.percentile(tick_ms, 99) / BUDGET_MS),
    }
    print(f"window {args.window_ms} ms at {args.rate}/s: {result['samples_in_window']} samples, "
          f"{len(LABELS)} labels")  # fmt: skip
    print(
        f"  tick CPU time: median {result['tick_cpu_ms_median']:.2f} ms, "
        f"p99 {result['tick_cpu_ms_p99']:.2f} ms"
    )
    print(
        f"  tick wall time (add + stats): median {result['tick_ms_median']:.2f} ms, "
        f"p99 {result['tick_ms_p99']:.2f} ms, max {result['tick_ms_max']:.2f} ms "
        f"(budget {BUDGET_MS:.0f} ms: p99 is {result['tick_p99_over_budget']:.3f} of it)"
    )
    ref = result["reference_numpy_ms_median"]
    print(f"  reference np.sort + np.percentile: median {ref:.2f} ms"
          f" -> tick CPU / reference = {result['tick_cpu_over_reference']:.1f}")  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
