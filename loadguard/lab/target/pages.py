"""The shop's HTML pages: a tiny tea catalogue laid out like TeaStore's web UI.

Pure functions from a page's data to its HTML. The markup carries exactly the markers
that TeaStore's browse profile (``examples/jmeter/teastore_browse_nogui.jmx`` in
DescartesResearch/TeaStore) extracts with regular expressions:

* every page's navigation links each category as ``category?category=N&page=1`` --
  the home page's ``category=([0-9]*)``;
* a category page has one add-to-cart form per product with
  ``<input type='hidden' name="productid" value="N">`` -- ``product_id``;
* a category page links its pages as ``...&page=N">N</a>`` -- ``page=([0-9]*)">[0-9]*<``.

``MARKERS`` holds those three patterns; the unit tests run them over these pages.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

BASE = "/tools.descartes.teastore.webui"

# The regular expressions TeaStore's browse profile applies (Java regex, same in Python).
MARKERS: dict[str, str] = {
    "category": r"category=([0-9]*)",
    "product_id": '<input type=\'hidden\' name="productid" value="([0-9]*)">',
    "page_id": 'page=([0-9]*)">[0-9]*<',
}

CATEGORIES: tuple[str, ...] = (
    "Black Tea",
    "Green Tea",
    "Herbal Tea",
    "Rooibos",
    "White Tea",
    "Tea Cups",
)
PRODUCTS_PER_CATEGORY = 100
PRODUCTS_PER_PAGE = 20
PAGES_PER_CATEGORY = PRODUCTS_PER_CATEGORY // PRODUCTS_PER_PAGE


@dataclass(frozen=True, slots=True)
class Product:
    id: int
    category: int
    name: str
    price_cents: int


def product(product_id: int) -> Product | None:
    """The product with that id (ids 1..600, 100 per category), or None."""
    if not 1 <= product_id <= len(CATEGORIES) * PRODUCTS_PER_CATEGORY:
        return None
    category = (product_id - 1) // PRODUCTS_PER_CATEGORY + 1
    name = f"{CATEGORIES[category - 1]} No. {(product_id - 1) % PRODUCTS_PER_CATEGORY + 1}"
    return Product(product_id, category, name, 295 + (product_id * 37) % 1500)


def category_products(category: int, page: int) -> list[Product]:
    """The products shown on ``page`` (1-based) of ``category``."""
    first = (category - 1) * PRODUCTS_PER_CATEGORY + (page - 1) * PRODUCTS_PER_PAGE + 1
    return [p for i in range(PRODUCTS_PER_PAGE) if (p := product(first + i)) is not None]


def valid_category(category: int) -> bool:
    return 1 <= category <= len(CATEGORIES)


def valid_page(page: int) -> bool:
    return 1 <= page <= PAGES_PER_CATEGORY


def _layout(title: str, body: str, user: str | None) -> str:
    nav = "\n".join(
        f'      <li><a href="{BASE}/category?category={i}&page=1">{html.escape(name)}</a></li>'
        for i, name in enumerate(CATEGORIES, start=1)
    )
    if user is None:
        account = f'<a href="{BASE}/login">Sign in</a>'
    else:
        account = (
            f'<form action="{BASE}/loginAction" method="POST">'
            f"Signed in as {html.escape(user)} "
            '<button type="submit" name="logout" value="">Sign out</button></form>'
        )
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>TeaStore demo - {html.escape(title)}</title></head>
<body>
  <header><a href="{BASE}/">TeaStore</a> | <a href="{BASE}/cart">Cart</a> | {account}</header>
  <nav>
    <ul>
{nav}
    </ul>
  </nav>
  <main>
{body}
  </main>
</body>
</html>
"""


def _price(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


def _add_to_cart_form(p: Product) -> str:
    return (
        f'<form action="{BASE}/cartAction" method="POST">'
        f'<input type=\'hidden\' name="productid" value="{p.id}">'
        '<button type="submit" name="addToCart" value="">Add to Cart</button></form>'
    )


def home_page(user: str | None) -> str:
    body = "    <h1>Welcome to the TeaStore</h1>\n    <p>Pick a category to browse.</p>"
    return _layout("Home", body, user)


def login_page(user: str | None, message: str | None = None) -> str:
    note = f'    <p class="error">{html.escape(message)}</p>\n' if message else ""
    body = (
        f'{note}    <form action="{BASE}/loginAction" method="POST">'
        '<input name="username"> <input name="password" type="password">'
        '<button type="submit">Sign in</button></form>'
    )
    return _layout("Login", body, user)


def category_page(category: int, page: int, user: str | None) -> str:
    items = "\n".join(
        f'      <li><a href="{BASE}/product?id={p.id}">{html.escape(p.name)}</a> '
        f"{_price(p.price_cents)} {_add_to_cart_form(p)}</li>"
        for p in category_products(category, page)
    )
    pages = " ".join(
        f'<a href="{BASE}/category?category={category}&page={n}">{n}</a>'
        for n in range(1, PAGES_PER_CATEGORY + 1)
    )
    body = (
        f"    <h1>{html.escape(CATEGORIES[category - 1])}</h1>\n"
        f'    <ul class="products">\n{items}\n    </ul>\n'
        f'    <div class="pagination">{pages}</div>'
    )
    return _layout(CATEGORIES[category - 1], body, user)


def product_page(p: Product, user: str | None) -> str:
    body = (
        f"    <h1>{html.escape(p.name)}</h1>\n"
        f"    <p>{_price(p.price_cents)}</p>\n"
        f"    {_add_to_cart_form(p)}"
    )
    return _layout(p.name, body, user)


def cart_page(product_ids: Sequence[int], user: str | None) -> str:
    rows = [p for pid in product_ids if (p := product(pid)) is not None]
    items = "\n".join(f"      <li>{html.escape(p.name)} {_price(p.price_cents)}</li>" for p in rows)
    total = _price(sum(p.price_cents for p in rows))
    body = f"    <h1>Shopping Cart</h1>\n    <ul>\n{items}\n    </ul>\n    <p>Total: {total}</p>"
    return _layout("Cart", body, user)
