"""Where the TeaStore source is, and the hash that names its cached build.

The source is a tree (a checkout or an extracted archive) or a ``.tar.gz`` of one, given
by ``--source`` or ``$LOADGUARD_TEASTORE_SOURCE`` (``SOURCE_ENV``). There is no default:
without one, the error says where TeaStore 1.4.2's source comes from (``RELEASE_URL``).

The cache key is a SHA-256 over the recipe (Tomcat and HSQLDB versions, the Maven
command) and the source: a tarball's bytes, or for a tree every file's relative path and
bytes in sorted order (``target/`` and ``.git/`` skipped, as a build writes there).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from loadguard.errors import UsageError

#: The environment variable that stands for ``--source`` (the tests read it too).
SOURCE_ENV = "LOADGUARD_TEASTORE_SOURCE"
#: TeaStore 1.4.2's source tarball, as GitHub serves the release's tag.
RELEASE_URL = "https://github.com/DescartesResearch/TeaStore/archive/refs/tags/v1.4.2.tar.gz"
NO_SOURCE = (
    f"no TeaStore source: download TeaStore 1.4.2's source tarball ({RELEASE_URL}) and "
    f"pass it with --source FILE (or set {SOURCE_ENV}=FILE)"
)
_SKIP_DIRS = frozenset({"target", ".git"})


@dataclass(frozen=True)
class Source:
    path: Path
    is_archive: bool


def source_from_env() -> Path | None:
    """``$LOADGUARD_TEASTORE_SOURCE`` as a path, for a caller that spawns ``loadguard
    teastore`` and wants a missing source to fail before the child starts."""
    given = os.environ.get(SOURCE_ENV, "")
    return Path(given) if given else None


def resolve_source(given: Path | None) -> Source:
    """The source to build; raises ``UsageError`` (exit 2) when there is none."""
    if given is None:
        raise UsageError(NO_SOURCE)
    path = given.expanduser().resolve()
    if path.is_dir():
        if not (path / "pom.xml").is_file() or not (path / "services").is_dir():
            raise UsageError(f"--source {given}: not a TeaStore tree (no pom.xml and services/)")
        return Source(path, False)
    if path.is_file():
        if not path.name.endswith((".tar.gz", ".tgz")):
            raise UsageError(f"--source {given}: expected a folder or a .tar.gz")
        return Source(path, True)
    raise UsageError(f"--source {given}: no such file or folder")


def _tree_files(root: Path) -> Iterable[Path]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts[:-1]) or rel.name in _SKIP_DIRS:
            continue
        if path.is_file():
            yield path


def source_hash(source: Source, recipe: str) -> str:
    """16 hex digits of SHA-256 over ``recipe`` and the source's content."""
    digest = hashlib.sha256(recipe.encode())
    if source.is_archive:
        with source.path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    else:
        for path in _tree_files(source.path):
            digest.update(path.relative_to(source.path).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()[:16]
