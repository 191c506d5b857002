"""Ingest + windowing throughput of the Metrics Listener, against references in the same run.

Contenders, each in a fresh single-threaded process, on the same generated 5.6.3-format
JTL (17 columns, 6 labels, ~1% failures with quoted messages; benchmarks/generate_jtl.py):

* ``pandas_all``   -- ``pandas.read_csv(path)``;
* ``pandas_4col``  -- ``pandas.read_csv(path, usecols=[timeStamp, elapsed, label, success])``;
* ``csv_reader``   -- stdlib ``csv.reader``, rows only;
* ``lg_ticks``     -- ``JtlFollower.poll`` + ``Window.add`` + one ``Window.stats`` per poll
  (the live sidecar loop, file already complete);
* ``lg_replay``    -- ``loadguard metrics`` core: follower batches replayed through a 10 s
  window every 1 s of test time (one ``WindowStats`` per step);
* ``bzt``          -- Taurus 1.17.2 ``JTLReader.datapoints`` (its per-second aggregation),
  run by ``--bzt-python`` (a separate throwaway venv; bzt is not a LoadGuard dependency).

Each contender runs ``--repeat`` times, interleaved; the best CPU time counts (the machine is
shared; CPU time is what one core spends). Two figures per contender: *core* (CPU seconds of
the work itself, after imports) and *whole process* (CPU seconds of the child process from
start to exit, interpreter start-up and imports included: how the issue's reference figures
were taken). Rows/s and the ratios are printed.

    .venv/bin/python -m benchmarks.ingest --rows 1000000 --bzt-python /tmp/bztvenv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

CONTENDERS = ("pandas_all", "pandas_4col", "csv_reader", "lg_ticks", "lg_replay")

_BZT_SCRIPT = """
import logging, sys, time
from bzt.modules.jmeter import JTLReader
t = time.process_time(); w = time.perf_counter()
reader = JTLReader(sys.argv[1], logging.getLogger("bench"), None)
for _ in reader.datapoints(final_pass=True):
    pass
print(reader.read_records, time.process_time() - t, time.perf_counter() - w)
"""


def run_one(name: str, path: Path) -> tuple[int, float, float]:
    """Run one contender in this process: (rows, cpu seconds, wall seconds)."""
    import csv

    import pandas as pd

    from loadguard.jtl.follow import JtlFollower
    from loadguard.jtl.replay import replay
    from loadguard.window import Window

    cpu, wall = time.process_time(), time.perf_counter()
    if name == "pandas_all":
        rows = len(pd.read_csv(path))
    elif name == "pandas_4col":
        rows = len(pd.read_csv(path, usecols=["timeStamp", "elapsed", "label", "success"]))
    elif name == "csv_reader":
        with path.open(newline="") as fh:
            rows = sum(1 for _ in csv.reader(fh)) - 1
    elif name == "lg_ticks":
        follower = JtlFollower(path)
        window = Window(10_000, malformed_rows=lambda: follower.malformed_rows)
        for batch in follower.batches():
            window.add(batch)
            window.stats(int(batch.end_ms.max()))
        rows = follower.selector.counted
    elif name == "lg_replay":
        follower = JtlFollower(path)
        window = Window(10_000, malformed_rows=lambda: follower.malformed_rows)
        for _ in replay(follower.batches(), window, 1_000):
            pass
        rows = follower.selector.counted
    else:
        raise SystemExit(f"unknown contender {name}")
    return rows, time.process_time() - cpu, time.perf_counter() - wall


def _spawn(cmd: list[str]) -> tuple[int, float, float, float]:
    """(rows, core CPU s, core wall s, whole-process CPU s incl. start-up and imports)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    whole = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows, cpu, wall = out.split()[-3:]
    return int(rows), float(cpu), float(wall), whole


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--path", type=Path, default=Path("/tmp/loadguard-bench-ingest.jtl"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bzt-python", help="python of a venv with bzt installed (optional)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(*run_one(args.one, args.path))
        return

    from benchmarks.generate_jtl import generate

    if not args.path.exists() or args.path.stat().st_size < args.rows * 80:
        print(f"generating {args.rows} rows into {args.path} ...", flush=True)
        generate(args.path, args.rows)
    best: dict[str, tuple[int, float, float, float]] = {}
    for rep in range(args.repeat):
        for name in CONTENDERS:
            got = _spawn([sys.executable, "-m", "benchmarks.ingest", "--one", name,
                          "--path", str(args.path)])  # fmt: skip
            if name not in best or got[1] < best[name][1]:
                best[name] = got
            print(f"  run {rep + 1} {name:<12} {got[0]:>9} rows  cpu {got[1]:6.2f} s  "
                  f"wall {got[2]:6.2f} s  process cpu {got[3]:6.2f} s", flush=True)  # fmt: skip
        if args.bzt_python and rep == 0:  # 20x slower: once is enough
            got = _spawn([args.bzt_python, "-c", _BZT_SCRIPT, str(args.path)])
            best["bzt"] = got
            print(f"  run 1 bzt          {got[0]:>9} rows  cpu {got[1]:6.2f} s  "
                  f"wall {got[2]:6.2f} s  process cpu {got[3]:6.2f} s", flush=True)  # fmt: skip
    rate = {name: rows / cpu for name, (rows, cpu, _, _) in best.items()}
    whole = {name: rows / w for name, (rows, _, _, w) in best.items()}
    print(f"\n{args.path} ({args.path.stat().st_size / 1e6:.0f} MB), best of {args.repeat} "
          "(bzt: 1 run), rows per CPU second:")  # fmt: skip
    print(f"  {'':<12} {'core':>12} {'whole process':>16}")
    for name in rate:
        print(f"  {name:<12} {rate[name] / 1e6:8.3f} M/s {whole[name] / 1e6:12.3f} M/s")
    ratios: dict[str, float] = {}
    for ours in ("lg_ticks", "lg_replay"):
        for ref in ("pandas_4col", "pandas_all", "csv_reader", "bzt"):
            if ref in rate:
                ratios[f"{ours}/{ref} core"] = rate[ours] / rate[ref]
                ratios[f"{ours}/{ref} whole"] = whole[ours] / whole[ref]
    print("\nratios (target: lg >= 0.5 x pandas.read_csv):")
    for key, value in ratios.items():
        print(f"  {key:<30} {value:6.2f}")
    print(json.dumps({"rows_per_s_core": rate, "rows_per_s_whole": whole, "ratios": ratios}))


if __name__ == "__main__":
    main()
