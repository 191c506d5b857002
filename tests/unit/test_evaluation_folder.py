"""``loadguard evaluate`` into a folder that already holds an evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadguard.errors import UsageError
from loadguard.lab.evaluate.harness import claim_evaluation_folder


def _earlier(out: Path) -> None:
    (out / "runs" / "gradient-1").mkdir(parents=True)
    (out / "runs" / "gradient-1" / "results.jtl").write_text("timeStamp,elapsed\n")
    (out / "sweep.json").write_text("{}\n")


def test_a_folder_holding_an_evaluation_is_refused(tmp_path: Path) -> None:
    _earlier(tmp_path)
    with pytest.raises(UsageError, match=r"already holds an evaluation \(runs, sweep.json\)"):
        claim_evaluation_folder(tmp_path, force=False)
    assert (tmp_path / "runs" / "gradient-1" / "results.jtl").exists()


def test_force_removes_only_the_earlier_evaluations_parts(tmp_path: Path) -> None:
    _earlier(tmp_path)
    (tmp_path / "notes.md").write_text("mine\n")
    claim_evaluation_folder(tmp_path, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


def test_a_new_folder_is_claimed_without_force(tmp_path: Path) -> None:
    claim_evaluation_folder(tmp_path / "new", force=False)
