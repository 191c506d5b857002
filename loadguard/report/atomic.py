"""All-or-nothing output: a report is a set of files that appear together or not at all.

Every file is first written in full to a temporary name in its target directory
(same file system, so ``os.replace`` is atomic), then all are renamed. If any write
fails, every temporary is removed and no target is touched, so a reader never sees a
half-written report. (Between the renames of two files a crash can leave a new HTML
beside old PNGs; each file on its own is always whole.)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from loadguard.errors import ReportError

#: Reports are meant to be shared: world-readable like any file a plain ``open`` makes.
FILE_MODE = 0o644


def write_all(files: Mapping[Path, bytes]) -> list[Path]:
    """Write every ``path -> content`` pair through temp + rename; returns the paths."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((tmp, path))
            os.fchmod(fd, FILE_MODE)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        for tmp, path in temps:
            os.replace(tmp, path)
    except OSError as exc:
        for tmp, _ in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise ReportError(f"cannot write report: {exc.strerror or exc}") from exc
    return [path for _, path in temps]
