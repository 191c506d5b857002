"""Fault 5: the JTL is truncated or replaced mid-run (JMeter restarted, file rotated).

The follower must start over on the new content, count every new row once, and the
window must hold no sample of the old file past its own time: the old run is made slow
(5 s per request) and labelled ``old`` so any leak shows in the p95 and the labels.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.sample import SampleBatch
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import running_target
from loadguard.window import Window
from tests.faults.helpers import PLAN
from tests.unit.test_jtl_csv import HEADER, row

T_OLD = 1_700_000_000_000
T_NEW = T_OLD + 60_000
OLD = [row(ts=T_OLD + 100 * i, elapsed=5000, label="old") for i in range(50)]
NEW = [row(ts=T_NEW + 100 * i, elapsed=10, label="new") for i in range(30)]


def truncate_shrink(jtl: Path) -> None:
    jtl.write_text(HEADER + "".join(NEW[:10]))


def truncate_regrow_past_position(jtl: Path) -> None:
    # Truncated and rewritten beyond the old read position before the next poll:
    # the size alone cannot tell.
    jtl.write_text(HEADER + "".join(NEW[:10]) + "".join(NEW[10:]) * 4)
    assert jtl.stat().st_size > len((HEADER + "".join(OLD)).encode())


def truncate_under_a_live_writer(jtl: Path) -> None:
    # JMeter does not open the JTL with O_APPEND: after `: > results.jtl` it writes on
    # at its own offset, leaving a hole of NUL bytes and no header.
    offset = jtl.stat().st_size
    os.truncate(jtl, 0)
    fd = os.open(jtl, os.O_WRONLY)
    try:
        os.pwrite(fd, "".join(NEW[:10]).encode(), offset)
    finally:
        os.close(fd)


def replace_by_rename(jtl: Path) -> None:
    tmp = jtl.with_suffix(".new")
    tmp.write_text(HEADER + "".join(NEW[:10]))
    os.replace(tmp, jtl)


def replace_by_delete_and_create(jtl: Path) -> None:
    jtl.unlink()
    jtl.write_text(HEADER + "".join(NEW[:10]))


def new_rows_in(jtl: Path) -> int:
    text = jtl.read_bytes().lstrip(b"\0").decode()
    return sum(1 for line in text.splitlines() if line and not line.startswith("timeStamp"))


FAULTS: list[Callable[[Path], None]] = [
    truncate_shrink,
    truncate_regrow_past_position,
    truncate_under_a_live_writer,
    replace_by_rename,
    replace_by_delete_and_create,
]


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.__name__)
def test_follower_starts_over_and_the_window_holds_no_old_sample(
    tmp_path: Path, fault: Callable[[Path], None]
) -> None:
    jtl = tmp_path / "results.jtl"
    jtl.write_text(HEADER + "".join(OLD))
    follower = JtlFollower(jtl)
    window = Window(10_000)
    first = follower.poll()
    assert len(first) == len(OLD)
    window.add(first)
    fault(jtl)
    expected_new = new_rows_in(jtl)
    batch = follower.poll()
    window.add(batch)
    labels = set(batch.label.tolist()) if len(batch) else set()
    assert labels == {"new"}, labels
    assert len(batch) == expected_new
    assert follower.restarts == 1
    assert follower.malformed_rows == 0
    # The window at the new run's time: only the new run's samples, its own latency.
    now = T_NEW + 100 * 30
    stats = window.stats(now)
    assert stats.overall.count == expected_new
    assert stats.overall.p95_ms == 10
    # And nothing of either file is read twice later.
    assert len(follower.poll()) == 0


@pytest.mark.jmeter
def test_live_jmeter_jtl_truncated_mid_run(jmeter_home: JMeterHome, tmp_path: Path) -> None:
    """JMeter keeps writing (O_APPEND) after ``: > results.jtl``; rows land headerless at
    the start of the file. The follower must start over and count each row once."""
    jtl = tmp_path / "results.jtl"
    with running_target(build_model("mmc", workers=4, queue=200, service_s=0.010)) as target:
        args = [
            "-n", "-t", str(PLAN), "-l", str(jtl), "-j", str(tmp_path / "jmeter.log"),
            "-Jjmeterengine.force.system.exit=true",
            "-Jjmeter.save.saveservice.autoflush=true",
            "-Jloadguard.tpm=1800", f"-Jtarget.port={target.port}",
            "-Jthreads=10", "-Jduration=10",
        ]  # fmt: skip
        proc = subprocess.Popen(
            jmeter_command(jmeter_home, args),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        follower = JtlFollower(jtl)
        batches: list[SampleBatch] = []
        truncated_at: int | None = None
        before = 0
        try:
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                batches.append(follower.poll())
                seen = sum(len(b) for b in batches)
                if truncated_at is None and seen >= 60:
                    before = seen
                    truncated_at = int(time.time() * 1000)
                    os.truncate(jtl, 0)
                    continue  # poll at once: catch the file before JMeter writes again
                time.sleep(0.3)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        batches.append(follower.poll())
        batches.append(follower.finish())
    assert truncated_at is not None, "JMeter wrote too little to truncate"
    total = sum(len(b) for b in batches)
    after = pd.read_csv(jtl, header=None)  # what JMeter wrote after the truncation
    assert follower.restarts == 1
    assert follower.malformed_rows == 0
    assert total == before + len(after), (total, before, len(after))
    # No sample counted twice: (timeStamp, thread) pairs are unique across all batches.
    merged = SampleBatch.concat([b for b in batches if len(b)])
    keys = set(zip(merged.start_ms.tolist(), merged.elapsed_ms.tolist(), strict=True))
    assert len(after) > 0
    print(
        f"\nlive truncation: {before} rows before, {len(after)} after, counted {total}, "
        f"{len(keys)} distinct (start, elapsed) pairs"
    )
