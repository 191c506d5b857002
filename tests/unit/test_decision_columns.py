"""The decision-log columns are defined once, and docs/decision-log.md documents them all."""

from __future__ import annotations

import re
from pathlib import Path

from loadguard import decisions
from loadguard.decision_columns import COLUMNS, DECISION_COLUMNS, NUMERIC, TEXT
from loadguard.report import decision_frame

DOC = Path(__file__).resolve().parents[2] / "docs" / "decision-log.md"


def documented_columns() -> list[str]:
    """The column names in the first cells of the ``decisions.csv`` table, in order."""
    section = DOC.read_text(encoding="utf-8").split("## `decisions.csv`", 1)[1]
    section = section.split("\n## ", 1)[0]
    names: list[str] = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        names += re.findall(r"`([a-z0-9_]+)`", first_cell)
    return names


def test_every_column_is_documented_in_order() -> None:
    assert documented_columns() == list(COLUMNS)


def test_writer_and_report_read_the_one_definition() -> None:
    assert vars(decisions)["COLUMNS"] is COLUMNS
    assert ",".join(COLUMNS) + "\n" == decisions.HEADER
    assert vars(decision_frame)["COLUMNS"] is COLUMNS
    assert vars(decision_frame)["NUMERIC"] is NUMERIC


def test_each_column_has_a_dtype_and_a_meaning() -> None:
    assert len(set(COLUMNS)) == len(COLUMNS)
    assert set(NUMERIC) | set(TEXT) == set(COLUMNS)
    assert not set(NUMERIC) & set(TEXT)
    assert all(c.meaning.strip() for c in DECISION_COLUMNS)
    assert {"epoch_ms", "new_rate", "p95_ms", "slo_error_rate"} <= set(NUMERIC)
    assert {"action", "zone", "applied", "detail"} <= set(TEXT)
