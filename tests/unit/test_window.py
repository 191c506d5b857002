"""Window: exact rolling statistics, checked against an independent numpy computation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadguard.jtl.sample import SampleBatch
from loadguard.stats import LabelStats
from loadguard.window import PERCENTILES, Window, linear_percentiles


def _batch(rows: list[tuple[int, int, bool, str]]) -> SampleBatch:
    return SampleBatch.of(
        [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]
    )


def _numpy_stats(
    end: np.ndarray, elapsed: np.ndarray, ok: np.ndarray, now: int, window_ms: int
) -> LabelStats:
    """The reference: a direct numpy computation over the window's samples."""
    mask = (end > now - window_ms) & (end <= now)
    x = elapsed[mask]
    n = len(x)
    if n == 0:
        return LabelStats.empty()
    good = int(ok[mask].sum())
    p50, p90, p95, p99 = np.percentile(x, PERCENTILES, method="linear")
    seconds = window_ms / 1000
    return LabelStats(
        n, n / seconds, good / seconds, (n - good) / n,
        float(x.mean()), float(p50), float(p90), float(p95), float(p99), float(x.max()),
    )  # fmt: skip


def _assert_close(got: LabelStats, want: LabelStats) -> None:
    assert got.count == want.count
    for name in ("rps", "ok_rps", "error_rate", "mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms",
                 "max_ms"):  # fmt: skip
        g, w = got.metric(name), want.metric(name)
        if w is None:
            assert g is None, name
        else:
            assert g == pytest.approx(w, rel=1e-12, abs=1e-9), name


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([10, 20], 50.0, 15.0),
        ([7], 99.0, 7.0),
        ([1, 2, 3, 4], 90.0, 3.7),
        ([5, 5, 5], 95.0, 5.0),
        ([0, 100], 99.0, 99.0),
    ],
)
def test_linear_percentile_definition(values: list[int], q: float, expected: float) -> None:
    got = linear_percentiles(np.asarray(values, np.int64), (q,))[0]
    assert got == pytest.approx(expected)
    assert got == pytest.approx(float(np.percentile(values, q, method="linear")))


def test_sample_on_left_edge_is_excluded_and_right_edge_included() -> None:
    w = Window(1000)
    # start 0 + elapsed 1000 ends exactly at now - W: out; ends at now: in.
    w.add(_batch([(0, 1000, True, "a"), (1500, 500, True, "a"), (1000, 1, True, "a")]))
    s = w.stats(2000)
    assert s.overall.count == 2
    assert s.overall.max_ms == 500.0


def test_future_samples_are_kept_for_later_steps() -> None:
    w = Window(1000)
    w.add(_batch([(0, 100, True, "a"), (5000, 100, False, "a")]))
    assert w.stats(1000).overall.count == 1
    assert len(w) == 2
    later = w.stats(5500)
    assert later.overall.count == 1
    assert later.overall.error_rate == 1.0
    assert len(w) == 1


def test_evicts_samples_older_than_window() -> None:
    w = Window(1000)
    w.add(_batch([(i, 10, True, "a") for i in range(0, 10_000, 10)]))
    w.stats(10_010)  # ends 20..10_000 step 10; kept: (9010, 10_010]
    assert len(w) == 99


def test_empty_window_has_no_latency() -> None:
    w = Window(1000, malformed_rows=lambda: 3)
    s = w.stats(123)
    assert s.overall == LabelStats.empty()
    assert s.labels == {}
    assert s.malformed_rows == 3
    assert s.newest_sample_ms is None


def test_newest_sample_is_max_end_ever_added() -> None:
    w = Window(1000)
    w.add(_batch([(100, 50, True, "a")]))
    w.add(_batch([(10, 20, True, "a")]))
    assert w.stats(10_000).newest_sample_ms == 150


def test_rates_use_window_length_not_sample_span() -> None:
    w = Window(10_000)
    w.add(_batch([(1000, 10, i % 4 != 0, "a") for i in range(20)]))
    s = w.stats(2000).overall
    assert s.rps == pytest.approx(2.0)
    assert s.ok_rps == pytest.approx(1.5)
    assert s.error_rate == pytest.approx(0.25)


