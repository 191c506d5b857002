"""How fresh is the controller's JTL in a distributed test, per sample sender mode?

Starts two real ``jmeter-server`` engines on loopback and the demo target, pushes a fixed
rate to each engine, then runs the controller once per mode. A tailer polls the JTL every
50 ms and records, for every row, ``arrival - (timeStamp + elapsed)``: how long after the
sample ended the controller's JTL held it. Prints p50/p95/max per mode and the ratio of
each mode's p50 to JMeter's default (``StrippedBatch``), measured in the same run.

    .venv/bin/python benchmarks/sample_sender_freshness.py [--rate 10] [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from loadguard.actuator.engines import Engine, EngineSet
from loadguard.jmeter.home import find_jmeter_home, jmeter_command
from loadguard.jmeter.launch import free_tcp_pair
from loadguard.jmeter.remote import port_open, start_engine_server
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import running_target

PLAN = Path(__file__).resolve().parents[1] / "jmx_templates" / "elastic_plan.jmx"
MODES: list[tuple[str, list[str]]] = [
    ("StrippedBatch (default)", []),
    (
        "StrippedBatch 10/1s",
        ["-Jmode=StrippedBatch", "-Jnum_sample_threshold=10", "-Jtime_threshold=1000"],
    ),
    ("Stripped", ["-Jmode=Stripped"]),
    ("StrippedAsynch", ["-Jmode=StrippedAsynch"]),
]


def tail_lags(path: Path, until: float) -> list[float]:
    pos, buf, lags = 0, b"", []
    header: list[str] | None = None
    while time.monotonic() < until:
        try:
            with path.open("rb") as fh:
                fh.seek(pos)
                data = fh.read()
        except FileNotFoundError:
            time.sleep(0.05)
            continue
        pos += len(data)
        now = time.time() * 1000
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            cells = line.decode().split(",")
            if header is None:
                header = cells
                continue
            try:
                lags.append(now - int(cells[0]) - int(cells[1]))
            except (ValueError, IndexError):
                continue
        time.sleep(0.05)
    return lags


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=10.0, help="req/s per engine")
    ap.add_argument("--seconds", type=int, default=20, help="test length per mode")
    args = ap.parse_args()
    home = find_jmeter_home()
    work = Path(tempfile.mkdtemp(prefix="lg-sender-"))
    engines = []
    try:
        for i in range(2):
            rmi, bsh = free_tcp_pair(), free_tcp_pair()
            proc = start_engine_server(home, rmi, bsh, log=work / f"engine{i}.log")
            engines.append((proc, rmi, bsh))
        deadline = time.monotonic() + 120
        while not all(port_open("127.0.0.1", b + 1) for _, _, b in engines):
            if time.monotonic() > deadline:
                raise SystemExit("engines did not start")
            time.sleep(0.5)
        fleet = [Engine("127.0.0.1", b + 1) for _, _, b in engines]
        with EngineSet(fleet) as actuator:
            assert actuator.push(2 * args.rate).applied
        remotes = ",".join(f"127.0.0.1:{r}" for _, r, _ in engines)
        model = build_model("mmc", workers=8, queue=400, service_s=0.020)
        results = {}
        with running_target(model) as target:
            for name, props in MODES:
                jtl = work / f"{len(results)}.jtl"
                cmd = jmeter_command(
                    home,
                    [
                        "-n", "-t", str(PLAN), "-R", remotes, "-l", str(jtl),
                        "-j", str(work / f"{len(results)}.log"),
                        "-Jserver.rmi.ssl.disable=true", "-Djava.rmi.server.hostname=127.0.0.1",
                        "-Jjmeter.save.saveservice.autoflush=true",
                        f"-Gtarget.port={target.port}", "-Gthreads=20",
                        f"-Gduration={args.seconds}", *props,
                    ],
                )  # fmt: skip
                ctrl = subprocess.Popen(
                    cmd,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                try:
                    lags = tail_lags(jtl, time.monotonic() + args.seconds + 40)
                finally:
                    if ctrl.poll() is None:
                        os.killpg(ctrl.pid, signal.SIGKILL)
                    ctrl.wait()
                results[name] = np.array(lags)
        ref = float(np.median(results[MODES[0][0]])) if len(results[MODES[0][0]]) else float("nan")
        cols = ("rows", "p50 ms", "p95 ms", "max ms", "p50/default")
        print(f"{'mode':26s} " + " ".join(f"{c:>11s}" for c in cols))
        for name, lags in results.items():
            if not len(lags):
                print(f"{name:26s} {0:6d}  no rows")
                continue
            p50, p95 = np.percentile(lags, [50, 95])
            cells = (
                f"{len(lags)}",
                f"{p50:.0f}",
                f"{p95:.0f}",
                f"{lags.max():.0f}",
                f"{p50 / ref:.3f}",
            )
            print(f"{name:26s} " + " ".join(f"{c:>11s}" for c in cells))
    finally:
        for proc, _, _ in engines:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


if __name__ == "__main__":
    main()
