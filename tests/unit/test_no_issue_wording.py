"""Code, generated reports and docs speak for themselves: no "issue 17" references to a
tracker a reader of the repository does not have."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ISSUE = re.compile(r"\bissues? #?\d+|\bthe issue's\b|\bthe issue asks\b", re.IGNORECASE)


def test_no_issue_numbers_in_code_docs_or_readme() -> None:
    paths = [*ROOT.joinpath("loadguard").rglob("*.py"), *ROOT.joinpath("docs").rglob("*.md")]
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
        for path in sorted([*paths, ROOT / "README.md"])
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE.search(line)
    ]
    assert not hits, "\n".join(hits)
