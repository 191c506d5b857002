"""The system under test of an evaluation: the emulator or the real TeaStore.

Every run and every sweep point opens a **fresh** target and closes it afterwards:

* ``emulator``: ``loadguard target --model mmc ...`` (``TargetSpec``), the elastic plan
  (``jmx_templates/elastic_plan.jmx``, one GET per sample) and the baselines' plans as
  they are;
* ``teastore``: ``loadguard teastore --layout L`` (the cached build, a new instance:
  an empty in-memory database generated at start, a cold JIT), TeaStore's browse plan
  (examples/teastore/teastore-browse.jmx, which carries the Elastic Timer) for LoadGuard
  and the sweep, and the baselines' thread groups around the same browse samplers
  (``teastore_plans``). A fresh TeaStore takes a minute or more to start; in a full
  evaluation no run shares one. ``EvalConfig.share_target`` (TeaStore's ``--quick``
  smoke test, and ``--teastore-reset``) opens one target for the whole evaluation
  instead and resets it before every later run (``Targets``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from loadguard.errors import EngineError
from loadguard.lab.evaluate.config import TARGET_PATH, EvalConfig
from loadguard.lab.evaluate.schemes import Scheme
from loadguard.lab.evaluate.teastore_plans import browse_baseline
from loadguard.lab.target.process import spawn_target
from loadguard.lab.teastore.process import TeaStoreProcess, spawn_teastore
from loadguard.lab.teastore.reset import reset_teastore
from loadguard.lab.teastore.runner import login_works, pages_work
from loadguard.lab.teastore.source import resolve_source, source_from_env
from loadguard.resources import elastic_plan, teastore_browse_plan
from loadguard.signals import interrupt_on_signals

log = logging.getLogger(__name__)

TARGETS = ("emulator", "teastore")


@dataclass(frozen=True)
class OpenTarget:
    port: int
    lambda_star_analytic: float | None  # the emulator's M/M/c figure; None for TeaStore
    #: Wall-clock epoch ms when it reported ready (the emulator's plant clock starts then).
    ready_ms: int = 0


@contextmanager
def open_target(cfg: EvalConfig, seed: int) -> Iterator[OpenTarget]:
    """A fresh target for one run or sweep point; stopped on the way out."""
    if cfg.target_kind == "teastore":
        source = resolve_source(source_from_env()).path  # one line, before a child starts
        args = ["--layout", cfg.teastore_layout, "--source", str(source)]
        with ExitStack() as stack:
            store = _start_teastore(stack, args)
            yield OpenTarget(store.port, None, round(time.time() * 1000))
    else:
        args = [*cfg.target_args, "--seed", str(seed)] if cfg.target_args else cfg.target.args(seed)
        with spawn_target(args) as target:
            yield OpenTarget(target.port, target.ready.lambda_star_rps, round(time.time() * 1000))


#: Starts of a fresh TeaStore tried before an evaluation gives up.
TEASTORE_STARTS = 2


def _start_teastore(stack: ExitStack, args: list[str]) -> TeaStoreProcess:
    """A fresh TeaStore, started again once if it never became ready: a start now and
    then hangs with its status page never answering (run 28: fifty status requests
    parked in the WebUI for 600 s, the services refusing connections), and one hung
    start ended a five-round evaluation after its second run."""
    for _ in range(TEASTORE_STARTS - 1):
        try:
            return stack.enter_context(spawn_teastore(args))
        except EngineError as exc:
            log.warning("TeaStore did not start (%s); starting a fresh one", exc)
    return stack.enter_context(spawn_teastore(args))


class Targets:
    """The target of each run: a fresh one per ``open``, or, with ``cfg.share_target``,
    the one opened first, kept until ``close``; every later ``open`` first waits until
    it serves again after the previous run (``wait_recovered``) and resets it
    (``reset_shared``).

    While open, SIGTERM stops the evaluation as Ctrl-C does (``KeyboardInterrupt``), so
    the targets are stopped on the way out instead of outliving a killed harness."""

    def __init__(self, cfg: EvalConfig) -> None:
        self.cfg = cfg
        self._stack = ExitStack()
        self._shared: OpenTarget | None = None

    @contextmanager
    def open(self, seed: int) -> Iterator[OpenTarget]:
        if not self.cfg.share_target:
            with open_target(self.cfg, seed) as target:
                yield target
            return
        if self._shared is None:
            self._shared = self._stack.enter_context(open_target(self.cfg, seed))
        else:
            wait_recovered(self.cfg, self._shared)
            reset_shared(self.cfg, self._shared)
        yield self._shared

    def close(self) -> None:
        self._shared = None
        self._stack.close()

    def __enter__(self) -> Targets:
        self._stack.enter_context(interrupt_on_signals())
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: How long a shared target may take to drain the previous run's load.
RECOVER_S = 180.0


def wait_recovered(cfg: EvalConfig, target: OpenTarget, deadline_s: float = RECOVER_S) -> float:
    """Wait until a shared TeaStore serves its pages and a login again after the previous
    run (an 800 samples/s flood leaves thousands of requests queued); the seconds waited.

    Raises ``EngineError`` when it has not recovered within ``deadline_s``."""
    if cfg.target_kind != "teastore":
        return 0.0
    t0 = time.monotonic()
    while not (pages_work(target.port, timeout_s=5.0) and login_works(target.port, 5.0)):
        if time.monotonic() - t0 > deadline_s:
            raise EngineError(
                f"the shared TeaStore on port {target.port} did not recover within "
                f"{deadline_s:g} s of the previous run"
            )
        time.sleep(2.0)
    waited = time.monotonic() - t0
    log.info("shared TeaStore serves again after %.0f s", waited)
    return waited


def reset_shared(cfg: EvalConfig, target: OpenTarget) -> float:
    """Reset a shared TeaStore before the next run: TeaStore's own regeneration of its
    database, images and recommender (``loadguard.lab.teastore.reset``); the seconds it took.
    The JVMs stay, so the next run meets a warm JIT and fresh data."""
    if cfg.target_kind != "teastore":
        return 0.0
    took = reset_teastore(target.port)
    log.info("shared TeaStore reset in %.0f s", took)
    return took


def target_props(cfg: EvalConfig, port: int) -> dict[str, str]:
    """Where every plan of this target sends its requests."""
    if cfg.uses_browse_plan:
        return {"hostname": "127.0.0.1", "port": str(port)}
    return {"target.port": str(port), "target.path": TARGET_PATH}


def elastic_props(cfg: EvalConfig, duration_s: float) -> dict[str, str]:
    """Threads and length of the elastic plan (LoadGuard's runs and the sweep)."""
    if cfg.uses_browse_plan:
        threads = {"numUser": str(cfg.elastic_threads), "rampUp": "1"}
    else:
        threads = {"threads": str(cfg.elastic_threads)}
    return {**threads, "duration": str(int(duration_s))}


def elastic_plan_for(cfg: EvalConfig) -> Path:
    return teastore_browse_plan() if cfg.uses_browse_plan else elastic_plan()


def baseline_plan_for(cfg: EvalConfig, scheme: Scheme, run_dir: Path) -> Path:
    """The baseline's plan; for TeaStore, written into the run's folder."""
    if cfg.target_kind != "teastore":
        return scheme.plan_path
    plan = run_dir / "plan.jmx"
    return browse_baseline(teastore_browse_plan(), scheme.plan_path, cfg.stress_rps, plan)
