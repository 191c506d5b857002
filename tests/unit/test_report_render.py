"""render_report / render_compare end to end on files written by the real writers."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.decisions import DecisionLogWriter
from loadguard.errors import ReportError
from loadguard.report import render_compare, render_report, resolve_run
from loadguard.report.jtl_digest import digest_jtl
from loadguard.report.run_inputs import DASHBOARD_INDEX
from loadguard.report.tables import DASH, HUMAN_ROWS, SHOWN_ELSEWHERE, fmt_number
from loadguard.summary import RunAccumulator, SummaryBuilder, write_json_atomic
from tests.unit.test_decision_log import make_row

JTL_HEADER = (
    "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,"
    "failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n"
)
SLO = {"p95_ms": 250.0, "p99_ms": 400.0, "error_rate": 0.01}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHARTS = ("knee", "rate", "latency", "errors", "throughput")


def write_jtl(path: Path, rows: Sequence[tuple[int, int, str, bool]]) -> Path:
    """A JMeter 5.6.3 default CSV JTL (17 columns, header) of (start, elapsed, label, ok)."""
    with path.open("w", newline="") as fh:
        fh.write(JTL_HEADER)
        out = csv.writer(fh, lineterminator="\n")
        for start, elapsed, label, ok in rows:
            code, msg = ("200", "OK") if ok else ("500", 'Server, "busy"')
            out.writerow(
                [start, elapsed, label, code, msg, "TG 1-1", "text", str(ok).lower(), "",
                 12, 100, 5, 5, "http://127.0.0.1:1/x", elapsed, 0, 0]
            )  # fmt: skip
    return path


def make_run(run_dir: Path, ticks: int = 30, seed: int = 3) -> Path:
    """decisions.csv (real writer), results.jtl and summary.json (real builder)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    t0 = make_row(1).epoch_ms - 2000
    rows = []
    for i in range(ticks * 40):
        rows.append((t0 + i * 50, int(rng.integers(5, 300)), ("/a", "/b")[i % 2], i % 97 != 0))
    write_jtl(run_dir / "results.jtl", rows)
    builder = SummaryBuilder(window_ms=4000, slo=SLO)
    with DecisionLogWriter(run_dir / "decisions.csv") as log:
        rate = 10.0
        for tick in range(1, ticks + 1):
            zone = ("SAFE", "SAFE", "NEAR", "BREACH", "NO_DATA")[tick % 5]
            action = {"SAFE": "INCREASE", "NEAR": "HOLD", "BREACH": "DECREASE"}.get(zone, "HOLD")
            new = rate * {"INCREASE": 1.2, "HOLD": 1.0, "DECREASE": 0.7}[action]
            row = make_row(
                tick, zone=zone, action=action, old_rate=rate, new_rate=new,
                p95_ms=100.0 + 30 * (tick % 7), p99_ms=200.0 + 40 * (tick % 7),
                error_rate=0.002 * (tick % 4), slo=SLO, rps=rate * 0.95, ok_rps=rate * 0.9,
            )  # fmt: skip
            log.append(row)
            builder.add(row)
            rate = new
    write_json_atomic(
        run_dir / "summary.json", builder.build(RunAccumulator(), "jmeter_exited").to_json()
    )
    return run_dir


def external_refs(html: str) -> list[str]:
    """Every src/href/url() that would make a browser fetch something off the page."""
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']""", html, re.I)
    refs += re.findall(r"url\(([^)]*)\)", html, re.I)
    refs = [r for r in refs if not r.startswith(("#", "data:"))]
    # The one link a report carries: to JMeter's dashboard in its own run folder, a
    # relative <a href> a reader may follow, never fetched on load (the net-log test of
    # tests/integration/test_report_chromium.py checks that nothing is).
    return [r for r in refs if r != DASHBOARD_INDEX]


