"""``loadguard`` imports a command's modules only when that command runs.

Every ``loadguard`` process (and the integration tests start hundreds: targets, runs,
attaches) used to import every command's modules at start-up, numpy, pandas, matplotlib
and the lab included: about 1.6 s of CPU each. Checked in a fresh interpreter, since
this process has imported everything already."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from loadguard.cli import PRODUCT_COMMANDS, cli, subcommands

HEAVY = ("matplotlib", "pandas", "numpy", "aiohttp", "lxml", "loadguard.lab", "loadguard.report")

PROBE = f"""
import sys
import loadguard.cli
print(",".join(m for m in {HEAVY!r} if m in sys.modules))
"""


def test_starting_the_cli_imports_no_command_module() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "", out.stdout


def test_every_lazily_registered_command_resolves_to_the_command_of_its_name() -> None:
    commands = subcommands(cli)
    for name in PRODUCT_COMMANDS:
        assert commands[name].name == name
        assert CliRunner().invoke(cli, [name, "--help"]).exit_code == 0, name
