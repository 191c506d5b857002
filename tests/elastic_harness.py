"""Driving a real JMeter with rate pushes, and measuring from its JTL how fast they hold.

Used by the real-JMeter integration tests and by ``benchmarks/actuation_lag.py``.
A run: build a plan (N threads, one sampler, a pacing timer), start JMeter non-GUI with
its BeanShell server, push rates at chosen times through ``EngineSet``, let the run end,
then read arrival times (JTL ``timeStamp`` = sample start) and compute, for each push,

* ``lag_s``: the start of the first window (length ``max(0.5 s, 10 / r)``, stepped by
  50 ms) after the push whose rate is within the tolerance of the new target, with every
  later window of the segment within it too (so a passing glitch does not count);
* ``held_rps``: the mean rate from ``push + hold_after_s`` to the next push.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from loadguard.actuator.elastic_timer import TPM_PER_RPS
from loadguard.actuator.engines import Engine, EngineSet
from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.jmx.elastic_xml import timer_block

_HTTP_SAMPLER = """\
        <HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy"
                          testname="req">
          <stringProp name="HTTPSampler.domain">127.0.0.1</stringProp>
          <stringProp name="HTTPSampler.port">${__P(target.port,18080)}</stringProp>
          <stringProp name="HTTPSampler.path">/</stringProp>
          <stringProp name="HTTPSampler.method">GET</stringProp>
          <boolProp name="HTTPSampler.use_keepalive">true</boolProp>
        </HTTPSamplerProxy>
        <hashTree/>
"""
_DEBUG_SAMPLER = """\
        <DebugSampler guiclass="TestBeanGUI" testclass="DebugSampler" testname="req">
          <boolProp name="displayJMeterProperties">false</boolProp>
          <boolProp name="displayJMeterVariables">false</boolProp>
          <boolProp name="displaySystemProperties">false</boolProp>
        </DebugSampler>
        <hashTree/>
