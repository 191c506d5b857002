"""Reading a decision log for the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadguard.decisions import HEADER, DecisionLogWriter
from loadguard.errors import ReportError
from loadguard.report.decision_frame import load_decisions
from loadguard.report.run_inputs import resolve_run
from tests.unit.test_decision_log import make_row


def _log(path: Path, ticks: int) -> Path:
    with DecisionLogWriter(path) as w:
        for t in range(1, ticks + 1):
            w.append(make_row(t, p99_ms=None))
    return path


def test_numeric_columns_are_floats_and_empty_cells_nan(tmp_path: Path) -> None:
    frame = load_decisions(_log(tmp_path / "d.csv", 3))
    assert list(frame["tick"]) == [1.0, 2.0, 3.0]
    assert frame["p99_ms"].isna().all() and frame["slo_p95_ms"].eq(250.0).all()
    assert list(frame["action"]) == ["INCREASE"] * 3


def test_a_row_cut_by_a_crash_is_dropped(tmp_path: Path) -> None:
    path = _log(tmp_path / "d.csv", 3)
    with path.open("a") as fh:
        fh.write("2026-11-30T00:00:00.000Z,")
    assert len(load_decisions(path)) == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "header lacks iso_time"),
        ("a,b\n1,2\n", "not a LoadGuard decision log"),
        (HEADER.replace(",zone,", ",zones,"), "header lacks zone"),
        (HEADER, "has no rows"),
    ],
)
def test_bad_decision_log_is_a_report_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "d.csv"
    path.write_text(text)
    with pytest.raises(ReportError, match=message):
        load_decisions(path)


def test_run_dir_supplies_what_it_has_and_options_override(tmp_path: Path) -> None:
    _log(tmp_path / "decisions.csv", 1)
    other = _log(tmp_path / "other.csv", 1)
    paths = resolve_run(tmp_path)
    assert (paths.jtl, paths.summary) == (None, None)
    assert paths.default_out() == tmp_path / "report.html"
    assert resolve_run(tmp_path, decisions=other).decisions == other


@pytest.mark.parametrize("option", ["jtl", "summary", "decisions"])
def test_a_named_file_that_is_missing_is_an_error(tmp_path: Path, option: str) -> None:
    _log(tmp_path / "decisions.csv", 1)
    with pytest.raises(ReportError, match="no such file"):
        resolve_run(tmp_path, **{option: tmp_path / "missing"})  # type: ignore[arg-type]
