"""One streaming pass over a JTL: per-second throughput and exact per-label latency.

A 7.2M-row JTL (2,000 samples/s for an hour) is read in chunks of ``chunk_rows`` with
only the four columns the report needs, so memory is bounded by the chunk, not the file.
Each chunk is folded into:

* per-second counts keyed on the completion second ``floor((timeStamp + elapsed) / 1000)``
  (the key the sliding window uses): ``count`` and ``ok`` per second, so the throughput
  curve is exact at 1 s resolution;
* one ``LatencyHistogram`` per label plus one overall: JMeter's elapsed is whole
  milliseconds, so counting per ms keeps every order statistic, and p95/p99 come out
  *exactly* as ``numpy.quantile`` (linear) over all samples would give them.
  Memory: 512 KiB per label (65,536 int64 bins), independent of the run length.

Malformed rows are counted and left out: a ``timeStamp`` or ``elapsed`` that is not a
number, or a ``success`` that is neither ``true`` nor ``false`` (a row cut short, or
shifted by an unquoted delimiter). Fields past the header's last column are ignored by
the parser (``usecols``): such a row counts if its leading columns are sound.

Each request counts once, as in the sidecar and ``loadguard metrics``: Transaction
Controller rows and sub-results (``<parent>-<n>``) are left out and counted in
``skipped_rows``, by the live loop's own rules (``loadguard.jtl.selection.RowSelector``).
With ``transactions`` the Transaction Controller rows count as labels of their own, kept
out of the overall figures and the per-second counts (their children are there already).
On the fast path ``responseMessage`` and ``threadName`` are read too (as categories), and
a chunk goes through the selector only when ``RowSelector.all_counted`` cannot tell from
its distinct labels and messages that every row counts: a plain JTL never does.

Other JTLs (XML, a CSV without a header line, a CSV with another delimiter, which its
header line tells) are read by the live loop's ``JtlFollower`` with the given
``JtlFormat`` and folded the same way.

Labels: the first ``MAX_LABELS`` distinct labels get their own exact row; samples of any
further label are folded into ``OTHER_LABELS`` (still exact, as one group), so a plan
that puts URLs with ids in its labels cannot make memory grow without bound.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from loadguard.errors import JtlError, ReportError
from loadguard.histogram import LatencyHistogram
from loadguard.jtl.columns import JtlFormat, header_columns
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.raw_rows import TRANSACTION_PREFIX, RawRows
from loadguard.jtl.selection import RowSelector
from loadguard.report.decision_frame import read_header

JTL_COLUMNS: tuple[str, ...] = ("timeStamp", "elapsed", "label", "success")
#: Read when the header has them: what row selection needs (transactions, sub-results).
SELECTION_COLUMNS: tuple[str, ...] = ("responseMessage", "threadName")
CHUNK_ROWS = 250_000
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


def _headed_csv_columns(path: Path) -> list[str] | None:
    """The columns of a comma-separated JTL header naming ours, else None.

    A header lacking one of them is an error here: the file is a CSV JTL, but one that
    cannot be reported on."""
    header = read_header(path)
    if header_columns(header) is None:
        return None
    missing = [c for c in JTL_COLUMNS if c not in header]
    if missing:
        raise ReportError(
            f"{path}: not a CSV JTL with the columns a report needs (lacks "
            f"{', '.join(missing)}); turn on those jmeter.save.saveservice flags"
        )
    return list(header)


def _chunks(path: Path, chunk_rows: int, columns: list[str]) -> Iterator[pd.DataFrame]:
    extra = [c for c in SELECTION_COLUMNS if c in columns]
    try:
        yield from pd.read_csv(
            path,
            usecols=[*JTL_COLUMNS, *extra],
            # timeStamp, elapsed and success are left to the C parser's own inference
            # (int64 / bool: the fast path); a chunk with a malformed value comes back
            # as strings and takes the slow path in ``_numbers`` / ``_success``. String
            # columns are categories: one Python string per distinct value, not per row.
            dtype={"label": "category", **dict.fromkeys(extra, "category")},
            keep_default_na=False,
            chunksize=chunk_rows,
            on_bad_lines="skip",
            engine="c",
        )
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise ReportError(f"{path}: cannot parse: {exc}") from exc


def digest_jtl(
    path: Path,
    chunk_rows: int = CHUNK_ROWS,
    max_labels: int = MAX_LABELS,
    fmt: JtlFormat | None = None,
    *,
    transactions: bool = False,
) -> JtlDigest:
    """Fold the whole JTL at ``path`` into a ``JtlDigest`` in one bounded-memory pass.

    ``fmt`` describes a CSV written without a header line, or with another delimiter or
    a date timestamp format; a comma-separated CSV with a header, or XML, needs none.
    ``transactions``: Transaction Controller rows count as labels (``--transactions``).
    """
    digest = JtlDigest(path=path)
    seconds = _Seconds()
    selector = RowSelector(transactions=transactions)
    columns = _headed_csv_columns(path)
    if columns is not None and (fmt is None or fmt.timestamp_format == "ms"):
        _digest_frames(digest, seconds, chunk_rows, max_labels, columns, selector)
    else:
        _digest_samples(digest, seconds, fmt or JtlFormat(), max_labels, transactions)
    if (frame := seconds.frame()) is not None:
        digest.per_second = frame
    if digest.overall.count == 0:
        hint = ""
        if digest.malformed_rows and digest.source == "csv":
            hint = (
                f" ({digest.malformed_rows:,} malformed rows; give the JTL's format with "
                "--jmeter-properties or --jtl-columns)"
            )
        raise ReportError(f"{path}: the JTL holds no usable sample{hint}")
    return digest


def _digest_samples(
    digest: JtlDigest, seconds: _Seconds, fmt: JtlFormat, max_labels: int, transactions: bool
) -> None:
    """The follower path: XML, headerless or non-comma CSV."""
    path = digest.path
    try:
        with JtlFollower(path, fmt=fmt, transactions=transactions) as follower:
            for batch in follower.batches():
                _fold(
                    digest, seconds, batch.start_ms, batch.elapsed_ms, batch.success,
                    pd.factorize(batch.label, use_na_sentinel=False), max_labels,
                    follower.transaction_labels if transactions else (),
                )  # fmt: skip
            status = follower.status()
    except (JtlError, OSError) as exc:
        raise ReportError(f"{path}: cannot read the JTL: {exc}") from exc
    digest.source = status.format or "csv"
    digest.rows = status.records
    digest.malformed_rows = status.malformed_rows
    digest.skipped_rows = status.skipped_transactions + status.skipped_subresults
    digest.illegal_xml_chars = status.illegal_xml_chars


def _digest_frames(
    digest: JtlDigest,
    seconds: _Seconds,
    chunk_rows: int,
    max_labels: int,
    columns: list[str],
    selector: RowSelector,
) -> None:
    """The fast path: a CSV with a header, the needed columns read by pandas in chunks."""
    not_overall = selector.transaction_labels if selector.transactions else set()
    for chunk in _chunks(digest.path, chunk_rows, columns):
        digest.rows += len(chunk)
        start = _numbers(chunk["timeStamp"])
        elapsed = _numbers(chunk["elapsed"])
        ok_all, known = _success(chunk["success"])
        good = np.isfinite(start) & np.isfinite(elapsed) & known
        n_good = int(np.count_nonzero(good))
        digest.malformed_rows += len(good) - n_good
        all_good = n_good == len(good)
        rows = _raw_rows(
            chunk,
            None if all_good else good,
            start.astype(np.int64) if all_good else start[good].astype(np.int64),
            elapsed.astype(np.int64) if all_good else elapsed[good].astype(np.int64),
            ok_all if all_good else ok_all[good],
        )
        if selector.all_counted(rows):
            labels = (rows.label_code, rows.label_names)
            _fold(digest, seconds, rows.start_ms, rows.elapsed_ms, rows.success, labels, max_labels)
            continue
        batch = selector.select(rows)
        _fold(
            digest, seconds, batch.start_ms, batch.elapsed_ms, batch.success,
            pd.factorize(batch.label, use_na_sentinel=False), max_labels, not_overall,
        )  # fmt: skip
    digest.skipped_rows = selector.skipped_transactions + selector.skipped_subresults


def _raw_rows(
    chunk: pd.DataFrame,
    good: npt.NDArray[np.bool_] | None,
    start: npt.NDArray[np.int64],
    elapsed: npt.NDArray[np.int64],
    ok: npt.NDArray[np.bool_],
) -> RawRows:
    """A chunk's well-formed rows (``good``; None: all) as the row selector's input."""
    n = len(start)
    label_code, label_names = _categories(chunk["label"], good)
    if "threadName" in chunk:
        thread_code, thread_names = _categories(chunk["threadName"], good)
    else:
        thread_code, thread_names = np.zeros(n, np.int64), np.asarray([""], object)
    transaction = np.zeros(n, np.bool_)
    if "responseMessage" in chunk:
        msg_code, msg_names = _categories(chunk["responseMessage"], good)
        tx = [k for k, m in enumerate(msg_names) if str(m).startswith(TRANSACTION_PREFIX)]
        if tx:
            transaction = np.isin(msg_code, np.asarray(tx, np.int64))
    all_threads = np.full(n, -1, np.int32)  # not used by the selector
    return RawRows(
        start, elapsed, ok, label_code, label_names, thread_code, thread_names, all_threads,
        transaction,
    )  # fmt: skip


def _categories(
    column: pd.Series, good: npt.NDArray[np.bool_] | None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.object_]]:
    """A categorical column as (codes, names); a missing cell (a row cut short) is ""."""
    cat = column.array
    codes = np.asarray(cat.codes, np.int64)
    if good is not None:
        codes = codes[good]
    names = np.empty(len(cat.categories) + 1, object)
    names[:-1] = [str(c) for c in cat.categories]
    names[-1] = ""
    if (codes < 0).any():
        codes = np.where(codes < 0, len(names) - 1, codes)
    else:
        names = names[:-1]
    return codes, names


def _numbers(column: pd.Series) -> npt.NDArray[np.float64]:
    """A column as float64, NaN where a cell is not a number."""
    if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column):
        return column.to_numpy(np.float64)
    return pd.to_numeric(column, errors="coerce").to_numpy(np.float64)


def _success(column: pd.Series) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """JMeter's ``success`` as (ok, known): JMeter writes only ``true`` or ``false``;
    anything else (a row cut short, a shifted row) makes the row malformed."""
    if pd.api.types.is_bool_dtype(column.dtype):
        ok = column.to_numpy(np.bool_)
        return ok, np.ones(len(ok), np.bool_)
    text = column.astype(str).str.lower()
    ok = text.eq("true").to_numpy(np.bool_)
    return ok, ok | text.eq("false").to_numpy(np.bool_)


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
