"""TeaStore's source for the tests that build and serve the real TeaStore.

They find it the way ``loadguard teastore`` does: ``$LOADGUARD_TEASTORE_SOURCE``. Unset,
they are skipped with one line saying what to set; ``LOADGUARD_REQUIRE_TEASTORE=1`` (set
by ``.ci/run``) turns a missing source into a failure, so CI never skips them silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loadguard.lab.teastore.source import RELEASE_URL, SOURCE_ENV

REQUIRE_ENV = "LOADGUARD_REQUIRE_TEASTORE"


def teastore_source() -> Path:
    """The source to pass as ``--source``; skips (or fails, when required) without one."""
    given = os.environ.get(SOURCE_ENV, "")
    path = Path(given).expanduser() if given else None
    if path is not None and path.exists():
        return path.resolve()
    if path is None:
        message = f"set {SOURCE_ENV} to TeaStore 1.4.2's source tarball ({RELEASE_URL})"
    else:
        message = f"{SOURCE_ENV}={given}: no such file or folder"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1)")
    pytest.skip(message)
