"""The small pieces that several callers now share (one copy each): step functions, the
--plants selection, RawRows from row tuples, service draws from the mix, and a server
child's ready line and stop."""

from __future__ import annotations

import queue
import re
import subprocess
import sys

import numpy as np
import pytest

from loadguard.errors import EngineError, UsageError
from loadguard.jtl.raw_rows import RawRows
from loadguard.lab.evaluate.real_plants import REAL_PLANTS, select_real
from loadguard.lab.evaluate.suite_metrics import Capacity
from loadguard.lab.simulate.plants import PLANTS, select, select_from
from loadguard.lab.simulate.scenario import ShopService
from loadguard.lab.simulate.steps import step_value
from loadguard.lab.target.model import build_model
from loadguard.lab.target.process import stop_server, wait_ready_line


def test_step_value_is_the_last_step_started() -> None:
    steps = [(0.0, 10.0), (5.0, 20.0), (9.0, 5.0)]
    assert [step_value(steps, t) for t in (-1.0, 0.0, 4.9, 5.0, 8.0, 9.0, 100.0)] == [
        10.0, 10.0, 10.0, 20.0, 20.0, 5.0, 5.0,
    ]  # fmt: skip
    assert Capacity(tuple(steps)).at(6.0) == 20.0


def test_select_from_keeps_suite_order_and_numbers_may_name_several() -> None:
    assert select_from(PLANTS, None) is PLANTS
    assert select(["2,1"]) == (PLANTS[0], PLANTS[1])
    both = select_real(["10"])
    assert len(both) == 2 and {p.number for p in both} == {10}
    assert select_from(REAL_PLANTS, [PLANTS[0].key]) == (REAL_PLANTS[0],)
    with pytest.raises(UsageError, match="unknown plant 'nope'"):
        select_from(PLANTS, ["nope"])


def test_raw_rows_from_records_with_and_without_subresult() -> None:
    assert len(RawRows.from_records([])) == 0
    rows = RawRows.from_records(
        [(1, 2, True, "a", "t", 1, False), (3, 4, False, "b", "t", 2, True)]
    )
    assert list(rows.start_ms) == [1, 3] and list(rows.labels()) == ["a", "b"]
    assert rows.subresult is None
    sub = RawRows.from_records([(1, 2, True, "a", "t", 1, False, True)])
    assert sub.subresult is not None and bool(sub.subresult[0])
    batch = rows.to_batch(np.array([False, True]))
    assert list(batch.label) == ["b"] and list(rows.to_batch().label) == ["a", "b"]


def test_sample_service_is_the_simulators_shop_draw() -> None:
    model = build_model("shop", workers=1, queue=0, service_s=0.05)
    a = model.sample_service(np.random.default_rng(7), 20_000)
    b = ShopService(0.05).sample(np.random.default_rng(7), 20_000)
    assert np.array_equal(a, b)
    assert a.mean() == pytest.approx(model.mean_service_s, rel=0.05)


def _lines(*items: str | None) -> queue.Queue[str | None]:
    q: queue.Queue[str | None] = queue.Queue()
    for item in items:
        q.put(item)
    return q


def test_wait_ready_line_returns_the_first_parsed_line() -> None:
    def parse(line: str) -> int | None:
        return int(line[6:]) if line.startswith("ready ") else None

    lines = _lines("starting\n", "  ready 42  \n")
    assert wait_ready_line(lines, [], 5.0, parse, not_ready="x", exited="y") == 42
    with pytest.raises(EngineError, match=re.escape("the child exited: a | b")):
        wait_ready_line(
            _lines("a", None), ["a", "b"], 5.0, parse, not_ready="x", exited="the child exited"
        )
    with pytest.raises(EngineError, match=re.escape("no ready line in 0.05s")):
        wait_ready_line(_lines(), [], 0.05, parse, not_ready="no ready line", exited="y")


def test_stop_server_terminates_a_running_child() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], text=True)
    assert stop_server(proc, 10.0) != 0
    assert stop_server(proc, 10.0) == proc.returncode  # already gone: nothing to do
