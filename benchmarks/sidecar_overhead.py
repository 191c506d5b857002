"""Sidecar overhead: CPU and memory of `loadguard attach` beside a real JMeter run.

Starts the demo target (M/M/c with many workers and a short service time, so the target
is not the limit), JMeter on the elastic plan at a fixed rate (default 1000 req/s,
pinned: the sidecar runs in --dry-run so it observes, ticks, evaluates and logs exactly as
in a live run, but the rate stays put), and `loadguard attach` beside it. Over the
measurement span it samples, with psutil, the CPU time of the sidecar process and of the
JMeter JVM, and the sidecar's RSS.

Prints:
* sidecar CPU as a share of one core (target: <= 5 %);
* sidecar CPU / JMeter CPU in the same run (the ratio the issue asks for);
* the achieved JMeter rate, so a run where JMeter itself could not reach the rate is
  visible;
* sidecar RSS at 10 % and at 100 % of the span (bounded memory: should be flat).

Run: .venv/bin/python benchmarks/sidecar_overhead.py [--rate 1000] [--seconds 60]
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import psutil

from loadguard.actuator.elastic_timer import rps_to_tpm
from loadguard.jmeter.home import find_jmeter_home, jmeter_command
from loadguard.jmeter.launch import free_tcp_pair
from loadguard.lab.target.process import spawn_target

REPO = Path(__file__).resolve().parents[1]
PLAN = REPO / "jmx_templates" / "elastic_plan.jmx"


def cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=20.0)
    ap.add_argument("--threads", type=int, default=120)
    args = ap.parse_args()

    home = find_jmeter_home()
    with (
        tempfile.TemporaryDirectory(prefix="lg-overhead-") as tmp_s,
        spawn_target(
            ["--model", "mmc", "--workers", "256", "--service", "2ms", "--queue", "2000"]
        ) as target,
    ):
        tmp = Path(tmp_s)
        jtl = tmp / "results.jtl"
        bsh = free_tcp_pair()
        total = args.warmup + args.seconds + 30
        jm = subprocess.Popen(
            jmeter_command(
                home,
                [
                    "-n",
                    "-t",
                    str(PLAN),
                    "-l",
                    str(jtl),
                    "-j",
                    str(tmp / "jmeter.log"),
                    f"-Jbeanshell.server.port={bsh}",
                    "-Jbeanshell.server.file=",
                    "-Jjmeterengine.force.system.exit=true",
                    "-Jjmeter.save.saveservice.autoflush=true",
                    f"-Jloadguard.tpm={rps_to_tpm(args.rate):.0f}",
                    f"-Jtarget.port={target.port}",
                    "-Jtarget.path=/tools.descartes.teastore.webui/",
                    f"-Jthreads={args.threads}",
                    f"-Jduration={int(total)}",
                ],
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        sidecar = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "loadguard",
                "attach",
                "--jtl",
                str(jtl),
                "--dry-run",
                "--p95",
                "250ms",
                "--error-rate",
                "1%",
                "--tick",
                "2s",
                "--out",
                str(tmp / "lg"),
                "-q",
                "--duration",
                f"{int(total)}s",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            sp, jp = psutil.Process(sidecar.pid), psutil.Process(jm.pid)
            time.sleep(args.warmup)
            s0, j0, t0 = cpu_s(sp), cpu_s(jp), time.monotonic()
            rss = []
            steps = 10
            for _ in range(steps):
                time.sleep(args.seconds / steps)
                rss.append(sp.memory_info().rss / 2**20)
            s1, j1, t1 = cpu_s(sp), cpu_s(jp), time.monotonic()
        finally:
            sidecar.send_signal(signal.SIGTERM)
            try:
                sidecar.wait(30)
            except subprocess.TimeoutExpired:
                sidecar.kill()
            if jm.poll() is None:
                import os

                os.killpg(jm.pid, signal.SIGKILL)
            jm.wait()
        df = pd.read_csv(jtl, usecols=["timeStamp", "elapsed"])
        end_s = (df["timeStamp"] + df["elapsed"]) / 1000.0
        span_lo = end_s.min() + args.warmup
        achieved = ((end_s >= span_lo) & (end_s < span_lo + args.seconds)).sum() / args.seconds

    wall = t1 - t0
    sidecar_core = (s1 - s0) / wall
    jmeter_core = (j1 - j0) / wall
    print(f"measured over {wall:.1f} s after {args.warmup:.0f} s warm-up")
    print(f"JMeter achieved rate:         {achieved:8.1f} req/s (asked {args.rate:.0f})")
    print(f"sidecar CPU:                  {sidecar_core * 100:8.2f} % of one core (target <= 5 %)")
    print(f"JMeter CPU:                   {jmeter_core * 100:8.2f} % of one core")
    print(f"sidecar / JMeter CPU ratio:   {sidecar_core / jmeter_core:8.4f}")
    print(f"sidecar RSS at 10 % / 100 %:  {rss[0]:.1f} MiB / {rss[-1]:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
