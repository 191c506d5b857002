"""Fuzz the JMX injector: any plan bytes, any thread-group selection, any numbers.

``inject_elastic_timer`` (and the scans ``thread_groups``/``has_elastic_timer``) return a
result or raise a ``LoadGuardError`` (``JmxError`` for a bad plan, ``UsageError`` for a
bad number) -- never an lxml, Unicode or arithmetic error. What it returns is XML that
parses again and carries the timer.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from loadguard.errors import UsageError
from loadguard.jmx import has_elastic_timer, inject_elastic_timer
from loadguard.jmx.inject import thread_groups
from tests.fuzz.harness import budget, mutated, ours_or_ok, seed_ids, seeds

TOKENS = [
    b"<", b">", b"/>", b"</hashTree>", b"<hashTree/>", b"<hashTree>", b'enabled="false"',
    b'testname="', b'"', b"&amp;", b"&#0;", b"<ThreadGroup ", b"</ThreadGroup>",
    b'<stringProp name="ThreadGroup.num_threads">', b"</stringProp>", b"${__P(threads,",
    b"-1", b"0", b"9" * 30, b"<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>",
    b"&e;", b"\x00", b"\xff", b"<?xml version=\"1.0\" encoding=\"UTF-16\"?>",
    b"<jmeterTestPlan", b"</jmeterTestPlan>", b"ConstantThroughputTimer", b"guiclass=\"",
]  # fmt: skip
NUMBERS = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-5, 10**12)


def _inject(data: bytes, groups: tuple[str, ...], rate: float, top: float | None,
            latency: float | None) -> None:  # fmt: skip
    thread_groups(data)
    already = has_elastic_timer(data)
    result = inject_elastic_timer(
        data,
        thread_groups=groups,
        initial_rate_rps=rate,
        max_rate_rps=top,
        latency_ms=latency,
    )
    out = result.xml
    etree.fromstring(out, etree.XMLParser(resolve_entities=False, no_network=True))
    assert already or has_elastic_timer(out)


@pytest.mark.parametrize("seed", seeds("jmx"), ids=seed_ids("jmx"))
def test_jmx_corpus_injects(seed: bytes) -> None:
    ours_or_ok(lambda: _inject(seed, (), 5.0, None, None))


@budget
@given(
    st.data(),
    st.lists(
        st.sampled_from(["elastic", "Thread Group", "TG", "", " "]) | st.text(max_size=6),
        max_size=2,
    ),
    NUMBERS,
    st.none() | NUMBERS,
    st.none() | NUMBERS,
)
def test_inject_returns_a_plan_or_raises_ours(
    data: st.DataObject,
    groups: list[str],
    rate: float,
    top: float | None,
    latency: float | None,
) -> None:
    raw = data.draw(mutated(seeds("jmx"), TOKENS))
    ours_or_ok(lambda: _inject(raw, tuple(groups), rate, top, latency))


def test_found_rate_times_latency_overflow_is_a_usage_error() -> None:
    """Found by the fuzzer: 1.2e154 req/s x 1.2e154 ms overflowed Little's law."""
    (plan,) = (s for s, name in zip(seeds("jmx"), seed_ids("jmx"), strict=True)
               if name == "concurrency_tg.jmx")  # fmt: skip
    outcome = ours_or_ok(
        lambda: _inject(plan, (), 1.0, 1.2239598083210343e154, 1.2239598083210345e154)
    )
    assert isinstance(outcome, UsageError)
    assert isinstance(ours_or_ok(lambda: _inject(plan, (), 1.0, math.inf, None)), UsageError)
