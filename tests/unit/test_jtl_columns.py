"""Saveservice settings -> CSV columns, properties syntax, headers, timestamp patterns."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadguard.errors import JtlError
from loadguard.jmeter.home import JMeterHome
from loadguard.jtl.columns import (
    DEFAULT_COLUMNS,
    format_from_properties,
    header_columns,
    parse_columns,
    parse_properties,
    read_properties,
)
from loadguard.jtl.timestamps import strptime_pattern

P = "jmeter.save.saveservice."


def test_defaults_are_jmeter_5_6_3_columns() -> None:
    fmt = format_from_properties({})
    assert fmt.columns == DEFAULT_COLUMNS
    assert (fmt.delimiter, fmt.header, fmt.timestamp_format, fmt.autoflush) == (
        ",",
        True,
        "ms",
        False,
    )


@pytest.mark.jmeter
def test_shipped_jmeter_properties_give_the_default_columns(jmeter_home: JMeterHome) -> None:
    """The provisioned JMeter's own jmeter.properties (found like every real-JMeter test:
    skipped without one, a failure under LOADGUARD_REQUIRE_JMETER=1)."""
    shipped = jmeter_home.path / "bin" / "jmeter.properties"
    assert format_from_properties(read_properties([shipped])).columns == DEFAULT_COLUMNS


@pytest.mark.parametrize(
    ("props", "columns"),
    [
        ({P + "url": "false", P + "idle_time": "false"},
         tuple(c for c in DEFAULT_COLUMNS if c not in ("URL", "IdleTime"))),
        ({P + "hostname": "true", P + "thread_counts": "false"},
         (*[c for c in DEFAULT_COLUMNS if c not in ("grpThreads", "allThreads")][:-2],
          "Hostname", "IdleTime", "Connect")),
        ({"sample_variables": "user, cart"}, (*DEFAULT_COLUMNS, "user", "cart")),
    ],
)  # fmt: skip
def test_flags_select_columns(props: dict[str, str], columns: tuple[str, ...]) -> None:
    assert format_from_properties(props).columns == columns


def test_settings_without_the_needed_columns_are_refused() -> None:
    with pytest.raises(JtlError, match="timeStamp"):
        format_from_properties({P + "timestamp_format": "none"})


@pytest.mark.parametrize(("raw", "expected"), [("\\t", "\t"), ("TAB", "\t"), (";", ";")])
def test_delimiter_setting(raw: str, expected: str) -> None:
    assert format_from_properties({P + "default_delimiter": raw}).delimiter == expected


def test_properties_syntax_and_override_order(tmp_path: Path) -> None:
    a = tmp_path / "jmeter.properties"
    a.write_text(
        "# comment\n! also comment\n"
        f"{P}print_field_names=true\n"
        f"{P}default_delimiter : \\t\n"
        f"{P}timestamp_format yyyy/MM/dd \\\n   HH:mm:ss.SSS\n"
    )
    b = tmp_path / "user.properties"
    b.write_text(f"{P}print_field_names=false\n")
    props = read_properties([a, b], {P + "autoflush": "true"})
    fmt = format_from_properties(props)
    assert fmt.header is False
    assert fmt.delimiter == "\t"
    assert fmt.timestamp_format == "yyyy/MM/dd HH:mm:ss.SSS"
    assert fmt.autoflush is True


def test_parse_properties_escapes() -> None:
    assert parse_properties("a\\:b = x\\u0041\\n") == {"a:b": "xA\n"}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (list(DEFAULT_COLUMNS), DEFAULT_COLUMNS),
        (["timeStamp", "elapsed", "label", "success", "myVar"],
         ("timeStamp", "elapsed", "label", "success", "myVar")),
        (["1700000000000", "5", "x"], None),
        (["label"], None),
    ],
)  # fmt: skip
def test_header_detection(fields: list[str], expected: tuple[str, ...] | None) -> None:
    assert header_columns(fields) == expected


def test_jtl_columns_option_rejects_duplicates() -> None:
    assert parse_columns("timeStamp, elapsed,label,success") == (
        "timeStamp", "elapsed", "label", "success",
    )  # fmt: skip
    with pytest.raises(JtlError):
        parse_columns("label,label")


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("yyyy/MM/dd HH:mm:ss.SSS", "%Y/%m/%d %H:%M:%S.%f"),
        ("yyyy-MM-dd'T'HH:mm:ssZ", "%Y-%m-%dT%H:%M:%S%z"),
        ("MM/dd/yy hh:mm a", "%m/%d/%y %I:%M %p"),
    ],
)
def test_simple_date_format_translation(pattern: str, expected: str) -> None:
    assert strptime_pattern(pattern) == expected
