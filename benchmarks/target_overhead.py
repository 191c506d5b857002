"""Benchmark: the demo target's own overhead, with 1 worker at zero service time.

With ``--workers 1 --service 0s`` every request passes the capacity gate (FcfsQueue
offer, service draw, routing, page rendering, cookie parsing) but never waits, so what is
left is the server's overhead. Measured against a reference measured in the same run:
a bare aiohttp server returning the same home page bytes with no gate. Both run as child
processes (their own GIL), on 127.0.0.1.

1. Closed loop, max throughput: ``wrk -t1 -c16`` (Debian's wrk) when installed, else a
   Python keep-alive client. Prints req/s of each and the ratio target/reference.
2. Open loop at ``--rate`` (800 req/s, the paper's stress ceiling): a Python asyncio
   client fires requests on a fixed schedule over 64 keep-alive connections. Prints the
   achieved rate, p50/p95/p99 latency, errors and the target's CPU (% of one core) for
   target and reference, and the ratios.

    .venv/bin/python benchmarks/target_overhead.py
    .venv/bin/python benchmarks/target_overhead.py --rate 800 --seconds 10 --repeat 5

Each repetition runs reference then target; the summary is the median over repetitions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import aiohttp
import numpy as np
import psutil

from loadguard.lab.target.pages import BASE, home_page
from loadguard.lab.target.process import spawn_target

PATH = BASE + "/"


def reference_server(port: int) -> None:
    """A bare aiohttp server: the same page, no gate, no session, no model."""
    from aiohttp import web

    body = home_page(None)

    async def home(_: web.Request) -> web.Response:
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get(PATH, home)
    print(f"ready port={port}", flush=True)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


@dataclass
class Server:
    port: int
    pid: int


@contextmanager
def reference() -> Iterator[Server]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-reference", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        _wait_listening(port)
        yield Server(port, proc.pid)
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def target() -> Iterator[Server]:
    options = ["--model", "mmc", "--workers", "1", "--service", "0s", "--queue", "10000"]
    with spawn_target(options) as t:
        yield Server(t.port, t.proc.pid)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int) -> None:
    import socket

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def wrk_max_rps(port: int, seconds: int) -> float:
    out = subprocess.run(
        ["wrk", "-t1", "-c16", f"-d{seconds}s", f"http://127.0.0.1:{port}{PATH}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    if match is None or "Non-2xx" in out:
        raise RuntimeError(f"wrk failed:\n{out}")
    return float(match.group(1))


async def _closed_loop(port: int, seconds: float, conns: int = 16) -> float:
    url = f"http://127.0.0.1:{port}{PATH}"
    done = 0
    end = time.perf_counter() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conns)) as s:

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < end:
                async with s.get(url) as r:
                    await r.read()
                    done += r.status == 200

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conns)))
        return done / (time.perf_counter() - start)


@dataclass
class OpenLoop:
    achieved_rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    errors: int
    server_cpu_pct: float


async def _open_loop(port: int, rate: float, seconds: float, pid: int) -> OpenLoop:
    url = f"http://127.0.0.1:{port}{PATH}"
    n = int(rate * seconds)
    latencies = np.full(n, np.nan)
    errors = 0
    proc = psutil.Process(pid)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:

        async def one(i: int, due: float) -> None:
            nonlocal errors
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            t0 = time.perf_counter()
            try:
                async with s.get(url) as r:
                    await r.read()
                    if r.status != 200:
                        errors += 1
            except aiohttp.ClientError:
                errors += 1
            latencies[i] = (time.perf_counter() - t0) * 1000.0

        cpu0 = proc.cpu_times()
        start = time.perf_counter() + 0.2
        await asyncio.gather(*(one(i, start + i / rate) for i in range(n)))
        wall = time.perf_counter() - start
        cpu1 = proc.cpu_times()
    cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / wall * 100.0
    p50, p95, p99 = np.nanpercentile(latencies, [50, 95, 99])
    return OpenLoop(n / wall, float(p50), float(p95), float(p99), errors, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=800.0)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve-reference", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_reference:
        reference_server(args.serve_reference)
        return
    have_wrk = shutil.which("wrk") is not None
    print("load average at start: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    tool = "wrk -t1 -c16" if have_wrk else "python closed loop, 16 conns"
    ratios: list[float] = []
    maxima: list[float] = []
    for rep in range(1, args.repeat + 1):
        # Alternate reference and target so background load hits both alike.
        results: dict[str, tuple[float, OpenLoop]] = {}
        for name, ctx in (("reference", reference), ("target", target)):
            with ctx() as server:
                if have_wrk:
                    max_rps = wrk_max_rps(server.port, max(3, int(args.seconds / 2)))
                else:
                    max_rps = asyncio.run(_closed_loop(server.port, args.seconds / 2))
                time.sleep(0.5)
                loop = asyncio.run(_open_loop(server.port, args.rate, args.seconds, server.pid))
            results[name] = (max_rps, loop)
        print(f"[{rep}] closed loop max throughput ({tool}):")
        for name, (max_rps, _) in results.items():
            print(f"  {name:9s} {max_rps:9.0f} req/s")
        ratio = results["target"][0] / results["reference"][0]
        ratios.append(ratio)
        maxima.append(results["target"][0])
        print(f"  ratio target/reference = {ratio:.2f}")
        print(f"[{rep}] open loop at {args.rate:.0f} req/s for {args.seconds:g}s (asyncio client):")
        for name, (_, o) in results.items():
            print(
                f"  {name:9s} achieved {o.achieved_rps:6.0f} req/s  p50 {o.p50_ms:6.2f} ms  "
                f"p95 {o.p95_ms:6.2f} ms  p99 {o.p99_ms:6.2f} ms  errors {o.errors}  "
                f"server cpu {o.server_cpu_pct:5.1f}% of a core"
            )
        t, r = results["target"][1], results["reference"][1]
        print(
            f"  ratios target/reference: p95 {t.p95_ms / r.p95_ms:.2f}  "
            f"cpu {t.server_cpu_pct / max(r.server_cpu_pct, 1e-9):.2f}"
        )
    print(
        f"median over {args.repeat}: max throughput ratio target/reference "
        f"{float(np.median(ratios)):.2f}; target max / {args.rate:.0f} req/s = "
        f"{float(np.median(maxima)) / args.rate:.1f}"
    )
    print("load average at end: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
