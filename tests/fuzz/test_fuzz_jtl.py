"""Fuzz the JTL decoders (CSV and XML) and the follower on a real file.

Any bytes, cut at any points: the decoders return rows (bad ones are counted, not
raised) or raise a ``LoadGuardError`` (a header lacking a required column) -- never
another exception. Every row that comes out is a consistent ``SampleBatch``, and where the
bytes are cut does not change which rows come out (or which error).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadguard.jtl.columns import JtlFormat
from loadguard.jtl.csv_stream import CsvStreamDecoder
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.raw_rows import BadRowLog, RawRows
from loadguard.jtl.sample import SampleBatch
from loadguard.jtl.selection import RowSelector
from loadguard.jtl.xml_rows import XmlStreamDecoder
from tests.fuzz.harness import budget, mutated, ours_or_ok, seed_ids, seeds, splits

CSV_TOKENS = [
    b",", b";", b"\t", b'"', b'""', b"\n", b"\r\n", b"\r", b"\x00", b"\xff\xfe", b"\xc3",
    b"true", b"false", b"TRUE", b"-1", b"0", b"9" * 25, b"1e308", b"NaN", b"inf", b" ",
    b"timeStamp,elapsed,label,success", b"2026/11/30 05:00:00.000", b"-",
    b"Transaction", b"Number of samples in transaction : 2, number of failing samples : 0",
]  # fmt: skip
XML_TOKENS = [
    b"<", b">", b"/>", b"</", b"<httpSample ", b"</httpSample>", b"<sample ", b"</sample>",
    b' t="', b' ts="', b' s="', b' lb="', b' tn="', b'"', b"&amp;", b"&#0;", b"&#xD800;",
    b"&undefined;", b"<![CDATA[", b"]]>", b"<!--", b"-->", b"<?xml ", b"?>", b"\x00",
    b"\xff", b'<!DOCTYPE t [<!ENTITY a "aaaaaaaaaa">]>', b"&a;", b"-1", b"9" * 25,
    b"</testResults>", b"<testResults version=\"1.2\">",
]  # fmt: skip


Row = tuple[int, int, bool, str]


def _check(parts: list[RawRows]) -> list[Row]:
    """Every row the decoder produced, as (start ms, elapsed ms, success, label)."""
    selector = RowSelector()
    rows: list[Row] = []
    for part in parts:
        batch = selector.select(part)
        assert isinstance(batch, SampleBatch)
        n = len(batch)
        assert len(batch.elapsed_ms) == n and len(batch.success) == n and len(batch.label) == n
        assert len(batch.start_ms) == n
        rows += zip(
            batch.start_ms.tolist(),
            batch.elapsed_ms.tolist(),
            batch.success.tolist(),
            [str(x) for x in batch.label],
            strict=True,
        )
    return rows


def _decode(dec: CsvStreamDecoder | XmlStreamDecoder, chunks: list[bytes]) -> list[Row]:
    parts: list[RawRows] = []
    for c in chunks:
        parts += dec.feed(c)
    parts += dec.finish()
    return _check(parts)


def _csv(chunks: list[bytes]) -> list[Row]:
    return _decode(CsvStreamDecoder(JtlFormat(), BadRowLog(keep=5), chunk_bytes=4096), chunks)


def _xml(chunks: list[bytes]) -> list[Row]:
    return _decode(XmlStreamDecoder(BadRowLog(keep=5), timestamp_format="ms", tz=None), chunks)


#: corpus folder -> (decode, mutation tokens)
DECODERS: dict[str, tuple[Callable[[list[bytes]], list[Row]], list[bytes]]] = {
    "jtl_csv": (_csv, CSV_TOKENS),
    "jtl_xml": (_xml, XML_TOKENS),
}


def _outcome(decode: Callable[[list[bytes]], list[Row]], chunks: list[bytes]) -> object:
    """The rows, or the error's class and message: what a split must not change."""
    result = ours_or_ok(lambda: decode(chunks))
    return result if isinstance(result, list) else (type(result).__name__, result.message)


