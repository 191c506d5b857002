"""Evaluation harness: scheme selection, aggregation, the CSV and the Markdown report."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.errors import UsageError
from loadguard.jmeter.install import PLUGINS
from loadguard.jtl.sample import SampleBatch
from loadguard.lab.evaluate import markdown
from loadguard.lab.evaluate.aggregate import (
    CSV_COLUMNS,
    aggregate,
    mean_sd,
    read_runs_csv,
    reduction,
    run_row,
    write_runs_csv,
)
from loadguard.lab.evaluate.config import EvalConfig
from loadguard.lab.evaluate.harness import run_order
from loadguard.lab.evaluate.lambda_star import SweepPoint
from loadguard.lab.evaluate.offered import OfferedSchedule
from loadguard.lab.evaluate.run_metrics import run_metrics
from loadguard.lab.evaluate.runner import RunRecord, read_points, write_points
from loadguard.lab.evaluate.schemes import SCHEMES, parse_schemes
from loadguard.slo import SloSpec

SPEC = SloSpec.from_options(p95="250ms", error_rate="1%")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["tally,FFA"], ["FFA", "tally"]),  # canonical order
        (["ffa", "FFA"], ["FFA"]),  # each once, any case
        (["threezone", " aimd ,"], ["threezone", "aimd"]),
    ],
)
def test_parse_schemes_picks_known_schemes_in_order(given: list[str], expected: list[str]) -> None:
    assert [s.name for s in parse_schemes(given)] == expected


@pytest.mark.parametrize("given", [["bogus"], [""], [","]])
def test_parse_schemes_rejects_unknown_or_empty(given: list[str]) -> None:
    with pytest.raises(UsageError):
        parse_schemes(given)


def test_every_baseline_plan_exists_and_uses_the_real_plugin() -> None:
    plugin = {"FFA": "FreeFormArrivalsThreadGroup", "TSTCTG": "VariableThroughputTimer"}
    for s in SCHEMES:
        if s.kind == "baseline":
            assert plugin[s.name] in s.plan_path.read_text()


@pytest.mark.parametrize(
    ("values", "mean", "sd", "n"),
    [
        ([1.0, 3.0], 2.0, 2**0.5, 2),
        ([5.0], 5.0, None, 1),
        ([None, "x", 4.0], 4.0, None, 1),
        ([], None, None, 0),
    ],
)
def test_mean_sd_uses_the_sample_sd_and_skips_missing(
    values: list[object], mean: float | None, sd: float | None, n: int
) -> None:
    s = mean_sd(values)  # type: ignore[arg-type]
    assert (s.mean, s.n) == (mean, n)
    assert s.sd == (None if sd is None else pytest.approx(sd))


@pytest.mark.parametrize(
    ("ours", "base", "expected"), [(5.0, 100.0, 0.95), (None, 1.0, None), (1.0, 0.0, None)]
)
def test_reduction_is_relative_to_the_baseline(
    ours: float | None, base: float | None, expected: float | None
) -> None:
    assert reduction(ours, base) == (None if expected is None else pytest.approx(expected))


def record(scheme: str, rep: int, p95_ms: int) -> RunRecord:
    n = 30 * 20
    batch = SampleBatch.of(
        [1_000_000 + i * 50 for i in range(n)], [p95_ms] * n, [True] * n, ["r"] * n
    )
    m, points = run_metrics(batch, SPEC, OfferedSchedule.constant(20.0), 30.0, 15.0)
    return RunRecord(
        scheme=scheme,
        rep=rep,
        seed=rep,
        run_dir=Path(f"/runs/{scheme}-{rep}"),
        metrics=m,
        points=points,
        lambda_star_analytic=144.4,
        jmeter_cpu_s=3.0,
        target_cpu_s=1.0,
        sidecar_cpu_s=None,
        wall_s=30.0,
        load_start=1.0,
        load_end=2.0,
        covered=True,
        actions={"INCREASE": 3, "HOLD": 2, "DECREASE": 1} if scheme != "FFA" else {},
    )


def test_run_row_relates_throughput_to_the_measured_lambda_star() -> None:
    row = run_row(record("gradient", 1, 100), lambda_star=40.0)
    # 20/s for 30 s; the last sample (start 29.95 s + 100 ms) completes after the run
    assert row["ok_rps"] == pytest.approx(599 / 30)
    assert row["efficiency"] == pytest.approx(599 / 30 / 40.0)
    assert row["lambda_star_analytic"] == 144.4
    assert row["jmeter_cpu_cores"] == pytest.approx(0.1)
    assert (row["increase"], row["hold"], row["decrease"]) == (3, 2, 1)


def test_runs_csv_has_every_column_in_order(tmp_path: Path) -> None:
    rows = [run_row(record("FFA", 1, 900), 140.0), run_row(record("gradient", 1, 100), None)]
    write_runs_csv(tmp_path / "runs.csv", rows)
    with (tmp_path / "runs.csv").open() as fh:
        read = list(csv.DictReader(fh))
    assert list(read[0]) == list(CSV_COLUMNS)
    assert read[1]["efficiency"] == ""  # no lambda*: no efficiency
    assert read[0]["violation_share_p95"] == "1"


def report(tmp_path: Path, **cfg: object) -> markdown.Report:
    rows = [
        run_row(record(s, r, p), 140.0)
        for s, p in (("FFA", 900), ("threezone", 100))
        for r in (1, 2)
    ]
    config = EvalConfig(out_dir=tmp_path, schemes=parse_schemes(["FFA,threezone"]), **cfg)  # type: ignore[arg-type]
    return markdown.Report(
        cfg=config,
        sweep=[
            SweepPoint(140.0, 138.0, 230.0, 0.0, 900),
            SweepPoint(160.0, 150.0, 600.0, 0.0, 900),
        ],
        lambda_star=140.0,
        lambda_star_bounded=True,
        lambda_star_analytic=144.4,
        rows=rows,
        agg=aggregate(rows, ["FFA", "threezone"]),
        figures={"overview": "evaluation/overview.png", "FFA": "evaluation/FFA.png"},
        csv_path="evaluation/runs.csv",
        machine=["a test machine"],
        started="t1",
        finished="t2",
    )


@pytest.mark.parametrize(
    ("cfg", "label"),
    [
        ({"quick": True}, "QUICK smoke run"),
        ({"repetitions": 2, "duration_s": 180.0}, "REDUCED evaluation"),
    ],
)
def test_report_says_what_kind_of_run_it_is(
    tmp_path: Path, cfg: dict[str, object], label: str
) -> None:
    assert f"**{label}" in markdown.render(report(tmp_path, **cfg))


def test_report_has_the_papers_table_shape_and_the_papers_numbers(tmp_path: Path) -> None:
    text = markdown.render(report(tmp_path))
    assert (
        "| FFA | 900 ± 0 | 900 ± 0 | 900 ± 0 | 100.0 ± 0.0 % | 0.00 ± 0.00 % | 19.4 ± 0.0 |" in text
    )
    assert "| LoadGuard threezone |" in text
    assert "| FFA successful throughput | 741.20 req/s |" in text
    assert "| p95 reduction vs FFA | 94.70 % | 88.89 % |" in text
    assert "![FFA](evaluation/FFA.png)" in text


def test_report_keeps_the_hand_written_notes(tmp_path: Path) -> None:
    previous = "old\n<!-- notes -->\n## Discussion\n\nHand-written.\n<!-- /notes -->\n"
    text = markdown.render(report(tmp_path), previous)
    assert text.count("Hand-written.") == 1
    assert text.rstrip().endswith("<!-- /notes -->")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schemes", "bogus"], "unknown scheme 'bogus'"),
        (["--duration", "5s"], "--duration: at least 20s"),
        (["--repetitions", "0"], "--repetitions: must be >= 1"),
        (["--sweep-rates", "1,x"], "--sweep-rates"),
    ],
)
def test_bad_options_are_one_line_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["evaluate", "--out", str(tmp_path), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_runs_csv_and_windows_csv_read_back_for_render_only(tmp_path: Path) -> None:
    rec = record("gradient", 2, 100)
    write_runs_csv(tmp_path / "runs.csv", [run_row(rec, 140.0)])
    (row,) = read_runs_csv(tmp_path / "runs.csv")
    assert (row["scheme"], row["rep"], row["samples"]) == ("gradient", 2, rec.metrics.samples)
    assert row["ok_rps"] == pytest.approx(rec.metrics.ok_rps, rel=1e-5)
    write_points(tmp_path / "windows.csv", rec.points)
    again = read_points(tmp_path / "windows.csv")
    assert [(p.t_s, p.count, p.tumbling, p.zone) for p in again] == [
        (p.t_s, p.count, p.tumbling, p.zone) for p in rec.points
    ]


def test_a_shared_target_runs_the_floods_last_with_their_own_seeds(tmp_path: Path) -> None:
    schemes = parse_schemes(["FFA,TSTCTG,tally,aimd"])
    shared = EvalConfig(out_dir=tmp_path, schemes=schemes, share_target=True)
    assert [(i, s.name) for i, s in run_order(shared)] == [
        (2, "tally"), (3, "aimd"), (0, "FFA"), (1, "TSTCTG"),
    ]  # fmt: skip


def test_fresh_targets_keep_the_canonical_order(tmp_path: Path) -> None:
    schemes = parse_schemes(["FFA,TSTCTG,tally"])
    fresh = EvalConfig(out_dir=tmp_path, schemes=schemes)
    assert [s.name for _i, s in run_order(fresh)] == ["FFA", "TSTCTG", "tally"]


def test_a_run_of_every_scheme_at_full_length_is_called_full(tmp_path: Path) -> None:
    """The full shape is EvalConfig's defaults and every scheme (5), not a copied count."""
    rows = [run_row(record("FFA", 1, 900), 140.0)]
    full = EvalConfig(out_dir=tmp_path)
    r = replace(
        report(tmp_path), cfg=full, rows=rows, agg=aggregate(rows, [s.name for s in SCHEMES])
    )
    text = markdown.render(r)
    assert "**FULL evaluation**: 5 schemes × 5 repetition(s) × 180 s runs" in text
    assert "Full evaluation (" not in text  # no command for a fuller run


