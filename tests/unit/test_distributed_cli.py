"""`run --remote` / `attach --remote` option checks, and a fleet that is not there."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.jmeter.launch import free_tcp_pair

PLAN = Path(__file__).resolve().parents[2] / "jmx_templates" / "elastic_plan.jmx"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--remote", "h1:1099"], "--engine"),
        (["--engine", "h1:9001"], "--engine is for --remote"),
        (
            ["--remote", "h1:1099,h2:1099", "--engine", "h1:9001"],
            "--remote: 2 remote engine(s) but 1 BeanShell",
        ),
        (["--remote", "h1:1099,h1:1099", "--engine", "a:1", "--engine", "b:1"], "twice"),
        (["--remote", "h1:x", "--engine", "h1:9001"], "bad remote engine"),
        (["--remote", "h1:1099", "--engine", "h1:9001", "--engine-max-rate", "0"], "> 0"),
        (["--engine-max-rate", "5"], "--engine-max-rate: a per-engine maximum rate needs"),
    ],
)
def test_run_remote_option_errors_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["run", str(PLAN), "--p95", "1s", "--out", str(tmp_path / "o"), *args]
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith("error:")
    assert message in result.output


def test_attach_remote_needs_one_engine_per_remote(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["attach", "--jtl", str(tmp_path / "r.jtl"), "--remote", "h1:1,h2:2",
         "--engine", "127.0.0.1:9001", "--p95", "1s"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--remote: 2 remote engine(s) but 1 BeanShell engine port(s)" in result.output
    assert "give one --engine HOST:BSHPORT per --remote" in result.output


@pytest.mark.jmeter
def test_run_remote_starts_nothing_when_an_engine_does_not_answer(
    jmeter_home: object, tmp_path: Path
) -> None:
    dead = free_tcp_pair()
    out = tmp_path / "o"
    result = CliRunner().invoke(
        cli,
        ["run", str(PLAN), "--remote", f"127.0.0.1:{dead}", "--engine", f"127.0.0.1:{dead + 1}",
         "--p95", "1s", "--out", str(out), "-q"],
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert "nothing started" in result.output
    assert not (out / "jmeter.out").exists()
    assert not any(
        str(out) in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])
    )
