"""Staging the plan a run starts: the run folder, the JMX JMeter runs, its properties.

``claim_run_folder`` gives the run an empty folder; ``staged_plan`` hands JMeter the plan
with the Elastic Timer injected (``planned_xml``), from beside the user's plan, and keeps a
copy in the run folder; ``refuse_bsh_override`` keeps the BeanShell console's properties
in ``run``'s hands.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from loadguard.errors import ConfigError
from loadguard.jmeter.home import JMeterHome
from loadguard.sidecar.config import Paths, SidecarConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunPlan:
    plan: Path
    jmeter: JMeterHome
    out_dir: Path
    properties: Mapping[str, str] = field(default_factory=dict)
    extra_args: Sequence[str] = ()
    inject: bool = True
    thread_groups: Sequence[str] = ()
    #: Replace an earlier run in ``out_dir`` instead of refusing (``--force``).
    force: bool = False


def record_name(plan: Path) -> str:
    return f"{plan.stem}.loadguard.jmx"


def claim_run_folder(run: RunPlan, paths: Paths) -> None:
    """A run folder holds one run: refuse one that already holds a run, unless ``force``.

    Without this, JMeter appends to the old ``results.jtl``, the follower reads it from
    byte 0, and the old samples reach the window (stale at once: the rate is floored)
    and the summary. ``force`` starts fresh: the earlier run's files are removed first.
    Raises ``UsageError`` (exit 2)."""
    earlier = [p for p in (paths.jtl, paths.decisions, paths.summary) if p.exists()]
    if not earlier:
        return
    if not run.force:
        names = ", ".join(p.name for p in earlier)
        raise ConfigError("out_dir", f"{run.out_dir} already holds a run: {names}")
    for p in (
        paths.jtl,
        paths.decisions,
        paths.summary,
        paths.junit,
        paths.jmeter_log,
        paths.jmeter_stdout,
        run.out_dir / record_name(run.plan),
    ):
        if p is not None:
            p.unlink(missing_ok=True)
    log.info("--force: replaced the earlier run in %s", run.out_dir)


def planned_xml(run: RunPlan, cfg: SidecarConfig) -> bytes | None:
    """The plan with the Elastic Timer injected; ``None`` when it runs as it is."""
    if not run.inject:
        return None
    from loadguard.jmx import has_elastic_timer, inject_elastic_timer

    data = run.plan.read_bytes()
    if has_elastic_timer(data):
        return None
    result = inject_elastic_timer(
        data,
        thread_groups=tuple(run.thread_groups),
        initial_rate_rps=cfg.initial_rate,
        max_rate_rps=cfg.spec.max_rate,
        latency_ms=cfg.spec.threshold("p95_ms"),
    )
    for warning in result.warnings:
        log.warning("%s", warning)
    return result.xml


@contextlib.contextmanager
def staged_plan(run: RunPlan, cfg: SidecarConfig) -> Iterator[Path]:
    """The plan JMeter runs, for the ``with`` block; the run folder keeps a copy.

    JMeter resolves a file the plan names relatively (CSV Data Set, ``__FileToString``,
    includes) against its working directory, then against the folder of the plan it
    runs. So an injected copy runs from *beside the user's plan*, as a hidden file
    removed afterwards: plan-relative files resolve exactly as under
    ``jmeter -n -t plan.jmx``. A plan that needs no change runs as it is. Only when the
    plan's folder is read-only does the copy run from the run folder, with a warning."""
    record = run.out_dir / record_name(run.plan)
    xml = planned_xml(run, cfg)
    if xml is None:
        shutil.copyfile(run.plan, record)
        yield run.plan.absolute()
        return
    record.write_bytes(xml)
    beside = run.plan.absolute().with_name(f".{run.plan.stem}.loadguard-{os.getpid()}.jmx")
    _remove_orphaned_copies(beside.parent, run.plan.stem)
    try:
        beside.write_bytes(xml)
    except OSError as exc:
        log.warning(
            "cannot write the injected plan beside %s (%s): it runs from %s, so files the "
            "plan names relative to its own folder are looked up there instead",
            run.plan,
            exc.strerror or exc,
            run.out_dir,
        )
        yield record.absolute()
        return
    try:
        yield beside
    finally:
        beside.unlink(missing_ok=True)


def _remove_orphaned_copies(folder: Path, stem: str) -> None:
    """Remove hidden copies ``.<stem>.loadguard-<pid>.jmx`` left beside the plan by a
    run that was killed (SIGKILL skips the ``finally``): their process is gone."""
    for old in folder.glob(f".{glob.escape(stem)}.loadguard-*.jmx"):
        pid = old.name.removesuffix(".jmx").rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not psutil.pid_exists(int(pid)):
            old.unlink(missing_ok=True)
            log.info("removed %s, left by a run that was killed", old)


def refuse_bsh_override(run: RunPlan) -> None:
    """``run`` owns ``beanshell.server.*``: its console listens on loopback only. A user
    value (``-J`` or after ``--``) could bring back JMeter's stock server on every
    interface (remote code execution for anyone reaching it), so it is refused: fail
    closed. Use ``attach`` beside a JMeter you start yourself for anything else."""
    overridden = [k for k in run.properties if k.startswith("beanshell.server.")] + [
        a
        for a in run.extra_args
        if a.startswith(("-Jbeanshell.server.", "--jmeterproperty=beanshell.server."))
    ]
    if overridden:
        raise ConfigError(
            "properties.beanshell",
            f"{overridden[0].split('=', 1)[0]}: loadguard run sets beanshell.server.* itself"
            ": a console on 127.0.0.1 only, see docs/security.md",
        )
