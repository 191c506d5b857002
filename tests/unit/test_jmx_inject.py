"""``loadguard inject``: golden outputs, additions-only diffs, warnings and bad input."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape as xml_escape

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from loadguard.cli import cli
from loadguard.errors import JmxError, UsageError
from loadguard.jmx import has_elastic_timer, inject_elastic_timer, thread_groups
from loadguard.jmx.elastic_xml import MARKER, TIMER_NAME
from loadguard.jmx.groovy_timer import GROOVY_SOURCE

GOLDEN = Path(__file__).parents[1] / "golden" / "inject"

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("plain", "plain.out", {"initial_rate_rps": 2.0}),
    ("multi", "multi.out", {"max_rate_rps": 300.0, "latency_ms": 200.0}),
    ("multi", "multi_browse.out", {"thread_groups": ["Browse", "setUp"], "initial_rate_rps": 0.5}),
]


@pytest.mark.parametrize(("src", "golden", "kwargs"), CASES)
def test_inject_matches_golden(src: str, golden: str, kwargs: dict[str, Any]) -> None:
    result = inject_elastic_timer((GOLDEN / f"{src}.jmx").read_bytes(), **kwargs)
    if os.environ.get("LOADGUARD_REGEN_GOLDEN") == "1":  # after a deliberate timer change
        (GOLDEN / f"{golden}.jmx").write_bytes(result.xml)
    assert result.xml == (GOLDEN / f"{golden}.jmx").read_bytes()


@pytest.mark.parametrize(("src", "golden", "kwargs"), CASES)
def test_inject_diff_holds_only_additions(src: str, golden: str, kwargs: dict[str, Any]) -> None:
    before = (GOLDEN / f"{src}.jmx").read_text().splitlines()
    after = inject_elastic_timer((GOLDEN / f"{src}.jmx").read_bytes(), **kwargs).xml
    diff = list(difflib.ndiff(before, after.decode().splitlines()))
    assert not [line for line in diff if line.startswith(("- ", "? "))]
    added = [line[2:] for line in diff if line.startswith("+ ")]
    assert added and added[0].strip().startswith("<JSR223Timer")


def test_injected_timer_carries_the_groovy_source_and_initial_rate() -> None:
    result = inject_elastic_timer((GOLDEN / "plain.jmx").read_bytes(), initial_rate_rps=2.5)
    root = etree.fromstring(result.xml)
    (timer,) = root.iter("JSR223Timer")
    props = {p.get("name"): p.text for p in timer}
    assert timer.get("testname") == TIMER_NAME
    assert props["script"] == GROOVY_SOURCE
    assert props["parameters"] == "loadguard.tpm 150.0"
    assert props["scriptLanguage"] == "groovy"
    # The timer is a child of the thread group's hashTree.
    group = root.find(".//ThreadGroup")
    assert group is not None and timer.getparent() is group.getnext()


def test_warns_about_competing_throughput_timer_and_few_threads() -> None:
    result = inject_elastic_timer(
        (GOLDEN / "multi.jmx").read_bytes(), max_rate_rps=300.0, latency_ms=200.0
    )
    assert result.injected == ("Browse", "Buy")
    assert result.threads == 50 and result.threads_needed == 72
    text = " | ".join(result.warnings)
    assert "Constant Throughput Timer 'old pacing'" in text
    assert "need at least 72" in text


def test_no_thread_count_warning_when_threads_suffice() -> None:
    result = inject_elastic_timer(
        (GOLDEN / "plain.jmx").read_bytes(), max_rate_rps=100.0, latency_ms=500.0
    )
    assert result.threads == 120 and result.threads_needed == 60
    assert result.warnings == ()


def test_max_rate_without_latency_says_the_check_was_skipped() -> None:
    result = inject_elastic_timer((GOLDEN / "plain.jmx").read_bytes(), max_rate_rps=100.0)
    assert result.threads_needed is None
    assert result.warnings == (
        "thread count not checked against 100 req/s: no latency (p95) given",
    )


def test_plan_level_throughput_timer_counts_as_competing() -> None:
    plan = (
        (GOLDEN / "plain.jmx")
        .read_text()
        .replace(
            "    <hashTree>\n      <ThreadGroup",
            '    <hashTree>\n      <PreciseThroughputTimer testclass="PreciseThroughputTimer" '
            'testname="ptt"/>\n      <hashTree/>\n      <ThreadGroup',
        )
    )
    result = inject_elastic_timer(plan.encode())
    assert any("Precise Throughput Timer 'ptt'" in w for w in result.warnings)


def test_thread_groups_lists_kinds_and_counts() -> None:
    infos = thread_groups((GOLDEN / "multi.jmx").read_bytes())
    assert [(i.name, i.kind, i.threads, i.enabled) for i in infos] == [
        ("setUp", "SetupThreadGroup", 1, True),
        ("Browse", "ThreadGroup", 40, True),
        ("Buy", "ConcurrencyThreadGroup", 10, True),
        ("Old", "ThreadGroup", 5, False),
    ]


def test_has_elastic_timer_before_and_after() -> None:
    plain = (GOLDEN / "plain.jmx").read_bytes()
    assert not has_elastic_timer(plain)
    assert has_elastic_timer(inject_elastic_timer(plain).xml)


def test_second_inject_is_refused_not_doubled() -> None:
    once = inject_elastic_timer((GOLDEN / "plain.jmx").read_bytes()).xml
    with pytest.raises(JmxError, match="already has an Elastic Timer"):
        inject_elastic_timer(once)


def test_inject_keeps_crlf_and_inline_layouts_parseable() -> None:
    crlf = (GOLDEN / "plain.jmx").read_bytes().replace(b"\n", b"\r\n")
    out = inject_elastic_timer(crlf).xml
    assert MARKER in out.decode()
    assert b"\n" not in out.replace(b"\r\n", b"")  # every added line ends in CRLF too
    one_line = b"".join(line.strip() for line in (GOLDEN / "plain.jmx").read_bytes().splitlines())
    out = inject_elastic_timer(one_line).xml
    assert has_elastic_timer(out)


@pytest.mark.parametrize(
    ("xml", "error"),
    [
        (b"<jmeterTestPlan><hashTree>", "not well-formed XML"),
        (b"", "not well-formed XML"),
        (b"\x00\x01binary", "not well-formed XML"),
        (b"<html><body/></html>", "not a JMeter test plan"),
        (
            b'<jmeterTestPlan version="1.2"><hashTree><TestPlan testname="t"/><hashTree/>'
            b"</hashTree></jmeterTestPlan>",
            "no thread group",
        ),
        (
            b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><jmeterTestPlan>&e;'
            b"</jmeterTestPlan>",
            "no thread group",
        ),
    ],
)
def test_bad_plan_is_a_jmx_error(xml: bytes, error: str) -> None:
    with pytest.raises(JmxError, match=error):
        inject_elastic_timer(xml)


def test_unknown_thread_group_name_lists_the_plan_groups() -> None:
    with pytest.raises(JmxError, match=r"no thread group named 'Nope'.*'Browse'"):
        inject_elastic_timer((GOLDEN / "multi.jmx").read_bytes(), thread_groups=["Nope"])


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan")])
def test_zero_or_bad_initial_rate_is_refused(rate: float) -> None:
    with pytest.raises(UsageError, match="initial rate"):
        inject_elastic_timer((GOLDEN / "plain.jmx").read_bytes(), initial_rate_rps=rate)


# --- the CLI ---------------------------------------------------------------------------


def test_cli_inject_writes_output_and_prints_warnings(tmp_path: Path) -> None:
    out = tmp_path / "out.jmx"
    result = CliRunner().invoke(
        cli,
        [
            "inject",
            str(GOLDEN / "multi.jmx"),
            str(out),
            "--max-rate",
            "300",
            "--p95",
            "200ms",
            "--initial-rate",  # the golden file holds 1 req/s (60 tpm)
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == (GOLDEN / "multi.out.jmx").read_bytes()
    assert "warning: 50 threads cannot reach 300 req/s" in result.output
    assert "'Browse', 'Buy'" in result.output


@pytest.mark.parametrize(
    ("content", "args", "error"),
    [
        (b"<jmeterTestPlan><hashTree>", [], "error: not well-formed XML"),
        (b"<html/>", [], "error: not a JMeter test plan"),
        (b"<jmeterTestPlan><hashTree/></jmeterTestPlan>", [], "error: the plan has no thread"),
        (None, ["--thread-group", "Nope"], "error: no thread group named 'Nope'"),
        (None, ["--initial-rate", "0"], "error: --initial-rate: rate must be > 0"),
        (None, ["--p95", "300"], "error: --p95: missing unit"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2_and_no_file(
    tmp_path: Path, content: bytes | None, args: list[str], error: str
) -> None:
    plan = tmp_path / "in.jmx"
    plan.write_bytes(content if content is not None else (GOLDEN / "plain.jmx").read_bytes())
    out = tmp_path / "out.jmx"
    result = CliRunner().invoke(cli, ["inject", str(plan), str(out), *args])
    assert result.exit_code == 2
    assert result.output.strip().startswith(error), result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [plan]


def test_cli_missing_input_file_is_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["inject", str(tmp_path / "nope.jmx"), "x.jmx"])
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot read")


def test_cli_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    plan = tmp_path / "p.jmx"
    plan.write_bytes((GOLDEN / "plain.jmx").read_bytes())
    result = CliRunner().invoke(cli, ["inject", str(plan), str(plan)])
    assert result.exit_code == 2
    assert plan.read_bytes() == (GOLDEN / "plain.jmx").read_bytes()


# --- property: any layout, the output is the input plus the timer blocks ---------------

_NAME = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x00"),
    max_size=12,
)
# An added block: whole indented lines, or (no line of its own) the bare elements.
_BLOCK = re.compile(
    r"(?:(?<=\n)[ \t]*)?<JSR223Timer [^>]*>.*?</JSR223Timer>(?:\r?\n[ \t]*)?<hashTree/>"
    r"(?:\r?\n)?",
    re.DOTALL,
)


def _attr(value: str, quote: str) -> str:
    escaped = xml_escape(value, {'"': "&quot;", "'": "&apos;"})
    return f"{quote}{escaped}{quote}"


@st.composite
def _plans(draw: st.DrawFn) -> tuple[str, int]:
    indent = draw(st.sampled_from(["  ", "\t", "    ", ""]))
    nl = draw(st.sampled_from(["\n", "\r\n", ""]))
    quote = draw(st.sampled_from(['"', "'"]))
    groups = draw(st.lists(_NAME, min_size=1, max_size=4, unique=True))
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<jmeterTestPlan version=" + quote + "1.2" + quote + ">",
    ]
    parts.append(indent + "<hashTree>")
    parts.append(indent * 2 + "<TestPlan testname=" + _attr(draw(_NAME), quote) + "/>")
    parts.append(indent * 2 + "<hashTree>")
    if draw(st.booleans()):
        parts.append(indent * 3 + "<!-- <ThreadGroup> in a comment is not a group -->")
    for name in groups:
        empty = draw(
            st.sampled_from(["<stringProp name='x'/>", '<stringProp name="x"></stringProp>'])
        )
        parts.append(
            indent * 3
            + "<ThreadGroup testname="
            + _attr(name, quote)
            + ">"
            + empty
            + "</ThreadGroup>"
        )
        parts.append(indent * 3 + "<hashTree>")
        body = xml_escape(draw(_NAME))
        sampler = draw(
            st.sampled_from(
                [
                    f"<DebugSampler testname='s'><stringProp name='t'>{body}</stringProp>"
                    "</DebugSampler>",
                    f"<DebugSampler testname='s'><stringProp name='t'><![CDATA[{body} <x> ]]>"
                    "</stringProp></DebugSampler>",
                    "<DebugSampler testname='s' other=\"a > b\"/>",
                ]
            )
        )
        parts.append(indent * 4 + sampler)
        parts.append(indent * 4 + "<hashTree/>")
        parts.append(indent * 3 + "</hashTree>")
    parts += [indent * 2 + "</hashTree>", indent + "</hashTree>", "</jmeterTestPlan>", ""]
    return nl.join(parts), len(groups)


@settings(max_examples=150, deadline=None)
@given(_plans())
def test_any_layout_output_is_input_plus_timer_blocks(plan: tuple[str, int]) -> None:
    text, groups = plan
    result = inject_elastic_timer(text.encode())
    out = result.xml.decode()
    assert len(result.injected) == groups
    assert _BLOCK.sub("", out) == text
    root = etree.fromstring(result.xml)
    assert len(list(root.iter("JSR223Timer"))) == groups
