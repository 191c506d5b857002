"""The shop session: who is signed in and what is in the cart, kept in a cookie.

Like TeaStore's ``sessionBlob`` cookie, the state travels with the client, so the server
holds nothing per user and its memory does not grow with the number of users. The value
is URL-safe base64 of a small JSON object; anything unreadable is an empty session.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass

COOKIE = "sessionBlob"
MAX_CART = 50
_USER = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True, slots=True)
class Session:
    user: str | None = None
    cart: tuple[int, ...] = ()

    def encode(self) -> str:
        raw = json.dumps({"u": self.user, "c": list(self.cart)}, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    def with_product(self, product_id: int) -> Session:
        return Session(self.user, (*self.cart, product_id)[-MAX_CART:])

    @staticmethod
    def decode(value: str | None) -> Session:
        if not value:
            return Session()
        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
            data = json.loads(raw)
            user = data.get("u")
            cart = tuple(int(x) for x in data.get("c", ()))[-MAX_CART:]
        except (binascii.Error, ValueError, TypeError, AttributeError):
            return Session()
        if user is not None and not (isinstance(user, str) and _USER.match(user)):
            user = None
        return Session(user, cart)


def valid_login(username: str, password: str) -> bool:
    """TeaStore's generated users all have the password ``password``; any sane name works."""
    return bool(_USER.match(username)) and password == "password"
