"""Row selection: each request once (no transaction rows, no sub-results), label filters."""

from __future__ import annotations

import pytest

from loadguard.jtl.raw_rows import RawRows
from loadguard.jtl.selection import RowSelector

TX = True


def rows(spec: list[tuple[str, str, bool]]) -> RawRows:
    """(label, thread, is_transaction) in file order."""
    n = len(spec)
    return RawRows.build(
        list(range(n)), [10] * n, [True] * n, [s[0] for s in spec], [s[1] for s in spec],
        [1] * n, [s[2] for s in spec],
    )  # fmt: skip


def selected(sel: RowSelector, spec: list[tuple[str, str, bool]]) -> list[str]:
    return [str(x) for x in sel.select(rows(spec)).label]


# The row orders the real JMeter 5.6.3 writes (see tests/plans/metrics_mix.jmx).
PLAIN_TC = [("get ok", "T1", False), ("search", "T1", False), ("tx_plain", "T1", TX)]
PARENT_TC = [("tx_parent", "T1", TX), ("p_slow", "T1", False), ("p_redirect", "T1", False),
             ("p_redirect-0", "T1", False), ("p_redirect-1", "T1", False)]  # fmt: skip
REDIRECT = [("redir", "T2", False), ("redir-0", "T2", False), ("redir-1", "T2", False)]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (PLAIN_TC, ["get ok", "search"]),
        (PARENT_TC, ["p_slow", "p_redirect"]),
        (REDIRECT, ["redir"]),
        # Interleaved threads: T1's sub-results still follow T1's parent.
        (
            [
                ("a", "T1", False),
                ("b", "T2", False),
                ("a-0", "T1", False),
                ("b-0", "T2", False),
                ("a-1", "T1", False),
            ],
            ["a", "b"],
        ),
        # A label that merely ends in -<digits> is a sampler of its own.
        ([("step-1", "T1", False), ("step-2", "T1", False)], ["step-1", "step-2"]),
        # Nested sub-results.
        (
            [
                ("p", "T1", False),
                ("p-0", "T1", False),
                ("p-0-0", "T1", False),
                ("p-1", "T1", False),
            ],
            ["p"],
        ),
    ],
)
def test_counts_each_request_once(spec: list[tuple[str, str, bool]], expected: list[str]) -> None:
    assert selected(RowSelector(), spec) == expected


def test_subresults_split_across_chunks_are_still_recognised() -> None:
    sel = RowSelector()
    assert selected(sel, [("p", "T1", False)]) == ["p"]
    assert selected(sel, [("p-0", "T1", False), ("q", "T2", False)]) == ["q"]
    assert selected(sel, [("p-1", "T1", False)]) == []
    assert sel.skipped_subresults == 2


def test_transactions_flag_keeps_transaction_rows_and_names_them() -> None:
    sel = RowSelector(transactions=True)
    assert selected(sel, PLAIN_TC) == ["get ok", "search", "tx_plain"]
    assert sel.transaction_labels == {"tx_plain"}


def test_transaction_labels_are_known_even_when_skipped() -> None:
    sel = RowSelector()
    selected(sel, PARENT_TC)
    assert sel.transaction_labels == {"tx_parent"}
    assert sel.skipped_transactions == 1


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        ("^/api/", None, ["/api/a", "/api/b"]),
        (None, "b$", ["/api/a", "/static/x"]),
        ("^/api/", "b$", ["/api/a"]),
    ],
)
def test_label_filters(include: str | None, exclude: str | None, expected: list[str]) -> None:
    sel = RowSelector(labels=include, exclude_labels=exclude)
    spec = [("/api/a", "T", False), ("/api/b", "T", False), ("/static/x", "T", False)]
    assert selected(sel, spec) == expected
    assert sel.filtered == 3 - len(expected)


def test_xml_structure_overrides_label_inference() -> None:
    raw = RawRows.build([1, 2], [5, 5], [True, True], ["a", "a-0"], ["T", "T"], [1, 1],
                        [False, False], [False, False])  # fmt: skip
    assert [str(x) for x in RowSelector().select(raw).label] == ["a", "a-0"]


def test_interrupted_parent_transaction_is_recognised_by_its_label() -> None:
    # JMeter 5.6.3 at test end: tx_parent with no children and an empty message.
    sel = RowSelector()
    assert selected(sel, PARENT_TC) == ["p_slow", "p_redirect"]
    assert selected(sel, [("tx_parent", "T1", False), ("redir", "T2", False)]) == ["redir"]
    assert sel.skipped_transactions == 2


@pytest.mark.parametrize(
    ("spec", "plain"),
    [
        (PLAIN_TC, False),
        (PARENT_TC, False),
        (REDIRECT, False),
        ([("a", "T1", False), ("b", "T2", False), ("a-0", "T1", False)], False),
        ([("step-1", "T1", False), ("step-2", "T1", False)], True),
        ([("/home", "T1", False), ("/cart", "T2", False), ("/home", "T2", False)], True),
    ],
)
def test_all_counted_says_yes_only_when_select_keeps_every_row(
    spec: list[tuple[str, str, bool]], plain: bool
) -> None:
    assert RowSelector().all_counted(rows(spec)) is plain
    assert (selected(RowSelector(), spec) == [s[0] for s in spec]) is plain


def test_all_counted_says_yes_for_plain_rows_and_counts_them() -> None:
    sel = RowSelector()
    assert sel.all_counted(rows([("step-1", "T1", False), ("/home", "T2", False)]))
    assert (sel.rows, sel.counted) == (2, 2)


@pytest.mark.parametrize(
    ("selector", "spec"),
    [
        (RowSelector(), [("get ok", "T1", False), ("tx", "T1", TX)]),
        (RowSelector(transactions=True), [("tx", "T1", TX)]),
        (RowSelector(labels="^/api/"), [("/api/a", "T1", False)]),
        (RowSelector(), [("p", "T1", False), ("p-0", "T1", False)]),
    ],
)
def test_all_counted_says_no_when_select_must_look(
    selector: RowSelector, spec: list[tuple[str, str, bool]]
) -> None:
    assert not selector.all_counted(rows(spec))
    assert selector.rows == 0


def test_all_counted_keeps_the_history_that_later_sub_results_need() -> None:
    sel = RowSelector()
    assert sel.all_counted(rows([("p", "T1", False), ("q", "T2", False)]))
    later = [("p-0", "T1", False), ("q", "T2", False)]
    assert not sel.all_counted(rows(later))  # p-0 may follow p: select must look
    assert selected(sel, later) == ["q"] and sel.skipped_subresults == 1


def test_a_label_known_as_a_transaction_is_not_all_counted() -> None:
    sel = RowSelector()
    selected(sel, PARENT_TC)
    assert not sel.all_counted(rows([("tx_parent", "T1", False)]))  # cut short: no message
