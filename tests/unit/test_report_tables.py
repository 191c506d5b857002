"""Table rows: number formatting, SLO verdicts per label, and the tables' HTML (golden)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from loadguard.report import page, tables
from loadguard.report.jtl_digest import JtlDigest, LabelDigest

GOLDEN = Path(__file__).parent / "golden" / "report_tables.html"


@pytest.mark.parametrize(
    ("value", "percent", "text"),
    [
        (None, False, "—"),
        (float("nan"), False, "—"),
        (12, False, "12"),
        (1234567, False, "1,234,567"),
        (250.0, False, "250"),
        (88.15, False, "88.15"),
        (0.0123, False, "0.0123"),
        (0.0123, True, "1.23%"),
        (0.0, True, "0%"),
        (True, False, "true"),
        ("PASS", False, "PASS"),
    ],
)
def test_fmt_number(value: object, percent: bool, text: str) -> None:
    assert tables.fmt_number(value, percent) == text


def _digest() -> JtlDigest:
    d = JtlDigest(path=Path("r.jtl"), rows=7)
    for name, elapsed, ok in [
        ("/fast", [10, 20, 30], [True, True, True]),
        ("/slow", [100, 400, 900], [True, False, True]),
        ("<b>&x", [5], [True]),
    ]:
        e, o = np.asarray(elapsed, np.int64), np.asarray(ok, np.bool_)
        d.labels.setdefault(name, LabelDigest()).add(e, o)
        d.overall.add(e, o)
    return d


SLO = {"p95_ms": 250.0, "error_rate": 0.01}


def test_label_meets_slo_only_when_every_threshold_holds() -> None:
    rows = {r.label: r for r in tables.label_rows(_digest(), SLO)}
    assert rows["/fast"].meets_slo is True
    assert rows["/slow"].verdicts == {"p95_ms": False, "error_rate": False}
    assert rows["(all labels)"].meets_slo is False
    assert list(rows)[-1] == "(all labels)"


def test_labels_are_sorted_worst_margin_first() -> None:
    rows = tables.label_rows(_digest(), SLO)
    # /slow: errors 33 % against 1 % (its worst); /fast: p95 29 ms, 88 % below 250 ms;
    # <b>&x: p95 5 ms, 98 % below.
    assert [r.label for r in rows] == ["/slow", "/fast", "<b>&x", "(all labels)"]
    assert rows[0].cells[-1] == "33× the SLO (error rate)"
    assert rows[1].cells[-1] == "88 % below (p95)"


def test_label_without_thresholds_has_no_verdict() -> None:
    row = tables.label_rows(_digest(), {})[0]
    assert row.meets_slo is None and tables.verdict_text(row, {}) == "—"


def test_slo_thresholds_take_the_last_value_in_force() -> None:
    frame = pd.DataFrame(
        {
            "slo_p95_ms": [300.0, 250.0, np.nan],
            "slo_p99_ms": [np.nan] * 3,
            "slo_mean_ms": [np.nan] * 3,
            "slo_error_rate": [0.01, 0.01, 0.01],
        }
    )
    assert tables.slo_thresholds(frame) == {"p95_ms": 250.0, "error_rate": 0.01}


def test_summary_rows_put_known_fields_first_then_new_ones_spelt_out() -> None:
    rows = tables.summary_rows({"zz_new": 1, "p95_ms": 12.5, "verdict": "PASS"})
    assert rows == [
        ("Verdict", "PASS"),
        ("Latency over the run", "p95 12 ms (every sample)"),
        ("Zz new", "1"),
    ]


def test_tables_html_matches_golden() -> None:
    summary = {
        "verdict": "FAIL",
        "max_compliant_rate": 88.15,
        "error_rate": 0.0012,
        "violation_share": {"p95_ms": 0.22, "label": 0.0},
        "time_in_zone_s": {"SAFE": 120.0, "BREACH": 4.5},
        "actions": {"INCREASE": 10, "HOLD": 3, "DECREASE": 2},
        "max_compliant_evidence": {
            "rate_rps": 88.15,
            "from_epoch_ms": 1_796_000_000_000,
            "to_epoch_ms": 1_796_000_012_000,
            "windows": 7,
        },
        "slo": {"p95_ms": 250.0, "p99_ms": None, "error_rate": 0.01},
    }
    html = (
        page.key_value_table(tables.summary_rows(summary), "summary-table")
        + "\n"
        + page.label_table(tables.label_rows(_digest(), SLO), SLO)
        + "\n"
    )
    if os.environ.get("LOADGUARD_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(html)
    assert html == GOLDEN.read_text()


def test_compare_rows_put_a_dash_where_a_run_lacks_a_figure() -> None:
    rows = dict(tables.compare_rows([{"verdict": "PASS", "p95_ms": 120.0}, None]))
    assert rows == {
        "Verdict": ["PASS", "—"],
        "Latency over the run": ["p95 120 ms (every sample)", "—"],
    }