def test_overall_excludes_transaction_labels_but_reports_them() -> None:
    w = Window(1000, overall_excludes=lambda: {"TC"})
    w.add(_batch([(0, 10, True, "a"), (0, 20, True, "b"), (0, 30, True, "TC")]))
    s = w.stats(500)
    assert s.overall.count == 2
    assert set(s.labels) == {"a", "b", "TC"}
    assert s.labels["TC"].max_ms == 30.0


def test_late_samples_are_counted() -> None:
    w = Window(1000)
    w.stats(5000)
    w.add(_batch([(4000, 500, True, "a"), (5000, 500, True, "a")]))
    assert w.late_samples == 1


def test_without_labels_reports_overall_only() -> None:
    w = Window(1000, by_label=False)
    w.add(_batch([(0, 10, True, "a")]))
    s = w.stats(100)
    assert s.labels == {}
    assert s.overall.count == 1


def test_matches_numpy_on_large_out_of_order_stream() -> None:
    rng = np.random.default_rng(7)
    n = 60_000
    start = np.sort(rng.integers(0, 60_000, n))
    elapsed = rng.lognormal(4, 1, n).astype(np.int64)
    ok = rng.random(n) > 0.02
    labels = rng.choice(np.array(["/a", "/b", "/cart", "/c-1", "x y"], object), n)
    end = start + elapsed
    key = end + rng.integers(-300, 300, n)  # file order ~ completion order, with jitter
    order = np.argsort(key)
    w = Window(10_000)
    pos = 0
    for now in range(1000, 75_000, 1000):
        while pos < n and key[order[pos]] <= now + 300:
            nxt = min(n, pos + 777)
            idx = order[pos:nxt]
            w.add(SampleBatch.of(start[idx], elapsed[idx], ok[idx], labels[idx]))
            pos = nxt
        s = w.stats(now)
        _assert_close(s.overall, _numpy_stats(end, elapsed, ok, now, 10_000))
        for name in np.unique(labels):
            m = labels == name
            want = _numpy_stats(end[m], elapsed[m], ok[m], now, 10_000)
            got = s.labels.get(str(name), LabelStats.empty())
            _assert_close(got, want)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 20_000),
            st.integers(0, 5_000),
            st.booleans(),
            st.sampled_from(["a", "b", "c"]),
        ),
        max_size=200,
    ),
    window_ms=st.integers(1, 8_000),
    nows=st.lists(st.integers(0, 30_000), min_size=1, max_size=6),
    split=st.integers(0, 200),
)
def test_any_batching_matches_numpy(
    rows: list[tuple[int, int, bool, str]], window_ms: int, nows: list[int], split: int
) -> None:
    nows = sorted(nows)
    w = Window(window_ms)
    w.add(_batch(rows[:split]))
    w.add(_batch(rows[split:]))
    overall_only = Window(window_ms, by_label=False)
    overall_only.add(_batch(rows[split:]))
    overall_only.add(_batch(rows[:split]))
    start = np.asarray([r[0] for r in rows], np.int64)
    elapsed = np.asarray([r[1] for r in rows], np.int64)
    ok = np.asarray([r[2] for r in rows], np.bool_)
    labels = np.asarray([r[3] for r in rows], object)
    end = start + elapsed
    for now in nows:
        s = w.stats(now)
        _assert_close(s.overall, _numpy_stats(end, elapsed, ok, now, window_ms))
        _assert_close(
            overall_only.stats(now).overall, _numpy_stats(end, elapsed, ok, now, window_ms)
        )
        for name in ("a", "b", "c"):
            m = labels == name
            want = _numpy_stats(end[m], elapsed[m], ok[m], now, window_ms)
            _assert_close(s.labels.get(name, LabelStats.empty()), want)
            if want.count == 0:
                assert name not in s.labels


def test_memory_follows_the_window_when_labels_never_repeat() -> None:
    w = Window(1000)
    for i in range(20_000):
        w.add(_batch([(i * 10, 1, True, f"/item/{i}")]))
        if i % 100 == 0:
            w.stats(i * 10)
    s = w.stats(200_000)
    assert s.overall.count == 100  # ends in (199_000, 200_000]
    assert len(w._labels) < 5_000
    assert set(s.labels) == {f"/item/{i}" for i in range(19_900, 20_000)}
