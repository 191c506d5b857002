"""Security: ``loadguard run`` never exposes JMeter's BeanShell console off loopback,
and the sidecar itself listens on no port.

JMeter's stock BeanShell server listens on every interface (the positive control below
shows it); ``loadguard run`` replaces it with a loopback-only one
(``loadguard.jmeter.bsh_loopback``) and still drives the rate through it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.jmeter.launch import free_tcp_pair
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import RunningTarget, running_target
from tests.faults.helpers import PLAN, run_args, sidecar
from tests.jmeter_runner import jmeter_pids, read_decisions, wait_for

pytestmark = pytest.mark.jmeter


@pytest.fixture()
def target() -> Iterator[RunningTarget]:
    with running_target(build_model("mmc", workers=4, queue=200, service_s=0.020)) as t:
        yield t


def tcp_listeners(pid: int) -> list[tuple[str, int]]:
    return [
        (c.laddr.ip, c.laddr.port)
        for c in psutil.Process(pid).net_connections("tcp")
        if c.status == psutil.CONN_LISTEN
    ]


def is_loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def external_addresses() -> list[str]:
    found = []
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not ipaddress.ip_address(a.address).is_loopback:
                found.append(a.address)
    return found


def refused(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return False
    except OSError:
        return True


def test_run_listens_on_loopback_only_and_still_pushes(
    jmeter_home: JMeterHome, target: RunningTarget, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    decisions = out / "decisions.csv"
    with sidecar(run_args(out, target.port, "12s"), tmp_path, str(out)) as proc:
        assert wait_for(lambda: len(read_decisions(decisions)) >= 3, 60)
        (pid,) = jmeter_pids(str(out))
        (flag,) = (a for a in psutil.Process(pid).cmdline() if "beanshell.server.port=" in a)
        session_port = int(flag.split("=", 1)[1]) + 1
        assert wait_for(lambda: any(p == session_port for _, p in tcp_listeners(pid)), 20)
        listeners = tcp_listeners(pid)
        sidecar_listeners = [
            c for c in psutil.Process(proc.pid).net_connections("inet")
            if c.status == psutil.CONN_LISTEN or (c.type == socket.SOCK_DGRAM and not c.raddr)
        ]  # fmt: skip
        external = external_addresses()
        refusals = [refused(ip, session_port) for ip in external]
        _, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 1, 5), err[-2000:]
    assert (("127.0.0.1", session_port) in listeners) or any(
        p == session_port and is_loopback(ip) for ip, p in listeners
    ), listeners
    assert all(is_loopback(ip) for ip, _ in listeners), listeners
    assert sidecar_listeners == []  # the sidecar itself listens on no port
    assert all(refusals), list(zip(external, refusals, strict=True))
    rows = read_decisions(decisions)
    assert any(r["applied"] == "true" and r["old_rate"] != r["new_rate"] for r in rows), rows


def test_stock_beanshell_server_listens_on_every_interface(
    jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    """Positive control: why the loopback server exists (JMeter 5.6.3, bsh 2.0b6)."""
    bsh = free_tcp_pair()
    args = [
        "-n", "-t", str(PLAN), "-l", str(tmp_path / "r.jtl"), "-j", str(tmp_path / "j.log"),
        f"-Jbeanshell.server.port={bsh}", "-Jbeanshell.server.file=",
        "-Jjmeterengine.force.system.exit=true", "-Jtarget.port=9", "-Jthreads=1",
        "-Jduration=30", "-Jloadguard.tpm=6",
    ]  # fmt: skip
    proc = subprocess.Popen(
        jmeter_command(jmeter_home, args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: any(p == bsh + 1 for _, p in tcp_listeners(proc.pid)), 30)
        listeners = dict((p, ip) for ip, p in tcp_listeners(proc.pid))
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=10)
    assert not is_loopback(listeners[bsh + 1])  # "::" or "0.0.0.0": every interface
    assert not is_loopback(listeners[bsh])  # and the HTTP console on P
