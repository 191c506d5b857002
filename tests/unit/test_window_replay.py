"""Replaying a finished JTL: step alignment, reorder slack, and the `metrics` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.jtl.replay import replay
from loadguard.jtl.sample import SampleBatch
from loadguard.window import Window
from tests.unit.test_jtl_csv import HEADER, row

T0 = 1_700_000_000_000


def batch(ends: list[int]) -> SampleBatch:
    return SampleBatch.of([e - 10 for e in ends], [10] * len(ends), [True] * len(ends),
                          ["a"] * len(ends))  # fmt: skip


def test_steps_are_epoch_aligned_and_cover_first_to_last_sample() -> None:
    out = list(replay([batch([T0 + 1500, T0 + 3200])], Window(1000), 1000, reorder_slack_ms=0))
    assert [s.window_end_ms - T0 for s in out] == [2000, 3000, 4000]
    assert [s.overall.count for s in out] == [1, 0, 1]


def test_step_waits_for_reorder_slack() -> None:
    # The second batch holds a sample that ends before the first batch's newest one.
    batches = [batch([T0 + 100, T0 + 2500]), batch([T0 + 900])]
    strict = list(replay(batches, Window(1000), 1000, reorder_slack_ms=0))
    slack = list(replay(batches, Window(1000), 1000, reorder_slack_ms=2000))
    assert strict[0].overall.count == 1  # reported before the late sample arrived
    assert slack[0].overall.count == 2


def test_late_samples_are_counted() -> None:
    w = Window(1000)
    list(replay([batch([T0 + 100, T0 + 2500]), batch([T0 + 900])], w, 1000, reorder_slack_ms=0))
    assert w.late_samples == 1


def _write(tmp_path: Path) -> Path:
    jtl = tmp_path / "r.jtl"
    rows = [
        row(ts=T0 + 100, elapsed=100, label="/a"),  # ends T0+200
        row(ts=T0 + 300, elapsed=300, label="/b", success=False),  # ends T0+600
        row(ts=T0 + 1000, elapsed=20, label="/a"),  # ends T0+1020
    ]
    jtl.write_text(HEADER + "".join(rows) + "not,a,row\n")
    return jtl


def test_metrics_json_lines_follow_the_documented_schema(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["metrics", str(_write(tmp_path)), "--window", "1s", "--step",
                                   "1s", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert [x["window_end_ms"] - T0 for x in lines] == [1000, 2000]
    first = lines[0]
    assert set(first) == {
        "window_end_ms",
        "window_ms",
        "overall",
        "labels",
        "malformed_rows",
        "illegal_xml_chars",
    }
    assert set(first["overall"]) == {"count", "rps", "ok_rps", "error_rate", "mean_ms", "p50_ms",
                                     "p90_ms", "p95_ms", "p99_ms", "max_ms"}  # fmt: skip
    assert first["window_ms"] == 1000
    assert first["overall"] == {"count": 2, "rps": 2.0, "ok_rps": 1.0, "error_rate": 0.5,
                                "mean_ms": 200.0, "p50_ms": 200.0, "p90_ms": 280.0,
                                "p95_ms": 290.0, "p99_ms": 298.0, "max_ms": 300.0}  # fmt: skip
    assert set(first["labels"]) == {"/a", "/b"}
    assert lines[1]["labels"]["/a"]["count"] == 1
    assert lines[-1]["malformed_rows"] == 1
    assert "1 malformed" in res.stderr


def test_metrics_table_output(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["metrics", str(_write(tmp_path)), "--window", "1s",
                                   "--per-label"])  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split()[:5] == ["window", "end", "(UTC)", "count", "rps"]
    assert any(line.strip().startswith("/b") for line in lines)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--window", "ten"], "--window: bad duration 'ten'"),
        (["--window", "10"], "--window: missing unit '10'"),
        (["--labels", "("], "--labels: bad regular expression"),
        (["--jtl-columns", "label,label"], "twice"),
    ],
)
def test_metrics_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    res = CliRunner().invoke(cli, ["metrics", str(_write(tmp_path)), *args])
    assert res.exit_code == 2
    assert message in res.stderr
    assert "Traceback" not in res.output


def test_metrics_missing_file_is_an_input_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["metrics", str(tmp_path / "nope.jtl")])
    assert res.exit_code == 2
    assert "no such JTL" in res.stderr


def _write_with_transaction(tmp_path: Path) -> Path:
    jtl = tmp_path / "tx.jtl"
    tx_message = "Number of samples in transaction : 2, number of failing samples : 1"
    rows = [
        row(ts=T0 + 100, elapsed=10, label="/a"),
        row(ts=T0 + 120, elapsed=30, label="/b", success=False),
        row(ts=T0 + 100, elapsed=50, label="checkout", success=False, message=tx_message),
        row(ts=T0 + 300, elapsed=5, label="/c"),
        row(ts=T0 + 300, elapsed=2, label="/c-0"),  # a redirect of /c
    ]
    jtl.write_text(HEADER + "".join(rows))
    return jtl


@pytest.mark.parametrize(
    ("flag", "labels", "overall_count"),
    [
        ([], {"/a", "/b", "/c"}, 3),
        (["--transactions"], {"/a", "/b", "/c", "checkout"}, 3),
    ],
)
def test_transactions_are_labels_of_their_own_but_never_double_counted(
    tmp_path: Path, flag: list[str], labels: set[str], overall_count: int
) -> None:
    jtl = _write_with_transaction(tmp_path)
    res = CliRunner().invoke(cli, ["metrics", str(jtl), "--window", "1s", "--json", *flag])
    assert res.exit_code == 0, res.output
    first = json.loads(res.stdout.splitlines()[0])
    assert set(first["labels"]) == labels
    assert first["overall"]["count"] == overall_count
    assert "1 sub-results" in res.stderr
