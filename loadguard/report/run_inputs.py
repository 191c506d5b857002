"""Which files make up a run, and reading its summary.json.

A run directory as written by ``loadguard run`` holds ``decisions.csv`` (required here),
``summary.json`` and ``results.jtl`` (both optional). Explicit paths override the ones
found in the directory. Every named file must exist; a missing one is a ``ReportError``
before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadguard.errors import ReportError
from loadguard.jtl.columns import JtlFormat

DECISIONS = "decisions.csv"
SUMMARY = "summary.json"
JTL = "results.jtl"
REPORT = "report.html"
#: JMeter's own HTML dashboard of the run, relative to the run folder.
DASHBOARD_INDEX = "dashboard/index.html"


@dataclass(frozen=True)
class RunPaths:
    decisions: Path
    jtl: Path | None = None
    summary: Path | None = None
    run_dir: Path | None = None
    #: How a JTL without a header line is written (None: a header or XML says).
    jtl_format: JtlFormat | None = None
    #: Transaction Controller rows count as labels of their own (``--transactions``).
    transactions: bool = False

    @property
    def name(self) -> str:
        return (self.run_dir or self.decisions.parent).resolve().name or str(self.decisions)

    def default_out(self) -> Path:
        return (self.run_dir or self.decisions.parent) / REPORT


def _must_exist(path: Path, what: str) -> Path:
    if not path.exists():
        raise ReportError(f"{what} {path}: no such file")
    if not path.is_file():
        raise ReportError(f"{what} {path}: not a regular file")
    return path


def resolve_run(
    run: Path | None = None,
    *,
    decisions: Path | None = None,
    jtl: Path | None = None,
    summary: Path | None = None,
    jtl_format: JtlFormat | None = None,
    transactions: bool = False,
) -> RunPaths:
    """The run's files: ``run`` is a run directory or a decision log, or None."""
    run_dir: Path | None = None
    if run is not None:
        if run.is_dir():
            run_dir = run
            decisions = decisions or run / DECISIONS
            if jtl is None and (run / JTL).is_file():
                jtl = run / JTL
            if summary is None and (run / SUMMARY).is_file():
                summary = run / SUMMARY
        elif run.exists():
            decisions = decisions or run
        else:
            raise ReportError(f"{run}: no such run directory or decision log")
    if decisions is None:
        raise ReportError("no run directory and no decision log given", setting="decisions")
    return RunPaths(
        decisions=_must_exist(decisions, "decision log"),
        jtl=None if jtl is None else _must_exist(jtl, "JTL"),
        summary=None if summary is None else _must_exist(summary, "summary"),
        run_dir=run_dir,
        jtl_format=jtl_format,
        transactions=transactions,
    )


def load_summary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: not JSON: {exc}") from exc
    if not isinstance(data, dict) or "verdict" not in data:
        raise ReportError(f"{path}: not a LoadGuard summary.json (no verdict)")
    return data