def test_the_report_names_the_plugin_versions_the_installer_provisions(tmp_path: Path) -> None:
    versions = {p.artifact: p.version for p in PLUGINS}
    text = markdown.render(report(tmp_path))
    assert f"(jmeter-plugins casutg {versions['jmeter-plugins-casutg']})" in text
    assert f"*Throughput Shaping Timer* (tst {versions['jmeter-plugins-tst']})" in text
    assert "`${__tstFeedback(tst800,1,1000,2)}`" in text and "$" not in text.replace("${__", "")


def test_the_full_evaluations_duration_comes_from_this_evaluations_wall_time(
    tmp_path: Path,
) -> None:
    """Runs of 20 s that took 80 s each: 60 s of overhead per run, so a full evaluation
    (5 x 5 runs of 180 s and a 6-point sweep) takes 31 x 240 s = 2.1 h."""
    base = report(tmp_path, quick=True, duration_s=20.0)
    rows = [{**row, "wall_s": 80.0} for row in base.rows]
    text = markdown.render(replace(base, rows=rows))
    assert "Full evaluation (5 schemes × 5 repetitions × 180 s, ~2.1 h on this machine)" in text
    without = markdown.render(replace(base, rows=[{**row, "wall_s": None} for row in rows]))
    assert "Full evaluation (5 schemes × 5 repetitions × 180 s):" in without


def test_a_teastore_report_counts_the_browse_plans_samplers(tmp_path: Path) -> None:
    text = markdown.render(report(tmp_path, target_kind="teastore"))
    n = markdown.browse_samplers()
    assert n == 8
    assert f"(TeaStore's browse profile, {n} samplers;" in text
    assert f"{800 / n:g} arrivals/s (each runs the {n} samplers once: 800 samples/s)" in text
