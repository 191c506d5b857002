"""CSV JTL decoding: quoting, headers, columns, bad rows, and any byte split."""

from __future__ import annotations

import csv
import io
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadguard.jtl.columns import DEFAULT_COLUMNS, JMETER_2_13_COLUMNS, JtlFormat
from loadguard.jtl.csv_rows import CsvChunkParser, CsvLayout, iter_records, record_boundary
from loadguard.jtl.csv_stream import CsvStreamDecoder
from loadguard.jtl.raw_rows import TRANSACTION_PREFIX, BadRowLog, RawRows

HEADER = ",".join(DEFAULT_COLUMNS) + "\n"


def row(
    ts: int = 1_700_000_000_000,
    elapsed: int = 12,
    label: str = "/home",
    success: bool = True,
    message: str = "OK",
    thread: str = "TG 1-1",
    all_threads: int = 3,
) -> str:
    """One 5.6.3 row, quoted the way JMeter's CSVSaveService quotes."""
    values = [ts, elapsed, label, 200 if success else 500, message, thread, "text",
              "true" if success else "false", "" if success else 'Expected "ok", got, "no"',
              100, 50, 3, all_threads, "http://127.0.0.1/x", elapsed, 0, 1]  # fmt: skip
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(values)
    return out.getvalue()


def decode(
    data: bytes,
    fmt: JtlFormat | None = None,
    pieces: list[int] | None = None,
    thread_names: bool = True,
) -> tuple[list[tuple[int, int, bool, str, str, int, bool]], CsvStreamDecoder]:
    bad = BadRowLog()
    dec = CsvStreamDecoder(fmt or JtlFormat(), bad, chunk_bytes=4096, max_record_bytes=64 << 10,
                           thread_names=thread_names)  # fmt: skip
    parts: list[RawRows] = []
    cuts = [0, *sorted(pieces or []), len(data)]
    for a, b in itertools.pairwise(cuts):
        parts += dec.feed(data[a:b])
    parts += dec.finish()
    return _rows(parts), dec


def _rows(parts: list[RawRows]) -> list[tuple[int, int, bool, str, str, int, bool]]:
    out = []
    for p in parts:
        labels = p.label_names[p.label_code]
        threads = p.thread_names[p.thread_code]
        for i in range(len(p)):
            out.append((int(p.start_ms[i]), int(p.elapsed_ms[i]), bool(p.success[i]),
                        str(labels[i]), str(threads[i]), int(p.all_threads[i]),
                        bool(p.transaction[i])))  # fmt: skip
    return out


@pytest.mark.parametrize(
    ("label", "message"),
    [
        ("plain", "OK"),
        ("with, comma", "OK"),
        ('with "quotes"', 'say ""hi""'),
        ("multi\nline", "two\nlines, and a comma"),
        ("crlf\r\nlabel", "OK"),
        ("ünïcödé ✓", "OK"),
    ],
)
def test_quoted_fields_round_trip(label: str, message: str) -> None:
    data = (HEADER + row(label=label, message=message) + row(label="next")).encode()
    rows, dec = decode(data)
    assert [r[3] for r in rows] == [label, "next"]
    assert dec.bad.count == 0


def test_header_sets_columns_and_is_not_a_row() -> None:
    rows, dec = decode((HEADER + row()).encode())
    assert dec.has_header is True
    assert dec.columns == DEFAULT_COLUMNS
    assert len(rows) == 1


def test_headerless_file_uses_default_columns() -> None:
    rows, dec = decode((row() + row(elapsed=7)).encode())
    assert dec.has_header is False
    assert [r[1] for r in rows] == [12, 7]
    assert dec.warnings == []


def test_headerless_12_field_file_is_read_as_jmeter_2_13_with_a_warning() -> None:
    line = "1700000000000,5,lbl,200,OK,TG 1-1,text,true,123,1,1,4\n"
    rows, dec = decode((line * 3).encode())
    assert dec.columns == JMETER_2_13_COLUMNS
    assert len(rows) == 3
    assert any("2.13" in w for w in dec.warnings)


