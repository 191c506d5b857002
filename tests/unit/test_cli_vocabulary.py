"""One vocabulary: an option name means one thing in every command.

Walks every click command of the ``loadguard`` group and checks that an option appearing
in several commands has the same type, default and help everywhere; that every duration
option uses the one duration type; and that every command's help has an example.
"""

from __future__ import annotations

import re
from collections import defaultdict

import click
import pytest

from loadguard.cli import cli, subcommands
from loadguard.cli.options import DURATION, DurationType

#: Attributes allowed to differ for an option name, and why. Keep this list short.
EXCEPTIONS: dict[str, tuple[set[str], str]] = {
    "--duration": (
        {"default"},
        "how long a demo (180s), a simulation (600s) or a run (until JMeter ends) lasts is "
        "each command's own; type and help are shared",
    ),
}

#: Names that are durations even without a default to recognise them by.
DURATION_NAMES = {
    "--timeout", "--wait", "--duration", "--window", "--tick", "--step", "--reorder-slack",
    "--idle-exit", "--start-timeout", "--steady-after", "--sweep-duration",
    "--actuation-lag", "--jtl-flush", "--service", "--p50", "--p90", "--p95", "--p99",
    "--mean",
}  # fmt: skip
#: Defaults that look like durations but are not.
NOT_DURATIONS = {"--heap": "a JVM size: 512m is 512 MiB"}
_DURATION_TEXT = re.compile(r"^[0-9.]+(us|ms|s|m|min|h)$")


def _commands() -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, path: str) -> None:
        out.append((path, cmd))
        if isinstance(cmd, click.Group):
            for name, sub in sorted(subcommands(cmd).items()):
                walk(sub, f"{path} {name}")

    walk(cli, "loadguard")
    return out


COMMANDS = _commands()
LEAVES = [(p, c) for p, c in COMMANDS if not isinstance(c, click.Group)]


def _options(cmd: click.Command) -> list[click.Option]:
    return [p for p in cmd.params if isinstance(p, click.Option) and p.name != "help"]


def _type(opt: click.Option) -> str:
    t = opt.type
    detail = ""
    if isinstance(t, click.Choice):
        detail = ",".join(map(str, t.choices))
    elif isinstance(t, click.Path):
        detail = f"file_okay={t.file_okay},dir_okay={t.dir_okay},exists={t.exists}"
    return f"{type(t).__name__}({t.name};{detail}) flag={opt.is_flag} multiple={opt.multiple}"


def _signature(opt: click.Option) -> dict[str, str]:
    return {"type": _type(opt), "default": repr(opt.default), "help": opt.help or ""}


def test_the_walk_sees_every_command() -> None:
    names = {p for p, _ in LEAVES}
    for expected in ("attach", "run", "simulate", "target", "push", "stop", "engines", "demo"):
        assert f"loadguard {expected}" in names


def test_a_shared_option_name_has_one_type_default_and_help() -> None:
    seen: dict[str, dict[str, dict[str, list[str]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for path, cmd in LEAVES:
        for opt in _options(cmd):
            for name in opt.opts:
                for attr, value in _signature(opt).items():
                    seen[name][attr][value].append(path)
    problems = []
    for name, attrs in sorted(seen.items()):
        allowed = EXCEPTIONS.get(name, (set(), ""))[0]
        for attr, values in attrs.items():
            if len(values) > 1 and attr not in allowed:
                problems.append(f"{name} {attr}: {dict(values)}")
    assert not problems, "\n".join(problems)


def test_exceptions_are_still_needed() -> None:
    names = {n for _, cmd in LEAVES for o in _options(cmd) for n in o.opts}
    assert set(EXCEPTIONS) <= names


def test_every_duration_option_uses_the_one_duration_type() -> None:
    problems = []
    for path, cmd in LEAVES:
        for opt in _options(cmd):
            long_name = max(opt.opts, key=len)
            looks = long_name in DURATION_NAMES or (
                isinstance(opt.default, str)
                and _DURATION_TEXT.match(opt.default) is not None
                and long_name not in NOT_DURATIONS
            )
            says_seconds = "seconds" in (opt.help or "").lower()
            if (looks or says_seconds) and opt.type is not DURATION:
                problems.append(f"{path} {long_name}: {opt.type!r}")
            if isinstance(opt.type, DurationType) and opt.type is not DURATION:
                problems.append(f"{path} {long_name}: a second DurationType")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_command_help_has_an_example(path: str, cmd: click.Command) -> None:
    text = cmd.help or ""
    assert "Example" in text, f"{path}: no example in its help"
    example = text[text.index("Example") :]
    assert "loadguard " in example, f"{path}: the example does not show a command line"


def test_out_is_always_a_folder() -> None:
    for path, cmd in LEAVES:
        for opt in _options(cmd):
            if "--out" in opt.opts or "-o" in opt.opts:
                assert isinstance(opt.type, click.Path) and not opt.type.file_okay, path
                assert opt.opts == ["-o", "--out"], path


def test_policy_choices_are_the_registry() -> None:
    from loadguard.policies import DEFAULT_POLICY, POLICIES

    for path, cmd in LEAVES:
        for opt in _options(cmd):
            if opt.name == "policy":
                assert isinstance(opt.type, click.Choice)
                assert set(opt.type.choices) == set(POLICIES), path
                assert opt.default == DEFAULT_POLICY, path


def test_docs_cli_md_is_the_generated_table() -> None:
    from pathlib import Path

    from loadguard.cli.table_cmd import COMMAND, render

    doc = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    assert doc.read_text(encoding="utf-8") == render(cli), f"run: {COMMAND}"
