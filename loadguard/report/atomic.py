"""All-or-nothing output: a report is a set of files that appear together or not at all,
written by the one atomic writer (``loadguard.atomic_file``), its failure a
``ReportError``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from loadguard.atomic_file import FILE_MODE, write_files
from loadguard.errors import ReportError

__all__ = ["FILE_MODE", "write_all"]


def write_all(files: Mapping[Path, bytes]) -> list[Path]:
    """Write every ``path -> content`` pair through temp + rename; returns the paths."""
    try:
        return write_files(files)
    except OSError as exc:
        raise ReportError(f"cannot write report: {exc.strerror or exc}") from exc
