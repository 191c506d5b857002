"""The fuzzing harness: committed seed corpora, byte mutations, a fixed budget, and the
one property every target must keep -- it returns, or raises a ``LoadGuardError``.

Budget: ``LOADGUARD_FUZZ_EXAMPLES`` examples per target (default 200, sized so the whole
suite runs in CI in well under a minute); raise it for a longer local session, e.g.
``LOADGUARD_FUZZ_EXAMPLES=20000 .venv/bin/pytest tests/fuzz``. A failure found that way
belongs in the target's corpus folder (``tests/fuzz/corpus/<target>/``) once fixed, so
every later run replays it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from loadguard.errors import LoadGuardError

CORPUS = Path(__file__).resolve().parent / "corpus"
EXAMPLES = int(os.environ.get("LOADGUARD_FUZZ_EXAMPLES", "200"))

#: Every fuzz test: a fixed number of examples, no deadline (a loaded CI box), no
#: example database (runs are reproducible from the corpus and the printed seed).
budget = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)

T = TypeVar("T")


def seeds(target: str) -> list[bytes]:
    """The committed corpus of one target, sorted by name (stable order)."""
    folder = CORPUS / target
    files = sorted(p for p in folder.iterdir() if p.is_file())
    assert files, f"empty corpus {folder}"
    return [p.read_bytes() for p in files]


def seed_ids(target: str) -> list[str]:
    return sorted(p.name for p in (CORPUS / target).iterdir() if p.is_file())


def ours_or_ok(fn: Callable[[], T]) -> T | LoadGuardError:
    """Run ``fn``; a ``LoadGuardError`` is an accepted outcome, anything else escapes."""
    try:
        return fn()
    except LoadGuardError as exc:
        assert exc.message and "\n" not in exc.message, repr(exc.message)
        return exc


_OPS = ("truncate", "delete", "insert", "replace", "duplicate", "splice")


@st.composite
def mutated(
    draw: st.DrawFn, corpus: Sequence[bytes], tokens: Sequence[bytes], max_ops: int = 4
) -> bytes:
    """A corpus entry after up to ``max_ops`` byte mutations: cut, delete, insert or
    overwrite with a token of the format (or random bytes), duplicate, splice two seeds."""
    data = bytearray(draw(st.sampled_from(list(corpus))))
    piece = st.sampled_from(list(tokens)) | st.binary(max_size=12)
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(_OPS))
        n = len(data)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 64)))
        if op == "truncate":
            del data[i:]
        elif op == "delete":
            del data[i:j]
        elif op == "insert":
            data[i:i] = draw(piece)
        elif op == "replace":
            data[i:j] = draw(piece)
        elif op == "duplicate":
            data[i:i] = data[i:j] * draw(st.integers(1, 3))
        else:
            other = draw(st.sampled_from(list(corpus)))
            k = draw(st.integers(0, len(other)))
            data = data[:i] + bytearray(other[k:])
    return bytes(data)


@st.composite
def splits(draw: st.DrawFn, data: bytes, max_parts: int = 6) -> list[bytes]:
    """``data`` cut at arbitrary points (the follower sees JTL bytes in any pieces)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=max_parts - 1)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]
