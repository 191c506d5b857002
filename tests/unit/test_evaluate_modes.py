"""The modes of ``loadguard evaluate`` as library functions: settings and domain errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loadguard.errors import SloSpecError, UsageError
from loadguard.lab.evaluate import modes
from loadguard.policies import DEFAULT_POLICY


def _harness(tmp_path: Path, **over: Any) -> Any:
    settings: dict[str, Any] = dict(
        quick=True, target="emulator", layout="per-service", teastore_reset=False, schemes=(),
        repetitions=None, duration_s=None, steady_after_s=120.0, seed=1, sweep_rates=None,
        sweep_duration_s=None, out=tmp_path, command="loadguard evaluate --quick",
    )  # fmt: skip
    settings.update(over)
    return modes.harness_config(**settings)


def test_real_without_suite_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="give --suite too"):
        modes.check_mode(suite=False, real=True, target="emulator", seeds=None,
                         violation_budget=None)  # fmt: skip


def test_the_quick_harness_keeps_the_quick_defaults_under_given_values(tmp_path: Path) -> None:
    cfg = _harness(tmp_path, repetitions=2)
    assert (cfg.quick, cfg.duration_s, cfg.repetitions, cfg.out_dir) == (True, 20.0, 2, tmp_path)


def test_a_sweep_no_longer_than_its_warm_up_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--sweep-duration"):
        _harness(tmp_path, quick=False, sweep_duration_s=10.0)


def test_teastore_reset_needs_the_teastore_target(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--teastore-reset"):
        _harness(tmp_path, teastore_reset=True)


def test_render_only_needs_the_folder_it_renders_from(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--render-only: give --out"):
        modes.run_harness(_harness(tmp_path), None, force=False, render_only=True,
                          out_given=False)  # fmt: skip


def test_the_suite_takes_seeds_or_repetitions_not_both() -> None:
    with pytest.raises(UsageError, match="give one of them"):
        modes.suite_config(quick=True, policies=(), repetitions=2, seeds="1",
                           violation_budget=None, duration_s=None)  # fmt: skip


def test_the_suite_reads_its_budget_through_the_slo_parser() -> None:
    cfg = modes.suite_config(quick=True, policies=(), repetitions=None, seeds="7,7,8",
                             violation_budget="2%", duration_s=None)  # fmt: skip
    assert (cfg.seeds, cfg.violation_budget) == ((7, 8), 0.02)
    with pytest.raises(SloSpecError):
        modes.parse_budget("0%")


def test_the_real_suite_runs_the_default_policy_for_240_s_unless_told(tmp_path: Path) -> None:
    cfg = modes.real_suite_config(policies=(), duration_s=None, out=tmp_path)
    assert (cfg.policies, cfg.duration_s, cfg.out_dir) == ((DEFAULT_POLICY,), 240.0, tmp_path)


def test_a_real_suite_run_shorter_than_a_minute_is_refused() -> None:
    with pytest.raises(UsageError, match="at least 60s"):
        modes.real_suite_config(policies=(), duration_s=30.0, out=None)


def test_real_suite_repetitions_are_rounds_of_the_policies(tmp_path: Path) -> None:
    cfg = modes.real_suite_config(
        policies=("tally,threezone",), duration_s=None, out=tmp_path, repetitions=3
    )
    assert cfg.rounds == 3


def test_real_suite_repetitions_below_one_are_refused() -> None:
    with pytest.raises(UsageError, match="--repetitions"):
        modes.real_suite_config(policies=(), duration_s=None, out=None, repetitions=0)
