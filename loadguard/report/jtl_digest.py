"""One streaming pass over a JTL: per-second throughput and exact per-label latency.

A 7.2M-row JTL (2,000 samples/s for an hour) is read by the live loop's own reader,
``loadguard.jtl.follow.JtlFollower`` (``row_chunks``), ``chunk_bytes`` at a time, so
memory is bounded by the chunk, not the file; the same reader, with JMeter's quirks
(quoted fields, raw newlines inside them, header variants, headerless and non-comma
CSVs with a ``JtlFormat``, XML with characters XML 1.0 forbids), for every JTL.
Each chunk is folded into:

* per-second counts keyed on the completion second ``floor((timeStamp + elapsed) / 1000)``
  (the key the sliding window uses): ``count`` and ``ok`` per second, so the throughput
  curve is exact at 1 s resolution;
* one ``LatencyHistogram`` per label plus one overall: JMeter's elapsed is whole
  milliseconds, so counting per ms keeps every order statistic, and p95/p99 come out
  *exactly* as ``numpy.quantile`` (linear) over all samples would give them.
  Memory: 512 KiB per label (65,536 int64 bins), independent of the run length.

Malformed rows are counted (``malformed_rows``) and left out, by the reader's rules: a
``timeStamp`` or ``elapsed`` that is not a number, a ``success`` that is not a boolean, a
record with more or fewer fields than the header (a row cut short, or shifted by an
unquoted delimiter).

Each request counts once, as in the sidecar and ``loadguard metrics``: Transaction
Controller rows and sub-results (``<parent>-<n>``) are left out and counted in
``skipped_rows``, by the live loop's own rules (``loadguard.jtl.selection.RowSelector``).
With ``transactions`` the Transaction Controller rows count as labels of their own, kept
out of the overall figures and the per-second counts (their children are there already).
Labels stay codes (never one Python string per row), and a chunk goes through the
selector row by row only when ``RowSelector.all_counted`` cannot tell from its distinct
labels and messages that every row counts: a plain JTL never does.

Labels: the first ``MAX_LABELS`` distinct labels get their own exact row; samples of any
further label are folded into ``OTHER_LABELS`` (still exact, as one group), so a plan
that puts URLs with ids in its labels cannot make memory grow without bound.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from loadguard.errors import JtlError, ReportError
from loadguard.histogram import LatencyHistogram
from loadguard.jtl.columns import JtlFormat, header_columns
from loadguard.jtl.csv_stream import CHUNK_BYTES
from loadguard.jtl.follow import JtlFollower
from loadguard.report.decision_frame import read_header

JTL_COLUMNS: tuple[str, ...] = ("timeStamp", "elapsed", "label", "success")
#: Labels with a row of their own (512 KiB each: at most 128 MiB of histograms).
MAX_LABELS = 256
OTHER_LABELS = "(other labels)"
#: Samples kept (12 bytes each) for the per-label p95 over time: at most about 50 MiB.
MAX_SERIES_SAMPLES = 4_000_000


@dataclass
class LabelDigest:
    """Every sample of one label: count, failures and the exact latency histogram."""

    count: int = 0
    errors: int = 0
    hist: LatencyHistogram = field(default_factory=LatencyHistogram)
    max_ms: int | None = None

    def add(self, elapsed_ms: np.ndarray, ok: np.ndarray) -> None:
        if len(elapsed_ms) == 0:
            return
        self.count += len(elapsed_ms)
        self.errors += int(len(ok) - np.count_nonzero(ok))
        self.hist.add(elapsed_ms)
        top = int(elapsed_ms.max())
        self.max_ms = top if self.max_ms is None else max(self.max_ms, top)

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.count if self.count else None


@dataclass
class JtlDigest:
    path: Path
    rows: int = 0
    malformed_rows: int = 0
    overall: LabelDigest = field(default_factory=LabelDigest)
    labels: dict[str, LabelDigest] = field(default_factory=dict)
    #: completion second (epoch s) -> [count, ok]; indexed by second, sorted.
    per_second: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame({"count": [], "ok": []}, dtype=np.int64)
    )
    first_start_ms: int | None = None
    last_end_ms: int | None = None
    #: "csv" (with a header line, read by pandas), or the follower's "csv" / "xml".
    source: str = "csv"
    #: Transaction Controller rows and sub-results left out.
    skipped_rows: int = 0
    #: Characters XML 1.0 forbids, replaced so that their samples count (XML only).
    illegal_xml_chars: int = 0
    #: Per label, its samples' (completion ms, elapsed ms) in chunks, for the per-label
    #: p95 over time; dropped (``series_dropped``) past ``MAX_SERIES_SAMPLES`` in all.
    series: dict[str, list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)
    series_samples: int = 0
    series_dropped: bool = False

    def keep_series(self, label: str, end_ms: np.ndarray, elapsed_ms: np.ndarray) -> None:
        if self.series_dropped:
            return
        self.series_samples += len(end_ms)
        if self.series_samples > MAX_SERIES_SAMPLES:
            self.series_dropped = True
            self.series = {}
            return
        self.series.setdefault(label, []).append(
            (end_ms.astype(np.int64), elapsed_ms.astype(np.int32))
        )

    def p95_series(self, label: str, bucket_ms: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact p95 of ``label``'s samples completing in each ``bucket_ms`` bucket:
        (bucket end, epoch ms; p95 ms), buckets without samples left out."""
        parts = self.series.get(label)
        if not parts:
            return np.empty(0), np.empty(0)
        end = np.concatenate([p[0] for p in parts])
        elapsed = np.concatenate([p[1] for p in parts]).astype(np.float64)
        frame = pd.DataFrame({"b": end // bucket_ms, "e": elapsed})
        q = frame.groupby("b")["e"].quantile(0.95).sort_index()
        return (q.index.to_numpy(np.float64) + 1) * bucket_ms, q.to_numpy(np.float64)


@dataclass
class _Seconds:
    """Per-second [count, ok] partial sums, folded together as they pile up."""

    parts: list[pd.DataFrame] = field(default_factory=list)

    def add(self, end_ms: np.ndarray, ok: np.ndarray) -> None:
        self.parts.append(
            pd.DataFrame({"sec": end_ms // 1000, "count": 1, "ok": ok.astype(np.int64)})
            .groupby("sec", sort=False)
            .sum()
        )
        if len(self.parts) >= 16:  # keep the list short: fold the partial sums together
            self.parts = [pd.concat(self.parts).groupby(level=0).sum()]

    def frame(self) -> pd.DataFrame | None:
        return pd.concat(self.parts).groupby(level=0).sum().sort_index() if self.parts else None


def _fold(
    digest: JtlDigest,
    seconds: _Seconds,
    start_ms: np.ndarray,
    elapsed_ms: np.ndarray,
    ok: np.ndarray,
    labels: tuple[np.ndarray, np.ndarray],
    max_labels: int,
    not_overall: Collection[str] = (),
) -> None:
    """Add well-formed samples (int64 start/elapsed, bool ok) to the digest.

    ``labels`` is (codes, names): sample i has label ``names[codes[i]]``. Labels in
    ``not_overall`` (transactions counted as labels) get their own rows but stay out of
    the overall figures and the per-second counts."""
    if len(start_ms) == 0:
        return
    elapsed_ms = np.clip(elapsed_ms, 0, None)
    end = start_ms + elapsed_ms
    lo, hi = int(start_ms.min()), int(end.max())
    digest.first_start_ms = lo if digest.first_start_ms is None else min(digest.first_start_ms, lo)
    digest.last_end_ms = hi if digest.last_end_ms is None else max(digest.last_end_ms, hi)
    codes, names = labels
    _fold_labels(digest, codes, names, elapsed_ms, ok, max_labels, end)
    out = [k for k, name in enumerate(names) if str(name) in not_overall] if not_overall else []
    if out:
        keep = ~np.isin(codes, np.asarray(out, np.int64))
        end, elapsed_ms, ok = end[keep], elapsed_ms[keep], ok[keep]
        if len(end) == 0:
            return
    digest.overall.add(elapsed_ms, ok)
    seconds.add(end, ok)


def _check_headed_csv(path: Path) -> None:
    """A comma-separated JTL header must name the columns a report needs: the file is
    a CSV JTL, but one that cannot be reported on."""
    header = read_header(path)
    if header_columns(header) is None:
        return
    missing = [c for c in JTL_COLUMNS if c not in header]
    if missing:
        raise ReportError(
            f"{path}: not a CSV JTL with the columns a report needs (lacks "
            f"{', '.join(missing)}); turn on those jmeter.save.saveservice flags"
        )


def digest_jtl(
    path: Path,
    chunk_bytes: int = CHUNK_BYTES,
    max_labels: int = MAX_LABELS,
    fmt: JtlFormat | None = None,
    *,
    transactions: bool = False,
) -> JtlDigest:
    """Fold the whole JTL at ``path`` into a ``JtlDigest`` in one bounded-memory pass.

    ``fmt`` describes a CSV written without a header line, or with another delimiter or
    a date timestamp format; a comma-separated CSV with a header, or XML, needs none.
    ``transactions``: Transaction Controller rows count as labels (``--transactions``).
    ``chunk_bytes``: how much of the file one read takes (memory is bounded by it).
    """
    digest = JtlDigest(path=path)
    seconds = _Seconds()
    _check_headed_csv(path)
    try:
        with JtlFollower(
            path, fmt=fmt, transactions=transactions, chunk_bytes=chunk_bytes
        ) as follower:
            _digest_rows(digest, seconds, follower, max_labels)
            status = follower.status()
    except (JtlError, OSError) as exc:
        raise ReportError(f"{path}: cannot read the JTL: {exc}") from exc
    digest.source = status.format or "csv"
    digest.rows = status.records - (1 if status.has_header else 0)
    digest.malformed_rows = status.malformed_rows
    digest.skipped_rows = status.skipped_transactions + status.skipped_subresults
    digest.illegal_xml_chars = status.illegal_xml_chars
    if (frame := seconds.frame()) is not None:
        digest.per_second = frame
    if digest.overall.count == 0:
        if digest.malformed_rows and digest.source == "csv":
            raise ReportError(
                f"{path}: the JTL holds no usable sample "
                f"({digest.malformed_rows:,} malformed rows)",
                setting="jtl_format",
            )
        raise ReportError(f"{path}: the JTL holds no usable sample")
    return digest


def _digest_rows(
    digest: JtlDigest, seconds: _Seconds, follower: JtlFollower, max_labels: int
) -> None:
    """Every chunk of the follower's rows, folded: labels stay codes while the row
    selection can tell from a chunk's distinct labels that every row counts (a plain JTL
    always), else the chunk goes through the selection row by row."""
    selector = follower.selector
    not_overall = selector.transaction_labels if selector.transactions else set()
    for rows in follower.row_chunks():
        if selector.all_counted(rows):
            labels = (rows.label_code, rows.label_names)
            _fold(digest, seconds, rows.start_ms, rows.elapsed_ms, rows.success, labels, max_labels)
            continue
        batch = selector.select(rows)
        _fold(
            digest, seconds, batch.start_ms, batch.elapsed_ms, batch.success,
            pd.factorize(batch.label, use_na_sentinel=False), max_labels, not_overall,
        )  # fmt: skip


def _fold_labels(
    digest: JtlDigest,
    codes: np.ndarray,
    uniques: np.ndarray,
    elapsed: np.ndarray,
    ok: np.ndarray,
    max_labels: int,
    end: np.ndarray | None = None,
) -> None:
    """Add samples to their labels' digests (and, with ``end``, their series);
    ``uniques[codes[i]]`` is sample i's label.

    Labels without samples here are skipped; new labels are taken in order of their first
    sample, so the first ``max_labels`` of the file get rows of their own."""
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    ranks: list[int] | range = range(len(uniques))
    if len(digest.labels) + len(uniques) > max_labels:
        first = np.full(len(uniques), len(codes), np.int64)
        first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # the last write wins
        ranks = np.argsort(first, kind="stable").tolist()
    for k in ranks:
        if bounds[k] == bounds[k + 1]:
            continue
        idx = order[bounds[k] : bounds[k + 1]]
        key = str(uniques[k])
        if key not in digest.labels and len(digest.labels) >= max_labels:
            key = OTHER_LABELS
        digest.labels.setdefault(key, LabelDigest()).add(elapsed[idx], ok[idx])
        if end is not None:
            digest.keep_series(key, end[idx], elapsed[idx])