def test_headerless_mismatch_is_reported_and_rows_counted_malformed() -> None:
    line = "1700000000000,5,lbl,true,9\n"
    rows, dec = decode((line * 2).encode())
    assert rows == []
    assert dec.bad.count == 2
    assert any("5 fields" in w for w in dec.warnings)


def test_given_columns_and_tab_delimiter() -> None:
    cols = ("timeStamp", "elapsed", "label", "success", "threadName")
    fmt = JtlFormat(columns=cols, delimiter="\t", header=False, columns_given=True)
    data = b"1000\t5\ta,b\ttrue\tT-1\n2000\t6\tc\tfalse\tT-2\n"
    rows, dec = decode(data, fmt)
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        (1000, 5, True, "a,b", "T-1"),
        (2000, 6, False, "c", "T-2"),
    ]
    assert dec.warnings == []


def test_date_formatted_timestamps() -> None:
    cols = ("timeStamp", "elapsed", "label", "success")
    fmt = JtlFormat(
        columns=cols, timestamp_format="yyyy/MM/dd HH:mm:ss.SSS", header=False, columns_given=True
    )
    bad = BadRowLog()
    dec = CsvStreamDecoder(fmt, bad, tz="UTC")
    parts = dec.feed(b"2024/01/02 03:04:05.678,5,a,true\nnot a date,5,a,true\n") + dec.finish()
    rows = _rows(parts)
    assert [r[0] for r in rows] == [1_704_164_645_678]
    assert bad.count == 1


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ("1700000000000,5,x\n", "fields"),
        ("17000000000x0,5,x,200,OK,T,text,true,,1,1,1,1,u,1,0,1\n", "timeStamp"),
        ("1700000000000,abc,x,200,OK,T,text,true,,1,1,1,1,u,1,0,1\n", "elapsed"),
        ("1700000000000,5,x,200,OK,T,text,maybe,,1,1,1,1,u,1,0,1\n", "success"),
        ("1700000000000,5,x,200,OK,T,text,true,,1,1,1,1,u,1,0,1,EXTRA,MORE\n", "19 fields"),
        ("\x00\x01\x02\xff\xfe garbage \x7f\n", "fields"),
    ],
)
def test_bad_rows_are_counted_with_a_sample_and_good_rows_kept(bad_line: str, reason: str) -> None:
    data = (HEADER + row(elapsed=1) + bad_line + row(elapsed=2)).encode("latin-1")
    rows, dec = decode(data)
    assert [r[1] for r in rows] == [1, 2]
    assert dec.bad.count == 1
    assert reason in dec.bad.samples[0].reason or reason in dec.bad.samples[0].text


def test_a_transaction_cut_short_at_stop_is_left_out_but_not_malformed() -> None:
    # What JMeter 5.6.3 wrote when the test ended inside a Transaction Controller:
    # elapsed = -timeStamp, an empty response message.
    cut = "1796115133184,-1796115133184,tx_outer,,,TG 1-1,,true,,0,0,3,3,null,0,0,0\n"
    rows, dec = decode((HEADER + row(elapsed=1) + cut + row(elapsed=2)).encode())
    assert [r[1] for r in rows] == [1, 2]
    assert dec.bad.count == 0
    assert dec.bad.cut_short == 1
    assert dec.records == 4  # the header line is record 1


def test_glued_rows_are_one_bad_row() -> None:
    # A whole row glued on the end shifts allThreads: caught on either path.
    glued = row().rstrip("\n") + "," + row()
    rows, dec = decode((HEADER + glued + row(elapsed=3)).encode())
    assert [r[1] for r in rows] == [3]
    assert dec.bad.count == 1


