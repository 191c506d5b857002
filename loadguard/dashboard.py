"""JMeter's own HTML dashboard in the run folder: ``jmeter -g results.jtl -o dashboard/``.

JMeter's report generator (APDEX, response-time percentiles over time, codes per second)
reads a CSV JTL only, and needs the fields its graphs are drawn from. So ``make_dashboard``
first checks the JTL (``unfit_reason``): a CSV with a header line, ``,`` as delimiter, ms
epoch timestamps and the fields of ``REQUIRED``. Otherwise it is skipped, with one line
saying why. It runs the provisioned JMeter (the same ``java -jar`` command line as the
run, no shell), writes into a hidden folder and renames it to ``dashboard/`` only once
JMeter made ``index.html``, so a failed or killed generation leaves no half dashboard and
an earlier one is replaced only by a complete one. A dashboard that fails never fails the
run: the outcome goes into ``summary.json`` (key ``dashboard``) and one console line.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.summary import write_json_atomic

FOLDER = "dashboard"
LOG = "jmeter-dashboard.log"
#: The JTL fields JMeter's dashboard graphs read (JMeter's "Generating Report" page lists
#: the saveservice settings they need: time, label, response code and message, success,
#: thread name and counts, bytes, latency, connect time, ms timestamps).
REQUIRED: tuple[str, ...] = (
    "timeStamp",
    "elapsed",
    "label",
    "responseCode",
    "responseMessage",
    "threadName",
    "success",
    "bytes",
    "grpThreads",
    "allThreads",
    "Latency",
    "Connect",
)
#: Generous: JMeter's generator reads about a million rows a minute on one core.
TIMEOUT_S = 900.0


@dataclass(frozen=True)
class DashboardResult:
    #: "made", "skipped" (the JTL does not fit, or --no-dashboard), "failed"
    status: str
    #: ``dashboard/index.html`` relative to the run folder when made
    path: str | None = None
    #: one sentence: why it was skipped or failed
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self, run_dir: Path | None = None) -> str:
        """The console's one line about it (the path under ``run_dir`` when given)."""
        if self.status == "made":
            where = run_dir / str(self.path) if run_dir is not None else self.path
            return f"dashboard: {where} (JMeter's HTML dashboard)"
        return f"dashboard {self.status}: {self.reason}"


def unfit_reason(jtl: Path) -> str | None:
    """Why JMeter's dashboard cannot be made from ``jtl``; ``None`` when it can."""
    try:
        with jtl.open("rb") as fh:
            head = fh.read(65536)
    except OSError as exc:
        return f"cannot read {jtl.name}: {exc.strerror or exc}"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not text:
        return f"{jtl.name} holds no samples"
    if text.startswith("<"):
        return f"{jtl.name} is an XML JTL; JMeter's dashboard reads CSV JTLs only"
    lines = text.splitlines()
    header = next(csv.reader([lines[0]]))
    if "timeStamp" not in header:
        if "\t" in lines[0] or ";" in lines[0]:
            return f"{jtl.name} is not comma-separated; the dashboard reads JMeter's default CSV"
        return f"{jtl.name} has no header line (print_field_names=false); the dashboard needs one"
    missing = [f for f in REQUIRED if f not in header]
    if missing:
        return f"{jtl.name} lacks the field(s) the dashboard needs: {', '.join(missing)}"
    if len(lines) < 2:
        return f"{jtl.name} holds no samples"
    first = next(csv.reader([lines[1]]), [])
    stamp = first[header.index("timeStamp")] if len(first) > header.index("timeStamp") else ""
    if not stamp.isdigit():
        return (
            f"{jtl.name}'s timeStamp is not ms since the epoch ({stamp!r}); the dashboard needs ms"
        )
    return None


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "ERROR" in ln or "Exception" in ln or "rror" in ln]
    picked = (errors or lines or ["no output"])[-1]
    return picked[:300]


def make_dashboard(
    home: JMeterHome, run_dir: Path, jtl: Path, timeout_s: float = TIMEOUT_S
) -> DashboardResult:
    """Generate ``run_dir/dashboard/`` from ``jtl`` with JMeter's own generator; never
    raises for a JMeter failure (see module docstring)."""
    why = unfit_reason(jtl)
    if why is not None:
        return DashboardResult("skipped", reason=why)
    final = run_dir / FOLDER
    staging = run_dir / f".{FOLDER}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    log = run_dir / LOG
    args = ["-g", str(jtl.absolute()), "-o", str(staging.absolute()), "-j", str(log.absolute())]
    try:
        proc = subprocess.Popen(
            jmeter_command(home, args),
            cwd=run_dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        return DashboardResult("failed", reason=f"cannot start JMeter: {exc.strerror or exc}")
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        shutil.rmtree(staging, ignore_errors=True)
        return DashboardResult("failed", reason=f"JMeter's generator ran over {timeout_s:.0f} s")
    index = staging / "index.html"
    if proc.returncode != 0 or not index.is_file():
        detail = out or (log.read_text(errors="replace") if log.is_file() else "")
        shutil.rmtree(staging, ignore_errors=True)
        return DashboardResult(
            "failed",
            reason=f"JMeter's generator exited {proc.returncode}: {_one_line(detail)} (see {LOG})",
        )
    old = run_dir / f".{FOLDER}-old-{os.getpid()}"
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return DashboardResult("made", path=f"{FOLDER}/index.html")


def note_in_summary(summary: Path, result: DashboardResult) -> None:
    """Add ``dashboard`` to ``summary.json`` (written atomically); a folder without one
    (or an unreadable one) is left as it is."""
    try:
        data = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(data, dict):
        data["dashboard"] = result.to_json()
        write_json_atomic(summary, data)


def dashboard_for_run(
    home: JMeterHome, run_dir: Path, jtl: Path, summary: Path | None, enabled: bool = True
) -> DashboardResult:
    """After a run: make the dashboard (unless ``enabled`` is false) and note it in
    ``summary.json``. Any error of its own is a ``failed`` result, never an exception."""
    if not enabled:
        result = DashboardResult("skipped", reason="--no-dashboard")
    else:
        try:
            result = make_dashboard(home, run_dir, jtl)
        except Exception as exc:  # the run's data is safe; a dashboard must not hide it
            result = DashboardResult("failed", reason=f"{type(exc).__name__}: {exc}")
    if summary is not None:
        with contextlib.suppress(Exception):
            note_in_summary(summary, result)
    return result
