"""Memory while streaming a long JTL: RSS must stay flat (O(window), not O(file)).

Streams a generated 5.6.3-format JTL of 7.2M rows (one hour at 2,000 samples/s) through
the ``loadguard metrics`` core (``JtlFollower.batches`` -> ``replay`` -> ``Window``, 10 s
window, 1 s step) and samples the process RSS when 10% and 100% of the file's bytes have
been read. The reference, in the same run, is the RSS after the imports, before reading.

    .venv/bin/python -m benchmarks.memory_stream --rows 7200000
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import psutil

from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.replay import replay
from loadguard.window import Window


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=7_200_000)
    ap.add_argument("--path", type=Path, default=Path("/tmp/loadguard-bench-7m.jtl"))
    args = ap.parse_args()
    if not args.path.exists() or args.path.stat().st_size < args.rows * 80:
        from benchmarks.generate_jtl import generate

        print(f"generating {args.rows} rows into {args.path} ...", flush=True)
        generate(args.path, args.rows)
    proc = psutil.Process()
    size = args.path.stat().st_size
    baseline = proc.memory_info().rss
    follower = JtlFollower(args.path)
    window = Window(10_000, malformed_rows=lambda: follower.malformed_rows)
    marks: dict[str, dict[str, float]] = {}
    steps = 0
    max_window = 0
    start = time.perf_counter()
    for _ in replay(follower.batches(), window, 1_000):
        steps += 1
        max_window = max(max_window, len(window))
        done = follower.bytes_read / size
        for pct in (10, 25, 50, 75):
            if f"{pct}%" not in marks and done >= pct / 100:
                marks[f"{pct}%"] = {"rss_mb": proc.memory_info().rss / 1e6,
                                    "rows": follower.selector.counted}  # fmt: skip
    marks["100%"] = {"rss_mb": proc.memory_info().rss / 1e6, "rows": follower.selector.counted}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    result = {
        "file_mb": size / 1e6,
        "rows": follower.selector.counted,
        "steps": steps,
        "seconds": time.perf_counter() - start,
        "baseline_rss_mb": baseline / 1e6,
        "rss_10pct_mb": marks["10%"]["rss_mb"],
        "rss_100pct_mb": marks["100%"]["rss_mb"],
        "rss_mb_by_progress": {k: round(v["rss_mb"], 1) for k, v in marks.items()},
        "peak_rss_mb": peak_mb,
        "rss_100_over_10": marks["100%"]["rss_mb"] / marks["10%"]["rss_mb"],
        "max_samples_held": max_window,
        "malformed_rows": follower.malformed_rows,
    }
    print(f"{args.path}: {result['file_mb']:.0f} MB, {result['rows']} rows, {steps} windows "
          f"in {result['seconds']:.0f} s")  # fmt: skip
    print(
        f"  RSS baseline (after imports) {result['baseline_rss_mb']:.0f} MB; at 10% "
        f"{result['rss_10pct_mb']:.0f} MB; at 100% {result['rss_100pct_mb']:.0f} MB "
        f"(ratio {result['rss_100_over_10']:.2f}); peak {peak_mb:.0f} MB"
    )
    print(f"  RSS by progress: {result['rss_mb_by_progress']}")
    print(f"  most samples held by the window at once: {max_window}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
