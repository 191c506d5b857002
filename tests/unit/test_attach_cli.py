"""`loadguard attach` as a user runs it, in observe mode over a JTL on disk."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

from click.testing import CliRunner

from loadguard.cli import cli

COLUMNS = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,success"


def write_headerless_jtl(path: Path, n: int = 200) -> None:
    now = int(time.time() * 1000)
    lines = []
    for i in range(n):
        start = now - 6000 + i * 25
        lines.append(f"{start},{20 + i % 30},home,200,OK,TG 1-{i % 5},true\n")
    path.write_text("".join(lines))


def test_attach_dry_run_reads_a_headerless_jtl_with_given_columns(tmp_path: Path) -> None:
    jtl = tmp_path / "r.jtl"
    write_headerless_jtl(jtl)
    result = CliRunner().invoke(
        cli,
        [
            "attach",
            "--jtl",
            str(jtl),
            "--jtl-columns",
            COLUMNS,
            "--dry-run",
            "--p95",
            "250ms",
            "--tick",
            "500ms",
            "--duration",
            "1s",
            "--out",
            str(tmp_path),
            "-q",
        ],
    )
    assert result.exit_code in (0, 1, 5), result.output
    with (tmp_path / "decisions.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and int(rows[0]["samples"]) > 100
    assert rows[0]["applied"] == "true"  # dry run: nothing to push, nothing failed
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["samples"] == 200
    assert summary["stop_reason"] == "duration"


def test_attach_needs_an_engine_or_dry_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["attach", "--jtl", str(tmp_path / "x.jtl"), "--p95", "1s"])
    assert result.exit_code == 2
    assert result.output.strip().startswith("error:")
    assert "--engine" in result.output
