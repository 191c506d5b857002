"""Benchmark: `loadguard report` on a one-hour, 2,000 samples/s run (a 7.2M-row JTL).

Generates (once, cached under --workdir) a JMeter 5.6.3-default CSV JTL of ``--rows``
samples over four labels, plus a decision log of one tick per second written with the
real ``DecisionLogWriter``. Then, each in a fresh child process so peak RSS is its own:

* reference: ``pandas.read_csv`` of the same file with the same four columns and chunk
  size, doing nothing else (the floor any CSV-based report pays);
* report: ``render_report`` (digest + charts + PNGs + HTML).

Prints wall times, the ratio report/reference and each child's peak RSS, and the same
ratio of CPU times (each child's own ``time.process_time``), which other processes on a
shared machine disturb far less than wall times.

    .venv/bin/python benchmarks/report_large.py            # 7.2M rows
    .venv/bin/python benchmarks/report_large.py --rows 720000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from loadguard.decisions import DecisionLogWriter, DecisionRow

JTL_HEADER = (
    "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,"
    "failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect"
)
LABELS = ("/home", "/cart", "/login", "/product")
T0_MS = 1_796_000_000_000
SLO = {"p95_ms": 250.0, "p99_ms": 500.0, "error_rate": 0.01}


def _generate_jtl(path: Path, rows: int, seconds: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    step = 400_000
    with path.open("w") as fh:
        fh.write(JTL_HEADER + "\n")
        for lo in range(0, rows, step):
            n = min(step, rows - lo)
            idx = np.arange(lo, lo + n)
            start = T0_MS + (idx * (seconds * 1000) // rows)
            phase = (idx / rows) * 4 * np.pi
            load = 1.0 + 0.8 * np.sin(phase)  # the load swings: latency rises past the knee
            elapsed = (rng.lognormal(3.5, 0.6, n) * load**3).astype(np.int64)
            ok = rng.random(n) > 0.002 * load
            label = np.asarray(LABELS, object)[rng.integers(0, len(LABELS), n)]
            frame = pd.DataFrame(
                {
                    "timeStamp": start,
                    "elapsed": elapsed,
                    "label": label,
                    "responseCode": np.where(ok, "200", "500"),
                    "responseMessage": np.where(ok, "OK", "Internal Server Error"),
                    "threadName": "TG 1-1",
                    "dataType": "text",
                    "success": np.where(ok, "true", "false"),
                    "failureMessage": "",
                    "bytes": 2048,
                    "sentBytes": 120,
                    "grpThreads": 200,
                    "allThreads": 200,
                    "URL": "http://127.0.0.1:18080/x",
                    "Latency": elapsed // 2,
                    "IdleTime": 0,
                    "Connect": 0,
                }
            )
            frame.to_csv(fh, header=False, index=False)


def _generate_decisions(path: Path, seconds: int) -> None:
    rate = 2000.0
    with DecisionLogWriter(path) as log:
        for tick in range(1, seconds + 1):
            load = 1.0 + 0.8 * np.sin(tick / seconds * 4 * np.pi)
            p95 = 33.0 * np.exp(0.6 * 1.645) * load**3
            zone = "BREACH" if p95 > SLO["p95_ms"] else "NEAR" if p95 > 0.8 * 250 else "SAFE"
            action = {"SAFE": "INCREASE", "NEAR": "HOLD", "BREACH": "DECREASE"}[zone]
            step = {"INCREASE": 1.02, "HOLD": 1.0, "DECREASE": 0.95}[action]
            new = min(3000.0, max(1000.0, rate * step))
            log.append(
                DecisionRow(
                    epoch_ms=T0_MS + tick * 1000,
                    tick=tick,
                    action=action,
                    zone=zone,
                    reason=zone.lower(),
                    old_rate=rate,
                    new_rate=new,
                    applied=True,
                    engine_ack="",
                    samples=20000,
                    rps=2000.0,
                    ok_rps=1996.0,
                    error_rate=0.002 * load,
                    mean_ms=40.0 * load**3,
                    p50_ms=33.0 * load**3,
                    p90_ms=70.0 * load**3,
                    p95_ms=float(p95),
                    p99_ms=float(p95 * 1.4),
                    max_ms=float(p95 * 3),
                    offered_rps=rate,
                    staleness_ms=200,
                    slo=SLO,
                    breaches=("p95_ms",) if zone == "BREACH" else (),
                    breached_labels=(),
                )
            )
            rate = new


# VmHWM: this process's own peak RSS (ru_maxrss would include the parent's, kept over exec).
PEAK = """
def peak_rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
"""

REFERENCE = (
    PEAK
    + """
import sys, time
import pandas as pd
t, c0 = time.perf_counter(), time.process_time()
n = 0
for c in pd.read_csv(sys.argv[1], usecols=["timeStamp", "elapsed", "label", "success"],
                     dtype={"label": str}, keep_default_na=False, chunksize=250_000):
    n += len(c)
print(time.perf_counter() - t, time.process_time() - c0, peak_rss_kib(), n)
"""
)

REPORT = (
    PEAK
    + """
import sys, time
from pathlib import Path
from loadguard.report import render_report
t, c0 = time.perf_counter(), time.process_time()
out = render_report(Path(sys.argv[1]), Path(sys.argv[2]))
print(time.perf_counter() - t, time.process_time() - c0, peak_rss_kib(), out.stat().st_size)
"""
)


def _child(code: str, *args: str) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MiB, extra) of a fresh child process."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    wall, cpu, rss_kib, extra = proc.stdout.split()[-4:]
    return float(wall), float(cpu), int(rss_kib) / 1024.0, int(extra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=7_200_000)
    parser.add_argument("--seconds", type=int, default=3600)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/loadguard-report-bench"))
    args = parser.parse_args()
    run = args.workdir / f"run-{args.rows}"
    run.mkdir(parents=True, exist_ok=True)
    jtl, decisions = run / "results.jtl", run / "decisions.csv"
    if not jtl.exists():
        t = time.perf_counter()
        tmp = run / "results.jtl.part"
        _generate_jtl(tmp, args.rows, args.seconds)
        tmp.rename(jtl)
        print(
            f"generated {args.rows:,} rows ({jtl.stat().st_size / 2**20:.0f} MiB) "
            f"in {time.perf_counter() - t:.1f}s"
        )
    if not decisions.exists():
        _generate_decisions(decisions, args.seconds)
    ref_s, ref_cpu, ref_rss, n = _child(REFERENCE, str(jtl))
    rep_s, rep_cpu, rep_rss, size = _child(REPORT, str(run), str(run / "report.html"))
    print(
        json.dumps(
            {
                "rows": n,
                "jtl_mib": round(jtl.stat().st_size / 2**20),
                "reference_read_csv_s": round(ref_s, 2),
                "reference_peak_rss_mib": round(ref_rss),
                "report_s": round(rep_s, 2),
                "report_peak_rss_mib": round(rep_rss),
                "report_html_kib": round(size / 1024),
                "ratio_report_over_read_csv": round(rep_s / ref_s, 2),
                "reference_cpu_s": round(ref_cpu, 2),
                "report_cpu_s": round(rep_cpu, 2),
                "cpu_ratio_report_over_read_csv": round(rep_cpu / ref_cpu, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
