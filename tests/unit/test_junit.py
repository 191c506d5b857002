"""JUnit XML verdicts: one test case per SLO, failures where the final windows breached."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from loadguard.junit import junit_xml, write_junit
from loadguard.summary import RunAccumulator, SummaryBuilder
from tests.unit.test_decision_log import make_row

SLO = {"p95_ms": 250.0, "error_rate": 0.01}


def _suite(rows: list[dict[str, object]]) -> etree._Element:
    b = SummaryBuilder(window_ms=10_000, slo=SLO)
    for i, over in enumerate(rows, start=1):
        b.add(make_row(i, **over))
    root = etree.fromstring(junit_xml(b.build(RunAccumulator(), "duration")))
    suite = root.find("testsuite")
    assert suite is not None
    return suite


def test_one_case_per_slo_plus_the_overall_verdict() -> None:
    suite = _suite([{"p95_ms": 100.0}] * 4)
    names = sorted(c.get("name") or "" for c in suite.findall("testcase"))
    assert names == ["SLO verdict", "error_rate <= 1%", "p95_ms <= 250 ms"]
    assert suite.get("failures") == "0"
    assert suite.findall("testcase/failure") == []


def test_breached_slo_fails_only_its_own_case() -> None:
    suite = _suite([{"p95_ms": 100.0}] * 3 + [{"p95_ms": 400.0, "zone": "BREACH"}] * 2)
    failed = {c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None}
    assert failed == {"p95_ms <= 250 ms", "SLO verdict"}
    assert suite.get("failures") == "2"


def test_no_evaluated_window_is_skipped_not_passed() -> None:
    suite = _suite([{"zone": "NO_DATA", "action": "HOLD", "p95_ms": None}])
    cases = suite.findall("testcase")
    assert suite.get("skipped") == str(len(cases)) == "3"
    assert all(c.find("skipped") is not None for c in cases)
    assert suite.get("failures") == "0"


def test_write_junit_replaces_the_file_whole(tmp_path: Path) -> None:
    b = SummaryBuilder(window_ms=10_000, slo=SLO)
    b.add(make_row(1))
    path = tmp_path / "out" / "results.xml"
    write_junit(path, b.build(RunAccumulator(), "duration"))
    assert etree.parse(str(path)).getroot().tag == "testsuites"
    assert [p.name for p in path.parent.iterdir()] == ["results.xml"]
