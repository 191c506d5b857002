"""The one atomic writer (loadguard.atomic_file): every output it writes is 0644 and
appears whole or not at all."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadguard import atomic_file
from loadguard.atomic_file import FILE_MODE, write_file, write_files
from loadguard.cli import cli
from loadguard.errors import DecisionLogError, ReportError
from loadguard.junit import write_junit
from loadguard.report.atomic import write_all
from loadguard.summary import RunAccumulator, SummaryBuilder, write_json_atomic
from tests.unit.test_decision_log import make_row

REPO = Path(__file__).resolve().parents[2]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture()
def strict_umask() -> Iterator[None]:
    """A umask that would make a plain open give 0600: the mode must not depend on it."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def test_summary_json_and_the_report_files_get_the_same_mode(
    tmp_path: Path, strict_umask: None
) -> None:
    b = SummaryBuilder(window_ms=10_000, slo={"p95_ms": 250.0})
    b.add(make_row(1))
    summary = b.build(RunAccumulator(), "duration")
    write_json_atomic(tmp_path / "summary.json", summary.to_json())
    write_junit(tmp_path / "junit.xml", summary)
    write_all({tmp_path / "report.html": b"<html></html>", tmp_path / "a.png": b"png"})
    for name in ("summary.json", "junit.xml", "report.html", "a.png"):
        assert _mode(tmp_path / name) == FILE_MODE == 0o644, name


def test_an_injected_plan_gets_the_same_mode(tmp_path: Path, strict_umask: None) -> None:
    out = tmp_path / "plan.elastic.jmx"
    plan = REPO / "tests" / "plans" / "newcomer" / "shop.jmx"
    result = CliRunner().invoke(cli, ["inject", str(plan), str(out)])
    assert result.exit_code == 0, result.output
    assert _mode(out) == 0o644


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "summary.json"
    write_file(path, b'{"old": true}\n')

    def disk_full(_fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_file.os, "fsync", disk_full)
    with pytest.raises(DecisionLogError, match="No space left"):
        write_json_atomic(path, {"new": True})
    with pytest.raises(ReportError, match="No space left"):
        write_all({tmp_path / "report.html": b"new"})
    assert path.read_bytes() == b'{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_a_set_of_files_is_replaced_only_once_every_one_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "report.html", tmp_path / "chart.png"
    write_files({first: b"old html", second: b"old png"})
    real_fsync = os.fsync
    calls = 0

    def second_fails(fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(atomic_file.os, "fsync", second_fails)
    with pytest.raises(OSError, match="Input/output error"):
        write_files({first: b"new html", second: b"new png"})
    assert (first.read_bytes(), second.read_bytes()) == (b"old html", b"old png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chart.png", "report.html"]


def test_a_file_is_renamed_into_place_not_rewritten(tmp_path: Path) -> None:
    """A reader holding the old file keeps reading the old bytes: the new content arrives
    as a new inode by rename, never by truncating the file being read."""
    path = tmp_path / "summary.json"
    write_file(path, b"old")
    with path.open("rb") as reader:
        write_file(path, b"new content")
        assert reader.read() == b"old"
    assert path.read_bytes() == b"new content"
