"""Generate a JMeter 5.6.3-format CSV JTL for the benchmarks.

17 columns (the 5.6.3 defaults, with a header), 6 labels, about 1% failures whose
``responseMessage`` and ``failureMessage`` are quoted (commas, doubled quotes), at a
steady 2,000 samples/s from 100 threads. Deterministic for a given seed.

    .venv/bin/python -m benchmarks.generate_jtl /tmp/bench.jtl --rows 1000000
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
import pandas as pd

from loadguard.jtl.columns import DEFAULT_COLUMNS

LABELS = np.array(["/api/login", "/api/search", "/api/cart", "/api/checkout", "/static/app.js",
                   "/api/items/{id}"], object)  # fmt: skip
RATE_PER_S = 2000
CHUNK = 500_000


def _chunk(rng: np.random.Generator, first: int, n: int, t0_ms: int) -> pd.DataFrame:
    idx = np.arange(first, first + n)
    elapsed = np.maximum(1, rng.lognormal(3.5, 0.8, n)).astype(np.int64)
    end = t0_ms + idx * 1000 // RATE_PER_S
    start = end - elapsed
    fail = rng.random(n) < 0.01
    label = LABELS[rng.integers(0, len(LABELS), n)]
    code = np.where(fail, "500", "200")
    message = np.where(fail, 'Internal Server Error, "retry" later', "OK")
    failure = np.where(fail, 'Expected to find "ok", got "error, try again"', "")
    thread = np.char.add("Thread Group 1-", (idx % 100 + 1).astype(str))
    return pd.DataFrame(
        {
            "timeStamp": start,
            "elapsed": elapsed,
            "label": label,
            "responseCode": code,
            "responseMessage": message,
            "threadName": thread,
            "dataType": "text",
            "success": np.where(fail, "false", "true"),
            "failureMessage": failure,
            "bytes": rng.integers(200, 5000, n),
            "sentBytes": 150,
            "grpThreads": 100,
            "allThreads": 100,
            "URL": np.char.add("http://127.0.0.1:8080", label.astype(str)),
            "Latency": np.maximum(0, elapsed - rng.integers(0, 5, n)),
            "IdleTime": 0,
            "Connect": rng.integers(0, 3, n),
        },
        columns=list(DEFAULT_COLUMNS),
    )


def generate(path: Path, rows: int, seed: int = 1, t0_ms: int = 1_700_000_000_000) -> None:
    rng = np.random.default_rng(seed)
    with path.open("w", newline="") as out:
        for first in range(0, rows, CHUNK):
            df = _chunk(rng, first, min(CHUNK, rows - first), t0_ms)
            df.to_csv(out, index=False, header=first == 0, quoting=csv.QUOTE_MINIMAL,
                      lineterminator="\n")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path", type=Path)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    generate(args.path, args.rows, args.seed)


if __name__ == "__main__":
    main()
