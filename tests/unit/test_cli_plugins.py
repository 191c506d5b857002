"""The lab's commands reach ``loadguard`` through the ``loadguard.commands`` entry points.

The installed metadata must be pyproject.toml's (a stale install fails here: ``make
install``), every lab command must be the object its entry point names, and a broken or
missing plugin must cost one line and exit 2, never a traceback, and never the product's
own commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

from click.testing import CliRunner

from loadguard.cli import LoadGuardGroup, cli, plugins, subcommands

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
LAB_COMMANDS = {"demo", "evaluate", "simulate", "target", "teastore"}


def _declared() -> dict[str, str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return dict(project["entry-points"][plugins.GROUP])


def _group_with(*eps: EntryPoint) -> LoadGuardGroup:
    group = LoadGuardGroup("loadguard")
    group.plugin_commands = plugins.register(group, list(eps))
    return group


def test_the_installed_entry_points_are_the_ones_pyproject_declares() -> None:
    installed = {ep.name: ep.value for ep in plugins.installed()}
    assert installed == _declared(), "the install is stale: run make install"


def test_the_lab_commands_are_the_entry_points_and_live_in_the_lab() -> None:
    declared = _declared()
    assert set(declared) == LAB_COMMANDS
    assert all(value.startswith("loadguard.lab.cli.") for value in declared.values())
    assert set(cli.plugin_commands) == LAB_COMMANDS
    for ep in plugins.installed():
        assert subcommands(cli)[ep.name] is ep.load()


def test_an_entry_point_whose_module_is_missing_answers_in_one_line() -> None:
    ep = EntryPoint("ghost", "loadguard.lab.cli.no_such_module:cmd", plugins.GROUP)
    group = _group_with(ep)
    for args in (["ghost"], ["ghost", "--quick", "x"], ["ghost", "--help"]):
        result = CliRunner().invoke(group, args)
        assert result.exit_code == 2, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("error: the 'loadguard ghost' command could not be loaded")
        assert "ModuleNotFoundError" in lines[0] and "make install" in lines[0]


def test_an_entry_point_that_is_not_a_click_command_is_refused() -> None:
    ep = EntryPoint("ghost", "loadguard.errors:UsageError", plugins.GROUP)
    result = CliRunner().invoke(_group_with(ep), ["ghost"])
    assert result.exit_code == 2
    assert "it is a type, not a click command" in result.stderr


def test_an_entry_point_cannot_replace_a_product_command() -> None:
    group = LoadGuardGroup("loadguard")
    push = subcommands(cli)["push"]
    group.add_command(push)
    ep = EntryPoint("push", "loadguard.lab.cli.demo_cmd:demo", plugins.GROUP)
    assert plugins.register(group, [ep]) == []
    assert subcommands(group)["push"] is push


def test_with_no_entry_point_installed_an_unknown_command_says_to_reinstall() -> None:
    result = CliRunner().invoke(_group_with(), ["evaluate", "--quick"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "No such command 'evaluate'" in lines[0] and "make install" in lines[0]


def test_with_the_entry_points_installed_an_unknown_command_is_only_unknown() -> None:
    result = CliRunner().invoke(cli, ["evaluat"])
    assert result.exit_code == 2
    assert "No such command" in result.stderr and "reinstall" not in result.stderr


def test_a_broken_plugin_installed_beside_loadguard_costs_one_line(tmp_path: Path) -> None:
    # A real distribution's metadata on sys.path, found by importlib.metadata in a real
    # ``python -m loadguard`` process: its command fails in one line, the others work.
    info = tmp_path / "ghost_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ghost-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{plugins.GROUP}]\nghost = ghost_plugin:cmd\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "loadguard", *args]
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path)

    ghost = run("ghost")
    assert ghost.returncode == 2
    assert ghost.stderr.count("\n") == 1 and "Traceback" not in ghost.stderr
    assert "'loadguard ghost' command could not be loaded from ghost_plugin:cmd" in ghost.stderr
    assert run("simulate", "--help").returncode == 0
    assert "ghost" in run("--help").stdout
