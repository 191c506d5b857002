"""The load generators ``run_plan`` starts: the ``Generator`` protocol, and the local
JMeter (``LocalJMeter``), our child process with a loopback-only BeanShell console."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from loadguard.actuator.elastic_timer import RATE_PROPERTY, rps_to_tpm
from loadguard.actuator.engines import Actuator, Engine
from loadguard.jmeter.bsh_loopback import confirm_loopback_console, write_loopback_server_file
from loadguard.jmeter.launch import JMeterProcess, LaunchSpec, free_tcp_pair, free_udp_port
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.sample import SampleSource
from loadguard.sidecar.config import SidecarConfig
from loadguard.sidecar.staging import RunPlan, refuse_bsh_override


@dataclass(frozen=True)
class Started:
    """A started load generator, as ``run_plan`` drives it: the process it stops at the
    end, the config the loop runs with, the follower of its JTL and the source over it,
    the actuator (``None``: ``drive`` builds it from ``cfg.engines``), and whether the
    initial rate is already set (``preset``: nothing is read or pushed first)."""

    proc: JMeterProcess
    cfg: SidecarConfig
    follower: JtlFollower
    source: SampleSource
    actuator: Actuator | None = None
    preset: bool = False


class Generator(Protocol):
    """How ``run_plan`` starts the load: a local JMeter (``LocalJMeter``) or a
    distributed controller (``distributed.RemoteController``)."""

    def check(self, run: RunPlan, cfg: SidecarConfig) -> None:
        """Refuse what cannot run, before anything is written or started."""
        ...

    def start(
        self, run: RunPlan, cfg: SidecarConfig, plan_path: Path, stop: threading.Event
    ) -> contextlib.AbstractContextManager[Started]:
        """Start the generator on ``plan_path`` for the ``with`` block; it is stopped and
        everything it holds released at the end. ``stop`` is set by a signal."""
        ...


class LocalJMeter:
    """``loadguard run``: one non-GUI JMeter, our child, with a loopback-only BeanShell
    console and the initial rate set as a -J property."""

    def check(self, run: RunPlan, cfg: SidecarConfig) -> None:
        refuse_bsh_override(run)

    @contextlib.contextmanager
    def start(
        self, run: RunPlan, cfg: SidecarConfig, plan_path: Path, stop: threading.Event
    ) -> Iterator[Started]:
        bsh = free_tcp_pair()
        props = {RATE_PROPERTY: f"{rps_to_tpm(cfg.initial_rate):.6g}", **run.properties}
        spec = LaunchSpec(
            plan=plan_path,
            jtl=cfg.paths.jtl,
            log=cfg.paths.jmeter_log or run.out_dir / "jmeter.log",
            stdout=cfg.paths.jmeter_stdout or run.out_dir / "jmeter.out",
            bsh_port=bsh,
            udp_port=free_udp_port(),
            properties=props,
            extra_args=tuple(run.extra_args),
            bsh_server_file=write_loopback_server_file(run.out_dir),
        )
        cfg = replace(cfg, engines=(Engine("127.0.0.1", bsh + 1),))
        follower = JtlFollower(cfg.paths.jtl, **cfg.follower_options)  # type: ignore[arg-type]
        proc = JMeterProcess(run.jmeter, spec)
        try:
            # Fail closed: no rate is pushed into a console that listens beyond loopback.
            confirm_loopback_console(proc.pid, bsh, alive=proc.alive, stop=stop)
            yield Started(proc, cfg, follower, follower, preset=True)
        finally:
            proc.stop()  # idempotent; covers an early failure