def _every(data: bytes, n: int) -> list[bytes]:
    return [data[i : i + n] for i in range(0, len(data), n)]


@pytest.mark.parametrize("corpus", list(DECODERS), ids=["csv", "xml"])
def test_corpus_decodes_to_the_same_rows_whatever_the_chunk_splits(corpus: str) -> None:
    decode, _tokens = DECODERS[corpus]
    for name, seed in zip(seed_ids(corpus), seeds(corpus), strict=True):
        whole = _outcome(decode, [seed])
        if name.startswith("jmeter563_"):  # real JMeter output: it has rows to compare
            assert isinstance(whole, list) and whole, name
        for n in (1, 2, 7, 64, 1000):
            assert _outcome(decode, _every(seed, n)) == whole, f"{name} in {n}-byte pieces"


@pytest.mark.parametrize("corpus", list(DECODERS), ids=["csv", "xml"])
@budget
@given(st.data())
def test_decoder_returns_rows_or_raises_ours(corpus: str, data: st.DataObject) -> None:
    decode, tokens = DECODERS[corpus]
    raw = data.draw(mutated(seeds(corpus), tokens))
    chunks = data.draw(splits(raw))
    ours_or_ok(lambda: decode(chunks))


@budget
@given(st.data())
def test_xml_decoder_gives_the_same_rows_or_error_at_any_split(data: st.DataObject) -> None:
    """Mutated XML, cut anywhere, gives what it gives in one piece. (The CSV decoder keeps
    this on the corpus above; on mutated CSV a broken header beside a quoted multi-line
    field can still make a split differ, one case in some thousands: not asserted yet.)"""
    raw = data.draw(mutated(seeds("jtl_xml"), XML_TOKENS))
    chunks = data.draw(splits(raw))
    assert _outcome(_xml, chunks) == _outcome(_xml, [raw])


@budget
@given(st.data())
def test_follower_on_a_growing_file_returns_rows_or_raises_ours(data: st.DataObject) -> None:
    """The adapter: sniffing CSV/XML, partial records across polls, a truncation."""
    corpus = seeds("jtl_csv") + seeds("jtl_xml")
    raw = data.draw(mutated(corpus, CSV_TOKENS + XML_TOKENS))
    chunks = data.draw(splits(raw, max_parts=4))
    truncate_after = data.draw(st.integers(0, len(chunks)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.jtl"
        follower = JtlFollower(path, chunk_bytes=4096)

        def follow() -> int:
            total = 0
            with path.open("wb") as fh:
                for i, chunk in enumerate(chunks):
                    if i == truncate_after:
                        fh.truncate(0)
                        fh.seek(0)
                    fh.write(chunk)
                    fh.flush()
                    total += len(follower.poll())
            total += len(follower.finish())
            return total

        try:
            ours_or_ok(follow)
        finally:
            follower.close()


def test_found_a_redirect_split_from_its_parent_after_a_malformed_first_row() -> None:
    """Found by the split property: the malformed first row keeps the thread names of the
    next chunk unread, so the parent's row is filed under "" while the thread's own entry
    is older; the sub-results in the chunk after must still see their parent."""
    seed = dict(zip(seed_ids("jtl_csv"), seeds("jtl_csv"), strict=True))
    lines = seed["jmeter563_tab_nested_tx.csv"].splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    broken = rows[0].split(b"\t", 1)[1]  # the first row without its timeStamp field
    labels = [r.split(b"\t")[2] for r in rows]
    parent = labels.index(b"leaf redirect")
    chunks = [header + broken + rows[1], b"".join(rows[2 : parent + 1])]
    chunks.append(b"".join(rows[parent + 1 :]))
    assert _outcome(_csv, chunks) == _outcome(_csv, [b"".join(chunks)])
