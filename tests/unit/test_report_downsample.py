"""minmax_downsample: thins for drawing, keeps the envelope."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadguard.report.downsample import minmax_downsample


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=3000),
    st.integers(2, 400),
)
def test_downsample_keeps_extremes_order_and_bound(values: list[float], cap: int) -> None:
    y = np.asarray(values, np.float64)
    x = np.arange(len(y), dtype=np.float64)
    dx, dy = minmax_downsample(x, y, cap)
    assert len(dx) == len(y) if len(y) <= cap else len(dx) <= cap
    assert np.all(np.diff(dx) > 0)
    assert dy.max() == y.max() and dy.min() == y.min()
    # every kept point is a point of the input
    assert np.array_equal(y[dx.astype(np.int64)], dy)


def test_short_series_passes_through_untouched() -> None:
    x = np.arange(5.0)
    y = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    dx, dy = minmax_downsample(x, y, 10)
    assert dx is x and dy is y


def test_a_single_spike_survives_heavy_thinning() -> None:
    y = np.zeros(100_000)
    y[77_777] = 9.0
    x = np.arange(len(y), dtype=np.float64)
    dx, dy = minmax_downsample(x, y, 100)
    assert len(dx) <= 100 and 77_777.0 in dx and dy.max() == 9.0


def test_gaps_stay_gaps() -> None:
    y = np.full(10_000, np.nan)
    y[:10] = 1.0
    _, dy = minmax_downsample(np.arange(10_000.0), y, 50)
    assert np.isnan(dy).any() and np.nanmax(dy) == 1.0


@pytest.mark.parametrize("cap", [0, 1])
def test_cap_below_two_is_rejected(cap: int) -> None:
    with pytest.raises(ValueError):
        minmax_downsample(np.arange(3.0), np.arange(3.0), cap)
