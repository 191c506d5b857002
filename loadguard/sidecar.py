"""Wiring the sidecar: ``attach`` (beside a running JMeter) and ``run`` (start it too).

This module only composes adapters around ``loadguard.loop.ControlLoop``; the CLI parses
options into a ``SidecarConfig`` and calls ``attach`` or ``run_plan`` (``run``; ``run
--remote`` is ``run_plan`` with ``distributed.RemoteController`` as the generator).

Everything that can fail before the run is checked before JMeter starts or the first
push is sent: the decision log, summary and JUnit paths must be writable, the SLO and
policy must parse, the plan must load. Every way of ending (JMeter finished, Ctrl-C,
SIGTERM, auto-stop, engine lost, duration) flushes the log and writes the summary.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import psutil

from loadguard.actuator.elastic_timer import (
    ELASTIC_TIMER_LAG_MS,
    RATE_PROPERTY,
    rps_to_tpm,
)
from loadguard.actuator.engines import Actuator, DryRunActuator, Engine, EngineSet
from loadguard.actuator.fleet import FleetActuator, FleetSource, RemoteTestEndProbe
from loadguard.console import ConsoleReporter
from loadguard.decisions import DecisionLogWriter, check_writable, log_cause
from loadguard.errors import INTERNAL_ERROR_EXIT, DecisionLogError, EngineError, UsageError
from loadguard.headline import headline
from loadguard.jmeter.bsh_loopback import confirm_loopback_console, write_loopback_server_file
from loadguard.jmeter.home import JMeterHome
from loadguard.jmeter.launch import JMeterProcess, LaunchSpec, free_tcp_pair, free_udp_port
from loadguard.jmeter.remote import DEFAULT_SAMPLE_SENDER, RemoteEngine
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.sample import SampleSource
from loadguard.junit import write_junit
from loadguard.loop import ControlLoop, EngineProbe, LoopOutcome, LoopSettings, TickResult
from loadguard.outputs import DEFAULT_APPLICATION, OutputConfig, OutputSet, open_outputs
from loadguard.policies import DEFAULT_POLICY, build_policy
from loadguard.signals import on_signals
from loadguard.slo import SloSpec
from loadguard.stop_reason import StopReason
from loadguard.summary import SummaryBuilder, write_json_atomic
from loadguard.window import STRETCH_WINDOWS, Window

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Paths:
    jtl: Path
    decisions: Path
    summary: Path
    junit: Path | None = None
    jmeter_log: Path | None = None
    jmeter_stdout: Path | None = None

    @classmethod
    def in_dir(cls, out: Path, **overrides: Path | None) -> Paths:
        base = cls(
            jtl=out / "results.jtl",
            decisions=out / "decisions.csv",
            summary=out / "summary.json",
            junit=None,
            jmeter_log=out / "jmeter.log",
            jmeter_stdout=out / "jmeter.out",
        )
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class SidecarConfig:
    paths: Paths
    spec: SloSpec
    policy: str = DEFAULT_POLICY
    policy_params: Mapping[str, str] = field(default_factory=dict)
    engines: tuple[Engine, ...] = ()
    dry_run: bool = False
    tick_ms: int = 2000
    initial_rate: float = 5.0
    idle_exit_ms: int = 10_000
    duration_ms: int | None = None
    min_capacity: float | None = None
    auto_stop: int | None = None
    lag_ms: int = ELASTIC_TIMER_LAG_MS
    push_timeout_s: float = 2.0
    quiet: bool = False
    verbose: bool = False
    follower_options: Mapping[str, object] = field(default_factory=dict)
    #: Distributed JMeter (docs/distributed.md): the controller's ``-R`` entries, in the
    #: order of ``engines``; the most one engine may be given; the sample sender mode.
    remotes: tuple[RemoteEngine, ...] = ()
    engine_max_rate: float | None = None
    sample_sender: str = DEFAULT_SAMPLE_SENDER
    #: Live outputs (InfluxDB, Prometheus; docs/dashboards.md), ``None``: none.
    outputs: OutputConfig | None = None

    def __post_init__(self) -> None:
        """Refuse a config the loop cannot run (the CLI only prints these errors)."""
        if self.tick_ms < 100:
            raise UsageError(f"--tick: must be at least 100ms, got {self.tick_ms}ms")
        if not self.initial_rate > 0:
            raise UsageError("--initial-rate: must be > 0 req/s")
        if self.auto_stop is not None and self.auto_stop < 1:
            raise UsageError(f"--auto-stop: must be >= 1, got {self.auto_stop}")
        if self.lag_ms < 0:
            raise UsageError("--actuation-lag: must be >= 0")
        if "lag_ms" in self.policy_params:
            raise UsageError("--param lag_ms: give the actuation lag as --actuation-lag")
        if self.idle_exit_ms <= 0 or (self.duration_ms is not None and self.duration_ms <= 0):
            raise UsageError("--idle-exit and --duration: must be > 0")
        if self.engine_max_rate is not None and not self.remotes:
            raise UsageError("--engine-max-rate needs --remote")
        if self.engine_max_rate is not None and not self.engine_max_rate > 0:
            raise UsageError("--engine-max-rate: must be > 0 req/s")
        if self.remotes and len(self.remotes) != len(self.engines):
            raise UsageError(
                f"{len(self.remotes)} --remote engine(s) but {len(self.engines)} --engine "
                "port(s): give one --engine HOST:BSHPORT per remote engine, in the same order"
            )


def preflight(paths: Paths) -> None:
    """Fail before anything starts if an output cannot be written."""
    check_writable(paths.decisions)
    for p in (paths.summary, paths.junit):
        if p is not None:
            check_writable(p)
    # Write the header now (or check an existing log's): a full disk, a quota or a
    # foreign file at that path fails here, before JMeter starts, not after.
    with DecisionLogWriter(paths.decisions):
        pass


def _actuator(cfg: SidecarConfig) -> Actuator:
    if cfg.dry_run:
        return DryRunActuator()
    if not cfg.engines:
        raise EngineError("no engine to push to: give --engine HOST:PORT or --dry-run")
    return EngineSet(cfg.engines, timeout_s=cfg.push_timeout_s)


def drive(
    cfg: SidecarConfig,
    source: SampleSource,
    probe: EngineProbe | None = None,
    on_end: Callable[[], None] | None = None,
    stop_requested: threading.Event | None = None,
    actuator: Actuator | None = None,
    preset: bool = False,
    transaction_labels: Callable[[], Collection[str]] | None = None,
    outputs: OutputSet | None = None,
) -> LoopOutcome:
    """Run the loop to its end and write the summary (and JUnit) whatever the ending.

    A bug inside the loop (any exception that is not a ``LoadGuardError``) ends it with
    stop reason ``internal_error``: the generator is stopped (``on_end``), what it wrote
    last is drained, the decision log is closed and the summary written, and then the
    exception is raised again for the CLI to report (exit 4).

    ``actuator``: what the loop pushes through (default: ``EngineSet`` over
    ``cfg.engines``, or ``DryRunActuator``); it is closed at the end and adds its own
    summary fields (a fleet: its engines and their losses and returns).

    ``stop_requested``: set by a signal that arrived before the loop existed (``run``
    installs its handler before starting JMeter); the loop then ends at once.

    ``outputs``: the live outputs, already open (``run`` opens them before JMeter
    starts); default: those of ``cfg.outputs``, opened here. They see every tick (before the
    console) and the run's summary before it is written, which then counts their points."""
    preflight(cfg.paths)
    outputs = outputs if outputs is not None else open_live_outputs(cfg, DEFAULT_APPLICATION)
    policy = build_policy(
        cfg.policy,
        cfg.spec,
        lag_ms=cfg.lag_ms,
        auto_stop=cfg.auto_stop,
        **cfg.policy_params,
    )
    actuator = actuator if actuator is not None else _actuator(cfg)
    summary = SummaryBuilder(
        cfg.spec.window_ms, cfg.spec.log_thresholds(), cfg.min_capacity,
        budget=cfg.spec.violation_budget,
    )  # fmt: skip
    settings = LoopSettings(
        tick_ms=cfg.tick_ms,
        lag_ms=cfg.lag_ms,
        idle_exit_ms=cfg.idle_exit_ms,
        max_duration_ms=cfg.duration_ms,
        min_capacity=cfg.min_capacity,
    )
    outcome: LoopOutcome | None = None
    failure: Exception | None = None
    with (
        DecisionLogWriter(cfg.paths.decisions) as writer,
        ConsoleReporter(cfg.quiet, cfg.verbose, duration_ms=cfg.duration_ms) as console,
    ):
        loop = ControlLoop(
            source=source,
            # The window reports the follower's malformed-row count, and leaves
            # Transaction Controller labels out of "overall" (each request once).
            window=Window(
                cfg.spec.window_ms,
                malformed_rows=lambda: source.malformed_rows,
                illegal_xml_chars=lambda: source.illegal_xml_chars,
                overall_excludes=transaction_labels,
                stretch_to=cfg.spec.min_samples,  # a rate under min_samples/W is judged
                max_window_ms=STRETCH_WINDOWS * cfg.spec.window_ms,
            ),
            evaluator=cfg.spec,
            policy=policy,
            actuator=actuator,
            writer=writer,
            summary=summary,
            settings=settings,
            probe=probe,
            on_tick=_fan_out(outputs.tick, console.update),  # outputs never raise,
        )
        with on_signals(lambda: loop.request_stop(StopReason.SIGNAL)):
            if stop_requested is not None and stop_requested.is_set():
                loop.request_stop(StopReason.SIGNAL)
            try:
                outcome = loop.run(cfg.initial_rate, on_end, preset)
            except DecisionLogError as exc:
                failure = exc
                reason = StopReason.DECISION_LOG_FAILED
                outcome = LoopOutcome(summary.build(loop.run_acc, reason), reason, 3)
            except Exception as exc:  # a bug: account for the run, then report it
                failure = exc  # (the CLI prints it as one line; no log line here)
                _wind_down(loop, source, on_end)
                reason = StopReason.INTERNAL_ERROR
                outcome = LoopOutcome(
                    summary.build(loop.run_acc, reason), reason, INTERNAL_ERROR_EXIT
                )
        actuator.close()
    data = outcome.summary.to_json()
    if outcome.stop_reason is StopReason.INTERNAL_ERROR and failure is not None:
        data["internal_error"] = f"{type(failure).__name__}: {' '.join(str(failure).split())}"
    data.update(actuator.summary_json())  # a fleet: its engines, their losses / returns
    outputs.end(data)  # the end annotation; waits a bounded time for the last points
    data.update(outputs.summary_json())  # their points written and dropped
    # The one headline sentence (loadguard.headline), as the report and console say it.
    data["headline"] = headline(data, log_cause(cfg.paths.decisions)).to_json()
    write_json_atomic(cfg.paths.summary, data)
    if cfg.paths.junit is not None:
        write_junit(cfg.paths.junit, outcome.summary)
    if failure is not None:
        raise failure
    return outcome


