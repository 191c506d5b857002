"""A bug (an exception that is not a ``LoadGuardError``) ends any command with one line,
``internal error: <type>: <message>``, and exit 4; ``--debug`` shows the traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.errors import INTERNAL_ERROR_EXIT, INTERRUPTED_EXIT

SIM = ["simulate", "--p95", "500ms", "--duration", "10s"]


def _boom(*_args: object, **_kwargs: object) -> object:
    raise ValueError("boom\nsecond line")


def _interrupt(*_args: object, **_kwargs: object) -> object:
    raise KeyboardInterrupt


def test_an_unexpected_exception_is_one_line_and_exit_4(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("loadguard.lab.cli.simulate_cmd.simulate", _boom)
    result = CliRunner().invoke(cli, SIM)
    assert result.exit_code == INTERNAL_ERROR_EXIT == 4
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("internal error: ValueError: boom second line")
    assert "Traceback" not in result.output


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("loadguard.lab.cli.simulate_cmd.simulate", _boom)
    result = CliRunner().invoke(cli, ["--debug", *SIM])
    assert result.exit_code == INTERNAL_ERROR_EXIT
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.strip().splitlines()[-1] == "internal error: ValueError: boom second line"


def test_loadguard_debug_env_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("loadguard.lab.cli.simulate_cmd.simulate", _boom)
    result = CliRunner().invoke(cli, SIM, env={"LOADGUARD_DEBUG": "1"})
    assert result.exit_code == INTERNAL_ERROR_EXIT
    assert "Traceback (most recent call last)" in result.stderr


def test_ctrl_c_outside_the_loop_exits_130_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("loadguard.lab.cli.simulate_cmd.simulate", _interrupt)
    result = CliRunner().invoke(cli, SIM)
    assert result.exit_code == INTERRUPTED_EXIT == 130
    assert result.stderr == ""


def test_bad_input_is_still_error_exit_2() -> None:
    result = CliRunner().invoke(cli, ["simulate", "--p95", "fast"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")


def test_an_internal_error_in_a_real_process_prints_no_traceback(tmp_path: Path) -> None:
    # The console script's own process: nothing but the one line reaches stderr.
    code = (
        "import loadguard.lab.cli.simulate_cmd as m\n"
        "def boom(*a, **k):\n"
        "    raise RuntimeError('broken')\n"
        "m.simulate = boom\n"
        "from loadguard.cli import main\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *SIM], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 4
    assert proc.stderr == ("internal error: RuntimeError: broken (--debug shows the traceback)\n")
