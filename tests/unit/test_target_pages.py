"""The shop's pages carry exactly the markers TeaStore's browse profile extracts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lxml import etree

from loadguard.lab.target import pages

EXAMPLE_PLAN = Path(__file__).parents[2] / "examples" / "teastore" / "teastore-browse.jmx"


def _all(marker: str, text: str) -> list[str]:
    return re.findall(pages.MARKERS[marker], text)


@pytest.mark.parametrize("user", [None, "user1"])
def test_home_links_every_category_by_id(user: str | None) -> None:
    ids = _all("category", pages.home_page(user))
    assert ids and set(ids) == {str(i) for i in range(1, len(pages.CATEGORIES) + 1)}


@pytest.mark.parametrize(
    "page_text",
    [
        pages.home_page(None),
        pages.login_page(None, "wrong"),
        pages.category_page(3, 2, "u"),
        pages.product_page(pages.product(7) or pages.Product(7, 1, "x", 1), None),
        pages.cart_page([1, 2], "u"),
    ],
)
def test_every_category_marker_carries_a_number(page_text: str) -> None:
    # An empty capture would send `category=&page=1`: every occurrence must have digits.
    assert all(_all("category", page_text))


@pytest.mark.parametrize(("category", "page"), [(1, 1), (2, 3), (6, 5)])
def test_category_page_offers_its_products_as_hidden_inputs(category: int, page: int) -> None:
    ids = [int(x) for x in _all("product_id", pages.category_page(category, page, None))]
    expected = [p.id for p in pages.category_products(category, page)]
    assert ids == expected and len(ids) == pages.PRODUCTS_PER_PAGE


@pytest.mark.parametrize("category", [1, 4])
def test_category_page_links_each_page_and_nothing_else(category: int) -> None:
    found = _all("page_id", pages.category_page(category, 1, None))
    assert found == [str(n) for n in range(1, pages.PAGES_PER_CATEGORY + 1)]


def test_product_page_has_its_add_to_cart_form() -> None:
    item = pages.product(250)
    assert item is not None and item.category == 3
    assert _all("product_id", pages.product_page(item, None)) == ["250"]


@pytest.mark.parametrize(("pid", "valid"), [(0, False), (1, True), (600, True), (601, False)])
def test_product_ids_cover_the_catalogue(pid: int, valid: bool) -> None:
    assert (pages.product(pid) is not None) is valid


def test_cart_page_lists_known_products_only() -> None:
    text = pages.cart_page([1, 9999, 2], "u")
    assert text.count(" No. ") == 2


def test_example_plan_uses_exactly_teastores_extractors() -> None:
    # The example plan's extractors are TeaStore's; these are the patterns pages.MARKERS holds.
    tree = etree.parse(str(EXAMPLE_PLAN))
    found = {
        el.findtext("stringProp[@name='RegexExtractor.refname']"): el.findtext(
            "stringProp[@name='RegexExtractor.regex']"
        )
        for el in tree.iter("RegexExtractor")
    }
    assert found == pages.MARKERS
