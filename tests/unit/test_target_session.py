"""The cookie session and the login rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadguard.lab.target.session import MAX_CART, Session, valid_login


@given(
    user=st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9_.@-]{1,64}", fullmatch=True)),
    cart=st.lists(st.integers(min_value=1, max_value=600), max_size=MAX_CART),
)
def test_session_round_trips_through_its_cookie(user: str | None, cart: list[int]) -> None:
    session = Session(user, tuple(cart))
    assert Session.decode(session.encode()) == session


@pytest.mark.parametrize("value", [None, "", "!!!", "e30", "bm90IGpzb24", "eyJ1IjogWzFdfQ"])
def test_unreadable_cookie_is_an_empty_session(value: str | None) -> None:
    decoded = Session.decode(value)
    assert decoded.user is None


def test_cart_is_bounded() -> None:
    session = Session("u")
    for pid in range(1, MAX_CART + 10):
        session = session.with_product(pid)
    assert len(session.cart) == MAX_CART
    assert session.cart[-1] == MAX_CART + 9


@pytest.mark.parametrize(
    ("username", "password", "ok"),
    [
        ("user1", "password", True),
        ("user999", "password", True),
        ("user1", "wrong", False),
        ("", "password", False),
        ("a b", "password", False),
    ],
)
def test_teastore_users_log_in_with_password(username: str, password: str, ok: bool) -> None:
    assert valid_login(username, password) is ok