def open_live_outputs(cfg: SidecarConfig, application: str) -> OutputSet:
    """The live outputs of ``cfg`` (``loadguard.outputs``), started; ``application``:
    the tag's default (``run``: the plan's name)."""
    return open_outputs(cfg.outputs, thresholds=cfg.spec.log_thresholds(), application=application)


def _fan_out(*calls: Callable[[TickResult], None]) -> Callable[[TickResult], None]:
    def each(result: TickResult) -> None:
        for call in calls:
            call(result)

    return each


def _wind_down(loop: ControlLoop, source: SampleSource, on_end: Callable[[], None] | None) -> None:
    """After a bug in the loop: stop the generator and drain its last rows, as the loop's
    own ending does; either may fail too without losing the summary."""
    try:
        if on_end is not None:
            on_end()
    except Exception:
        log.exception("stopping the load generator failed")
    try:
        loop.run_acc.add(source.poll())
    except Exception:
        log.exception("reading the last samples failed")


def fleet_actuator(cfg: SidecarConfig) -> FleetActuator:
    """The actuator of a distributed test: ``cfg.engines`` (BeanShell ports) tracked by
    their ``cfg.remotes`` thread prefixes."""
    return FleetActuator(
        cfg.engines,
        prefixes=[r.thread_prefix for r in cfg.remotes],
        engine_max_rps=cfg.engine_max_rate,
        timeout_s=cfg.push_timeout_s,
    )