def test_report_holds_its_charts_summary_and_label_tables(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    out = render_report(run)
    assert out == run / "report.html"
    html = out.read_text()
    assert html.count("<svg") == 6 and 'id="chart-labels"' in html  # both labels breach
    for name in CHARTS:
        assert f'id="chart-{name}"' in html
        assert (run / f"report_{name}.png").read_bytes().startswith(PNG_MAGIC)
    assert 'id="summary-table"' in html and 'id="labels"' in html
    assert "<th>/a</th>" not in html and "<td>/a</td>" in html and "<td>/b</td>" in html
    assert "<script" not in html.lower()
    assert external_refs(html) == []


def test_report_names_no_external_url_at_all(tmp_path: Path) -> None:
    html = render_report(make_run(tmp_path / "run")).read_text()
    hosts = {h for h in re.findall(r"https?://([^/\"'\s<]+)", html) if h != "www.w3.org"}
    # www.w3.org appears only as the XML namespace names of inline SVG, never fetched.
    assert hosts == {"127.0.0.1:1"} or hosts == set()


def test_report_without_jtl_or_summary_derives_a_summary(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    out = render_report(resolve_run(decisions=run / "decisions.csv"), tmp_path / "only.html")
    html = out.read_text()
    assert "derived from the decision log" in html
    assert 'id="labels"' not in html
    assert html.count("<svg") == 5


def test_report_is_deterministic(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    first = render_report(run, tmp_path / "a.html").read_text()
    second = render_report(run, tmp_path / "b.html").read_text()
    assert first == second


def test_user_strings_are_escaped(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", ticks=6)
    write_jtl(run / "results.jtl", [(1_796_000_000_000, 10, "<script>x</script>", True)])
    html = render_report(run).read_text()
    assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("decisions.csv", "not a LoadGuard decision log"),
        ("results.jtl", "no usable sample"),
        ("summary.json", "not JSON"),
    ],
)
def test_bad_input_writes_nothing_and_keeps_the_old_report(
    tmp_path: Path, bad: str, message: str
) -> None:
    run = make_run(tmp_path / "run")
    (run / "report.html").write_text("previous")
    (run / bad).write_text("a,b,c\n1,2,3\n")
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(ReportError, match=message):
        render_report(run)
    assert (run / "report.html").read_text() == "previous"
    assert sorted(p.name for p in run.iterdir()) == before


def test_unwritable_target_leaves_no_temporary(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    target = tmp_path / "is_a_dir.html"
    target.mkdir()
    with pytest.raises(ReportError, match="cannot write report"):
        render_report(run, target)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["report", "{tmp}/missing"], "no such run directory"),
        (["report"], "give a run directory or --decisions"),
        (["report", "--decisions", "{tmp}/nope.csv"], "decision log {tmp}/nope.csv: no such file"),
        (["report", "{run}", "--jtl", "{run}/decisions.csv"], "no usable sample"),
        (["report", "{run}", "--jtl-columns", "timeStamp,label"], "JTL columns lack"),
        (["report", "--decisions", "{run}/results.jtl"], "not a LoadGuard decision log"),
        (["compare", "{run}", "{tmp}/missing"], "no such run directory"),
        (["compare", "{run}", "--name", "a", "--name", "b"], "2 names given for 1 runs"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    run = make_run(tmp_path / "run", ticks=6)
    fill = {"tmp": str(tmp_path), "run": str(run)}
    result = CliRunner().invoke(cli, [a.format(**fill) for a in args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert message.format(**fill) in lines[0]
    assert not (run / "report.html").exists()


def test_cli_report_writes_beside_the_run(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", ticks=6)
    result = CliRunner().invoke(cli, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"report: {run / 'report.html'}"
    assert (run / "report_latency.png").exists()


def test_cli_report_reads_a_headerless_semicolon_jtl_with_its_properties(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", ticks=6)
    # Rows without quoted fields (a comma inside quotes would become a delimiter).
    rows = [r for r in (run / "results.jtl").read_text().splitlines()[1:] if '"' not in r]
    bare = tmp_path / "bare.jtl"
    bare.write_text("".join(r.replace(",", ";") + "\n" for r in rows))
    props = tmp_path / "user.properties"
    props.write_text(
        "jmeter.save.saveservice.print_field_names=false\n"
        "jmeter.save.saveservice.default_delimiter=;\n"
    )
    args = ["report", str(run), "--jtl", str(bare), "--html", str(tmp_path / "r.html")]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2 and "give the JTL's format" in refused.output
    result = CliRunner().invoke(cli, [*args, "--jmeter-properties", str(props)])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r.html").read_text()
    assert len(rows) > 10 and f"(CSV): {len(rows):,} rows, 0 malformed" in html


def test_compare_overlays_runs_and_tables_their_summaries(tmp_path: Path) -> None:
    a = make_run(tmp_path / "aimd", ticks=20, seed=1)
    b = make_run(tmp_path / "three-zone", ticks=30, seed=2)
    out = render_compare([a, b], tmp_path / "cmp.html")
    html = out.read_text()
    assert html.count("<svg") == 3
    assert 'id="chart-knee"' in html
    assert "<th>aimd</th>" in html and "<th>three-zone</th>" in html
    verdicts = re.search(r"<tr><th>Verdict</th>(.*?)</tr>", html)
    assert verdicts is not None and verdicts.group(1).count("<td>") == 2
    for key in ("knee", "rate", "p95"):
        assert (tmp_path / f"cmp_{key}.png").read_bytes().startswith(PNG_MAGIC)
    assert external_refs(html) == []


def test_compare_tables_each_label_per_run_exactly(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", ticks=20, seed=1)
    b = make_run(tmp_path / "b", ticks=10, seed=2)
    write_jtl(
        b / "results.jtl", [(1_796_000_000_000 + i, 10 + i, "/only-b", True) for i in range(9)]
    )
    c = make_run(tmp_path / "c", ticks=6)
    (c / "results.jtl").unlink()
    html = render_compare([a, b, c], tmp_path / "cmp.html").read_text()
    table = html.split('id="label-compare"')[1].split("<tbody>")[1].split("</table>")[0]
    cells = dict(re.findall(r"<tr><th>([^<]*)</th>(.*?)</tr>", table))
    assert list(cells) == ["/a", "/b", "/only-b", "(all labels)"]
    df = pd.read_csv(a / "results.jtl")
    one = df[df["label"] == "/a"]["elapsed"]
    p95, p99 = np.quantile(one, 0.95), np.quantile(one, 0.99)
    first = re.findall(r"<td>([^<]*)</td>", cells["/a"])
    assert first[0].startswith(f"{fmt_number(float(p95))} / {fmt_number(float(p99))} ms, ")
    assert first[0].endswith(f"({len(one):,})")
    assert first[1:] == [DASH, DASH]  # b has no /a, c has no JTL
    assert re.findall(r"<td>([^<]*)</td>", cells["/only-b"])[1].endswith("(9)")
    assert "(no JTL)" in html


def test_compare_names_duplicate_dirs_apart(tmp_path: Path) -> None:
    a = make_run(tmp_path / "x" / "run", ticks=6)
    b = make_run(tmp_path / "y" / "run", ticks=6)
    (b / "summary.json").unlink()
    html = render_compare([a, b], tmp_path / "c.html").read_text()
    assert "<th>x/run</th>" in html and "<th>y/run</th>" in html
    assert "(no summary.json)" in html


def test_every_summary_json_field_is_shown_under_a_plain_label(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    summary = json.loads((run / "summary.json").read_text())
    html = render_report(run).read_text()
    table = html.split('id="summary-table"')[1].split("</table>")[0]
    heads = re.findall(r"<th>([^<]*)</th>", table)
    shown = {k for label, keys in HUMAN_ROWS if label in heads for k in keys}
    assert set(summary) - shown <= SHOWN_ELSEWHERE
    assert not re.search(r"\b[a-z0-9]+_[a-z0-9_]+\b", re.sub(r"<[^>]*>", " ", table))


def test_breached_labels_get_their_exact_p95_over_time(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    html = render_report(run).read_text()
    assert 'id="chart-labels"' in html  # /a and /b miss p95 <= 250 ms over the run
    digest = digest_jtl(run / "results.jtl", chunk_bytes=4096)
    df = pd.read_csv(run / "results.jtl")
    one = df[df["label"] == "/a"]
    bucket = (one["timeStamp"] + one["elapsed"]) // 2000
    want = one.groupby(bucket)["elapsed"].quantile(0.95)
    end_ms, p95 = digest.p95_series("/a", 2000)
    assert list(end_ms) == [(b + 1) * 2000.0 for b in want.index]
    assert np.allclose(p95, want.to_numpy())


def test_labels_that_met_the_slo_get_no_per_label_chart(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    rows = [(1_796_000_000_000 + i * 50, 10 + i % 7, ("/a", "/b")[i % 2], True) for i in range(400)]
    write_jtl(run / "results.jtl", rows)
    html = render_report(run).read_text()
    assert 'id="chart-labels"' not in html
    assert "No label breached" in html


def test_the_dashboard_link_is_relative_to_where_the_page_is_written(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    (run / "dashboard").mkdir()
    (run / "dashboard" / "index.html").write_text("<title>Apache JMeter Dashboard</title>")
    beside = render_report(run).read_text()
    assert '<a href="dashboard/index.html">' in beside
    (tmp_path / "elsewhere").mkdir()
    away = render_report(run, tmp_path / "elsewhere" / "r.html").read_text()
    assert '<a href="../run/dashboard/index.html">' in away


def test_without_a_dashboard_the_page_says_how_to_make_one(tmp_path: Path) -> None:
    html = render_report(make_run(tmp_path / "run")).read_text()
    assert "<a href=" not in html
    assert "none in this folder (`loadguard report RUN_DIR --dashboard` makes it)" in html
