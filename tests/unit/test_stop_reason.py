"""Stop reasons (``loadguard.stop_reason.StopReason``): one behaviour each."""

from __future__ import annotations

import json

import pytest

from loadguard.loop import exit_code_for
from loadguard.stop_reason import StopReason
from loadguard.summary import RunAccumulator, SummaryBuilder


def test_stop_reasons_are_the_strings_users_files_hold() -> None:
    assert [str(r) for r in StopReason] == [
        "duration", "auto_stop", "stopped", "signal", "decision_log_failed",
        "internal_error", "jmeter_exited", "jmeter_failed", "engine_lost", "jmeter_gone",
    ]  # fmt: skip


def test_the_summary_json_holds_the_stop_reason_as_a_plain_string() -> None:
    summary = SummaryBuilder(5000, {}).build(RunAccumulator(), StopReason.SIGNAL)
    data = summary.to_json()
    assert type(data["stop_reason"]) is str
    assert json.loads(json.dumps(data))["stop_reason"] == "signal"


@pytest.mark.parametrize(
    ("reason", "code"),
    [(StopReason.ENGINE_LOST, 3), (StopReason.JMETER_FAILED, 3), (StopReason.DURATION, 1)],
)
def test_only_an_engine_failure_exits_3(reason: StopReason, code: int) -> None:
    summary = SummaryBuilder(5000, {}).build(RunAccumulator(), reason)
    assert exit_code_for(summary, reason) == code
