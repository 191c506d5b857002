"""Service-time distributions and durations: parsing, moments, round trips."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadguard.durations import parse_duration_s
from loadguard.errors import UsageError
from loadguard.lab.target.distributions import ServiceDist, parse_dist


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("300ms", 0.3), ("1.5s", 1.5), ("2m", 120.0), ("250us", 0.00025), ("0s", 0.0), (" 5 s ", 5.0)],
)
def test_duration_parses_units(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["300", "ms", "-5ms", "1e999s", "5 hours", ""])
def test_duration_without_a_valid_unit_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_duration_s(text)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("50ms", ServiceDist("const", 0.05)),
        ("const:10ms", ServiceDist("const", 0.01)),
        ("exp:50ms", ServiceDist("exp", 0.05)),
        ("lognormal:80ms:0.6", ServiceDist("lognormal", 0.08, 0.6)),
    ],
)
def test_dist_spec_parses(spec: str, expected: ServiceDist) -> None:
    got = parse_dist(spec)
    assert got.kind == expected.kind
    assert got.mean_s == pytest.approx(expected.mean_s)
    assert got.sigma == pytest.approx(expected.sigma)


@pytest.mark.parametrize("spec", ["gamma:5ms", "exp:", "lognormal:5ms", "lognormal:5ms:x", "exp:5"])
def test_bad_dist_spec_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_dist(spec)


@pytest.mark.parametrize(
    "dist",
    [ServiceDist("exp", 0.05), ServiceDist("lognormal", 0.08, 0.6), ServiceDist("const", 0.02)],
)
def test_sample_mean_and_cv_match_the_parameters(dist: ServiceDist) -> None:
    draws = dist.sample(np.random.default_rng(7), 200_000)
    assert draws.mean() == pytest.approx(dist.mean_s, rel=0.02)
    cv = draws.std() / draws.mean()
    assert cv == pytest.approx(dist.cv, abs=0.03)


@given(
    kind=st.sampled_from(["const", "exp", "lognormal"]),
    mean_ms=st.integers(min_value=0, max_value=5000),
    sigma=st.sampled_from([0.1, 0.5, 1.25]),
)
def test_spec_round_trips(kind: str, mean_ms: int, sigma: float) -> None:
    if kind == "lognormal" and mean_ms == 0:
        return
    dist = ServiceDist(kind, mean_ms / 1000.0, sigma if kind == "lognormal" else 0.0)  # type: ignore[arg-type]
    back = parse_dist(dist.spec())
    assert back.kind == dist.kind
    assert math.isclose(back.mean_s, dist.mean_s, rel_tol=1e-9, abs_tol=1e-12)
    assert back.sigma == dist.sigma
