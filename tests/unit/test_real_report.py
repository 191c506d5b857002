"""The real-JMeter suite's report: the block spliced into its document, a chart drawn from
a run folder's JTL and decision log, and the figures read back for --render-only."""

from __future__ import annotations

import json
from pathlib import Path

from loadguard.lab.evaluate.real_report import BEGIN, END, load, merge, write
from tests.unit.test_real_suite import T0, _decisions
from tests.unit.test_report_render import write_jtl

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    write_jtl(path / "results.jtl", [(T0 + 50 * k, 40, "home", True) for k in range(1200)])
    _decisions(path / "decisions.csv", [(T0 + 2000 * k, 5, 5 + 10 * k, True) for k in range(30)])
    return path


def _data(run_dir: Path) -> dict[str, object]:
    run = {
        "policy": "gradient", "misses": ["efficiency"], "offset_s": 4.9, "covered": True,
        "stop_reason": "duration", "load": [3.6, 4.9], "run_dir": str(run_dir),
        "peak_rate": 295.0, "violations": 0.0, "windows": 3, "errors": 0.0,
        "steady_efficiency": None, "frontier_gap": None, "time_to_90_s": 53.2,
        "recovery_s": [], "collapses": 0, "ok_rps": 20.0,
    }  # fmt: skip
    sweep = {
        "nominal": 144.4, "measured": 147.7, "bounded": True, "load": [1.7, 3.6],
        "points": [{"fraction": 0.8, "offered": 115.5, "achieved": 115.5, "p95_ms": 147.0,
                    "errors": 0.0, "samples": 3465}],
    }  # fmt: skip
    meta = {
        "command": "loadguard evaluate --suite --real --plants mm8,large",
        "commit": "abc1234", "started": "2026-12-01 10:50", "finished": "2026-12-01 10:54",
        "duration_s": 60.0,
    }  # fmt: skip
    plants = [
        {
            **meta,
            "number": 1, "key": "mm8", "title": "M/M/8 50 ms", "p95_ms": 250.0,
            "kind": "emulator", "target_args": [], "threads": 200, "not_run": None,
            "steps": [[0.0, 147.7]], "sweeps": [sweep], "runs": [run],
        },
        {
            **meta,
            "number": 9, "key": "large", "title": "large", "p95_ms": 250.0,
            "kind": "emulator", "target_args": [], "threads": 120,
            "not_run": "two outages", "steps": [], "sweeps": [], "runs": [],
        },
    ]  # fmt: skip
    return {**meta, "policies": ["gradient"], "plants": plants}


def test_write_splices_the_block_draws_the_chart_and_reads_back(tmp_path: Path) -> None:
    doc = tmp_path / "controller-jmeter.md"
    doc.write_text(f"# Intro kept\n\n{BEGIN}\nold figures\n{END}\n\n## Reading kept\n")
    data = _data(_run_folder(tmp_path / "runs" / "gradient-1"))
    json_path = write(data, doc)

    text = doc.read_text()
    assert text.startswith("# Intro kept") and text.rstrip().endswith("## Reading kept")
    assert "old figures" not in text and text.count(BEGIN) == 1
    assert (
        "on commit `abc1234` (2026-12-01 10:50 – 2026-12-01 10:54 UTC, 60 s runs): mm8, large"
        in text
    )
    assert "| 1 mm8 | 147.7 | gradient | 0.0 % | 0.0 % | – | 53 s | – | 0 | efficiency" in text
    assert "| 9 large | – | not run: two outages |" in text
    data["plants"][0]["sweeps"][0]["measured"] = None  # type: ignore[index]
    write(data, doc)
    assert "| 1 mm8 | none: < 115.5 | gradient |" in doc.read_text()
    assert "115.5 → 115.5/s p95 147 ms" in text and "mm8 4.9 s" in text
    assert "![mm8](controller-jmeter/mm8.png)" in text
    png = tmp_path / "controller-jmeter" / "mm8.png"
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5_000
    assert json.loads(json_path.read_text()) == data == load(doc)
    older = {**data, "plants": [{"key": p["key"]} for p in data["plants"]]}  # type: ignore[attr-defined]
    json_path.write_text(json.dumps(older))
    assert [p["commit"] for p in load(doc)["plants"]] == ["abc1234", "abc1234"]


def test_no_chart_once_the_run_folders_are_gone(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    write(_data(tmp_path / "gone"), doc)
    assert "![mm8]" not in doc.read_text() and not (tmp_path / "doc" / "mm8.png").exists()


def test_a_chart_left_by_an_earlier_write_stays_linked_once_the_run_folders_are_gone(
    tmp_path: Path,
) -> None:
    doc = tmp_path / "controller-jmeter.md"
    write(_data(_run_folder(tmp_path / "runs" / "gradient-1")), doc)
    png = tmp_path / "controller-jmeter" / "mm8.png"
    drawn = png.read_bytes()
    write(_data(tmp_path / "gone"), doc)  # a later invocation, this plant's folders elsewhere
    assert "![mm8](controller-jmeter/mm8.png)" in doc.read_text()
    assert png.read_bytes() == drawn


def test_a_later_invocation_replaces_its_plants_and_keeps_the_others(tmp_path: Path) -> None:
    old = _data(tmp_path / "gone")
    for plant in old["plants"]:  # type: ignore[attr-defined]
        for k in ("command", "commit", "started", "finished", "duration_s"):
            del plant[k]  # an older suite.json: the invocation only at the top
    new = _data(tmp_path / "gone")
    new.update(command="loadguard evaluate --suite --real --plants mm8", commit="def5678")
    new["plants"] = [  # type: ignore[index]
        {**new["plants"][0], "command": new["command"], "commit": "def5678"}  # type: ignore[index]
    ]
    merged = merge(old, new)
    assert [(p["key"], p["commit"]) for p in merged["plants"]] == [
        ("mm8", "def5678"),
        ("large", "abc1234"),
    ]
    assert merged["plants"][1]["duration_s"] == 60.0 and merge(None, new) is new
    doc = tmp_path / "doc.md"
    write(merged, doc)
    text = doc.read_text()
    assert "--plants mm8` on commit `def5678`" in text and "60 s runs): large" in text


def test_runs_of_several_rounds_are_told_apart_in_the_table(tmp_path: Path) -> None:
    data = _data(tmp_path / "gone")
    mm8 = data["plants"][0]  # type: ignore[index]
    first = mm8["runs"][0]
    mm8["runs"] = [{**first, "round": 1}, {**first, "round": 2}]
    doc = tmp_path / "controller-jmeter.md"
    write(data, doc)
    text = doc.read_text(encoding="utf-8")
    assert "| gradient, round 1 |" in text and "| gradient, round 2 |" in text
