"""Reports: ``render_report`` (one run) and ``render_compare`` (several runs), as HTML + PNG."""

from __future__ import annotations

from loadguard.report.compare import render_compare
from loadguard.report.render import render_report
from loadguard.report.run_inputs import RunPaths, resolve_run

__all__ = ["RunPaths", "render_compare", "render_report", "resolve_run"]
