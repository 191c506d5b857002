"""The target's capacity model: workers over time, mix, validation."""

from __future__ import annotations

import pytest

from loadguard.errors import UsageError
from loadguard.lab.target.distributions import ServiceDist
from loadguard.lab.target.model import BROWSE_MIX, ENDPOINTS, build_model


@pytest.mark.parametrize(
    ("workers", "factor", "degraded"),
    [(8, 0.5, 4), (5, 0.5, 3), (1, 0.5, 1), (3, 0.1, 1), (4, 2.0, 8)],
)
def test_degraded_workers_round_and_never_reach_zero(
    workers: int, factor: float, degraded: int
) -> None:
    model = build_model(
        "mmc", workers=workers, queue=10, service_s=0.05, degrade_at_s=120, degrade_factor=factor
    )
    assert model.degraded_workers == degraded


@pytest.mark.parametrize(("elapsed", "workers"), [(0.0, 8), (119.9, 8), (120.0, 4), (500.0, 4)])
def test_workers_change_at_the_degrade_time(elapsed: float, workers: int) -> None:
    model = build_model("mmc", workers=8, queue=10, service_s=0.05, degrade_at_s=120)
    assert model.workers_at(elapsed) == workers


def test_no_degrade_keeps_workers() -> None:
    model = build_model("shop", workers=8, queue=10, service_s=0.05)
    assert model.workers_at(1e9) == 8 == model.degraded_workers


def test_mmc_gives_every_endpoint_one_exponential_class() -> None:
    model = build_model("mmc", workers=2, queue=10, service_s=0.04)
    assert {model.service[name] for name in ENDPOINTS} == {ServiceDist("exp", 0.04)}
    assert model.mean_service_s == pytest.approx(0.04)
    assert model.saturation_rps() == pytest.approx(50.0)


def test_shop_mean_is_the_mix_weighted_mean() -> None:
    model = build_model("shop", workers=2, queue=10, service_s=0.05)
    total = sum(BROWSE_MIX.values())
    expected = sum(w * model.service[n].mean_s for n, w in BROWSE_MIX.items()) / total
    assert model.mean_service_s == pytest.approx(expected)
    assert sum(model.mix_weights().values()) == pytest.approx(1.0)


def test_shop_override_replaces_one_endpoint() -> None:
    slow = ServiceDist("const", 0.2)
    model = build_model("shop", workers=2, queue=10, service_s=0.05, overrides={"product": slow})
    assert model.service["product"] == slow
    assert model.service["home"].kind == "lognormal"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "mmc", "workers": 0, "queue": 1, "service_s": 0.05},
        {"kind": "mmc", "workers": 1, "queue": -1, "service_s": 0.05},
        {"kind": "mmc", "workers": 1, "queue": 1, "service_s": -0.05},
        {"kind": "mmc", "workers": 1, "queue": 1, "service_s": 0.05, "degrade_factor": 0.0},
        {"kind": "mmc", "workers": 1, "queue": 1, "service_s": 0.05, "degrade_at_s": -1.0},
        {"kind": "shop", "workers": 1, "queue": 1, "service_s": 0.05, "overrides": {"nope": None}},
        {
            "kind": "mmc",
            "workers": 1,
            "queue": 1,
            "service_s": 0.05,
            "overrides": {"home": ServiceDist("const", 0.1)},
        },
        {"kind": "mm1", "workers": 1, "queue": 1, "service_s": 0.05},
    ],
)
def test_bad_model_options_are_usage_errors(kwargs: dict[str, object]) -> None:
    kind = kwargs.pop("kind")
    with pytest.raises(UsageError):
        build_model(kind, **kwargs)  # type: ignore[arg-type]


def test_model_json_names_every_endpoint() -> None:
    data = build_model("shop", workers=3, queue=7, service_s=0.05, degrade_at_s=60).to_json()
    assert set(data["service"]) == set(ENDPOINTS)
    assert (data["workers"], data["queue"], data["degraded_workers"]) == (3, 7, 2)
