"""``sidecar.run_plan`` is the one run path: a local JMeter and a distributed controller
are generators it starts, drives through the same loop, stops and accounts for."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import pytest

from loadguard.actuator.engines import DryRunActuator
from loadguard.jmeter.launch import JMeterProcess
from loadguard.jtl.follow import JtlFollower
from loadguard.sidecar import Paths, RunPlan, SidecarConfig, Started, attach, run_plan
from loadguard.slo import SloSpec

SHOP = Path(__file__).resolve().parents[2] / "tests" / "plans" / "newcomer" / "shop.jmx"


@dataclass
class ExitedProcess:
    """A generator process that has already finished (exit 0); counts its stops."""

    pid: int = 1
    stops: int = 0

    def poll(self) -> int | None:
        return 0

    def stop(self) -> int:
        self.stops += 1
        return 0


@dataclass
class FakeGenerator:
    proc: ExitedProcess = field(default_factory=ExitedProcess)
    actuator: DryRunActuator = field(default_factory=DryRunActuator)
    calls: list[str] = field(default_factory=list)

    def check(self, run: RunPlan, cfg: SidecarConfig) -> None:
        self.calls.append("check")

    @contextlib.contextmanager
    def start(
        self, run: RunPlan, cfg: SidecarConfig, plan_path: Path, stop: threading.Event
    ) -> Iterator[Started]:
        self.calls.append("start")
        follower = JtlFollower(cfg.paths.jtl)
        proc = cast(JMeterProcess, self.proc)
        try:
            yield Started(proc, cfg, follower, follower, actuator=cast(Any, self.actuator))
        finally:
            self.calls.append("released")


def test_run_plan_drives_the_generator_it_is_given(tmp_path: Path) -> None:
    out = tmp_path / "o"
    cfg = SidecarConfig(
        paths=Paths.in_dir(out), spec=SloSpec.from_options(p95="300ms"), tick_ms=100, quiet=True
    )
    generator = FakeGenerator()
    run = RunPlan(plan=SHOP, jmeter=cast(Any, None), out_dir=out, inject=False)
    outcome, code = run_plan(run, replace(cfg), generator)
    assert generator.calls == ["check", "start", "released"]
    assert (outcome.stop_reason, code) == ("jmeter_exited", 0)
    assert generator.actuator.history == [cfg.initial_rate]  # pushed through its actuator
    assert generator.proc.stops >= 1
    assert json.loads((out / "summary.json").read_text())["stop_reason"] == "jmeter_exited"


@dataclass
class Counted:
    """Wraps a function of ``loadguard.sidecar.compose`` and counts its calls."""

    inner: Any
    calls: int = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner(*args, **kwargs)


def _count_prepare(monkeypatch: pytest.MonkeyPatch) -> tuple[Counted, Counted]:
    import loadguard.sidecar.compose as compose

    preflight, build_policy = Counted(compose.preflight), Counted(compose.build_policy)
    monkeypatch.setattr(compose, "preflight", preflight)
    monkeypatch.setattr(compose, "build_policy", build_policy)
    return preflight, build_policy


def test_run_plan_checks_the_outputs_and_builds_the_policy_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preflight, build_policy = _count_prepare(monkeypatch)
    out = tmp_path / "o"
    cfg = SidecarConfig(
        paths=Paths.in_dir(out), spec=SloSpec.from_options(p95="300ms"), tick_ms=100, quiet=True
    )
    run = RunPlan(plan=SHOP, jmeter=cast(Any, None), out_dir=out, inject=False)
    outcome, _ = run_plan(run, cfg, FakeGenerator())
    assert outcome.stop_reason == "jmeter_exited"
    assert (preflight.calls, build_policy.calls) == (1, 1)


def test_attach_checks_the_outputs_and_builds_the_policy_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preflight, build_policy = _count_prepare(monkeypatch)
    cfg = SidecarConfig(
        paths=Paths.in_dir(tmp_path),
        spec=SloSpec.from_options(p95="300ms"),
        dry_run=True,
        tick_ms=100,
        duration_ms=300,
        quiet=True,
    )
    outcome = attach(cfg)
    assert outcome.stop_reason == "duration" and outcome.ticks >= 1
    assert (preflight.calls, build_policy.calls) == (1, 1)
