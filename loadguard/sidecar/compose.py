"""The composition root: ``drive`` wires one run's pipeline and accounts for its end.

``drive`` composes the adapters around ``loadguard.loop.ControlLoop`` -- the JTL tail (a
``SampleSource``) -> window statistics -> the SLO -> the policy -> the actuator -> the
decision log -> the outputs (live outputs, console, summary, JUnit) -- and writes the
summary however the run ends. ``attach`` (beside a running JMeter) and ``run_plan``
(``run``: start it too; ``run --remote`` is ``run_plan`` with
``distributed.RemoteController`` as the generator) are its two entry points.

Everything that can fail before the run is checked once, by ``prepare``, before JMeter
starts or the first push is sent: the decision log, summary and JUnit paths must be
writable, the SLO and policy must parse (``run_plan`` also claims the run folder and
opens the live outputs). Every way of ending (JMeter finished, Ctrl-C, SIGTERM,
auto-stop, engine lost, duration, a decision log that became unwritable, a bug) stops
the generator, drains its last rows, flushes the log and writes the summary.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection

from loadguard.actuator.engines import Actuator, DryRunActuator, EngineSet
from loadguard.actuator.fleet import (
    FleetActuator,
    FleetSource,
    JtlMissingWatch,
    RemoteTestEndProbe,
)
from loadguard.console import ConsoleReporter
from loadguard.decisions import DecisionLogWriter, log_cause
from loadguard.errors import INTERNAL_ERROR_EXIT, DecisionLogError, EngineError
from loadguard.headline import headline
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.sample import SampleSource
from loadguard.junit import write_junit
from loadguard.loop import ControlLoop, EngineProbe, LoopOutcome, LoopSettings, TickResult
from loadguard.outputs import DEFAULT_APPLICATION, OutputSet, open_outputs
from loadguard.policies import build_policy
from loadguard.policies.base import Policy
from loadguard.sidecar.config import SidecarConfig
from loadguard.sidecar.local_jmeter import Generator, LocalJMeter
from loadguard.sidecar.probes import EngineGoneProbe, ProcessProbe, preflight
from loadguard.sidecar.staging import RunPlan, claim_run_folder, staged_plan
from loadguard.signals import on_signals
from loadguard.stop_reason import StopReason
from loadguard.summary import SummaryBuilder, write_json_atomic
from loadguard.window import STRETCH_WINDOWS, Window

log = logging.getLogger(__name__)


def prepare(cfg: SidecarConfig) -> Policy:
    """The checks before anything starts, once per run: every output path is writable
    (``preflight``), and the policy builds from its name and parameters; returns it."""
    preflight(cfg.paths)
    return build_policy(
        cfg.policy, cfg.spec, lag_ms=cfg.lag_ms, auto_stop=cfg.auto_stop, **cfg.policy_params
    )


def _actuator(cfg: SidecarConfig) -> Actuator:
    if cfg.dry_run:
        return DryRunActuator()
    if not cfg.engines:
        raise EngineError("no engine to push to", setting="engines")
    return EngineSet(cfg.engines, timeout_s=cfg.push_timeout_s)


def drive(
    cfg: SidecarConfig,
    policy: Policy,
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

    ``policy``: the run's policy, as ``prepare`` built it (after its checks).

    A bug inside the loop (any exception that is not a ``LoadGuardError``) ends it with
    stop reason ``internal_error``, and a decision log that can no longer be written
    (``DecisionLogError``) with ``decision_log_failed``: either way the generator is
    stopped (``on_end``), what it wrote last is drained, the decision log is closed and
    the summary written (if its own path still can be), and then the exception is raised
    again for the CLI to report (exit 4, exit 3).

    ``actuator``: what the loop pushes through (default: ``EngineSet`` over
    ``cfg.engines``, or ``DryRunActuator``); it is closed at the end and adds its own
    summary fields (a fleet: its engines and their losses and returns).

    ``stop_requested``: set by a signal that arrived before the loop existed (``run``
    installs its handler before starting JMeter); the loop then ends at once.

    ``outputs``: the live outputs, already open (``run`` opens them before JMeter
    starts); default: those of ``cfg.outputs``, opened here. They see every tick (before the
    console) and the run's summary before it is written, which then counts their points."""
    outputs = outputs if outputs is not None else open_live_outputs(cfg, DEFAULT_APPLICATION)
    actuator = actuator if actuator is not None else _actuator(cfg)
    summary = SummaryBuilder(
        cfg.spec.window_ms, cfg.spec.log_thresholds(), cfg.min_capacity,
        budget=cfg.spec.violation_budget,
    )  # fmt: skip
    with (
        DecisionLogWriter(cfg.paths.decisions) as writer,
        ConsoleReporter(cfg.quiet, cfg.verbose, duration_ms=cfg.duration_ms) as console,
    ):
        loop = ControlLoop(
            source=source,
            window=_window(cfg, source, transaction_labels),
            evaluator=cfg.spec,
            policy=policy,
            actuator=actuator,
            writer=writer,
            summary=summary,
            settings=_settings(cfg),
            probe=probe,
            on_tick=_fan_out(outputs.tick, console.update),  # outputs never raise,
        )
        outcome, failure = _run_to_end(loop, cfg, summary, on_end, preset, stop_requested)
        actuator.close()
    data = outcome.summary.to_json()
    if outcome.stop_reason is StopReason.INTERNAL_ERROR and failure is not None:
        data["internal_error"] = f"{type(failure).__name__}: {' '.join(str(failure).split())}"
    data.update(actuator.summary_json())  # a fleet: its engines, their losses / returns
    outputs.end(data)  # the end annotation; waits a bounded time for the last points
    data.update(outputs.summary_json())  # their points written and dropped
    # The one headline sentence (loadguard.headline), as the report and console say it.
    data["headline"] = headline(data, log_cause(cfg.paths.decisions)).to_json()
    _write_outputs(cfg, outcome, data, failure)
    if failure is not None:
        raise failure
    return outcome


