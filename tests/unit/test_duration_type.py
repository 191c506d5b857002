"""The one duration parser and its click type: units required, one-line errors."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.cli.options import DURATION
from loadguard.durations import Seconds, format_duration, parse_duration_s
from loadguard.errors import SloSpecError, UsageError
from loadguard.slo import SloSpec


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("250us", 0.00025), ("300ms", 0.3), ("2s", 2.0), ("1.5s", 1.5), ("2m", 120.0),
     ("2min", 120.0), ("1h", 3600.0), ("0s", 0.0), (" 5 s ", 5.0)],
)  # fmt: skip
def test_units_are_accepted(text: str, seconds: float) -> None:
    assert DURATION.convert(text, None, None) == pytest.approx(seconds)
    assert isinstance(parse_duration_s(text), Seconds)


@pytest.mark.parametrize("text", ["5", "0", "0.5", "1e3"])
def test_a_bare_number_is_refused(text: str) -> None:
    with pytest.raises(click.BadParameter, match="missing unit"):
        DURATION.convert(text, None, None)


@pytest.mark.parametrize(
    ("text", "why"),
    [("-1s", "negative"), ("soon", "bad duration"), ("5 parsecs", "bad duration"),
     ("1e999s", "finite")],
)  # fmt: skip
def test_bad_values_say_why(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_duration_s(text, what="--wait")


def test_seconds_print_with_their_unit() -> None:
    assert format_duration(parse_duration_s("300ms")) == "300ms"
    assert str(parse_duration_s("60s")) == "60.0"  # prints as the float it is
    assert format_duration(0) == "0s"
    assert parse_duration_s(format_duration(120)) == 120.0


@pytest.mark.parametrize(
    "argv",
    [["push", "-e", "127.0.0.1:9", "-r", "5", "--timeout", "5"],
     ["engines", "-e", "127.0.0.1:9", "--timeout", "3"],
     ["stop", "-e", "127.0.0.1:9", "--wait", "30"],
     ["metrics", "x.jtl", "--window", "10"],
     ["simulate", "--p95", "250ms", "--tick", "1"]],
)  # fmt: skip
def test_a_bare_number_on_the_command_line_is_one_line_exit_2(argv: list[str]) -> None:
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {argv[-2]}: missing unit"), lines[0]


def test_window_takes_minutes_in_every_command() -> None:
    # one parser: the SLO window reads 1m as the metrics window does
    assert SloSpec.from_options(p95="300ms", window="1m").window_ms == 60_000
    assert SloSpec.from_options(p95=parse_duration_s("300ms")).limits[0].limit == 300.0
    with pytest.raises(SloSpecError, match="p95: missing unit"):
        SloSpec.from_options(p95="300")
