"""The live console in a real terminal: tmux, 80 columns, a real ``loadguard demo``
(real JMeter against the demo target). While it runs the screen shows the progress bar
against --duration and the sparklines; at its end, the headline is the last line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadguard.console import BLOCKS
from loadguard.jmeter.home import JMeterHome

pytestmark = pytest.mark.jmeter


@pytest.fixture()
def tmux() -> Iterator[list[str]]:
    """``tmux -L <own socket>``: a tmux server of this test's own, killed at the end."""
    path = shutil.which("tmux")
    if path is None:
        if os.environ.get("LOADGUARD_REQUIRE_JMETER") == "1":
            pytest.fail("tmux missing: `make tmux` installs Debian's package")
        pytest.skip("tmux not installed (make tmux)")
    cmd = [path, "-L", f"lg-test-{uuid.uuid4().hex[:8]}"]
    try:
        yield cmd
    finally:
        subprocess.run([*cmd, "kill-server"], capture_output=True, check=False)


def screen(tmux: list[str]) -> str:
    out = subprocess.run(
        [*tmux, "capture-pane", "-p", "-J", "-t", "demo", "-S", "-200"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return out.stdout


def test_live_console_shows_progress_and_sparklines_in_80_columns(
    jmeter_home: JMeterHome, tmux: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "demo"
    done = tmp_path / "done"
    line = (
        f"{sys.executable} -m loadguard demo --duration 20s --no-dashboard --out {out}; "
        f"echo exit=$? > {done}; sleep 600"
    )
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "demo", "-x", "80", "-y", "50", line], check=True
    )
    seen = ""
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline and not done.exists():
        text = screen(tmux)
        if "s left" in text and "commanded" in text and "capacity" in text:
            seen = text
        time.sleep(1.0)
    assert done.exists(), screen(tmux)[-3000:]
    assert seen, "the live panel never showed its progress bar and sparklines"
    lines = seen.splitlines()
    top = max(i for i, ln in enumerate(lines) if "s left" in ln)
    bottom = next(i for i in range(top, len(lines)) if lines[i].startswith("capacity"))
    panel = lines[top : bottom + 1]  # the last panel drawn: bar, table, sparklines
    rows = {ln.split()[0]: ln for ln in panel if ln.split()}
    assert "━" in seen and " of 20 s, " in seen  # rich's bar, elapsed of --duration, left
    for name in ("commanded", "achieved", "p95"):
        assert any(ch in rows[name] for ch in BLOCKS), rows[name]
    # -J joins wrapped lines: a panel line longer than the pane would show here.
    assert max(len(ln.rstrip()) for ln in panel) <= 80
    final = [ln for ln in screen(tmux).splitlines() if ln.strip()]
    # 20 s is too short to reach the knee on most runs: INCONCLUSIVE exits 5, as run does.
    verdict = json.loads((out / "summary.json").read_text())["verdict"]
    assert done.read_text().strip() == f"exit={5 if verdict == 'INCONCLUSIVE' else 0}", verdict
    heads = ("PASS: Sustained", "FAIL: ", "INCONCLUSIVE: Capacity above")
    assert any(ln.startswith(heads) for ln in final[-4:]), final[-6:]
