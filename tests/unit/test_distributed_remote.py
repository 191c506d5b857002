"""Distributed JMeter adapters that need no JMeter: -R parsing, thread ownership, the
controller's command line, the sample sender, the JTL lag warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadguard.actuator.fleet import JtlLagWatch, JtlMissingWatch, thread_owner
from loadguard.errors import UsageError
from loadguard.jmeter.remote import (
    ControllerSpec,
    RemoteEngine,
    controller_args,
    engine_server_args,
    parse_remotes,
    sample_sender_properties,
)
from loadguard.jtl.sample import SampleBatch


@pytest.mark.parametrize(
    ("text", "host", "port", "prefix"),
    [
        ("10.0.0.5:1099", "10.0.0.5", 1099, "10.0.0.5:1099-"),
        ("jm-engine-1:24001", "jm-engine-1", 24001, "jm-engine-1:24001-"),
        ("jm-engine-1", "jm-engine-1", 1099, "jm-engine-1-"),
        (" 127.0.0.1:12099 ", "127.0.0.1", 12099, "127.0.0.1:12099-"),
    ],
)
def test_parse_remote_keeps_the_entry_as_its_thread_prefix(
    text: str, host: str, port: int, prefix: str
) -> None:
    r = RemoteEngine.parse(text)
    assert (r.host, r.port, r.thread_prefix) == (host, port, prefix)


@pytest.mark.parametrize("text", ["", ":1099", "h:x", "h:0", "h:70000", "a b:1099", "h;rm:1"])
def test_bad_remote_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        RemoteEngine.parse(text)


def test_parse_remotes_splits_commas_and_repeats_in_order() -> None:
    got = parse_remotes(["h1:1,h2:2", "h3:3"])
    assert [r.spec for r in got] == ["h1:1", "h2:2", "h3:3"]


def test_parse_remotes_refuses_duplicates() -> None:
    with pytest.raises(UsageError):
        parse_remotes(["h1:1,h1:1"])


@pytest.mark.parametrize(
    ("thread", "owner"),
    [
        ("127.0.0.1:12099-elastic 1-1", 0),
        ("127.0.0.1:1209-elastic 1-1", 1),
        ("127.0.0.1:120999-elastic 1-1", None),
        ("elastic 1-1", None),
    ],
)
def test_thread_owner_is_the_longest_matching_prefix(thread: str, owner: int | None) -> None:
    assert thread_owner(thread, ["127.0.0.1:12099-", "127.0.0.1:1209-"]) == owner


@pytest.mark.parametrize(
    ("mode", "props"),
    [
        ("Stripped", {"mode": "Stripped"}),
        ("StrippedAsynch", {"mode": "StrippedAsynch"}),
        (
            "StrippedBatch",
            {"mode": "StrippedBatch", "num_sample_threshold": "10", "time_threshold": "1000"},
        ),
    ],
)
def test_sample_sender_properties(mode: str, props: dict[str, str]) -> None:
    assert sample_sender_properties(mode) == props


def test_unknown_sample_sender_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        sample_sender_properties("Hold")


def test_controller_args_send_plan_properties_to_every_engine() -> None:
    spec = ControllerSpec(
        plan=Path("/p/plan.jmx"),
        jtl=Path("/o/results.jtl"),
        log=Path("/o/jmeter.log"),
        stdout=Path("/o/jmeter.out"),
        udp_port=4455,
        remotes=parse_remotes(["h1:1099,h2:1099"]),
        properties={"threads": "50", "target.port": "8080"},
        extra_args=("-Djava.rmi.server.hostname=10.0.0.9",),
    )
    args = controller_args(spec)
    assert args[:9] == [
        "-n",
        "-t",
        "/p/plan.jmx",
        "-l",
        "/o/results.jtl",
        "-j",
        "/o/jmeter.log",
        "-R",
        "h1:1099,h2:1099",
    ]
    for expected in (
        "-Jmode=StrippedAsynch",
        "-Jserver.rmi.ssl.disable=true",
        "-Jjmeter.save.saveservice.autoflush=true",
        "-Jjmeter.save.saveservice.thread_name=true",
        "-Jjmeterengine.nongui.port=4455",
        "-Jthreads=50",
        "-Gthreads=50",
        "-Gtarget.port=8080",
    ):
        assert expected in args
    assert args[-1] == "-Djava.rmi.server.hostname=10.0.0.9"
    assert not any("beanshell" in a for a in args)  # the controller runs no BeanShell
    assert not any(a.startswith("-Gloadguard.tpm") for a in args)  # shares are pushed


def test_engine_server_args_pin_both_rmi_ports_and_beanshell() -> None:
    args = engine_server_args(24001, 9000, hostname="10.0.0.5")
    assert args == [
        "-s",
        "-Dserver_port=24001",
        "-Jserver.rmi.localport=24002",
        "-Jbeanshell.server.port=9000",
        "-Jbeanshell.server.file=",
        "-Djava.rmi.server.hostname=10.0.0.5",
        "-Jserver.rmi.ssl.disable=true",
    ]


def _ended(*end_ms: int) -> SampleBatch:
    n = len(end_ms)
    return SampleBatch.of([e - 20 for e in end_ms], [20] * n, [True] * n, ["r"] * n)


def test_lag_watch_warns_once_when_batches_keep_arriving_late() -> None:
    watch = JtlLagWatch(threshold_ms=3000, polls=3)
    assert watch.observe(_ended(0), 100_000) is None  # the backlog poll is not judged
    results = []
    for t in (110_000, 120_000, 130_000):  # a batch every 10 s holding the last 10 s
        assert watch.observe(SampleBatch.empty(), t - 1000) is None  # ticks of 1 s
        results.append(watch.observe(_ended(*range(t - 10_000, t, 500)), t))
    assert results[:2] == [None, None]
    assert results[2] is not None and "StrippedAsynch" in results[2]
    assert watch.observe(_ended(130_500), 131_000) is None  # once


@pytest.mark.parametrize("tick_ms", [250, 1000, 2000])
def test_lag_watch_stays_quiet_on_a_fresh_jtl_whatever_the_poll_interval(tick_ms: int) -> None:
    watch = JtlLagWatch(threshold_ms=3000, polls=3)
    watch.observe(_ended(0), 1000)
    for i in range(1, 20):
        now = 1000 + i * tick_ms
        # rows that ended between the previous poll and this one, plus one straggler
        ends = [*range(now - tick_ms + 10, now, 20), now - tick_ms - 200]
        assert watch.observe(_ended(*ends), now) is None


def test_lag_watch_tolerates_a_briefly_late_poll() -> None:
    watch = JtlLagWatch(threshold_ms=3000, polls=3)
    watch.observe(_ended(0), 1000)
    for now, late in ((2000, 8000), (3000, 0), (4000, 8000), (5000, 8000)):
        assert watch.observe(_ended(now - 1000 - late), now) is None


def test_lag_watch_ignores_empty_polls() -> None:
    watch = JtlLagWatch()
    assert watch.observe(SampleBatch.empty(), 5000) is None
    assert watch.polls == 0


def test_a_missing_jtl_is_named_after_the_grace_then_once_a_minute():
    watch = JtlMissingWatch("results.jtl", after_ms=10_000, every_ms=60_000, exists=lambda p: False)
    said = [watch.observe(0, t) for t in range(0, 130_001, 2000)]
    times = [t for t, m in zip(range(0, 130_001, 2000), said, strict=True) if m]
    assert times == [10_000, 70_000, 130_000]
    assert "no JTL at results.jtl after 10s" in said[5]


def test_a_jtl_that_exists_or_has_delivered_samples_is_not_missing():
    present = JtlMissingWatch("r.jtl", after_ms=0, exists=lambda p: True)
    assert [present.observe(0, t) for t in (0, 1000, 99_000)] == [None, None, None]
    rotated = JtlMissingWatch("r.jtl", after_ms=0, exists=lambda p: False)
    assert [rotated.observe(5, t) for t in (0, 1000, 99_000)] == [None, None, None]
