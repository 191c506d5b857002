"""loadguard.lab.target.serve: what ``loadguard target`` prints, computed from its model."""

from __future__ import annotations

import pytest

from loadguard.lab.simulate.mmc import lambda_star
from loadguard.lab.target.model import build_model
from loadguard.lab.target.process import parse_ready_line
from loadguard.lab.target.serve import banner, capacity, ready_line
from loadguard.lab.target.server import EstimateCache


def test_the_banner_gives_the_analytic_lambda_star_before_and_after_the_change() -> None:
    model = build_model(
        "mmc", workers=8, queue=1000, service_s=0.05, degrade_at_s=120.0, degrade_factor=0.5
    )
    cap = capacity(model, EstimateCache(model), 0.25)
    lines = banner(model, cap, 0.25)
    assert lines[0].startswith("loadguard target: model=mmc workers=8 queue=1000")
    assert f"lambda_star={lambda_star(8, 0.05, 0.25):.1f} req/s for p95<=250ms" in lines[1]
    assert "(analytic M/M/c)" in lines[1]
    assert lines[2] == (
        "loadguard target: at 120s workers become 4: "
        f"lambda_star={lambda_star(4, 0.05, 0.25):.1f} req/s"
    )


def test_the_ready_line_round_trips_through_the_parent_s_parser() -> None:
    model = build_model("mmc", workers=4, queue=100, service_s=0.05)
    cap = capacity(model, EstimateCache(model), 0.25)
    ready = parse_ready_line(ready_line(model, cap, "127.0.0.1", 18080, 0.25))
    assert ready is not None
    assert (ready.port, ready.workers, ready.slo_ms) == (18080, 4, 250.0)
    assert ready.url == "http://127.0.0.1:18080/tools.descartes.teastore.webui/"
    assert ready.lambda_star_rps == pytest.approx(lambda_star(4, 0.05, 0.25), abs=1e-3)
