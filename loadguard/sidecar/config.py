"""What a sidecar run is configured with: its output paths and ``SidecarConfig``.

``SidecarConfig`` validates itself and raises ``ConfigError`` (exit 2) naming the field at
fault and the problem, in the library's words: no command-line flag is named here (the
CLI, ``loadguard.cli.sidecar_options``, rewrites the message with its flag).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from loadguard.actuator.elastic_timer import ELASTIC_TIMER_LAG_MS
from loadguard.actuator.engines import Engine
from loadguard.errors import ConfigError
from loadguard.jmeter.remote import DEFAULT_SAMPLE_SENDER, RemoteEngine
from loadguard.outputs import OutputConfig
from loadguard.policies import DEFAULT_POLICY
from loadguard.slo import SloSpec


@dataclass(frozen=True)
class Paths:
    jtl: Path
    decisions: Path
    summary: Path
    junit: Path | None = None
    jmeter_log: Path | None = None
    jmeter_stdout: Path | None = None

    @classmethod
    def in_dir(cls, out: Path, **overrides: Path | None) -> Paths:
        base = cls(
            jtl=out / "results.jtl",
            decisions=out / "decisions.csv",
            summary=out / "summary.json",
            junit=None,
            jmeter_log=out / "jmeter.log",
            jmeter_stdout=out / "jmeter.out",
        )
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class SidecarConfig:
    paths: Paths
    spec: SloSpec
    policy: str = DEFAULT_POLICY
    policy_params: Mapping[str, str] = field(default_factory=dict)
    engines: tuple[Engine, ...] = ()
    dry_run: bool = False
    tick_ms: int = 2000
    initial_rate: float = 5.0
    idle_exit_ms: int = 10_000
    duration_ms: int | None = None
    min_capacity: float | None = None
    auto_stop: int | None = None
    lag_ms: int = ELASTIC_TIMER_LAG_MS
    push_timeout_s: float = 2.0
    quiet: bool = False
    verbose: bool = False
    follower_options: Mapping[str, object] = field(default_factory=dict)
    #: Distributed JMeter (docs/distributed.md): the controller's ``-R`` entries, in the
    #: order of ``engines``; the most one engine may be given; the sample sender mode.
    remotes: tuple[RemoteEngine, ...] = ()
    engine_max_rate: float | None = None
    sample_sender: str = DEFAULT_SAMPLE_SENDER
    #: Live outputs (InfluxDB, Prometheus; docs/dashboards.md), ``None``: none.
    outputs: OutputConfig | None = None

    def __post_init__(self) -> None:
        """Refuse a config the loop cannot run (``ConfigError``, naming the field)."""
        if self.tick_ms < 100:
            raise ConfigError("tick_ms", f"the tick must be at least 100ms, got {self.tick_ms}ms")
        if not self.initial_rate > 0:
            raise ConfigError("initial_rate", "the initial rate must be > 0 req/s")
        if self.auto_stop is not None and self.auto_stop < 1:
            raise ConfigError("auto_stop", f"auto-stop must be >= 1 tick, got {self.auto_stop}")
        if self.lag_ms < 0:
            raise ConfigError("lag_ms", "the actuation lag must be >= 0")
        if "lag_ms" in self.policy_params:
            raise ConfigError(
                "policy_params.lag_ms",
                "the actuation lag is a setting of its own, not a policy parameter",
            )
        if self.idle_exit_ms <= 0:
            raise ConfigError("idle_exit_ms", "the idle exit must be > 0")
        if self.duration_ms is not None and self.duration_ms <= 0:
            raise ConfigError("duration_ms", "the duration must be > 0")
        if self.engine_max_rate is not None and not self.remotes:
            raise ConfigError(
                "engine_max_rate.remotes", "a per-engine maximum rate needs remote engines"
            )
        if self.engine_max_rate is not None and not self.engine_max_rate > 0:
            raise ConfigError("engine_max_rate", "the per-engine maximum must be > 0 req/s")
        if self.remotes and len(self.remotes) != len(self.engines):
            raise ConfigError(
                "remotes",
                f"{len(self.remotes)} remote engine(s) but {len(self.engines)} BeanShell "
                "engine port(s): each remote engine needs its BeanShell port",
            )
