"""A bug inside the control loop still leaves a finished decision log and summary.json
(stop reason ``internal_error``), stops the generator, and reaches the user as one line."""

from __future__ import annotations

import csv
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.jtl.sample import SampleBatch
from loadguard.observation import Observation
from loadguard.policies import build_policy
from loadguard.policies.base import Decision, Policy
from loadguard.sidecar import Paths, SidecarConfig, drive, preflight
from loadguard.slo import SloSpec

from .test_attach_cli import COLUMNS, write_headerless_jtl


@dataclass
class BrokenAfter:
    """The real guarded policy, until its ``after``-th decision raises (a bug)."""

    inner: Policy
    after: int
    calls: int = 0

    @property
    def name(self) -> str:
        return self.inner.name

    def decide(self, obs: Observation) -> Decision:
        self.calls += 1
        if self.calls > self.after:
            raise ZeroDivisionError("float division by zero")
        return self.inner.decide(obs)


@dataclass
class LiveSource:
    """50 fresh 20 ms samples per poll, stamped with the wall clock."""

    polls: int = 0
    malformed_rows: int = 0
    illegal_xml_chars: int = 0
    ends: list[int] = field(default_factory=list)

    def poll(self) -> SampleBatch:
        self.polls += 1
        now = int(time.time() * 1000)
        ends = np.linspace(now - 40, now, 50).astype(np.int64)
        elapsed = np.full(50, 20, np.int64)
        return SampleBatch.of(ends - elapsed, elapsed, np.full(50, True), ["home"] * 50)


def _broken(after: int) -> Any:
    def factory(name: str, spec: SloSpec, **params: Any) -> Policy:
        return BrokenAfter(build_policy(name, spec, **params), after)

    return factory


def test_a_policy_bug_mid_run_still_writes_the_log_and_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = Paths.in_dir(tmp_path, junit=tmp_path / "junit.xml")
    cfg = SidecarConfig(
        paths=paths,
        spec=SloSpec.from_options(p95="250ms", min_samples="5"),
        dry_run=True,
        tick_ms=100,
        quiet=True,
    )
    stopped: list[bool] = []
    source = LiveSource()
    policy = _broken(after=3)(cfg.policy, cfg.spec)
    preflight(cfg.paths)
    with pytest.raises(ZeroDivisionError):
        drive(cfg, policy, source, on_end=lambda: stopped.append(True))
    assert stopped == [True]  # the generator is stopped, as at a normal end
    with paths.decisions.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["tick"] for r in rows] == ["1", "2", "3"]
    summary = json.loads(paths.summary.read_text())
    assert summary["stop_reason"] == "internal_error"
    assert summary["internal_error"] == "ZeroDivisionError: float division by zero"
    assert summary["samples"] == 50 * source.polls  # the last rows were drained too
    assert (tmp_path / "junit.xml").exists()


def test_attach_with_a_policy_bug_is_one_line_exit_4_and_a_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("loadguard.sidecar.compose.build_policy", _broken(after=1))
    jtl = tmp_path / "r.jtl"
    write_headerless_jtl(jtl)
    argv = ["attach", "--jtl", str(jtl), "--jtl-columns", COLUMNS, "--dry-run", "--p95", "250ms"]
    argv += ["--tick", "200ms", "--duration", "5s", "--out", str(tmp_path), "-q"]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 4
    assert result.stderr.strip().splitlines() == [
        "internal error: ZeroDivisionError: float division by zero (--debug shows the traceback)"
    ]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["stop_reason"] == "internal_error"
    assert summary["samples"] == 200
