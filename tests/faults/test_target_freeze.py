"""Fault 4: the target freezes (accepts requests, never answers, until JMeter's 30 s
response timeout).

No sample completes, so the window drains: the sidecar must notice (staleness grows in
the log), stop raising the rate, and cut it to the floor after the stale guard's time --
long before the hung requests time out -- while its ticks keep their pace.
"""

from __future__ import annotations

import itertools
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadguard.jmeter.home import JMeterHome
from tests.faults.helpers import FreezableServer, run_args, sidecar
from tests.jmeter_runner import jmeter_pids, read_decisions, wait_for

pytestmark = pytest.mark.jmeter

TICK_MS = 1000
WINDOW_MS = 3000
RESPONSE_TIMEOUT_MS = 30_000
# build_policy defaults: stale after 2 windows, floor after 2 more.
STALE_MS, FLOOR_AFTER_MS = 2 * WINDOW_MS, 2 * WINDOW_MS
FLOOR = 2.0


@pytest.fixture()
def server() -> Iterator[FreezableServer]:
    srv = FreezableServer()
    try:
        yield srv
    finally:
        srv.close()


def test_frozen_target_is_seen_as_stale_and_floored_before_requests_time_out(
    jmeter_home: JMeterHome, server: FreezableServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    decisions = out / "decisions.csv"
    args = run_args(
        out,
        server.port,
        "2m",
        window="3s",
        extra=["--min-rate", str(FLOOR)],
        props=[f"target.response_timeout={RESPONSE_TIMEOUT_MS}"],
    )

    def sampled_rows() -> int:
        return sum(int(r["samples"]) > 0 for r in read_decisions(decisions))

    def stale_floor() -> bool:
        return any(
            r["reason"] == "stale" and float(r["new_rate"]) <= FLOOR
            for r in read_decisions(decisions)
        )

    with sidecar(args, tmp_path, str(out)) as proc:
        assert wait_for(lambda: sampled_rows() >= 6, 60)
        frozen_ms = int(time.time() * 1000)
        server.freeze()
        floored = wait_for(stale_floor, 40)
        hung = server.hung
        server.thaw()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert floored, "never cut to the floor while frozen"
    assert proc.returncode in (0, 1, 5), err[-2000:]
    assert json.loads((out / "summary.json").read_text())["stop_reason"] == "signal"
    assert not jmeter_pids(str(out))
    assert hung > 0

    rows = read_decisions(decisions)
    after = [r for r in rows if int(r["epoch_ms"]) > frozen_ms]
    # Once a window has passed, nothing is raised any more.
    judged = [r for r in after if int(r["epoch_ms"]) > frozen_ms + WINDOW_MS]
    assert judged and all(r["action"] != "INCREASE" for r in judged), [
        (r["action"], r["reason"]) for r in judged
    ]
    # Staleness is logged and grows while frozen.
    stale = [int(r["staleness_ms"]) for r in judged if r["staleness_ms"]]
    assert stale and stale == sorted(stale) and stale[-1] >= STALE_MS
    # Cut to the floor by the stale guard, before any hung request could time out.
    floor_row = next(r for r in after if r["reason"] == "stale" and float(r["new_rate"]) <= FLOOR)
    reacted_ms = int(floor_row["epoch_ms"]) - frozen_ms
    assert reacted_ms <= STALE_MS + FLOOR_AFTER_MS + 3 * TICK_MS
    assert reacted_ms < RESPONSE_TIMEOUT_MS
    assert floor_row["action"] == "DECREASE" and floor_row["applied"] == "true"
    # The ticks never waited on the hung requests.
    epochs = [int(r["epoch_ms"]) for r in after]
    gaps = [b - a for a, b in itertools.pairwise(epochs)]
    assert max(gaps) <= TICK_MS + 700, gaps
    first_hold = next(r for r in judged if r["action"] == "HOLD")
    print(
        f"\nfreeze: {hung} requests hung; first HOLD ({first_hold['reason']}) "
        f"{int(first_hold['epoch_ms']) - frozen_ms} ms after the freeze, floor (stale) after "
        f"{reacted_ms} ms, staleness logged up to {stale[-1]} ms, max tick gap {max(gaps)} ms"
    )
