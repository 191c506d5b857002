"""JTLs as other setups write them: another CSV delimiter, binary response bodies in XML,
generated parents nested inside generated parents.

The content is JMeter 5.6.3's own output (a plan with a Transaction Controller inside a
Transaction Controller, a redirect and a binary body), trimmed to one iteration.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.jtl.columns import (
    DEFAULT_COLUMNS,
    JtlFormat,
    format_from_properties,
    sniff_delimiter,
)
from loadguard.jtl.csv_stream import CsvStreamDecoder
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.raw_rows import BadRowLog, RawRows
from loadguard.jtl.sample import SampleBatch
from loadguard.jtl.xml_rows import XmlStreamDecoder, scrub
from loadguard.report.jtl_digest import digest_jtl

TXM = "Number of samples in transaction : 2, number of failing samples : 0"
# One iteration of the nested plan, as JMeter 5.6.3 writes it to CSV (the delimiter is
# written as {d} here): outer and inner transactions first, then their samplers, the
# redirect's sub-results right after it.
CSV_ROWS = [
    "1796104285647{d}102{d}outer{d}200{d}"
    + TXM
    + "{d}TG 1-1{d}{d}true{d}{d}1587{d}467{d}2{d}2{d}null{d}0{d}213{d}56",
    "1796104285647{d}94{d}inner{d}200{d}"
    + TXM
    + "{d}TG 1-1{d}{d}true{d}{d}409{d}351{d}2{d}2{d}null{d}0{d}187{d}51",
    "1796104285833{d}76{d}leaf a{d}200{d}OK{d}TG 1-1{d}text{d}true{d}{d}140{d}115{d}2{d}2{d}http://127.0.0.1:18777/ok{d}66{d}0{d}43",
    "1796104285909{d}18{d}leaf redirect{d}200{d}OK{d}TG 1-1{d}text{d}true{d}{d}269{d}236{d}2{d}2{d}http://127.0.0.1:18777/ok{d}12{d}0{d}8",
    "1796104285909{d}12{d}leaf redirect-0{d}302{d}Found{d}TG 1-1{d}{d}true{d}{d}129{d}121{d}2{d}2{d}http://127.0.0.1:18777/redirect{d}12{d}0{d}8",
    "1796104285922{d}5{d}leaf redirect-1{d}200{d}OK{d}TG 1-1{d}text{d}true{d}{d}140{d}115{d}2{d}2{d}http://127.0.0.1:18777/ok{d}5{d}0{d}3",
    "1796104285954{d}8{d}leaf bin{d}200{d}OK{d}TG 1-1{d}text{d}true{d}{d}1178{d}116{d}2{d}2{d}http://127.0.0.1:18777/bin{d}8{d}0{d}5",
]
LEAVES = ["leaf a", "leaf redirect", "leaf bin"]


def csv_jtl(delimiter: str, header: bool = True) -> bytes:
    lines = [delimiter.join(DEFAULT_COLUMNS)] if header else []
    # JMeter quotes a field holding the delimiter (the transaction message has commas).
    quoted = f'"{TXM}"' if delimiter in TXM else TXM
    lines += [r.replace(TXM, quoted).replace("{d}", delimiter) for r in CSV_ROWS]
    return ("\n".join(lines) + "\n").encode()


def attrs(t: int, ts: int, lb: str, rm: str = "OK", dt: str = "text", rc: int = 200) -> str:
    return (f't="{t}" it="0" lt="{t}" ct="1" ts="{ts}" s="true" lb="{lb}" rc="{rc}" rm="{rm}" '
            f'tn="TG 1-1" dt="{dt}" by="140" sby="115" ng="2" na="2"')  # fmt: skip


# JMeter's XStream writer turns a binary body's control characters into references.
BINARY = "".join(f"&#x{c:x};" if c not in (9, 10, 13) else chr(c) for c in range(32))
BINARY_ILLEGAL = 29  # 0x00-0x1F but TAB, LF (raw) and CR (&#xd; is legal)
BINARY += " !&quot;#$%&amp;&apos;()*+,-./0123~&#x7f;\ufffd\ufffd&#xd;"
NON_TEXT = "Non-TEXT response data, cannot record: ()"
PROLOG = '<?xml version="1.0" encoding="UTF-8"?>\n<testResults version="1.2">\n'
NESTED_TX = f"""<sample {attrs(89, 1796104279140, "outer", TXM, "")}>
  <sample {attrs(80, 1796104279140, "inner", TXM, "")}>
    <httpSample {attrs(59, 1796104279337, "leaf a")}>
      <responseData class="java.lang.String">ok
