"""The provisioned JMeter 5.6.3 runs plans, follows `${__P()}` and loads the plugins."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadguard.jmeter.home import JMeterHome
from tests.conftest import PLANS
from tests.jmeter_runner import read_jtl, run_jmeter

pytestmark = pytest.mark.jmeter


def test_constant_throughput_timer_follows_the_loadguard_property(
    jmeter_home: JMeterHome, ok_server: int, tmp_path: Path
) -> None:
    # 1200 samples/min = 20/s for 6 s, shared calcMode 4 with 5 threads.
    jtl, proc = run_jmeter(
        jmeter_home,
        PLANS / "ctt_property.jmx",
        tmp_path,
        props={"target.port": ok_server, "loadguard.tpm": 1200, "duration": 6},
    )
    assert proc.returncode == 0, proc.stdout
    df = read_jtl(jtl)
    assert list(df.columns[:3]) == ["timeStamp", "elapsed", "label"]
    assert df["success"].all()
    span_s = (df["timeStamp"].max() - df["timeStamp"].min()) / 1000.0
    # Each of the 5 threads fires its first sample undelayed, then pacing holds 20/s.
    assert 100 <= len(df) <= 135, len(df)
    rate = (len(df) - 5) / span_s
    assert 17.0 <= rate <= 23.0, rate


def test_concurrency_thread_group_plugin_loads_and_runs(
    jmeter_home: JMeterHome, ok_server: int, tmp_path: Path
) -> None:
    jtl, proc = run_jmeter(
        jmeter_home,
        PLANS / "concurrency_tg.jmx",
        tmp_path,
        props={"target.port": ok_server, "duration": 4},
    )
    assert proc.returncode == 0, proc.stdout
    log = (tmp_path / "concurrency_tg.log").read_text()
    assert "ConcurrencyThreadGroup" in log or "CTG" in log
    df = read_jtl(jtl)
    assert len(df) >= 40
    assert set(df["label"]) == {"ctg-home"}
    assert df["success"].all()
    assert df["threadName"].str.startswith("CTG").all()
