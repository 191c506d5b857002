"""The headline (loadguard.headline): one builder for the report, console and summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.headline import failure_cause, headline
from tests.unit.test_attach_cli import COLUMNS, write_headerless_jtl

BASE: dict[str, Any] = {
    "verdict": "PASS",
    "slo": {"p95_ms": 250.0, "p99_ms": None, "mean_ms": None, "error_rate": 0.01},
    "slo_verdicts": {"p95_ms": "PASS", "error_rate": "PASS"},
    "violation_share": {"p95_ms": 0.118, "error_rate": 0.0, "label": 0.0},
    "max_compliant_rate": 152.5,
    "max_compliant_evidence": {
        "from_epoch_ms": 1_796_000_000_000,
        "to_epoch_ms": 1_796_000_012_000,
    },
    "error_rate": 0.0,
    "samples": 19_856,
    "duration_s": 178.146,
    "stop_reason": "duration",
}
#: The new controller's keys (notes/controller-contract.md).
CONTRACT: dict[str, Any] = {
    "violation_budget": 0.05,
    "capacity": {
        "status": "estimated",
        "rps": 151.2,
        "ci90_rps": [146.0, 155.0],
        "metric": "p95_ms",
        "note": None,
    },
    "held_rate": {"rps": 137.3, "violation_share": 0.03, "windows": 40, "budget": 0.05},
}


def test_pass_with_the_controllers_capacity_reads_as_the_documented_example() -> None:
    h = headline({**BASE, **CONTRACT})
    assert h.text == (
        "Sustained 137 req/s with p95 ≤ 250 ms in 97 % of windows (budget 95 %). "
        "Capacity at the SLO ≈ 151 req/s (90 % CI 146–155). No errors."
    )
    assert h.capacity_ci90_rps == (146.0, 155.0) and h.held_rps == 137.3


def test_a_held_share_under_the_budgets_says_it_falls_short() -> None:
    held = {"rps": 140.0, "violation_share": 0.12, "windows": 9, "budget": 0.05}
    h = headline({**BASE, **CONTRACT, "held_rate": held})
    assert h.text.startswith(
        "Sustained 140 req/s with p95 ≤ 250 ms in 88 % of windows, short of the budget's 95 %."
    )
    assert "(budget" not in h.text


def test_without_the_controllers_keys_todays_figures_are_used() -> None:
    h = headline(BASE)
    assert h.text == (
        "Sustained 152 req/s within every SLO for 12 s; over the run, p95 ≤ 250 ms in "
        "88 % of windows. No errors."
    )
    assert h.capacity_status is None and h.capacity_rps is None


def test_inconclusive_says_capacity_is_above_the_rate_reached() -> None:
    cap = {"status": "lower_bound", "rps": 90.0, "ci90_rps": None, "metric": "p95_ms",
           "note": "the knee was not reached in 40 s"}  # fmt: skip
    h = headline({**BASE, **CONTRACT, "verdict": "INCONCLUSIVE", "capacity": cap})
    assert h.text.startswith("Capacity above 90 req/s: the knee was not reached in 40 s.")


def test_inconclusive_with_mains_note_does_not_say_capacity_above_twice() -> None:
    cap = {"status": "lower_bound", "rps": 20.0, "ci90_rps": None, "metric": "p95_ms",
           "note": "capacity above 20 req/s: the knee was not reached"}  # fmt: skip
    h = headline({**BASE, "verdict": "INCONCLUSIVE", "capacity": cap, "duration_s": 10.2})
    assert h.text.startswith("Capacity above 20 req/s: the knee was not reached in 10 s. ")
    assert h.text.lower().count("capacity above") == 1
    fail = headline({**BASE, "verdict": "FAIL", "capacity": cap})
    assert "Capacity above 20 req/s: the knee was not reached." in fail.text


def test_an_estimates_note_is_kept_beside_its_interval() -> None:
    cap = {**CONTRACT["capacity"], "note": "the knee is not pinned"}
    h = headline({**BASE, **CONTRACT, "capacity": cap})
    assert "Capacity at the SLO ≈ 151 req/s (90 % CI 146–155; the knee is not pinned)." in h.text


def test_inconclusive_without_a_note_names_the_run_length() -> None:
    h = headline({**BASE, "verdict": "INCONCLUSIVE"})
    assert h.text.startswith("Capacity above 152 req/s: the knee was not reached in 2 min 58 s.")


def test_fail_names_the_slo_the_label_and_the_onset() -> None:
    t0 = 1_796_000_000_000
    rows = [
        {"epoch_ms": t0, "zone": "NO_DATA", "breaches": ""},
        {"epoch_ms": t0 + 2000, "zone": "BREACH", "breaches": "p95_ms"},  # an early stretch
        {"epoch_ms": t0 + 4000, "zone": "SAFE", "breaches": ""},
        {"epoch_ms": t0 + 62_000, "zone": "BREACH", "breaches": "label=/cart:p95_ms"},
        {"epoch_ms": t0 + 64_000, "zone": "NO_DATA", "breaches": ""},
        {"epoch_ms": t0 + 66_000, "zone": "BREACH", "breaches": "p95_ms"},
    ]
    cause = failure_cause(rows)
    assert cause is not None
    assert (cause.metric, cause.label, cause.from_s, cause.to_end) == (
        "p95_ms",
        "/cart",
        62.0,
        True,
    )
    h = headline({**BASE, "verdict": "FAIL", "error_rate": 0.004}, cause)
    assert h.text.startswith(
        "p95 on label /cart over its SLO from 00:54:22 UTC (1 min 02 s into the run) "
        "to the end of the run."
    )
    assert h.text.endswith("Errors 0.4 % of 19,856 samples (SLO ≤ 1 %).")


def test_fail_on_the_overall_figure_names_the_threshold() -> None:
    t0 = 1_796_000_000_000
    rows = [{"epoch_ms": t0, "zone": "SAFE", "breaches": ""},
            {"epoch_ms": t0 + 30_000, "zone": "BREACH", "breaches": "error_rate"}]  # fmt: skip
    h = headline({**BASE, "verdict": "FAIL"}, failure_cause(rows))
    assert h.text.startswith("Error rate over 1 % on all labels from 00:53:50 UTC (30 s into")


def test_no_data_says_why_in_one_sentence() -> None:
    h = headline({**BASE, "verdict": "NO_DATA", "samples": 0, "duration_s": 12.0,
                  "stop_reason": "jmeter_exited"})  # fmt: skip
    assert h.text == "No window could be judged: 0 samples in 12 s (stop: jmeter exited)."


def test_attach_writes_the_headline_into_summary_and_ends_the_console_with_it(
    tmp_path: Path,
) -> None:
    jtl = tmp_path / "r.jtl"
    write_headerless_jtl(jtl)
    args = ["attach", "--jtl", str(jtl), "--jtl-columns", COLUMNS, "--dry-run",
            "--p95", "250ms", "--tick", "500ms", "--duration", "1s",
            "--out", str(tmp_path), "-q"]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1, 5), result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    text = summary["headline"]["text"]
    assert text and summary["headline"]["verdict"] == summary["verdict"]
    assert result.output.rstrip().splitlines()[-1] == f"{summary['verdict']}: {text}"
