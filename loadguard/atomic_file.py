"""The one atomic writer: files appear whole, each with mode 0644.

Every file is written in full to a temporary name in its own folder (same file system,
so ``os.replace`` is atomic), flushed to disk, then all are renamed. If any write fails,
every temporary is removed and no target is touched: a reader sees the old file or the
new one, never a half-written one. (Between the renames of two files a crash can leave a
new file beside an old one; each file on its own is always whole.)

The mode is ``FILE_MODE`` (0644) for every file, whatever ``mkstemp`` creates (0600):
summary.json, the report, the JUnit file and an injected plan are meant to be read by
others, like the decision log beside them. Callers turn the ``OSError`` into their own
domain error.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

FILE_MODE = 0o644


def write_files(files: Mapping[Path, bytes]) -> list[Path]:
    """Write every ``path -> content`` pair through temp + rename; returns the paths.
    Raises ``OSError`` after removing every temporary (no target touched)."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            folder = path.parent if str(path.parent) else Path(".")
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), FILE_MODE)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        for tmp, path in temps:
            os.replace(tmp, path)
    except OSError:
        for tmp, _ in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    return [path for _, path in temps]


def write_file(path: Path, data: bytes) -> None:
    """One file, atomically (``write_files`` of one)."""
    write_files({path: data})
