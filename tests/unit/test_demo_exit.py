"""``loadguard demo``'s exit code, with a fake demo run (the real demo's exit code is
checked by tests/integration/test_wheel.py and test_console_tmux.py against real JMeter).

The verdict's loop exit code comes from the real ``loop.exit_code_for``; only the run
itself (target, JMeter) is faked."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.lab import demo as demo_lib
from loadguard.lab.cli import demo_cmd
from loadguard.loop import LoopOutcome, exit_code_for
from loadguard.stop_reason import StopReason
from loadguard.summary import INCONCLUSIVE, INCONCLUSIVE_EXIT, RunAccumulator, SummaryBuilder


def _fake_run_demo(verdict: str, reason: StopReason):  # type: ignore[no-untyped-def]
    def run(opts: demo_lib.DemoOptions, _log: object) -> demo_lib.DemoResult:
        built = SummaryBuilder(5000, {}).build(RunAccumulator(), reason)
        summary = dataclasses.replace(built, verdict=verdict)
        outcome = LoopOutcome(summary, reason, exit_code_for(summary, reason))
        return demo_lib.DemoResult(outcome, opts.out_dir, None, 144.0)

    return run


def _demo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verdict: str, reason: StopReason):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(demo_cmd, "run_demo", _fake_run_demo(verdict, reason))
    argv = ["demo", "--duration", "30s", "-q", "--out", str(tmp_path / "demo")]
    result = CliRunner().invoke(cli, argv)
    assert f"verdict:               {verdict} (stop: {reason})" in result.output
    return result


def test_demo_exits_5_on_an_inconclusive_verdict_as_run_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = _demo(monkeypatch, tmp_path, INCONCLUSIVE, StopReason.DURATION)
    assert result.exit_code == INCONCLUSIVE_EXIT, result.output


@pytest.mark.parametrize(
    ("verdict", "reason", "code"),
    [
        ("PASS", StopReason.DURATION, 0),
        ("FAIL", StopReason.DURATION, 0),
        ("PASS", StopReason.JMETER_FAILED, 3),
    ],
)
def test_demo_exits_0_when_the_loop_ran_and_3_when_jmeter_failed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verdict: str, reason: StopReason, code: int
) -> None:
    result = _demo(monkeypatch, tmp_path, verdict, reason)
    assert result.exit_code == code, result.output


def _summary(capacity: dict[str, object] | None, held: dict[str, object] | None):  # type: ignore[no-untyped-def]
    built = SummaryBuilder(5000, {}).build(RunAccumulator(), StopReason.DURATION)
    return dataclasses.replace(built, capacity=capacity, held_rate=held)


def test_lambda_line_gives_capacity_and_held_rate_as_shares_of_lambda() -> None:
    s = _summary({"rps": 150.0, "status": "estimated"}, {"rps": 144.0})
    assert demo_cmd.against_lambda(s, 144.0) == " (capacity 104 % of it, held rate 100 %)"


def test_lambda_line_names_a_lower_bound_as_one() -> None:
    s = _summary({"rps": 20.0, "status": "lower_bound"}, {"rps": 20.0})
    assert demo_cmd.against_lambda(s, 144.0).startswith(" (capacity above 14 % of it")


def test_lambda_line_is_empty_without_an_answer() -> None:
    assert demo_cmd.against_lambda(_summary(None, None), 144.0) == ""
