"""``loadguard target``'s plant features (the controller suite's mechanisms), at the gate."""

from __future__ import annotations

import numpy as np
import pytest

from loadguard.errors import UsageError
from loadguard.lab.simulate.fcfs import Metastable
from loadguard.lab.simulate.features import (
    Outage,
    Warmup,
    parse_metastable,
    parse_outage,
    parse_warmup,
)
from loadguard.lab.target.distributions import ServiceDist
from loadguard.lab.target.gate import CapacityGate
from loadguard.lab.target.model import build_model


def _gate(**features: object) -> CapacityGate:
    model = build_model("mmc", workers=1, queue=100, service_s=0.1, **features)  # type: ignore[arg-type]
    model = type(model)(  # deterministic 100 ms service
        model.kind, model.workers, model.queue,
        {name: ServiceDist("const", 0.1) for name in model.service},
        warmup=model.warmup, metastable=model.metastable, outage=model.outage,
    )  # fmt: skip
    return CapacityGate(model, started_s=1000.0, rng=np.random.default_rng(1))


def test_warmup_makes_the_first_requests_slower() -> None:
    gate = _gate(warmup=Warmup(3.0, 90.0))
    cold = gate.admit("home", 1000.0)
    warm = gate.admit("home", 1200.0)
    assert cold.end_s - cold.start_s == pytest.approx(0.3)
    assert warm.end_s - warm.start_s == pytest.approx(0.1)


def test_outage_holds_requests_until_it_ends() -> None:
    gate = _gate(outage=Outage(10.0, 20.0))
    hung = gate.admit("home", 1015.0)
    assert hung.start_s == pytest.approx(1030.0)


def test_metastable_gate_slows_down_past_the_backlog() -> None:
    gate = _gate(metastable=Metastable(enter_waiting=2, factor=4.0))
    ends = [gate.admit("home", 1000.0 + 0.01 * k).end_s for k in range(4)]
    assert ends[3] - ends[2] == pytest.approx(0.4)


def test_model_json_names_the_features() -> None:
    model = build_model("mmc", workers=2, queue=10, service_s=0.05, outage=Outage(1.0, 2.0))
    assert model.to_json()["outage"] == {"at_s": 1.0, "duration_s": 2.0}
    assert model.to_json()["warmup"] is None


def test_feature_specs_parse() -> None:
    assert parse_warmup("3x:90s") == Warmup(3.0, 90.0)
    assert parse_outage("150s:20s") == Outage(150.0, 20.0)
    assert parse_metastable("80:4") == Metastable(80, 4.0, 0)


@pytest.mark.parametrize(
    ("parse", "text"),
    [(parse_warmup, "3y:90s"), (parse_outage, "150s"), (parse_metastable, "80:0.5")],
)
def test_bad_feature_spec_is_a_usage_error(parse: object, text: str) -> None:
    with pytest.raises(UsageError):
        parse(text)  # type: ignore[operator]
