"""``render_report``: a run's decision log (+ JTL, + summary.json) -> one HTML page + PNGs.

Order of work: resolve and read every input first (a bad input fails before anything is
written), digest the JTL in one streaming pass, draw the charts, then write the HTML and
the PNGs together through ``atomic.write_all``.

Files written: ``OUT`` and, beside it, ``<stem>_rate.png``, ``<stem>_latency.png``,
``<stem>_errors.png``, ``<stem>_throughput.png``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from loadguard import __version__
from loadguard.headline import failure_cause, headline
from loadguard.jtl.csv_stream import CHUNK_BYTES
from loadguard.report import charts, page, tables
from loadguard.report.atomic import write_all
from loadguard.report.decision_frame import load_decisions
from loadguard.report.jtl_digest import JtlDigest, digest_jtl
from loadguard.report.run_inputs import DASHBOARD_INDEX, RunPaths, load_summary, resolve_run


@dataclass(frozen=True)
class RunData:
    paths: RunPaths
    decisions: pd.DataFrame
    summary: dict[str, object] | None
    jtl: JtlDigest | None

    @property
    def t0_ms(self) -> float:
        first = float(self.decisions["epoch_ms"].iloc[0])
        if self.jtl is not None and self.jtl.first_start_ms is not None:
            return min(first, float(self.jtl.first_start_ms))
        return first

    @property
    def t1_ms(self) -> float:
        last = float(self.decisions["epoch_ms"].iloc[-1])
        if self.jtl is not None and self.jtl.last_end_ms is not None:
            return max(last, float(self.jtl.last_end_ms))
        return last


def load_run(paths: RunPaths, chunk_bytes: int = CHUNK_BYTES) -> RunData:
    decisions = load_decisions(paths.decisions)
    summary = load_summary(paths.summary) if paths.summary else None
    jtl = (
        digest_jtl(paths.jtl, chunk_bytes, fmt=paths.jtl_format, transactions=paths.transactions)
        if paths.jtl
        else None
    )
    return RunData(paths, decisions, summary, jtl)


def _utc(ms: float) -> str:
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def build_charts(run: RunData) -> list[charts.Chart]:
    axis = charts.TimeAxis.for_span(run.t0_ms, run.t1_ms - run.t0_ms)
    frame = run.decisions
    per_second = run.jtl.per_second if run.jtl is not None else None
    with charts.style():
        return [
            charts.knee_chart(frame, axis, charts.KneeMarks.from_summary(run.summary)),
            charts.rate_chart(frame, axis),
            charts.latency_chart(frame, axis),
            charts.error_chart(frame, axis),
            charts.throughput_chart(frame, axis, per_second),
        ]


def report_html(
    run: RunData, drawn: list[tuple[charts.Chart, str]], out: Path | None = None
) -> str:
    frame = run.decisions
    summary = run.summary
    if summary is not None:
        rows = tables.summary_rows(summary)
        heading = "Summary"
        verdict = str(summary.get("verdict", ""))
    else:
        rows = tables.summary_rows(tables.derived_summary(frame, run.jtl))
        heading = "Summary (derived from the decision log; no summary.json given)"
        verdict = ""
    badge = f' <span class="verdict {escape(verdict)}">{escape(verdict)}</span>' if verdict else ""
    sections = [page.headline(verdict, _headline_text(run))]
    summary_block = (f"<section id=\"summary\"><h2>{escape(heading)}{badge}</h2>"
                     + page.key_value_table(rows, "summary-table") + "</section>")  # fmt: skip
    for chart, svg in drawn:
        block = page.figure(chart.name, chart.title, svg, chart.caption)
        if chart.name == "latency":
            block = block.replace("</h2>", "</h2>" + page.zone_legend(), 1)
        sections.append(block)
        if chart.name == "knee":  # the knee right under the headline, then the table
            sections.append(summary_block)
    if run.jtl is not None:
        slo = tables.slo_thresholds(frame)
        label_rows = tables.label_rows(run.jtl, slo)
        sections.append(
            '<section id="per-label"><h2>Per-label SLO results (every JTL sample)</h2>'
            "<p>Worst label first: sorted by the margin of its whole-run figures to the "
            "SLO thresholds.</p>" + page.label_table(label_rows, slo) + "</section>"
        )
        sections.append(_breached_labels_block(run, label_rows, slo))
    p = run.paths
    meta = [
        f"Decision log <code>{escape(str(p.decisions))}</code>: {len(frame):,} ticks, "
        f"{_utc(float(frame['epoch_ms'].iloc[0]))} to {_utc(float(frame['epoch_ms'].iloc[-1]))}",
    ]
    if run.jtl is not None:
        skipped = (
            f", {run.jtl.skipped_rows:,} transaction/sub-result rows left out"
            if run.jtl.skipped_rows
            else ""
        )
        if run.jtl.illegal_xml_chars:
            skipped += (
                f", {run.jtl.illegal_xml_chars:,} characters XML forbids replaced (binary "
                "response data; those samples still count)"
            )
        meta.append(
            f"JTL <code>{escape(str(p.jtl))}</code> ({run.jtl.source.upper()}): "
            f"{run.jtl.rows:,} rows, {run.jtl.malformed_rows:,} malformed rows left out" + skipped
        )
    if p.summary is not None:
        meta.append(f"Summary <code>{escape(str(p.summary))}</code>")
    meta.append(_dashboard_meta(run, out))
    footer = (
        f"LoadGuard {escape(__version__)}. Charts thin long series for drawing only "
        f"(min/max per bucket, at most {charts.MAX_POINTS} points per line); every figure "
        "in the tables is computed from all rows."
    )
    return page.page(f"LoadGuard report: {p.name}", meta, sections, footer)


def _breached_labels_block(run: RunData, rows: list[tables.LabelRow], slo: dict[str, float]) -> str:
    """p95 over time of the labels that breached, or one line saying why there is none."""
    assert run.jtl is not None
    names = tables.breached_labels(run.decisions, rows)
    if not names:
        return '<p id="labels-breached">No label breached: no per-label p95 chart.</p>'
    if run.jtl.series_dropped:
        return (
            '<p id="labels-breached">Labels that breached: '
            + escape(", ".join(names))
            + f". Too many samples ({run.jtl.series_samples:,}+) to keep per-label series: "
            "no per-label p95 chart.</p>"
        )
    axis = charts.TimeAxis.for_span(run.t0_ms, run.t1_ms - run.t0_ms)
    bucket = charts.bucket_seconds(run.t1_ms - run.t0_ms)
    series = [(n, *run.jtl.p95_series(n, bucket * 1000)) for n in names]
    with charts.style():
        chart = charts.label_p95_chart(series, axis, slo.get("p95_ms"), bucket)
        svg = charts.svg_text(chart.figure)
    return page.figure(chart.name, chart.title, svg, chart.caption)


def _headline_text(run: RunData) -> str:
    """The one headline builder's sentence (``loadguard.headline``); without
    summary.json, a line saying so."""
    if run.summary is None:
        return "No summary.json: the figures below are derived from the decision log."
    return headline(run.summary, failure_cause(_records(run.decisions))).text


def _records(frame: pd.DataFrame) -> list[dict[str, object]]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def _dashboard_meta(run: RunData, out: Path | None) -> str:
    """A link to JMeter's own dashboard when the run folder has one (relative to the page
    ``out``, default the run folder's report.html), else why not."""
    folder = run.paths.run_dir or run.paths.decisions.parent
    index = folder / DASHBOARD_INDEX
    if index.is_file():
        page_dir = (out or run.paths.default_out()).absolute().parent
        href = Path(os.path.relpath(index.absolute(), page_dir)).as_posix()
        return (
            f'JMeter\'s own HTML dashboard: <a href="{escape(quote(href))}">{escape(href)}</a> '
            "(made by JMeter's report generator from the JTL)"
        )
    info = run.summary.get("dashboard") if run.summary else None
    why = info.get("reason") if isinstance(info, dict) else None
    return "JMeter's own HTML dashboard: none in this folder" + (
        f" ({escape(str(why))})" if why else " (`loadguard report RUN_DIR --dashboard` makes it)"
    )


def render_report(
    source: Path | RunPaths, out: Path | None = None, *, chunk_bytes: int = CHUNK_BYTES
) -> Path:
    """Write the report of a run; returns the HTML path.

    ``source`` is a run directory, a decision log path, or a ``RunPaths``. ``out``
    defaults to ``report.html`` in the run directory (or beside the decision log).
    """
    paths = source if isinstance(source, RunPaths) else resolve_run(source)
    run = load_run(paths, chunk_bytes)
    target = out if out is not None else paths.default_out()
    built = build_charts(run)
    drawn = [(c, charts.svg_text(c.figure)) for c in built]
    files: dict[Path, bytes] = {target: report_html(run, drawn, target).encode("utf-8")}
    for chart in built:
        files[target.with_name(f"{target.stem}_{chart.name}.png")] = charts.png_bytes(chart.figure)
    write_all(files)
    return target
