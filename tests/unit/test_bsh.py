"""BeanShell client: protocol, fixed-form scripts, timeouts and hostile input."""

from __future__ import annotations

import math
import re
import socket
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadguard.actuator.bsh import (
    SENTINEL,
    BeanShellClient,
    format_number,
    get_script,
    parse_reply,
    set_script,
)
from loadguard.errors import ActuatorError, BeanShellReplyError, UsageError
from tests.bsh_fake import fake_bsh, free_port

# Only these characters can ever appear in a script (names + numbers + the fixed text).
_SCRIPT_ALPHABET = re.compile(r'[A-Za-z0-9_.:=(),;" \n+\-?%]*')


def test_set_property_confirms_by_read_back() -> None:
    with fake_bsh() as fake:
        client = BeanShellClient("127.0.0.1", fake.port)
        assert client.set_property("loadguard.tpm", 2400) == 2400.0
        assert fake.properties == {"loadguard.tpm": "2400.0"}
        assert client.get_property("loadguard.tpm") == "2400.0"


def test_get_unset_property_is_none() -> None:
    with fake_bsh() as fake:
        assert BeanShellClient("127.0.0.1", fake.port).get_property("loadguard.tpm") is None


def test_script_statements_each_end_in_semicolon_and_newline() -> None:
    with fake_bsh() as fake:
        BeanShellClient("127.0.0.1", fake.port).set_property("a.b", 1.5)
    (script,) = fake.scripts
    lines = script.split("\n")
    assert lines[-1] == ""
    assert all(line.endswith(";") for line in lines[:-1])
    assert lines[-2] == f'print("{SENTINEL}");'


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("error", "BeanShell error"),
        ("truncate", "before the sentinel"),
        ("wrong_echo", "read back 999.0"),
    ],
)
def test_bad_reply_is_a_reply_error(mode: str, error: str) -> None:
    with fake_bsh(mode=mode) as fake:
        client = BeanShellClient("127.0.0.1", fake.port)
        with pytest.raises(BeanShellReplyError, match=error):
            client.set_property("loadguard.tpm", 60)


def test_refused_connect_retries_until_deadline() -> None:
    client = BeanShellClient("127.0.0.1", free_port(), connect_timeout=0.5)
    start = time.monotonic()
    with pytest.raises(ActuatorError, match="connection refused"):
        client.get_property("x")
    assert 0.4 <= time.monotonic() - start < 2.0


def test_connect_retry_reaches_a_server_that_starts_late() -> None:
    port = free_port()
    ready = threading.Event()

    def late_start() -> None:
        time.sleep(0.4)
        with fake_bsh(port=port):
            ready.set()
            time.sleep(2)

    thread = threading.Thread(target=late_start, daemon=True)
    thread.start()
    client = BeanShellClient("127.0.0.1", port, connect_timeout=3.0)
    assert client.set_property("loadguard.tpm", 120) == 120.0
    assert ready.is_set()
    thread.join()


def test_silent_server_hits_read_timeout() -> None:
    with fake_bsh(delay_s=3.0) as fake:
        client = BeanShellClient("127.0.0.1", fake.port, read_timeout=0.3)
        start = time.monotonic()
        with pytest.raises(ActuatorError, match="read timeout"):
            client.get_property("x")
        assert time.monotonic() - start < 1.5


def test_server_that_never_closes_hits_read_timeout() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    held: list[socket.socket] = []

    def accept_and_dribble() -> None:
        conn, _ = listener.accept()
        held.append(conn)
        for _ in range(20):
            try:
                conn.sendall(b"bsh % ")
            except OSError:
                return
            time.sleep(0.1)

    threading.Thread(target=accept_and_dribble, daemon=True).start()
    client = BeanShellClient("127.0.0.1", listener.getsockname()[1], read_timeout=0.5)
    start = time.monotonic()
    with pytest.raises(ActuatorError, match="read timeout"):
        client.get_property("x")
    assert time.monotonic() - start < 1.5
    for conn in held:
        conn.close()
    listener.close()


HOSTILE_NAMES = [
    'x");System.exit(0);//',
    "x\nSystem.exit(0);",
    "loadguard tpm",
    "",
    'a"b',
    "rate;",
    "/cart?id=1",
    "ünïcode",
    "x\\u0022",
    "$(rm -rf /)",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_property_name_never_reaches_the_socket(name: str) -> None:
    with fake_bsh() as fake:
        client = BeanShellClient("127.0.0.1", fake.port)
        with pytest.raises(UsageError, match="bad property name"):
            client.set_property(name, 10)
        with pytest.raises(UsageError, match="bad property name"):
            client.get_property(name)
        assert fake.connections == 0


@pytest.mark.parametrize(
    "value", ["10", '1");System.exit(0);//', math.nan, math.inf, -math.inf, True, None, b"1"]
)
def test_hostile_value_never_reaches_the_socket(value: object) -> None:
    with fake_bsh() as fake:
        client = BeanShellClient("127.0.0.1", fake.port)
        with pytest.raises(UsageError, match="bad property value"):
            client.set_property("loadguard.tpm", value)  # type: ignore[arg-type]
        assert fake.connections == 0


@given(st.text(max_size=40))
def test_any_name_is_refused_or_passed_verbatim(name: str) -> None:
    try:
        script = get_script(name)
    except UsageError:
        assert re.fullmatch(r"[A-Za-z0-9_.]+", name) is None
        return
    assert re.fullmatch(r"[A-Za-z0-9_.]+", name) is not None
    assert _SCRIPT_ALPHABET.fullmatch(script)
    assert script.count(f'"{name}"') == 2


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_value_formats_to_a_plain_number(value: float) -> None:
    text = format_number(value)
    assert re.fullmatch(r"-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?", text)
    assert float(text) == value
    assert _SCRIPT_ALPHABET.fullmatch(set_script("loadguard.tpm", value))


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("BeanShell 2.0b6\nbsh % loadguard:value=600\nbsh % loadguard:end\nbsh % ", "600"),
        ("bsh % bsh % loadguard:value=40.0\nbsh % loadguard:end\n", "40.0"),
        ("bsh % loadguard:unset\nbsh % loadguard:end\nbsh % ", None),
    ],
)
def test_parse_reply_extracts_the_value_line(reply: str, value: str | None) -> None:
    assert parse_reply(reply) == value


@pytest.mark.parametrize(
    ("value", "message"), [(None, "x.y is unset"), ("fast", "x.y='fast' is not a number")]
)
def test_a_property_that_is_unset_or_not_a_number_has_no_number(
    value: str | None, message: str
) -> None:
    from loadguard.actuator.bsh import PropertyValueError, property_number

    assert property_number("x.y", "12.5") == 12.5
    with pytest.raises(PropertyValueError, match=message):
        property_number("x.y", value)