"""


def ctt_block(indent: str, calc_mode: int = 4, default_tpm: float = 600) -> str:
    lines = [
        '<ConstantThroughputTimer guiclass="TestBeanGUI" testclass="ConstantThroughputTimer" '
        'testname="ctt">',
        f'  <intProp name="calcMode">{calc_mode}</intProp>',
        f'  <stringProp name="throughput">${{__P(loadguard.tpm,{default_tpm})}}</stringProp>',
        "</ConstantThroughputTimer>",
        "<hashTree/>",
    ]
    return "".join(f"{indent}{line}\n" for line in lines)


def ptt_block(indent: str, window_s: int = 10, default_tpm: float = 600) -> str:
    """Precise Throughput Timer reading the same property (samples per 60 s)."""
    lines = [
        '<PreciseThroughputTimer guiclass="TestBeanGUI" testclass="PreciseThroughputTimer" '
        'testname="ptt">',
        '  <intProp name="batchSize">1</intProp>',
        '  <intProp name="batchThreadDelay">0</intProp>',
        f'  <longProp name="duration">{window_s}</longProp>',
        f'  <stringProp name="throughput">${{__P(loadguard.tpm,{default_tpm})}}</stringProp>',
        '  <intProp name="throughputPeriod">60</intProp>',
        '  <longProp name="randomSeed">0</longProp>',
        "</PreciseThroughputTimer>",
        "<hashTree/>",
    ]
    return "".join(f"{indent}{line}\n" for line in lines)


def paced_plan(threads: int, timer: str = "elastic", sampler: str = "http") -> str:
    """A plan with one thread group of ``threads`` threads looping on one sampler,
    paced by ``timer`` (elastic | ctt4 | ctt2 | ptt | none); duration ``${__P(duration,10)}``."""
    timers = {
        "elastic": timer_block("        ", 1.0),
        "ctt4": ctt_block("        ", 4),
        "ctt2": ctt_block("        ", 2),
        "ptt": ptt_block("        "),
        "none": "",
    }
    body = (_HTTP_SAMPLER if sampler == "http" else _DEBUG_SAMPLER) + timers[timer]
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3">
  <hashTree>
    <TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="paced"/>
    <hashTree>
      <ThreadGroup guiclass="ThreadGroupGui" testclass="ThreadGroup" testname="TG">
        <intProp name="ThreadGroup.num_threads">{threads}</intProp>
        <intProp name="ThreadGroup.ramp_time">0</intProp>
        <boolProp name="ThreadGroup.scheduler">true</boolProp>
        <stringProp name="ThreadGroup.duration">${{__P(duration,10)}}</stringProp>
        <stringProp name="ThreadGroup.on_sample_error">continue</stringProp>
        <elementProp name="ThreadGroup.main_controller" elementType="LoopController">
          <intProp name="LoopController.loops">-1</intProp>
          <boolProp name="LoopController.continue_forever">false</boolProp>
        </elementProp>
      </ThreadGroup>
      <hashTree>
{body}      </hashTree>
    </hashTree>
  </hashTree>
</jmeterTestPlan>
"""


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextlib.contextmanager
def http_ok_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def free_tcp_pair() -> int:
    """A port P with P and P+1 both free on loopback (BeanShell uses both)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port >= 65535:
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair")


@dataclass
class RunningJMeter:
    proc: subprocess.Popen[str]
    jtl: Path
    bsh_port: int  # beanshell.server.port; the session port is +1
    started_ms: int

    @property
    def engine(self) -> Engine:
        return Engine("127.0.0.1", self.bsh_port + 1)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def start_jmeter(
    home: JMeterHome,
    plan: Path,
    out_dir: Path,
    props: dict[str, str | int | float],
    *,
    name: str = "run",
    bsh: bool = True,
    udp_port: int | None = None,
) -> Iterator[RunningJMeter]:
    """Start JMeter non-GUI in the background; always killed on exit."""
    jtl = out_dir / f"{name}.jtl"
    args = ["-n", "-t", str(plan), "-l", str(jtl), "-j", str(out_dir / f"{name}.log")]
    bsh_port = free_tcp_pair() if bsh else 0
    if bsh:
        args += [f"-Jbeanshell.server.port={bsh_port}", "-Jbeanshell.server.file="]
    if udp_port is not None:
        args += [
            f"-Jjmeterengine.nongui.port={udp_port}",
            f"-Jjmeterengine.nongui.maxport={udp_port}",
        ]
    args += ["-Jjmeterengine.force.system.exit=true", "-Jjmeter.save.saveservice.autoflush=true"]
    args += [f"-J{k}={v}" for k, v in props.items()]
    with open(out_dir / f"{name}.out", "w") as out:
        proc = subprocess.Popen(
            jmeter_command(home, args), stdout=out, stderr=subprocess.STDOUT, text=True
        )
    running = RunningJMeter(proc, jtl, bsh_port, int(time.time() * 1000))
    try:
        yield running
    finally:
        running.kill()


@dataclass(frozen=True)
class Push:
    at_ms: int  # wall clock when the property was confirmed set
    rate_rps: float


def push_schedule(
    engines: Sequence[Engine], schedule: Sequence[tuple[float, float]], t0: float
) -> list[Push]:
    """Push ``rate`` at ``t0 + offset`` (monotonic seconds) for each (offset, rate)."""
    pushes = []
    with EngineSet(engines, timeout_s=5.0) as actuator:
        for offset, rate in schedule:
            delay = t0 + offset - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            result = actuator.push(rate)
            assert result.applied, result
            pushes.append(Push(int(time.time() * 1000), rate))
    return pushes


def wait_for_engine(engine: Engine, jtl: Path | None = None, timeout: float = 30.0) -> float:
    """Block until the engine's BeanShell server answers and (given ``jtl``) samples are
    being written; returns the monotonic time then."""
    from loadguard.actuator.bsh import BeanShellClient

    deadline = time.monotonic() + timeout
    BeanShellClient(engine.host, engine.port, connect_timeout=timeout).get_property("x")
    while jtl is not None and time.monotonic() < deadline:
        with contextlib.suppress(OSError), open(jtl, "rb") as f:
            if f.read().count(b"\n") >= 3:
                break
        time.sleep(0.05)
    return time.monotonic()


def arrivals_ms(jtls: Sequence[Path]) -> npt.NDArray[np.int64]:
    frames = [pd.read_csv(j, usecols=["timeStamp"]) for j in jtls]
    return np.sort(np.concatenate([f["timeStamp"].to_numpy(np.int64) for f in frames]))


@dataclass(frozen=True)
class Segment:
    rate_rps: float
    lag_s: float | None  # None: never held within tolerance
    held_rps: float  # mean rate over [push + hold_after_s, end)
    switch_s: float | None = None  # push -> first arrival ending a run of 5 new-rate gaps


def analyse(
    ts_ms: npt.NDArray[np.int64],
    pushes: Sequence[Push],
    end_ms: int,
    tolerance: float = 0.15,
    hold_after_s: float = 2.0,
) -> list[Segment]:
    """Lag and held rate of each push (see the module docstring)."""
    segments = []
    for i, push in enumerate(pushes):
        seg_end = pushes[i + 1].at_ms if i + 1 < len(pushes) else end_ms
        rate = push.rate_rps
        win_ms = int(max(500.0, 10_000.0 / rate))
        lag: float | None = None
        starts = np.arange(push.at_ms, seg_end - win_ms + 1, 50)
        if len(starts):
            counts = np.searchsorted(ts_ms, starts + win_ms) - np.searchsorted(ts_ms, starts)
            ok = np.abs(counts / (win_ms / 1000.0) - rate) <= tolerance * rate
            bad = np.flatnonzero(~ok)
            first_good = 0 if len(bad) == 0 else int(bad[-1]) + 1
            if first_good < len(starts):
                lag = (starts[first_good] - push.at_ms) / 1000.0
        hold_from = push.at_ms + int(hold_after_s * 1000)
        n = int(np.searchsorted(ts_ms, seg_end) - np.searchsorted(ts_ms, hold_from))
        held = n / max((seg_end - hold_from) / 1000.0, 1e-9)
        segments.append(Segment(rate, lag, held, _switch_s(ts_ms, push, seg_end, tolerance)))
    return segments


def _switch_s(
    ts_ms: npt.NDArray[np.int64], push: Push, seg_end: int, tolerance: float
) -> float | None:
    """Seconds from the push to the first arrival that starts 5 consecutive gaps whose mean
    is the new interval within the tolerance: when the schedule has re-timed."""
    seg = ts_ms[(ts_ms >= push.at_ms) & (ts_ms < seg_end)]
    gap = 1000.0 / push.rate_rps
    if len(seg) < 6:
        return None
    means = np.convolve(np.diff(seg).astype(float), np.ones(5) / 5, mode="valid")
    ok = np.flatnonzero(np.abs(means - gap) <= tolerance * gap)
    return None if len(ok) == 0 else float(seg[ok[0]] - push.at_ms) / 1000.0


def tpm(rate_rps: float) -> float:
    return rate_rps * TPM_PER_RPS