</responseData>
      <java.net.URL>http://127.0.0.1:18777/ok</java.net.URL>
    </httpSample>
    <httpSample {attrs(21, 1796104279397, "leaf redirect")}>
      <httpSample {attrs(9, 1796104279397, "leaf redirect-0", "Found", "", 302)}>
        <responseData class="java.lang.String">{NON_TEXT}</responseData>
        <java.net.URL>http://127.0.0.1:18777/redirect</java.net.URL>
      </httpSample>
      <httpSample {attrs(8, 1796104279410, "leaf redirect-1")}>
        <responseData class="java.lang.String">ok
</responseData>
        <java.net.URL>http://127.0.0.1:18777/ok</java.net.URL>
      </httpSample>
      <responseData class="java.lang.String">ok
</responseData>
      <java.net.URL>http://127.0.0.1:18777/ok</java.net.URL>
    </httpSample>
    <responseData class="java.lang.String">Non-TEXT response data, cannot record: ()</responseData>
  </sample>
  <httpSample {attrs(9, 1796104279452, "leaf bin")}>
    <responseData class="java.lang.String">{BINARY}</responseData>
    <java.net.URL>http://127.0.0.1:18777/bin</java.net.URL>
  </httpSample>
  <responseData class="java.lang.String">Non-TEXT response data, cannot record: ()</responseData>
