"""The library raises domain errors naming settings; only the CLI names flags.

A ``raise`` in the product's library (outside ``loadguard/cli/`` and the lab) whose
message carries one of our command-line flags (``--remote``...) breaks that rule: the
flag belongs in ``loadguard.cli.flags.SETTING_FLAGS``, keyed by the setting the error
names. The flags are read off click's own command tree, so a new option is covered.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from loadguard.cli import cli, subcommands
from loadguard.cli.flags import SETTING_FLAGS, named_by_flag
from loadguard.errors import EngineError, LoadGuardError
from loadguard.sidecar import Paths, SidecarConfig
from loadguard.sidecar.compose import _actuator
from loadguard.slo import SloSpec

ROOT = Path(__file__).resolve().parents[2] / "loadguard"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def cli_flags(command: click.Command = cli) -> frozenset[str]:
    """Every ``--long`` option name of ``command`` and the commands under it."""
    names = {o for p in command.params for o in (*p.opts, *p.secondary_opts) if o[:2] == "--"}
    if isinstance(command, click.Group):
        for sub in subcommands(command).values():
            names |= cli_flags(sub)
    return frozenset(names)


def flags_in_raises(root: Path = ROOT, flags: frozenset[str] | None = None) -> list[str]:
    """``path:line --flag`` for each of our flags in a string inside a ``raise`` of the
    library: every module but ``<root>/cli/`` and ``<root>/lab/``."""
    flags = cli_flags() if flags is None else flags
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] in ("cli", "lab"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Raise):
                continue
            for const in ast.walk(node):
                if isinstance(const, ast.Constant) and isinstance(const.value, str):
                    found += [
                        f"{path.relative_to(root.parent)}:{const.lineno} {m}"
                        for m in FLAG.findall(const.value)
                        if m in flags
                    ]
    return found


def test_the_cli_flags_are_read_off_click() -> None:
    flags = cli_flags()
    assert {"--remote", "--engine", "--jtl-columns", "--influx-required", "--decisions"} <= flags


def test_no_library_raise_names_a_cli_flag() -> None:
    assert flags_in_raises() == []


def test_the_flag_check_sees_a_planted_raise_and_spares_the_cli(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sidecar").mkdir(parents=True)
    (tmp_path / "pkg" / "cli").mkdir()
    (tmp_path / "pkg" / "sidecar" / "config.py").write_text(
        "def f(n):\n"
        "    log('--remote is fine in a log line')\n"
        "    raise ValueError(\n"
        "        f'{n} engines: give one --remote per --engine'\n"
        "    )\n"
        "def g():\n"
        "    raise ValueError('--not-ours, and -J, are not flags of ours')\n"
    )
    (tmp_path / "pkg" / "cli" / "options.py").write_text("raise ValueError('--remote')\n")
    assert flags_in_raises(tmp_path / "pkg", frozenset({"--remote", "--engine"})) == [
        "pkg/sidecar/config.py:4 --remote",
        "pkg/sidecar/config.py:4 --engine",
    ]


def test_every_setting_the_table_names_has_a_real_flag() -> None:
    flags = cli_flags()
    for setting, (flag, hint) in SETTING_FLAGS.items():
        assert flag == "" or flag.split()[0] in flags, setting
        assert all(f in flags for f in FLAG.findall(hint)), setting


def test_an_error_without_a_setting_keeps_its_message() -> None:
    assert named_by_flag(LoadGuardError("plain")) == "plain"


PLAN = ROOT.parent / "jmx_templates" / "elastic_plan.jmx"
HEADER = "timeStamp,elapsed,label,success\n1,2,a,true\n"


def _jtl(tmp_path: Path) -> str:
    path = tmp_path / "r.jtl"
    path.write_text(HEADER)
    return str(path)


def _error(argv: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, argv)
    return result.exit_code, result.output.strip()


def test_the_outputs_errors_name_their_flags(tmp_path: Path) -> None:
    attach = ["attach", "--jtl", _jtl(tmp_path), "--p95", "1s", "--dry-run", "--duration", "1s"]
    assert _error([*attach, "--influx-required"]) == (
        2,
        "error: --influx-required: no InfluxDB URL to require (give --influx URL)",
    )
    assert _error([*attach, "--application", " "]) == (
        2,
        "error: --application: must not be empty",
    )


def test_the_jtl_columns_error_names_its_flag(tmp_path: Path) -> None:
    assert _error(["metrics", _jtl(tmp_path), "--jtl-columns", ","]) == (
        2,
        "error: --jtl-columns: is empty",
    )


def test_the_remote_fleet_errors_name_their_flags(tmp_path: Path) -> None:
    run = ["run", str(PLAN), "--p95", "1s", "--out", str(tmp_path / "o")]
    assert _error([*run, "--remote", "h1:1099", "--engine", "h1:9001", "--dry-run"]) == (
        2,
        "error: --remote: needs the engines' BeanShell ports (--dry-run is not supported)",
    )


def test_a_folder_holding_a_run_is_refused_naming_out_and_force(tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "results.jtl").write_text(HEADER)
    code, message = _error(["run", str(PLAN), "--p95", "1s", "--out", str(out)])
    assert (code, message) == (
        2,
        f"error: {out} already holds a run: results.jtl "
        "(give another --out, or --force to replace it)",
    )


def test_a_policy_knob_with_its_own_option_is_refused_naming_both_flags(tmp_path: Path) -> None:
    attach = ["attach", "--jtl", _jtl(tmp_path), "--p95", "1s", "--dry-run", "--duration", "1s"]
    assert _error([*attach, "--param", "lag_ms=3"]) == (
        2,
        "error: --param lag_ms: has a setting of its own: one name per knob "
        "(give the actuation lag as --actuation-lag)",
    )


def test_report_without_a_run_names_the_decisions_flag() -> None:
    assert _error(["report"]) == (
        2,
        "error: no run directory and no decision log given "
        "(give a run directory or --decisions decisions.csv)",
    )


def test_the_engine_errors_keep_their_exit_code_and_gain_the_flag() -> None:
    spec = SloSpec.from_options(p95="300ms")
    with pytest.raises(EngineError) as no_engine:
        _actuator(SidecarConfig(spec=spec, paths=Paths.in_dir(Path("o"))))
    assert no_engine.value.exit_code == 3
    assert named_by_flag(no_engine.value) == (
        "--engine: no engine to push to (give --engine HOST:PORT or --dry-run)"
    )


def test_a_user_beanshell_property_is_refused_pointing_at_attach(tmp_path: Path) -> None:
    run = ["run", str(PLAN), "--p95", "1s", "--out", str(tmp_path / "o")]
    assert _error([*run, "-J", "beanshell.server.port=9000"]) == (
        2,
        "error: beanshell.server.port: loadguard run sets beanshell.server.* itself: a console "
        "on 127.0.0.1 only, see docs/security.md "
        "(start JMeter yourself and use `loadguard attach` for another console)",
    )


def test_a_bad_label_regex_names_its_flag(tmp_path: Path) -> None:
    code, message = _error(["metrics", _jtl(tmp_path), "--exclude-labels", "("])
    assert code == 2 and message.startswith("error: --exclude-labels: bad regular expression '('")
