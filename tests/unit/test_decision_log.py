"""Decision Log Writer: append-only, one whole row per write, resumable."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from loadguard.decisions import COLUMNS, HEADER, DecisionLogWriter, DecisionRow, format_row
from loadguard.errors import DecisionLogError


def make_row(tick: int, **over: object) -> DecisionRow:
    base: dict[str, object] = dict(
        epoch_ms=1_796_000_000_000 + tick * 2000,
        tick=tick,
        action="INCREASE",
        zone="SAFE",
        reason="safe",
        old_rate=10.0,
        new_rate=12.5,
        applied=True,
        engine_ack="127.0.0.1:9001=12.5",
        samples=100,
        rps=10.0,
        ok_rps=10.0,
        error_rate=0.0,
        mean_ms=20.0,
        p50_ms=18.0,
        p90_ms=30.0,
        p95_ms=35.5,
        p99_ms=50.0,
        max_ms=60.0,
        offered_rps=10.0,
        staleness_ms=120,
        slo={"p95_ms": 250.0, "error_rate": 0.01},
        breaches=(),
        breached_labels=(),
        detail="",
    )
    base.update(over)
    return DecisionRow(**base)  # type: ignore[arg-type]


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_header_is_the_public_column_list(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    with DecisionLogWriter(path) as w:
        w.append(make_row(1))
    assert path.read_text().splitlines()[0].split(",") == list(COLUMNS)


def test_each_append_is_on_disk_before_the_next(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    with DecisionLogWriter(path) as w:
        w.append(make_row(1))
        assert len(read_rows(path)) == 1
        w.append(make_row(2, action="HOLD", zone="NEAR", reason="near"))
        assert [r["action"] for r in read_rows(path)] == ["INCREASE", "HOLD"]


def test_reopen_appends_and_continues_tick_numbers(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    with DecisionLogWriter(path) as w:
        w.append(make_row(1))
        w.append(make_row(2))
    w2 = DecisionLogWriter(path)
    w2.open()
    assert w2.next_tick() == 3
    w2.append(make_row(w2.next_tick()))
    w2.close()
    rows = read_rows(path)
    assert [r["tick"] for r in rows] == ["1", "2", "3"]
    assert path.read_text().count(HEADER) == 1


def test_partial_last_row_from_a_crash_is_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    with DecisionLogWriter(path) as w:
        w.append(make_row(1))
    with path.open("ab") as fh:
        fh.write(format_row(make_row(2))[:25])
    with DecisionLogWriter(path) as w:
        assert w.next_tick() == 2
        w.append(make_row(2))
    assert [r["tick"] for r in read_rows(path)] == ["1", "2"]


def test_foreign_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(DecisionLogError, match="not a LoadGuard decision log"):
        DecisionLogWriter(path).open()
    assert path.read_text() == "a,b,c\n1,2,3\n"


def test_path_under_a_file_fails_before_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DecisionLogError, match="cannot create"):
        DecisionLogWriter(blocker / "sub" / "d.csv")


def test_failed_write_leaves_no_partial_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "d.csv"
    w = DecisionLogWriter(path)
    w.open()
    w.append(make_row(1))
    good = path.read_bytes()
    real_write = os.write

    def half_write(fd: int, data: bytes) -> int:
        return real_write(fd, data[: len(data) // 2])

    monkeypatch.setattr(os, "write", half_write)
    with pytest.raises(DecisionLogError, match="no partial row"):
        w.append(make_row(2))
    monkeypatch.undo()
    w.close()
    assert path.read_bytes() == good


def test_numbers_and_lists_are_formatted_plainly(tmp_path: Path) -> None:
    row = make_row(
        7,
        p95_ms=None,
        breaches=("p95_ms", "error_rate"),
        breached_labels=("/cart", 'we"ird,label'),
    )
    path = tmp_path / "d.csv"
    with DecisionLogWriter(path) as w:
        w.append(row)
    got = read_rows(path)[0]
    assert got["p95_ms"] == ""
    assert got["new_rate"] == "12.5"
    assert got["breaches"] == "p95_ms;error_rate"
    assert got["breached_labels"] == '/cart;we"ird,label'
    assert got["applied"] == "true"
    assert got["iso_time"].endswith("+00:00")
