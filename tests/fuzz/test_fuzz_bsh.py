"""Fuzz the BeanShell reply parser and the client's read-back on top of it.

A reply comes from the network: whatever it holds, ``parse_reply`` returns a value,
``None`` (unset), or raises ``BeanShellReplyError``; ``set_property``/``get_property``
on a fuzzed reply return or raise an ``ActuatorError`` -- never anything else.
"""

from __future__ import annotations

import contextlib
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadguard.actuator.bsh import SENTINEL, BeanShellClient, parse_reply
from loadguard.errors import ActuatorError
from tests.fuzz.harness import budget, mutated, ours_or_ok, seed_ids, seeds

TOKENS = [
    b"bsh % ", b"// Error:", b"loadguard:value=", b"loadguard:unset", SENTINEL.encode(),
    b"\n", b"\r\n", b"\r", b"\x00", b"\xff", b"660.0", b"NaN", b"Infinity", b"-0.0",
    b"1e999", b"0x1p3", b" ", b"\t", b"\xe9", b"loadguard:value=loadguard:value=",
]  # fmt: skip


class _Replying(BeanShellClient):
    """The real client with the socket replaced by a canned reply."""

    def __init__(self, reply: str) -> None:
        super().__init__("127.0.0.1", 9)
        self.reply = reply

    def _run(self, script: str) -> str:
        return self.reply


def _as_text(raw: bytes) -> str:
    return raw.decode("latin-1")  # what the client does with the socket's bytes


@pytest.mark.parametrize("seed", seeds("bsh_reply"), ids=seed_ids("bsh_reply"))
def test_real_replies_parse(seed: bytes) -> None:
    ours_or_ok(lambda: parse_reply(_as_text(seed)))


@budget
@given(st.data())
def test_parse_reply_returns_or_raises_ours(data: st.DataObject) -> None:
    raw = data.draw(mutated(seeds("bsh_reply"), TOKENS) | st.binary(max_size=300))
    value = ours_or_ok(lambda: parse_reply(_as_text(raw)))
    if isinstance(value, str):
        assert "\n" not in value and "\r" not in value


@budget
@given(st.data())
def test_client_read_back_returns_or_raises_actuator_error(data: st.DataObject) -> None:
    raw = data.draw(mutated(seeds("bsh_reply"), TOKENS))
    client = _Replying(_as_text(raw))
    rate = data.draw(st.floats(min_value=0.1, max_value=1e6))
    try:
        echoed = client.set_property("loadguard.tpm", rate)
    except ActuatorError:
        pass
    else:
        assert math.isfinite(echoed) and math.isclose(echoed, rate, rel_tol=1e-9)
    with contextlib.suppress(ActuatorError):
        client.get_property("loadguard.tpm")
