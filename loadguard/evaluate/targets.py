"""The system under test of an evaluation: the emulator or the real TeaStore.

Every run and every sweep point opens a **fresh** target and closes it afterwards:

* ``emulator``: ``loadguard target --model mmc ...`` (``TargetSpec``), the elastic plan
  (``jmx_templates/elastic_plan.jmx``, one GET per sample) and the baselines' plans as
  they are;
* ``teastore``: ``loadguard teastore --layout L`` (the cached build, a new instance:
  an empty in-memory database generated at start, a cold JIT), TeaStore's browse plan
  (examples/teastore/teastore-browse.jmx, which carries the Elastic Timer) for LoadGuard
  and the sweep, and the baselines' thread groups around the same browse samplers
  (``teastore_plans``). A fresh TeaStore takes minutes to start; no run shares one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loadguard.demo import elastic_plan
from loadguard.errors import UsageError
from loadguard.evaluate.config import TARGET_PATH, EvalConfig
from loadguard.evaluate.schemes import Scheme
from loadguard.evaluate.teastore_plans import browse_baseline
from loadguard.target.process import spawn_target
from loadguard.teastore.process import spawn_teastore

BROWSE_PLAN = Path(__file__).resolve().parents[2] / "examples" / "teastore" / "teastore-browse.jmx"
TARGETS = ("emulator", "teastore")


@dataclass(frozen=True)
class OpenTarget:
    port: int
    lambda_star_analytic: float | None  # the emulator's M/M/c figure; None for TeaStore


@contextmanager
def open_target(cfg: EvalConfig, seed: int) -> Iterator[OpenTarget]:
    """A fresh target for one run or sweep point; stopped on the way out."""
    if cfg.target_kind == "teastore":
        with spawn_teastore(["--layout", cfg.teastore_layout]) as store:
            yield OpenTarget(store.port, None)
    else:
        with spawn_target(cfg.target.args(seed)) as target:
            yield OpenTarget(target.port, target.ready.lambda_star_rps)


def _browse() -> Path:
    if not BROWSE_PLAN.is_file():
        raise UsageError(f"--target teastore needs {BROWSE_PLAN} (run from a checkout)")
    return BROWSE_PLAN


def target_props(cfg: EvalConfig, port: int) -> dict[str, str]:
    """Where every plan of this target sends its requests."""
    if cfg.target_kind == "teastore":
        return {"hostname": "127.0.0.1", "port": str(port)}
    return {"target.port": str(port), "target.path": TARGET_PATH}


def elastic_props(cfg: EvalConfig, duration_s: float) -> dict[str, str]:
    """Threads and length of the elastic plan (LoadGuard's runs and the sweep)."""
    if cfg.target_kind == "teastore":
        threads = {"numUser": str(cfg.elastic_threads), "rampUp": "1"}
    else:
        threads = {"threads": str(cfg.elastic_threads)}
    return {**threads, "duration": str(int(duration_s))}


def elastic_plan_for(cfg: EvalConfig) -> Path:
    return _browse() if cfg.target_kind == "teastore" else elastic_plan()


def baseline_plan_for(cfg: EvalConfig, scheme: Scheme, run_dir: Path) -> Path:
    """The baseline's plan; for TeaStore, written into the run's folder."""
    if cfg.target_kind != "teastore":
        return scheme.plan_path
    return browse_baseline(_browse(), scheme.plan_path, cfg.stress_rps, run_dir / "plan.jmx")
