"""``loadguard run --remote``: a distributed JMeter test driven as one elastic load.

LoadGuard starts only the controller; the ``jmeter-server`` engines are the user's
(started with a BeanShell port and a fixed RMI port, docs/distributed.md). Before the
controller starts, every engine must answer on its BeanShell port and is given its share
of ``--initial-rate`` (an engine in server mode runs its BeanShell server from boot, so
the rate is in place before the first sample). Then the controller runs with a fresh
sample sender (``mode=StrippedAsynch`` by default), its JTL feeds the window, the policy
decides one total, and ``FleetActuator`` shares it over the live engines.

``run_remote`` is ``sidecar.run_plan`` with ``RemoteController`` as its generator: the
run folder, the staged plan, the signals and the loop are the local run's.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from loadguard.actuator.elastic_timer import threads_needed
from loadguard.actuator.fleet import FleetSource
from loadguard.errors import ConfigError, EngineError
from loadguard.jmeter.launch import free_udp_port
from loadguard.jmeter.remote import ControllerProcess, ControllerSpec
from loadguard.jtl.follow import JtlFollower
from loadguard.loop import LoopOutcome
from loadguard.sidecar import RunPlan, SidecarConfig, Started, fleet_actuator, run_plan

log = logging.getLogger(__name__)


def check_fleet_config(cfg: SidecarConfig) -> None:
    if not cfg.remotes:
        raise ConfigError("remotes.none", "no remote engine given")
    if cfg.dry_run:
        raise ConfigError("remotes.dry_run", "needs the engines' BeanShell ports")
    if len(cfg.engines) != len(cfg.remotes):
        raise ConfigError(
            "remotes",
            f"{len(cfg.remotes)} remote engine(s) but {len(cfg.engines)} BeanShell engine port(s)",
        )


def warn_thin_threads(cfg: SidecarConfig, threads: str | None) -> None:
    """Each engine runs the whole plan: its threads must carry its largest share."""
    p95 = cfg.spec.threshold("p95_ms")
    if threads is None or p95 is None:
        return
    try:
        per_engine = int(threads)
    except ValueError:
        return
    weights = [e.weight for e in cfg.engines]
    top = cfg.spec.max_rate * max(weights) / sum(weights)
    if cfg.engine_max_rate is not None:
        top = max(top, min(cfg.engine_max_rate, cfg.spec.max_rate))
    need = threads_needed(top, p95)
    if per_engine < need:
        log.warning(
            "threads=%d per engine may not carry %.1f req/s at p95 %.0f ms (need about %d): "
            "each engine runs the whole plan with its own threads",
            per_engine,
            top,
            p95,
            need,
        )


class RemoteController:
    """``run --remote``: the user's engines get their shares of the initial rate first
    (nothing starts if one does not answer), then the distributed controller runs."""

    def check(self, run: RunPlan, cfg: SidecarConfig) -> None:
        check_fleet_config(cfg)
        warn_thin_threads(cfg, run.properties.get("threads"))

    @contextlib.contextmanager
    def start(
        self, run: RunPlan, cfg: SidecarConfig, plan_path: Path, stop: threading.Event
    ) -> Iterator[Started]:
        fleet = fleet_actuator(cfg)
        try:
            first = fleet.push(cfg.initial_rate)
            if not first.applied:
                bad = "; ".join(f"{a.engine}: {a.error}" for a in first.acks if not a.ok)
                raise EngineError(
                    f"engine(s) not ready, nothing started: {bad}", setting="engines.not_ready"
                )
            log.info(
                "initial shares: %s", ", ".join(f"{k}={v:.3f}" for k, v in fleet.shares.items())
            )
            paths = cfg.paths
            spec = ControllerSpec(
                plan=plan_path.absolute(),
                jtl=paths.jtl.absolute(),
                log=(paths.jmeter_log or run.out_dir / "jmeter.log").absolute(),
                stdout=paths.jmeter_stdout or run.out_dir / "jmeter.out",
                udp_port=free_udp_port(),
                remotes=cfg.remotes,
                properties=dict(run.properties),
                sample_sender=cfg.sample_sender,
                extra_args=tuple(run.extra_args),
            )
            cfg = replace(cfg, follower_options={**cfg.follower_options, "thread_names": True})
            follower = JtlFollower(paths.jtl, **cfg.follower_options)  # type: ignore[arg-type]
            proc = ControllerProcess(run.jmeter, spec)
            try:
                yield Started(proc, cfg, follower, FleetSource(follower, fleet), actuator=fleet)
            finally:
                proc.stop()  # idempotent; covers an early failure
        finally:
            fleet.close()


def run_remote(run: RunPlan, cfg: SidecarConfig) -> tuple[LoopOutcome, int]:
    """Start the controller on ``run.plan`` against ``cfg.remotes`` and drive the fleet."""
    return run_plan(run, cfg, RemoteController())