</sample>
"""


def plain(t: int, ts: int, lb: str) -> str:
    return f"<httpSample {attrs(t, ts, lb)}/>\n"


def parallel(ts: int, lb: str, indent: str = "") -> str:
    """A bzm Parallel Controller's "generate parent sample" result: a plain SampleResult
    (200 OK, no data type) holding its children, renamed ``<parent>-<n>``."""
    return (
        f"{indent}<sample {attrs(30, ts, lb, dt='')}>\n"
        f"{indent}  <httpSample {attrs(12, ts + 1, lb + '-0')}/>\n"
        f"{indent}  <httpSample {attrs(25, ts + 2, lb + '-1')}>\n"
        f"{indent}    <httpSample {attrs(9, ts + 2, lb + '-1-0', 'Found', '', 302)}/>\n"
        f"{indent}    <httpSample {attrs(15, ts + 12, lb + '-1-1')}/>\n"
        f"{indent}  </httpSample>\n"
        f"{indent}</sample>\n"
    )


Row = tuple[str, bool, bool]  # label, transaction, sub-result


def xml_rows(data: bytes, cuts: list[int] | None = None) -> tuple[list[Row], XmlStreamDecoder]:
    dec = XmlStreamDecoder(BadRowLog())
    parts: list[RawRows] = []
    for a, b in itertools.pairwise([0, *sorted(cuts or []), len(data)]):
        parts += dec.feed(data[a:b])
    parts += dec.finish()
    out: list[Row] = []
    for p in parts:
        assert p.subresult is not None
        out += zip(map(str, p.labels()), map(bool, p.transaction), map(bool, p.subresult),
                   strict=True)  # fmt: skip
    return out, dec


def counted(path: Path, **kw: object) -> list[str]:
    with JtlFollower(path, **kw) as f:  # type: ignore[arg-type]
        return [str(x) for b in f.batches() for x in b.label]


def csv_decode(data: bytes, fmt: JtlFormat | None = None) -> tuple[list[str], CsvStreamDecoder]:
    dec = CsvStreamDecoder(fmt or JtlFormat(), BadRowLog(), thread_names=True)
    parts = dec.feed(data) + dec.finish()
    return [str(x) for p in parts for x in p.labels()], dec


# -- another delimiter ---------------------------------------------------------------------


@pytest.mark.parametrize("delimiter", ["\t", ";", "|"])
def test_header_line_tells_the_delimiter(delimiter: str) -> None:
    assert sniff_delimiter(delimiter.join(DEFAULT_COLUMNS)) == delimiter


def test_header_without_timestamp_column_tells_the_delimiter() -> None:
    # timestamp_format=none drops timeStamp: the header starts with elapsed.
    assert sniff_delimiter("elapsed;label;responseCode;success") == ";"


@pytest.mark.parametrize(
    "line", ["1796104285647\t102\touter", "timeStampX;elapsed", "label", "hello;world", ""]
)
def test_a_line_that_is_no_header_tells_no_delimiter(line: str) -> None:
    assert sniff_delimiter(line) is None


def test_properties_say_whether_the_delimiter_was_given() -> None:
    given = format_from_properties({"jmeter.save.saveservice.default_delimiter": "\\t"})
    assert (given.delimiter, given.delimiter_given) == ("\t", True)
    assert format_from_properties({}).delimiter_given is False


@pytest.mark.parametrize("delimiter", ["\t", ";"])
def test_csv_with_another_delimiter_is_read_from_its_header_without_flags(delimiter: str) -> None:
    labels, dec = csv_decode(csv_jtl(delimiter))
    assert dec.delimiter == delimiter and dec.has_header
    assert labels == [r.split("{d}")[2] for r in CSV_ROWS]
    assert dec.bad.count == 0 and dec.warnings == []


def test_tab_header_arriving_byte_by_byte_is_still_read(tmp_path: Path) -> None:
    data = csv_jtl("\t")
    jtl = tmp_path / "results.jtl"
    jtl.write_bytes(b"")
    f = JtlFollower(jtl)
    seen: list[str] = []
    for i in range(len(data)):
        with jtl.open("ab") as fh:
            fh.write(data[i : i + 1])
        seen += [str(x) for x in f.poll().label]
    seen += [str(x) for x in f.finish().label]
    assert seen == LEAVES
    assert f.malformed_rows == 0 and f.status().delimiter == "\t"


def test_a_given_delimiter_wins_over_the_header() -> None:
    fmt = format_from_properties({"jmeter.save.saveservice.default_delimiter": ";"})
    labels, dec = csv_decode(csv_jtl("\t"), fmt)
    assert dec.delimiter == ";" and labels == []
    assert dec.bad.count == len(CSV_ROWS) + 1  # the header too: read as a row
    assert "delimited by '\\t'" in dec.warnings[0]


def test_headerless_rows_use_the_configured_delimiter() -> None:
    ss = "jmeter.save.saveservice."
    fmt = format_from_properties({ss + "default_delimiter": ";", ss + "print_field_names": "false"})
    labels, dec = csv_decode(csv_jtl(";", header=False), fmt)
    assert dec.has_header is False and labels == [r.split("{d}")[2] for r in CSV_ROWS]
    assert dec.warnings == [] and dec.bad.count == 0


def test_headerless_tab_rows_are_not_guessed_but_the_warning_names_the_delimiter() -> None:
    labels, dec = csv_decode(csv_jtl("\t", header=False))
    assert dec.delimiter == "," and labels == [] and dec.bad.count == len(CSV_ROWS)
    assert "default_delimiter=\\t" in dec.warnings[0]


def test_comma_jtl_with_a_wrong_field_count_is_not_taken_for_another_delimiter() -> None:
    data = ("".join(r.replace("{d}", ",") + ",extra\n" for r in CSV_ROWS)).encode()
    _, dec = csv_decode(data)
    assert dec.delimiter == "," and dec.bad.count == len(CSV_ROWS)


def test_truncated_tab_jtl_keeps_its_delimiter_for_headerless_rows(tmp_path: Path) -> None:
    jtl = tmp_path / "results.jtl"
    jtl.write_bytes(csv_jtl("\t"))
    f = JtlFollower(jtl)
    assert [str(x) for x in f.poll().label] == LEAVES
    jtl.write_bytes(csv_jtl("\t", header=False)[: len(CSV_ROWS[0]) + 200])  # no header
    jtl.write_bytes(csv_jtl("\t", header=False))
    assert [str(x) for x in f.poll().label] == LEAVES
    assert f.restarts == 1 and f.malformed_rows == 0


def test_metrics_and_report_read_a_tab_jtl_without_flags(tmp_path: Path) -> None:
    jtl = tmp_path / "results.jtl"
    jtl.write_bytes(csv_jtl("\t"))
    res = CliRunner().invoke(cli, ["metrics", str(jtl), "--json", "--window", "10s"])
    assert res.exit_code == 0, res.output
    last = json.loads(res.stdout.splitlines()[-1])
    assert last["overall"]["count"] == 3 and last["malformed_rows"] == 0
    digest = digest_jtl(jtl)
    assert (digest.overall.count, digest.malformed_rows) == (3, 0)
    assert sorted(digest.labels) == sorted(LEAVES)


# -- characters XML forbids ----------------------------------------------------------------


def test_binary_response_data_keeps_every_sample_and_counts_the_characters() -> None:
    rows, dec = xml_rows((PROLOG + NESTED_TX + plain(5, 1796104279500, "after")).encode())
    assert [r[0] for r in rows if not r[1] and not r[2]] == [*LEAVES, "after"]
    assert dec.bad.count == 0
    assert dec.illegal_chars == BINARY_ILLEGAL


def test_raw_control_bytes_and_bytes_that_are_not_utf8_are_replaced_and_counted() -> None:
    body = b"<httpSample " + attrs(5, 1000, "raw").encode() + b">\n  <responseData>a\x00\x01\x1b"
    body += b"\xff\xfe b\xc3\xa9</responseData>\n</httpSample>\n"
    rows, dec = xml_rows(PROLOG.encode() + body + plain(6, 1001, "next").encode())
    assert [r[0] for r in rows] == ["raw", "next"]
    assert dec.illegal_chars == 5 and dec.bad.count == 0


def test_legal_character_references_are_kept_and_not_counted() -> None:
    text = b"&#xd;&#10;&#13;&#9;&#x7f;&#x1F600;&#x00001F600;&#xFFFD;&#65533;&amp;#x1;"
    assert scrub(text) == (text, 0)
    bad = b"&#x0;&#x0000;&#27;&#xD800;&#xFFFE;&#65535;&#x110000;&#55296;"
    assert scrub(bad) == ("\ufffd".encode() * 8, 8)


def test_a_broken_element_beside_binary_data_costs_only_itself() -> None:
    data = (PROLOG + NESTED_TX + '<httpSample t="3" ts="1" s="true" lb="broken"\n'
            + plain(5, 1796104279500, "after")).encode()  # fmt: skip
    rows, dec = xml_rows(data)
    assert [r[0] for r in rows if not r[1] and not r[2]] == [*LEAVES, "after"]
    assert dec.bad.count == 1 and dec.illegal_chars == BINARY_ILLEGAL


def test_any_byte_split_of_binary_data_gives_the_same_rows_and_count() -> None:
    data = (PROLOG + NESTED_TX + NESTED_TX).encode()
    whole, dec = xml_rows(data)
    for step in (7, 101, 997):
        rows, split = xml_rows(data, list(range(step, len(data), step)))
        assert rows == whole and split.illegal_chars == dec.illegal_chars == 2 * BINARY_ILLEGAL


def test_follower_metrics_and_report_expose_the_illegal_character_count(tmp_path: Path) -> None:
    jtl = tmp_path / "results.jtl"
    jtl.write_text(PROLOG + NESTED_TX + "</testResults>\n", encoding="utf-8")
    assert counted(jtl) == LEAVES
    with JtlFollower(jtl) as f:
        f.finish()
        assert f.status().illegal_xml_chars == f.illegal_xml_chars == BINARY_ILLEGAL
        assert any("XML 1.0 forbids" in w for w in f.warnings)
    res = CliRunner().invoke(cli, ["metrics", str(jtl), "--json", "--window", "10s"])
    assert res.exit_code == 0, res.output
    last = json.loads(res.stdout.splitlines()[-1])
    assert last["illegal_xml_chars"] == BINARY_ILLEGAL and last["malformed_rows"] == 0
    assert f"{BINARY_ILLEGAL} illegal XML characters replaced" in res.stderr
    digest = digest_jtl(jtl)
    assert digest.illegal_xml_chars == BINARY_ILLEGAL and digest.overall.count == 3


# -- generated parents inside generated parents --------------------------------------------


def test_transaction_inside_a_transaction_counts_each_leaf_once() -> None:
    rows, _ = xml_rows((PROLOG + NESTED_TX).encode())
    assert rows == [
        ("outer", True, False),
        ("inner", True, False),
        ("leaf a", False, False),
        ("leaf redirect", False, False),
        ("leaf redirect-0", False, True),
        ("leaf redirect-1", False, True),
        ("leaf bin", False, False),
    ]


def test_parallel_controller_inside_a_transaction_counts_its_children() -> None:
    body = (f"<sample {attrs(60, 1000, 'tx', TXM, '')}>\n" + parallel(1001, "par", "  ")
            + "  " + plain(4, 1040, "after par") + "</sample>\n")  # fmt: skip
    rows, _ = xml_rows((PROLOG + body).encode())
    assert rows == [
        ("tx", True, False),
        ("par", True, False),
        ("par-0", False, False),
        ("par-1", False, False),
        ("par-1-0", False, True),  # the child's own redirect
        ("par-1-1", False, True),
        ("after par", False, False),
    ]


def test_parallel_controller_at_top_level_counts_its_children() -> None:
    rows, _ = xml_rows((PROLOG + parallel(1000, "par")).encode())
    assert [r[0] for r in rows if not r[1] and not r[2]] == ["par-0", "par-1"]


def test_sub_results_nested_two_levels_stay_sub_results() -> None:
    inner = f"    <httpSample {attrs(2, 1001, 'page-0-0')}/>\n"
    body = (f"<httpSample {attrs(9, 1000, 'page')}>\n  <httpSample {attrs(5, 1000, 'page-0')}>\n"
            + inner + "  </httpSample>\n</httpSample>\n")  # fmt: skip
    rows, _ = xml_rows((PROLOG + body).encode())
    assert rows == [("page", False, False), ("page-0", False, True), ("page-0-0", False, True)]


def test_nested_transaction_cut_short_is_no_request() -> None:
    # At test end JMeter 5.6.3 writes a cut-short "generate parent sample" with rm="".
    first = f"<sample {attrs(20, 1000, 'tx', TXM, '')}>\n" + plain(8, 1001, "c") + "</sample>\n"
    short = (f"<sample {attrs(9, 1010, 'outer', TXM, '')}>\n"
             f"  <sample {attrs(9, 1010, 'tx', '', '')}>\n"
             + "    " + plain(9, 1011, "c") + "  </sample>\n</sample>\n")  # fmt: skip
    rows, _ = xml_rows((PROLOG + first + short).encode())
    assert [r[0] for r in rows if not r[1] and not r[2]] == ["c", "c"]


def test_deep_nesting_is_walked_without_recursion() -> None:
    depth = 1200  # deeper than Python's recursion limit; JMeter indents each level
    head = "".join(f"{' ' * i}<sample {attrs(9, 1000, f'tx{i}', TXM, '')}>\n" for i in range(depth))
    tail = "".join(f"{' ' * i}</sample>\n" for i in reversed(range(depth)))
    body = head + " " * depth + plain(3, 1001, "leaf") + tail
    rows, dec = xml_rows((PROLOG + body).encode())
    assert [r[0] for r in rows if not r[1] and not r[2]] == ["leaf"] and dec.bad.count == 0


def test_csv_and_xml_of_the_same_nested_run_count_the_same_requests(tmp_path: Path) -> None:
    xml, csv_ = tmp_path / "r.xml.jtl", tmp_path / "r.csv.jtl"
    xml.write_text(PROLOG + NESTED_TX, encoding="utf-8")
    csv_.write_bytes(csv_jtl(","))
    assert counted(xml) == counted(csv_) == LEAVES
    assert counted(xml, transactions=True) == counted(csv_, transactions=True)


def test_csv_sub_results_arriving_in_a_later_poll_stay_sub_results(tmp_path: Path) -> None:
    # autoflush=true: JMeter writes row by row, so a poll can end between a sampler's row
    # and its sub-results' rows (thread names are read only once such a label shows).
    jtl = tmp_path / "results.jtl"
    jtl.write_bytes(b"")
    f = JtlFollower(jtl)
    seen: list[str] = []
    for line in csv_jtl(",").splitlines(keepends=True):
        with jtl.open("ab") as fh:
            fh.write(line)
        seen += [str(x) for x in f.poll().label]
    assert seen == LEAVES


def test_csv_counts_a_parallel_parent_once_as_it_cannot_tell_it_from_a_sampler(
    tmp_path: Path,
) -> None:
    # What CSV cannot know: "par" followed by "par-0", "par-1" has the shape of a sampler
    # and its sub-results, so the block counts once (the XML reader counts the children).
    rows = [
        ["1000", "30", "par", "200", "OK", "TG 1-1", "", "true", "", "280", "230", "1", "1",
         "null", "0", "0", "0"],
        ["1001", "12", "par-0", "200", "OK", "TG 1-1", "text", "true", "", "140", "115", "1",
         "1", "http://127.0.0.1/ok", "12", "0", "1"],
        ["1002", "25", "par-1", "200", "OK", "TG 1-1", "text", "true", "", "140", "115", "1",
         "1", "http://127.0.0.1/ok", "25", "0", "1"],
    ]  # fmt: skip
    jtl = tmp_path / "r.jtl"
    jtl.write_text(",".join(DEFAULT_COLUMNS) + "\n" + "".join(",".join(r) + "\n" for r in rows))
    assert counted(jtl) == ["par"]


# -- a JTL with its top level indented and binary bodies ------------------------------------

#: Written for these tests in the shape other tools' corpora hold: the top-level samples
#: indented two spaces (their sub-results deeper), a Transaction Controller parent, binary
#: bodies whose control characters are references XML 1.0 forbids (``&#x0;``, ``&#x3;``,
#: ``&#x1b;`` ...), one of them in a response message. 11 forbidden references in the PNG
#: body, 8 in each GIF body (twice), 2 in the message; ``&#xd;``, ``&#x7f;``, ``&#x89;``,
#: ``&#xf3;``, ``&#xff;`` and ``&#x80;`` are legal and kept.
INDENTED = Path(__file__).parents[1] / "fuzz" / "corpus" / "jtl_xml" / "indented_binary_bodies.xml"
INDENTED_REQUESTS = ["/home", "/logo.png", "/status", "/image?id=7", "/stream"]
INDENTED_ILLEGAL = 11 + 2 * 8 + 2


def test_an_indented_jtl_with_binary_bodies_is_read_whole_by_the_batch_reader(
    tmp_path: Path,
) -> None:
    jtl = tmp_path / "results.jtl"
    jtl.write_bytes(INDENTED.read_bytes())
    with JtlFollower(jtl) as f:
        batch = SampleBatch.concat(list(f.batches()))
        status = f.status()
    assert list(batch.label) == INDENTED_REQUESTS
    assert batch.success.tolist() == [True, True, True, True, False]
    assert batch.elapsed_ms.tolist() == [301, 111, 12, 57, 3]
    assert (status.records, status.malformed_rows) == (4, 0)
    assert status.illegal_xml_chars == INDENTED_ILLEGAL
    digest = digest_jtl(jtl)
    assert (digest.overall.count, digest.malformed_rows) == (5, 0)
    assert digest.illegal_xml_chars == INDENTED_ILLEGAL


@pytest.mark.parametrize("step", [1, 13, 256])
def test_an_indented_jtl_with_binary_bodies_is_read_whole_by_the_follower(
    tmp_path: Path, step: int
) -> None:
    """JMeter's writer flushes at any byte: the follower polls a file growing ``step`` bytes
    at a time and still reads every sample once, counting every forbidden reference."""
    data = INDENTED.read_bytes()
    jtl = tmp_path / "results.jtl"
    jtl.write_bytes(b"")
    labels: list[str] = []
    with JtlFollower(jtl) as f, jtl.open("ab") as fh:
        for i in range(0, len(data), step):
            fh.write(data[i : i + step])
            fh.flush()
            labels += [str(x) for x in f.poll().label]
        labels += [str(x) for x in f.finish().label]
        assert f.malformed_rows == 0
        assert f.illegal_xml_chars == INDENTED_ILLEGAL
    assert labels == INDENTED_REQUESTS


def test_the_top_level_indentation_comes_from_the_first_sample() -> None:
    """A sub-result indented like another file's top level stays a sub-result."""
    rows, dec = xml_rows(INDENTED.read_bytes())
    top = [r[0] for r in rows if not r[2]]  # r[2]: a sub-result
    assert top == ["Home Page", "/home", "/logo.png", "/status", "/image?id=7", "/stream"]
    assert dec.bad.count == 0 and dec.records == 4