def attach(cfg: SidecarConfig) -> LoopOutcome:
    """Run beside a JMeter that is already running (or about to start)."""
    preflight(cfg.paths)
    options = {**cfg.follower_options, **({"thread_names": True} if cfg.remotes else {})}
    follower = JtlFollower(cfg.paths.jtl, **options)  # type: ignore[arg-type]
    probe: EngineProbe | None = EngineGoneProbe(cfg.engines) if not cfg.dry_run else None
    fleet = fleet_actuator(cfg) if cfg.remotes and not cfg.dry_run else None
    # The source warns when the JTL lags the wall clock and feeds the fleet's loss rules.
    source = FleetSource(follower, fleet)
    if cfg.remotes:
        # Engines outlive a distributed test: it is over when they run no threads.
        probe = RemoteTestEndProbe(source, cfg.engines)
    return drive(
        cfg,
        source,
        probe,
        actuator=fleet,
        transaction_labels=lambda: follower.transaction_labels,
    )


class EngineGoneProbe:
    """For ``attach``: JMeter counts as gone when its BeanShell port refuses connections.

    The loop ends once the JTL has also been idle for ``idle_exit_ms``.
    """

    def __init__(self, engines: Sequence[Engine]) -> None:
        self.engines = engines

    def check(self) -> StopReason | None:
        import socket

        for e in self.engines:
            try:
                with socket.create_connection((e.host, e.port), timeout=0.5):
                    return None
            except OSError:
                continue
        return StopReason.JMETER_GONE