def test_stray_quote_does_not_swallow_following_rows() -> None:
    broken = '1700000000000,5,"unterminated,200,OK,T,text,true,,1,1,1,1,u,1,0,1\n'
    data = (HEADER + row(elapsed=1) + broken + row(elapsed=2) + row(elapsed=3)).encode()
    rows, dec = decode(data)
    assert [r[1] for r in rows] == [1, 2, 3]
    assert dec.bad.count == 1


def test_one_megabyte_line_is_one_bad_row() -> None:
    huge = "x" * (1 << 20) + "\n"
    data = (HEADER + row(elapsed=1) + huge + row(elapsed=2)).encode()
    rows, dec = decode(data)
    assert [r[1] for r in rows] == [1, 2]
    assert dec.bad.count == 1
    assert len(dec.bad.samples[0].text) <= 210


def test_partial_last_record_is_held_until_complete() -> None:
    bad = BadRowLog()
    dec = CsvStreamDecoder(JtlFormat(), bad)
    whole = (HEADER + row(label="a\nb")).encode()
    cut = whole.index(b"a\nb") + 2  # inside the quoted label, just after the raw newline
    assert _rows(dec.feed(whole[:cut])) == []
    assert dec.held_bytes > 0
    assert [r[3] for r in _rows(dec.feed(whole[cut:]))] == ["a\nb"]
    assert dec.held_bytes == 0


def test_transaction_rows_are_flagged() -> None:
    tx = row(label="tx", message=TRANSACTION_PREFIX + "2, number of failing samples : 0")
    rows, _ = decode((HEADER + row() + tx).encode())
    assert [r[6] for r in rows] == [False, True]


def test_record_boundary_skips_newlines_inside_quotes() -> None:
    buf = b'1,"a\nb",2\n3,"c\nd'
    assert record_boundary(buf) == buf.index(b"2\n") + 2
    assert record_boundary(b'1,"open\n') == 0


def test_iter_records_joins_quoted_lines() -> None:
    assert list(iter_records('a,"b\nc",d\ne,f\n')) == ['a,"b\nc",d', "e,f"]


def _fixture_file(n: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    labels = ["/a", "b, c", 'q "x"', "multi\nline", "/e-1"]
    lines = [HEADER]
    for i in range(n):
        ok = bool(rng.random() > 0.2)
        lines.append(row(ts=1_700_000_000_000 + i * 7, elapsed=int(rng.integers(0, 900)),
                         label=labels[int(rng.integers(0, len(labels)))], success=ok,
                         message="OK" if ok else 'Bad, "really"\nbad',
                         thread=f"TG 1-{int(rng.integers(1, 4))}"))  # fmt: skip
    return "".join(lines).encode()


FIXTURE = _fixture_file(300, 3)
WHOLE_ROWS, _ = decode(FIXTURE)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(FIXTURE)), max_size=30))
def test_any_byte_split_gives_the_same_rows_as_reading_whole(cuts: list[int]) -> None:
    rows, dec = decode(FIXTURE, pieces=cuts)
    assert rows == WHOLE_ROWS
    assert dec.bad.count == 0


def test_thread_names_are_read_once_a_subresult_label_appears() -> None:
    plain = (HEADER + row(label="a", thread="T-1")).encode()
    later = row(label="a-0", thread="T-1").encode()
    bad = BadRowLog()
    dec = CsvStreamDecoder(JtlFormat(), bad)
    assert [r[4] for r in _rows(dec.feed(plain))] == [""]
    assert [r[4] for r in _rows(dec.feed(later))] == ["T-1"]


def test_fast_and_exact_paths_agree_on_valid_input() -> None:
    body = FIXTURE[len(HEADER) :]
    parser = CsvChunkParser(CsvLayout(DEFAULT_COLUMNS, thread_names=True))
    bad = BadRowLog()
    fast = parser.parse(body, 1, bad)
    exact = parser.parse_exact(body, 1, bad)
    assert parser.fast_chunks == 1
    assert _rows([fast]) == _rows([exact])
    assert len(WHOLE_ROWS) == 300
