"""XML JTL decoding: nesting, transactions, garbage, and any byte split."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from loadguard.jtl.raw_rows import BadRowLog, RawRows
from loadguard.jtl.xml_rows import XmlStreamDecoder

PROLOG = b'<?xml version="1.0" encoding="UTF-8"?>\n<testResults version="1.2">\n'
TXP = "Number of samples in transaction : 2, number of failing samples : 0"


def sample(t: int, ts: int, lb: str, s: str = "true", rm: str = "OK", tn: str = "TG 1-1",
           children: str = "", tag: str = "httpSample") -> str:  # fmt: skip
    attrs = f't="{t}" it="0" lt="1" ct="0" ts="{ts}" s="{s}" lb="{lb}" rc="200" rm="{rm}" tn="{tn}" dt="text" by="1" sby="1" ng="1" na="2"'  # noqa: E501
    if not children:
        return f"<{tag} {attrs}/>\n"
    return f"<{tag} {attrs}>\n{children}</{tag}>\n"


def nested(t: int, ts: int, lb: str) -> str:
    return "  " + sample(t, ts, lb).replace("\n", "\n  ").rstrip(" ")


DOC = (
    PROLOG
    + sample(5, 1000, "a").encode()
    + sample(
        7,
        1001,
        "redir",
        children=nested(2, 1001, "redir-0")
        + nested(3, 1003, "redir-1")
        + "  <java.net.URL>http://x/</java.net.URL>\n",
    ).encode()
    + sample(
        20,
        1002,
        "tx",
        rm=TXP,
        tag="sample",
        children=nested(8, 1004, "c") + nested(9, 1012, "d &amp; &quot;q&quot;&#10;x"),
    ).encode()
    + sample(4, 1005, "fail", s="false", rm="Bad, &quot;x&quot;").encode()
    + b"\n</testResults>\n"
)


def decode(
    data: bytes, cuts: list[int] | None = None
) -> tuple[list[tuple[object, ...]], BadRowLog]:
    bad = BadRowLog()
    dec = XmlStreamDecoder(bad)
    parts: list[RawRows] = []
    points = [0, *sorted(cuts or []), len(data)]
    for a, b in itertools.pairwise(points):
        parts += dec.feed(data[a:b])
    parts += dec.finish()
    out: list[tuple[object, ...]] = []
    for p in parts:
        labels = p.labels()
        sub = p.subresult
        assert sub is not None
        for i in range(len(p)):
            out.append((int(p.start_ms[i]), int(p.elapsed_ms[i]), bool(p.success[i]),
                        str(labels[i]), bool(p.transaction[i]), bool(sub[i])))  # fmt: skip
    return out, bad


def test_rows_in_document_order_with_structure() -> None:
    rows, bad = decode(DOC)
    assert [(r[3], r[4], r[5]) for r in rows] == [
        ("a", False, False),
        ("redir", False, False),
        ("redir-0", False, True),
        ("redir-1", False, True),
        ("tx", True, False),
        ("c", False, False),  # a transaction's children are samplers' own results
        ('d & "q"\nx', False, False),
        ("fail", False, False),
    ]
    assert rows[-1][2] is False
    assert bad.count == 0


def test_element_still_being_written_is_held() -> None:
    bad = BadRowLog()
    dec = XmlStreamDecoder(bad)
    cut = DOC.index(b"<sample") + 30
    first = dec.feed(DOC[:cut])
    assert sum(len(p) for p in first) == 4
    assert dec.held_bytes > 0
    rest = dec.feed(DOC[cut:])
    assert sum(len(p) for p in rest) == 4


def test_nothing_after_the_document_end_counts_wherever_the_file_is_cut() -> None:
    # a second document appended after </testResults> (hypothesis found it): read in
    # one piece it was ignored, read as the file grew its rows counted
    doc = DOC.rstrip(b"\n") + PROLOG + sample(4, 2000, "late").encode() + b"</testResults>\n"
    whole, _ = decode(doc)
    cut = doc.index(b"</testResults>") + len(b"</testResults>")
    grown, _ = decode(doc, [cut])
    assert grown == whole and "late" not in [r[3] for r in whole]


def test_garbage_and_bad_attributes_are_counted_not_fatal() -> None:
    data = (
        PROLOG
        + sample(5, 1000, "a").encode()
        + b"\x00\x01 garbage <<>>\n"
        + b'<httpSample t="x" ts="1001" s="true" lb="b"/>\n'
        + b'<httpSample t="3" ts="1002" s="true" lb="broken"\n'  # never closed
        + sample(6, 1003, "c").encode()
    )
    rows, bad = decode(data)
    assert [r[3] for r in rows] == ["a", "c"]
    assert bad.count == 3


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, len(DOC)), max_size=20))
def test_any_byte_split_gives_the_same_rows(cuts: list[int]) -> None:
    whole, _ = decode(DOC)
    rows, bad = decode(DOC, cuts)
    assert rows == whole
    assert bad.count == 0


def test_cut_short_parent_transaction_keeps_its_children() -> None:
    # JMeter 5.6.3 at test end: a "generate parent sample" controller with an empty message.
    data = (
        PROLOG
        + sample(20, 1000, "tx", rm=TXP, tag="sample", children=nested(8, 1001, "c")).encode()
        + sample(9, 1010, "tx", rm="", tag="sample", children=nested(9, 1011, "c")).encode()
    )
    rows, bad = decode(data)
    assert bad.count == 0
    assert [(r[3], r[4], r[5]) for r in rows] == [
        ("tx", True, False), ("c", False, False), ("tx", True, False), ("c", False, False),
    ]  # fmt: skip


def test_negative_elapsed_sample_is_cut_short_not_malformed_and_its_children_count() -> None:
    # A sample whose end JMeter never set (elapsed = -timeStamp) as the test stopped.
    data = (
        PROLOG
        + sample(5, 1000, "a").encode()
        + sample(-1001, 1001, "tx", rm="", tag="sample", children=nested(9, 1002, "c")).encode()
        + sample(-1003, 1003, "tx2", rm="").encode()
        + sample(6, 1004, "b").encode()
    )
    rows, bad = decode(data)
    assert [r[3] for r in rows] == ["a", "c", "b"]
    assert bad.count == 0
    assert bad.cut_short == 2