def _window(
    cfg: SidecarConfig,
    source: SampleSource,
    transaction_labels: Callable[[], Collection[str]] | None,
) -> Window:
    """The run's window: it reports the source's malformed-row count, and leaves
    Transaction Controller labels out of "overall" (each request once)."""
    return Window(
        cfg.spec.window_ms,
        malformed_rows=lambda: source.malformed_rows,
        illegal_xml_chars=lambda: source.illegal_xml_chars,
        overall_excludes=transaction_labels,
        stretch_to=cfg.spec.min_samples,  # a rate under min_samples/W is judged
        max_window_ms=STRETCH_WINDOWS * cfg.spec.window_ms,
    )


def _settings(cfg: SidecarConfig) -> LoopSettings:
    return LoopSettings(
        tick_ms=cfg.tick_ms,
        lag_ms=cfg.lag_ms,
        idle_exit_ms=cfg.idle_exit_ms,
        max_duration_ms=cfg.duration_ms,
        min_capacity=cfg.min_capacity,
    )


def _run_to_end(
    loop: ControlLoop,
    cfg: SidecarConfig,
    summary: SummaryBuilder,
    on_end: Callable[[], None] | None,
    preset: bool,
    stop_requested: threading.Event | None,
) -> tuple[LoopOutcome, Exception | None]:
    """Run the loop under the signal handler; an unwritable decision log or a bug ends it
    too, wound down (``_wind_down``) and accounted for: the outcome, and the failure to
    raise once the summary is written."""
    with on_signals(lambda: loop.request_stop(StopReason.SIGNAL)):
        if stop_requested is not None and stop_requested.is_set():
            loop.request_stop(StopReason.SIGNAL)
        try:
            return loop.run(cfg.initial_rate, on_end, preset), None
        except DecisionLogError as exc:
            _wind_down(loop, loop.source, on_end)
            reason = StopReason.DECISION_LOG_FAILED
            code = DecisionLogError.exit_code  # 3, whatever subclass
            return LoopOutcome(summary.build(loop.run_acc, reason), reason, code), exc
        except Exception as exc:  # a bug: account for the run, then report it
            # (the CLI prints it as one line; no log line here)
            _wind_down(loop, loop.source, on_end)
            reason = StopReason.INTERNAL_ERROR
            built = summary.build(loop.run_acc, reason)
            return LoopOutcome(built, reason, INTERNAL_ERROR_EXIT), exc


def _write_outputs(
    cfg: SidecarConfig, outcome: LoopOutcome, data: dict[str, object], failure: Exception | None
) -> None:
    """Write summary.json and the JUnit file. After a failure already being reported (an
    unwritable decision log: its disk may be full for the summary too), each is written
    where it can be: one that fails is logged, the other still written, and the failure
    reported stays the first one."""
    writes: list[Callable[[], None]] = [lambda: write_json_atomic(cfg.paths.summary, data)]
    if cfg.paths.junit is not None:
        junit = cfg.paths.junit
        writes.append(lambda: write_junit(junit, outcome.summary))
    for write in writes:
        try:
            write()
        except DecisionLogError as exc:
            if failure is None:
                raise
            log.error("%s", exc.message)


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
    """After a bug in the loop or a decision log gone unwritable: stop the generator and
    drain its last rows, as the loop's own ending does; either may fail too without losing
    the summary."""
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
    policy = prepare(cfg)
    options = {**cfg.follower_options, **({"thread_names": True} if cfg.remotes else {})}
    follower = JtlFollower(cfg.paths.jtl, **options)  # type: ignore[arg-type]
    probe: EngineProbe | None = EngineGoneProbe(cfg.engines) if not cfg.dry_run else None
    fleet = fleet_actuator(cfg) if cfg.remotes and not cfg.dry_run else None
    # The source warns when the JTL lags the wall clock and feeds the fleet's loss rules.
    source = FleetSource(follower, fleet, missing=JtlMissingWatch(cfg.paths.jtl))
    if cfg.remotes:
        # Engines outlive a distributed test: it is over when they run no threads.
        probe = RemoteTestEndProbe(source, cfg.engines)
    return drive(
        cfg,
        policy,
        source,
        probe,
        actuator=fleet,
        transaction_labels=lambda: follower.transaction_labels,
    )


def run_plan(
    run: RunPlan, cfg: SidecarConfig, generator: Generator | None = None
) -> tuple[LoopOutcome, int]:
    """Start the generator (default: a local JMeter) on ``run.plan`` and drive it;
    returns the outcome and JMeter's exit code."""
    generator = generator if generator is not None else LocalJMeter()
    generator.check(run, cfg)
    run.out_dir.mkdir(parents=True, exist_ok=True)
    claim_run_folder(run, cfg.paths)
    # A bad policy name or parameter fails here, not once JMeter is running.
    policy = prepare(cfg)
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
            policy,
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
