"""The JTL follower on real files: growth, partial lines, truncation, replacement."""

from __future__ import annotations

import itertools
import logging
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadguard.jtl.follow import JtlFollower
from tests.unit.test_jtl_csv import HEADER, row

ROWS = [row(ts=1_700_000_000_000 + i, elapsed=i, label=f"l{i % 3}") for i in range(40)]


def labels_of(f: JtlFollower) -> list[int]:
    return [int(x) for x in f.poll().elapsed_ms]


def append(path: Path, text: str | bytes) -> None:
    with path.open("ab") as fh:
        fh.write(text.encode() if isinstance(text, str) else text)


def test_starts_before_the_file_exists(tmp_path: Path) -> None:
    jtl = tmp_path / "r.jtl"
    f = JtlFollower(jtl)
    assert len(f.poll()) == 0
    append(jtl, HEADER + ROWS[0])
    assert labels_of(f) == [0]


def test_reads_only_new_bytes_and_holds_partial_line(tmp_path: Path) -> None:
    jtl = tmp_path / "r.jtl"
    data = (HEADER + "".join(ROWS[:5])).encode()
    cut = len(data) - 7
    append(jtl, data[:cut])
    f = JtlFollower(jtl)
    assert labels_of(f) == [0, 1, 2, 3]
    assert labels_of(f) == []
    append(jtl, data[cut:])
    assert labels_of(f) == [4]
    assert f.bytes_read == len(data)


def test_truncation_starts_over_with_a_log_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    jtl = tmp_path / "r.jtl"
    append(jtl, HEADER + "".join(ROWS[:10]))
    f = JtlFollower(jtl)
    assert len(f.poll()) == 10
    jtl.write_text(HEADER + ROWS[20])
    with caplog.at_level(logging.WARNING, logger="loadguard.jtl.follow"):
        assert labels_of(f) == [20]
    assert f.restarts == 1
    assert "truncated" in caplog.text


def test_replaced_file_is_finished_then_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    jtl = tmp_path / "r.jtl"
    append(jtl, HEADER + "".join(ROWS[:3]))
    f = JtlFollower(jtl)
    assert labels_of(f) == [0, 1, 2]
    append(jtl, ROWS[3])  # written to the old file just before the new run replaced it
    fresh = tmp_path / "new.jtl"
    fresh.write_text(HEADER + ROWS[30] + ROWS[31])
    os.replace(fresh, jtl)
    with caplog.at_level(logging.WARNING, logger="loadguard.jtl.follow"):
        assert labels_of(f) == [3, 30, 31]
    assert f.restarts == 1
    assert "replaced" in caplog.text


def test_buffered_writer_is_detected(tmp_path: Path) -> None:
    jtl = tmp_path / "r.jtl"
    data = (HEADER + "".join(ROWS)).encode()
    f = JtlFollower(jtl)
    block = 512  # like BufferedOutputStream: fixed blocks that end mid-row
    for start in range(0, len(data), block):
        append(jtl, data[start : start + block])
        f.poll()
    assert f.buffered_suspected
    assert any("autoflush" in w for w in f.warnings)


def test_line_by_line_writer_is_not_called_buffered(tmp_path: Path) -> None:
    jtl = tmp_path / "r.jtl"
    append(jtl, HEADER)
    f = JtlFollower(jtl)
    for r in ROWS:
        append(jtl, r)
        f.poll()
    assert not f.buffered_suspected


def test_xml_is_sniffed(tmp_path: Path) -> None:
    jtl = tmp_path / "r.jtl"
    jtl.write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?>\n<testResults version="1.2">\n'
        b'<httpSample t="5" ts="1000" s="true" lb="a" rm="OK" tn="T" na="1"/>\n'
    )
    f = JtlFollower(jtl)
    batch = f.poll()
    assert f.format == "xml"
    assert list(batch.label) == ["a"]


def test_offline_batches_cover_the_whole_file(tmp_path: Path) -> None:
    jtl = tmp_path / "r.jtl"
    jtl.write_text(HEADER + "".join(ROWS))
    f = JtlFollower(jtl, chunk_bytes=1024, read_bytes=2048)
    got = [int(x) for b in f.batches() for x in b.elapsed_ms]
    assert got == list(range(40))
    assert f.status().records == 41


def test_reading_a_long_file_in_pieces_is_not_called_buffered(tmp_path: Path) -> None:
    jtl = tmp_path / "r.jtl"
    jtl.write_text(HEADER + "".join(ROWS * 20))
    f = JtlFollower(jtl, chunk_bytes=1000, read_bytes=1000)
    assert sum(len(b) for b in f.batches()) == 800
    assert not f.buffered_suspected


MIXED = (
    HEADER
    + "".join(
        row(
            ts=1_700_000_000_000 + i,
            elapsed=i,
            label=["a", "b, c", 'q "x"', "m\nl"][i % 4],
            message="OK" if i % 5 else 'Bad,\n"x"',
        )
        for i in range(60)
    )
).encode()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, len(MIXED)), max_size=12))
def test_file_appended_at_random_offsets_gives_the_rows_of_the_whole(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int]
) -> None:
    jtl = tmp_path_factory.mktemp("split") / "r.jtl"
    f = JtlFollower(jtl)
    got: list[tuple[int, str]] = []
    points = [0, *sorted(cuts), len(MIXED)]
    for a, b in itertools.pairwise(points):
        append(jtl, MIXED[a:b])
        batch = f.poll()
        got += list(zip(batch.elapsed_ms.tolist(), batch.label.tolist(), strict=True))
    whole = JtlFollower(jtl).finish()
    assert got == list(zip(whole.elapsed_ms.tolist(), whole.label.tolist(), strict=True))
    assert len(got) == 60
    assert f.malformed_rows == 0
