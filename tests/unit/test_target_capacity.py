"""λ* of the target's model: analytic for M/M/c, simulated (FcfsQueue) otherwise."""

from __future__ import annotations

import math

import pytest

from loadguard.lab.simulate import mmc
from loadguard.lab.target.capacity import estimate_lambda_star, is_analytic, simulated_quantile
from loadguard.lab.target.model import build_model


@pytest.mark.parametrize(("workers", "service_s", "slo_s"), [(8, 0.05, 0.3), (1, 0.01, 0.1)])
def test_mmc_lambda_star_is_the_analytic_value(
    workers: int, service_s: float, slo_s: float
) -> None:
    model = build_model("mmc", workers=workers, queue=1000, service_s=service_s)
    est = estimate_lambda_star(model, slo_s)
    assert est.method == "analytic"
    assert est.lambda_star_rps == mmc.lambda_star(workers, service_s, slo_s)


@pytest.mark.parametrize(("workers", "slo_s"), [(8, 0.3), (4, 0.3), (2, 0.5)])
def test_simulation_agrees_with_the_analytic_mmc(workers: int, slo_s: float) -> None:
    # The same FcfsQueue the server schedules with, fed an M/M/c: the simulated λ* must
    # land on Erlang C's (sampling error over 60k requests is a few percent).
    model = build_model("mmc", workers=workers, queue=10_000, service_s=0.05)
    analytic = mmc.lambda_star(workers, 0.05, slo_s)
    shop_like = build_model(
        "shop",
        workers=workers,
        queue=10_000,
        service_s=0.05,
        overrides={name: model.service[name] for name in model.service},
    )
    assert not is_analytic(shop_like)
    simulated = estimate_lambda_star(shop_like, slo_s, n=60_000).lambda_star_rps
    assert simulated == pytest.approx(analytic, rel=0.05)


def test_shop_lambda_star_is_below_saturation_and_grows_with_workers() -> None:
    model = build_model("shop", workers=8, queue=100, service_s=0.05)
    eight = estimate_lambda_star(model, 0.3)
    four = estimate_lambda_star(model, 0.3, workers=4)
    assert eight.method == "simulated"
    assert 0 < four.lambda_star_rps < eight.lambda_star_rps < eight.saturation_rps
    assert four.saturation_rps == pytest.approx(eight.saturation_rps / 2)


def test_simulated_p95_at_lambda_star_meets_the_slo() -> None:
    model = build_model("shop", workers=8, queue=100, service_s=0.05)
    lam = estimate_lambda_star(model, 0.3).lambda_star_rps
    assert simulated_quantile(model, lam) <= 0.3 < simulated_quantile(model, lam * 1.05)


def test_slo_below_the_service_time_gives_zero() -> None:
    model = build_model("shop", workers=8, queue=100, service_s=0.5)
    assert estimate_lambda_star(model, 0.05).lambda_star_rps == 0.0


def test_zero_service_time_has_no_knee() -> None:
    model = build_model("mmc", workers=1, queue=10, service_s=0.0)
    est = estimate_lambda_star(model, 0.3)
    assert math.isinf(est.lambda_star_rps)
    assert est.to_json()["lambda_star"] is None
