"""Fuzz the JTL decoders (CSV and XML) and the follower on a real file.

Any bytes, cut at any points: the decoders return rows (bad ones are counted, not
raised) or raise a ``LoadGuardError`` (a header lacking a required column) -- never
another exception. Every row that comes out is a consistent ``SampleBatch``.
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


def _check(parts: list[RawRows]) -> int:
    selector = RowSelector()
    total = 0
    for part in parts:
        batch = selector.select(part)
        assert isinstance(batch, SampleBatch)
        n = len(batch)
        assert len(batch.elapsed_ms) == n and len(batch.success) == n and len(batch.label) == n
        assert len(batch.start_ms) == n
        total += n
    return total


def _decode(dec: CsvStreamDecoder | XmlStreamDecoder, chunks: list[bytes]) -> int:
    parts: list[RawRows] = []
    for c in chunks:
        parts += dec.feed(c)
    parts += dec.finish()
    return _check(parts)


def _csv(chunks: list[bytes]) -> int:
    return _decode(CsvStreamDecoder(JtlFormat(), BadRowLog(keep=5), chunk_bytes=4096), chunks)


def _xml(chunks: list[bytes]) -> int:
    return _decode(XmlStreamDecoder(BadRowLog(keep=5), timestamp_format="ms", tz=None), chunks)


#: corpus folder -> (decode, mutation tokens)
DECODERS: dict[str, tuple[Callable[[list[bytes]], int], list[bytes]]] = {
    "jtl_csv": (_csv, CSV_TOKENS),
    "jtl_xml": (_xml, XML_TOKENS),
}


@pytest.mark.parametrize("seed", seeds("jtl_csv"), ids=seed_ids("jtl_csv"))
def test_csv_corpus_replays(seed: bytes) -> None:
    ours_or_ok(lambda: _csv([seed]))


@pytest.mark.parametrize("seed", seeds("jtl_xml"), ids=seed_ids("jtl_xml"))
def test_xml_corpus_replays(seed: bytes) -> None:
    ours_or_ok(lambda: _xml([seed]))


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
