"""Reading a decision log (docs/decision-log.md) into a typed table for plotting.

The header must hold every column of ``loadguard.decisions.COLUMNS`` (extra columns are
allowed, for logs written by a newer LoadGuard). Rows are kept in file order. A last row
cut short by a crash (no ``epoch_ms``) is dropped, as the writer itself would on resume.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from loadguard.decision_columns import COLUMNS
from loadguard.errors import ReportError

NUMERIC: tuple[str, ...] = (
    "epoch_ms",
    "tick",
    "old_rate",
    "new_rate",
    "samples",
    "rps",
    "ok_rps",
    "error_rate",
    "mean_ms",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "offered_rps",
    "staleness_ms",
    "slo_p95_ms",
    "slo_p99_ms",
    "slo_mean_ms",
    "slo_error_rate",
)
TEXT: tuple[str, ...] = tuple(c for c in COLUMNS if c not in NUMERIC)


def read_header(path: Path) -> list[str]:
    """The first CSV record of ``path``; ``ReportError`` if it cannot be read."""
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            return next(csv.reader(fh), [])
    except FileNotFoundError as exc:
        raise ReportError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise ReportError(f"{path}: is a directory, expected a file") from exc
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def load_decisions(path: Path) -> pd.DataFrame:
    """The decision log as a DataFrame: numeric columns float, text columns str."""
    header = read_header(path)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        shown = ", ".join(missing[:4]) + (" ..." if len(missing) > 4 else "")
        raise ReportError(f"{path}: not a LoadGuard decision log (header lacks {shown})")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, on_bad_lines="skip", engine="c")
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise ReportError(f"{path}: cannot parse: {exc}") from exc
    for name in NUMERIC:
        frame[name] = pd.to_numeric(frame[name].replace("", None), errors="coerce")
    frame = frame[frame["epoch_ms"].notna()].reset_index(drop=True)
    if frame.empty:
        raise ReportError(f"{path}: the decision log has no rows")
    return frame
