"""The ready line the target prints and ``spawn_target`` parses."""

from __future__ import annotations

import pytest

from loadguard.lab.target.process import TargetReady, format_ready_line, parse_ready_line


@pytest.mark.parametrize("lam", [147.965, None])
def test_ready_line_round_trips(lam: float | None) -> None:
    ready = TargetReady(
        url="http://127.0.0.1:4321/tools.descartes.teastore.webui/",
        port=4321,
        lambda_star_rps=lam,
        slo_ms=300.0,
        quantile=0.95,
        method="analytic",
        workers=8,
        degraded_workers=4,
        lambda_star_degraded_rps=68.433,
    )
    assert parse_ready_line(format_ready_line(ready)) == ready


@pytest.mark.parametrize(
    "line",
    [
        "loadguard target: lambda_star=148.0 req/s",
        "loadguard target ready: url=x port=notanumber",
        "loadguard target ready: port=1",
    ],
)
def test_other_lines_are_not_ready_lines(line: str) -> None:
    assert parse_ready_line(line) is None