class ProcessProbe:
    """For ``run``: JMeter is our child process; its exit status says how it ended."""

    def __init__(self, proc: JMeterProcess) -> None:
        self.proc = proc

    def check(self) -> StopReason | None:
        code = self.proc.poll()
        if code is None:
            return None
        if code == 0:
            return StopReason.JMETER_EXITED
        failed = code < 0 or code >= 128
        reason = StopReason.ENGINE_LOST if failed else StopReason.JMETER_FAILED
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        log.error("%s: JMeter (pid %d) ended unexpectedly, %s", reason, self.proc.pid, how)
        return reason


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


def _record_name(plan: Path) -> str:
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
        raise UsageError(
            f"{run.out_dir} already holds a run ({names}): give another --out, "
            "or --force to replace it"
        )
    for p in (
        paths.jtl,
        paths.decisions,
        paths.summary,
        paths.junit,
        paths.jmeter_log,
        paths.jmeter_stdout,
        run.out_dir / _record_name(run.plan),
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
    record = run.out_dir / _record_name(run.plan)
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


def _refuse_bsh_override(run: RunPlan) -> None:
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
        raise UsageError(
            f"{overridden[0].split('=', 1)[0]}: loadguard run sets beanshell.server.* itself "
            "(a console on 127.0.0.1 only; see docs/security.md); start JMeter yourself and "
            "use `loadguard attach` for another console"
        )


@dataclass(frozen=True)
class Started:
    """A started load generator, as ``run_plan`` drives it: the process it stops at the
    end, the config the loop runs with, the follower of its JTL and the source over it,
    the actuator (``None``: ``drive`` builds it from ``cfg.engines``), and whether the
    initial rate is already set (``preset``: nothing is read or pushed first)."""

    proc: JMeterProcess
    cfg: SidecarConfig
    follower: JtlFollower
    source: SampleSource
    actuator: Actuator | None = None
    preset: bool = False


class Generator(Protocol):
    """How ``run_plan`` starts the load: a local JMeter (``LocalJMeter``) or a
    distributed controller (``distributed.RemoteController``)."""

    def check(self, run: RunPlan, cfg: SidecarConfig) -> None:
        """Refuse what cannot run, before anything is written or started."""
        ...

    def start(
        self, run: RunPlan, cfg: SidecarConfig, plan_path: Path, stop: threading.Event
    ) -> contextlib.AbstractContextManager[Started]:
        """Start the generator on ``plan_path`` for the ``with`` block; it is stopped and
        everything it holds released at the end. ``stop`` is set by a signal."""
        ...


class LocalJMeter:
    """``loadguard run``: one non-GUI JMeter, our child, with a loopback-only BeanShell
    console and the initial rate set as a -J property."""

    def check(self, run: RunPlan, cfg: SidecarConfig) -> None:
        _refuse_bsh_override(run)

    @contextlib.contextmanager
    def start(
        self, run: RunPlan, cfg: SidecarConfig, plan_path: Path, stop: threading.Event
    ) -> Iterator[Started]:
        bsh = free_tcp_pair()
        props = {RATE_PROPERTY: f"{rps_to_tpm(cfg.initial_rate):.6g}", **run.properties}
        spec = LaunchSpec(
            plan=plan_path,
            jtl=cfg.paths.jtl,
            log=cfg.paths.jmeter_log or run.out_dir / "jmeter.log",
            stdout=cfg.paths.jmeter_stdout or run.out_dir / "jmeter.out",
            bsh_port=bsh,
            udp_port=free_udp_port(),
            properties=props,
            extra_args=tuple(run.extra_args),
            bsh_server_file=write_loopback_server_file(run.out_dir),
        )
        cfg = replace(cfg, engines=(Engine("127.0.0.1", bsh + 1),))
        follower = JtlFollower(cfg.paths.jtl, **cfg.follower_options)  # type: ignore[arg-type]
        proc = JMeterProcess(run.jmeter, spec)
        try:
            # Fail closed: no rate is pushed into a console that listens beyond loopback.
            confirm_loopback_console(proc.pid, bsh, alive=proc.alive, stop=stop)
            yield Started(proc, cfg, follower, follower, preset=True)
        finally:
            proc.stop()  # idempotent; covers an early failure


def run_plan(
    run: RunPlan, cfg: SidecarConfig, generator: Generator | None = None
) -> tuple[LoopOutcome, int]:
    """Start the generator (default: a local JMeter) on ``run.plan`` and drive it;
    returns the outcome and JMeter's exit code."""
    generator = generator if generator is not None else LocalJMeter()
    generator.check(run, cfg)
    run.out_dir.mkdir(parents=True, exist_ok=True)
    claim_run_folder(run, cfg.paths)
    preflight(cfg.paths)
    # A bad policy name or --param must fail here, not once JMeter is running.
    build_policy(
        cfg.policy, cfg.spec, lag_ms=cfg.lag_ms, auto_stop=cfg.auto_stop, **cfg.policy_params
    )
    # A required output that is down fails here, before JMeter starts (exit 2).
    outputs = open_live_outputs(cfg, run.plan.stem)
    early = threading.Event()
    codes: list[int] = []
    # From the start of JMeter on, a SIGTERM/SIGINT can no longer kill the sidecar between
    # starting it (its own session: it would be orphaned) and the loop's own handler.
    with (
        outputs.ended_on_failure(),
        staged_plan(run, cfg) as plan_path,
        on_signals(early.set),
        generator.start(run, cfg, plan_path, early) as started,
    ):
        proc = started.proc
        outcome = drive(
            started.cfg,
            started.source,
            ProcessProbe(proc),
            on_end=lambda: codes.append(proc.stop()),
            stop_requested=early,
            actuator=started.actuator,
            preset=started.preset,
            transaction_labels=lambda: started.follower.transaction_labels,
            outputs=outputs,
        )
        codes.append(proc.stop())  # idempotent; the loop's end may not have stopped it
    return outcome, codes[0]
