"""Analytic M/M/c maths against published values."""

from __future__ import annotations

import math

import pytest

from loadguard.errors import SimulationError
from loadguard.lab.simulate.mmc import erlang_c, lambda_star, response_quantile, response_tail


@pytest.mark.parametrize(
    ("servers", "offered", "expected"),
    [
        # Textbook closed form: c=1 gives C = rho; c=2, a=1 gives 1/3.
        (1, 0.5, 0.5),
        (2, 1.0, 1.0 / 3.0),
        # Published Erlang C tables (e.g. Kleinrock vol. 1; call-centre tables): c=10, A=8.
        (10, 8.0, 0.4092),
        (5, 4.0, 0.5541),
    ],
)
def test_erlang_c_matches_table(servers: int, offered: float, expected: float) -> None:
    assert erlang_c(servers, offered) == pytest.approx(expected, abs=5e-4)


def test_unstable_queue_is_a_domain_error() -> None:
    with pytest.raises(SimulationError, match="unstable"):
        erlang_c(4, 4.0)


def test_mm1_response_time_is_exponential() -> None:
    # M/M/1: T ~ Exp(mu - lambda), so p95 = ln(20) / (mu - lambda).
    mu, lam = 20.0, 10.0
    assert response_quantile(0.95, lam, 1, 1 / mu) == pytest.approx(math.log(20) / (mu - lam))
    assert response_tail(0.1, lam, 1, 1 / mu) == pytest.approx(math.exp(-1.0))


def test_lambda_star_for_the_controller_scenario() -> None:
    # docs/controller.md: M/M/8, 50 ms mean service, p95 <= 250 ms -> 144.4 req/s.
    assert lambda_star(8, 0.050, 0.250) == pytest.approx(144.4, abs=0.1)


def test_mm4_p95_matches_the_measured_jmeter_run() -> None:
    # jmeter-facts.md: M/M/4, 40 ms service, 60 req/s -> the model's p95 is 134 ms.
    assert response_quantile(0.95, 60.0, 4, 0.040) == pytest.approx(0.134, abs=0.001)


def test_lambda_star_is_zero_when_service_alone_misses_the_slo() -> None:
    assert lambda_star(8, 0.100, 0.200) == 0.0
