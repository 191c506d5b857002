"""Which rows the window counts: each request once (pure core, stateful across chunks).

By default a row counts when it is a sampler's own result. Two kinds of row are left out:

* Transaction Controller rows (response message ``Number of samples in transaction : N,
  number of failing samples : M``). Their children have rows of their own, before them
  (plain controller) or after them (``generate parent sample``). With ``transactions``
  they count as labels of their own, and ``transaction_labels`` lists them so that the
  window can keep them out of the overall figures (their children are already there).
  A label once seen on such a row marks later rows too: a "generate parent sample"
  controller cut short when the test stops writes a row with an empty message.
* sub-results: since JMeter 5.0 a sample's sub-results (redirects, embedded resources)
  get rows of their own, labelled ``<parent>-<n>``, written right after their parent by
  the same thread. A row is a sub-result when its label is ``X-<digits>`` and ``X`` is the
  label of the previous row of the same thread or of that row's own parent (siblings,
  nested sub-results). In XML the nesting says so directly.

``labels`` / ``exclude_labels`` (regular expressions, ``re.search``) then select labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loadguard.errors import ConfigError
from loadguard.jtl.raw_rows import BOOL, SUBRESULT_LABEL, RawRows
from loadguard.jtl.sample import SampleBatch


@dataclass(frozen=True, slots=True)
class SelectionCounts:
    rows: int = 0
    counted: int = 0
    transactions: int = 0
    subresults: int = 0
    filtered: int = 0


_LABEL_CACHE = 65_536


class RowSelector:
    def __init__(
        self,
        *,
        transactions: bool = False,
        labels: str | None = None,
        exclude_labels: str | None = None,
    ) -> None:
        self.transactions = transactions
        self._include = _regex("labels", labels)
        self._exclude = _regex("exclude_labels", exclude_labels)
        self._label_ok: dict[str, bool] = {}
        # Per thread: (label of its last row, label of that row's top-level parent).
        self._last: dict[str, tuple[str, str]] = {}
        self.transaction_labels: set[str] = set()
        self.rows = 0
        self.counted = 0
        self.skipped_transactions = 0
        self.skipped_subresults = 0
        self.filtered = 0

    def counts(self) -> SelectionCounts:
        return SelectionCounts(
            self.rows,
            self.counted,
            self.skipped_transactions,
            self.skipped_subresults,
            self.filtered,
        )

    def reset(self) -> None:
        """A new file: forget per-thread history (the counters keep running)."""
        self._last.clear()

    def _wanted(self, name: str) -> bool:
        ok = self._label_ok.get(name)
        if ok is None:
            if len(self._label_ok) >= _LABEL_CACHE:
                self._label_ok.clear()  # labels that never repeat must not grow memory
            ok = (self._include is None or self._include.search(name) is not None) and (
                self._exclude is None or self._exclude.search(name) is None
            )
            self._label_ok[name] = ok
        return ok

    def _subresults(self, rows: RawRows) -> BOOL:
        """Sub-result rows of a CSV chunk, updating the per-thread history."""
        n = len(rows)
        names = rows.label_names
        parents = [SUBRESULT_LABEL.match(str(name)) for name in names]
        candidate_code = np.asarray([m is not None for m in parents], np.bool_)
        sub = np.zeros(n, np.bool_)
        threads = rows.thread_names
        if candidate_code.any():
            cand = np.flatnonzero(candidate_code[rows.label_code])
            # Previous row of the same thread, within the chunk (-1: none).
            order = np.argsort(rows.thread_code, kind="stable")
            prev_sorted = np.empty(n, np.int64)
            prev_sorted[0] = -1
            prev_sorted[1:] = order[:-1]
            same = np.zeros(n, np.bool_)
            same[1:] = rows.thread_code[order[1:]] == rows.thread_code[order[:-1]]
            prev = np.full(n, -1, np.int64)
            prev[order] = np.where(same, prev_sorted, -1)
            root: dict[int, str] = {}
            codes = rows.label_code
            for i in cand.tolist():
                label = str(names[codes[i]])
                match = parents[codes[i]]
                assert match is not None
                parent = match.group(1)
                p = int(prev[i])
                if p >= 0:
                    prev_label = str(names[codes[p]])
                    prev_root = root.get(p, prev_label)
                else:
                    # The thread's last row from an earlier chunk; a CSV reader that only
                    # started reading thread names with this chunk filed it under "". Both
                    # are asked: the named entry may predate the unnamed one.
                    thread = str(threads[rows.thread_code[i]])
                    known = [q for q in (self._last.get(thread), self._last.get("")) if q]
                    hit = next((q for q in known if parent and parent in q), None)
                    prev_label, prev_root = hit or (known[0] if known else ("", ""))
                if parent and parent in (prev_label, prev_root):
                    sub[i] = True
                    root[i] = prev_root
                else:
                    root[i] = label
            last_rows = self._last_rows(rows)
            for t, i in last_rows:
                label = str(names[codes[i]])
                self._last[str(threads[t])] = (label, root.get(i, label))
        else:
            for t, i in self._last_rows(rows):
                label = str(names[rows.label_code[i]])
                self._last[str(threads[t])] = (label, label)
        return sub

    @staticmethod
    def _last_rows(rows: RawRows) -> list[tuple[int, int]]:
        last = np.full(len(rows.thread_names), -1, np.int64)
        # Fancy assignment with repeated indices keeps the last write.
        last[rows.thread_code] = np.arange(len(rows), dtype=np.int64)
        present = np.flatnonzero(last >= 0)
        return list(zip(present.tolist(), last[present].tolist(), strict=True))

    def all_counted(self, rows: RawRows) -> bool:
        """Whether ``select`` would keep every row of ``rows`` as it is, told cheaply.

        Yes when no row is a transaction, no label is one known as a transaction, no label
        filter is set, and no label ``X-<n>`` has an ``X`` that could be a previous row of
        its thread (a label of ``rows``, or a thread's last label or root before them).
        The test looks at the distinct labels only, never at each row; a no only means
        that ``select`` must look. On a yes the rows are taken as counted: the counters
        and the per-thread history move on as ``select`` would move them.
        """
        if self._include is not None or self._exclude is not None or rows.transaction.any():
            return False
        names = [str(name) for name in rows.label_names]
        if not self.transaction_labels.isdisjoint(names):
            return False
        if rows.subresult is not None:
            if rows.subresult.any():
                return False
        else:
            known = {label for pair in self._last.values() for label in pair}
            known.update(names)
            for name in names:
                match = SUBRESULT_LABEL.match(name)
                if match is not None and match.group(1) in known:
                    return False
        n = len(rows)
        self.rows += n
        self.counted += n
        for t, i in self._last_rows(rows):
            label = str(rows.label_names[rows.label_code[i]])
            self._last[str(rows.thread_names[t])] = (label, label)
        return True

    def select(self, rows: RawRows) -> SampleBatch:
        """The counted rows of ``rows`` (file order), as a batch for the window."""
        n = len(rows)
        if n == 0:
            return SampleBatch.empty()
        self.rows += n
        sub = rows.subresult if rows.subresult is not None else self._subresults(rows)
        tx = rows.transaction
        keep = ~sub
        n_sub = int(np.count_nonzero(sub))
        if tx.any():
            tx_names = np.unique(rows.label_code[tx & keep])
            self.transaction_labels.update(str(rows.label_names[c]) for c in tx_names.tolist())
        if self.transaction_labels:
            # A "generate parent sample" controller cut short at the end of a test writes a
            # row with an empty message: known transaction labels mark it too.
            known = [i for i, name in enumerate(rows.label_names)
                     if str(name) in self.transaction_labels]  # fmt: skip
            if known:
                tx = tx | np.isin(rows.label_code, np.asarray(known, np.int64))
        n_tx = int(np.count_nonzero(tx & keep))
        if n_tx and not self.transactions:
            keep &= ~tx
            self.skipped_transactions += n_tx
        self.skipped_subresults += n_sub
        if self._include is not None or self._exclude is not None:
            ok_code: npt.NDArray[np.bool_] = np.asarray(
                [self._wanted(str(name)) for name in rows.label_names], np.bool_
            )
            by_label = ok_code[rows.label_code]
            self.filtered += int(np.count_nonzero(keep & ~by_label))
            keep &= by_label
        counted = int(np.count_nonzero(keep))
        self.counted += counted
        if counted == n:
            return rows.to_batch()
        return rows.to_batch(keep)


def _regex(setting: str, pattern: str | None) -> re.Pattern[str] | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(setting, f"bad regular expression {pattern!r}: {exc}") from None
