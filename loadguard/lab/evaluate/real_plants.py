r"""The plant suite on the real stack: each plant as the process that serves it.

Plants 1-9 are the simulator's (``loadguard.lab.simulate.plants``) served by
``loadguard target`` with the same mechanism, the arguments derived from the plant's
``Scenario`` (``target_args``); plant 10 is the real TeaStore, ``loadguard teastore``
in both layouts (``teastore``, ``teastore-per-service``). Pure: nothing is started here.

How a scenario maps (``target_args``):

==================  ==========================================================
Scenario            ``loadguard target``
==================  ==========================================================
servers, queue      ``--workers``, ``--queue``
exp service         ``--model mmc --service MEAN``
log-normal service  ``--model shop`` with every endpoint ``lognormal:MEAN:σ``
``ShopService``     ``--model shop --service BASE`` (driven by TeaStore's browse plan)
one capacity change ``--capacity-change T:F``
warm-up             ``--warmup Kx:T``
metastable          ``--metastable ENTER:FACTOR:EXIT``
one outage          ``--outage T:D``
generator threads   the plan's JMeter threads (else ``DEFAULT_THREADS``)
==================  ==========================================================

Anything else (two capacity changes, two outages) raises ``NotReproducible``: such a
plant is reported as not run, with the reason.

Arrivals are the one mechanism that always differs: the simulator's plants draw Poisson
arrivals, the Elastic Timer paces evenly (docs/jmeter-integration.md). Both plants are
served with JMeter's even pacing; λ* is measured on the real stack, so it includes the
difference (large for one server: D/M/1 queues far less than M/M/1).

λ* is measured per *phase* as in the simulator; a phase's target is the plant without
its events (a healthy variant) -- and without the warm-up: the sweep measures the
warmed plant, which the simulator's sweep reaches by measuring from 120 s only.

The target's plant clock (warm-up, ``--capacity-change``, ``--outage``) starts when it is
ready, a few seconds before JMeter's first sample; the judge shifts the events by the
measured offset (``loadguard.lab.evaluate.real_data.shift``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from loadguard.durations import format_duration
from loadguard.errors import LoadGuardError
from loadguard.lab.simulate.plants import PLANTS, SuitePlant, select_from
from loadguard.lab.simulate.scenario import Scenario, ShopService
from loadguard.lab.target.distributions import ServiceDist
from loadguard.lab.target.model import ENDPOINTS

#: JMeter threads of the elastic plan when the plant bounds none (the evaluation's own).
DEFAULT_THREADS = 200
#: TeaStore's database has user1..user100: the browse plan logs in one per thread.
TEASTORE_THREADS = 100
TEASTORE_P95_MS = 500.0
#: Where TeaStore's sweep is placed (samples/s of the browse plan; measured λ* decides).
TEASTORE_NOMINAL_RPS = 120.0


class NotReproducible(LoadGuardError):
    """A plant mechanism ``loadguard target`` has no option for."""


@dataclass(frozen=True)
class RealPhase:
    """From ``at_s`` (plant time) λ* is that of the target ``args`` (``None``: 0, an
    outage); ``nominal_rps`` places its sweep."""

    at_s: float
    args: tuple[str, ...] | None
    nominal_rps: float


@dataclass(frozen=True)
class RealPlant:
    number: int
    key: str
    title: str
    p95_ms: float
    #: ``emulator`` (``loadguard target``) or ``teastore``.
    kind: str
    #: The policy runs' target: ``loadguard target`` arguments (emulator) or ``--layout``.
    run_args: tuple[str, ...]
    phases: tuple[RealPhase, ...]
    threads: int
    browse_plan: bool
    events: tuple[tuple[float, float], ...] = ()
    has_cliff: bool = False
    #: Why the real stack cannot serve this plant (then nothing of it is run).
    not_run: str | None = None


def _service_args(service: ServiceDist | ShopService) -> list[str]:
    if isinstance(service, ShopService):
        return ["--model", "shop", "--service", format_duration(service.base_s)]
    if service.kind == "exp":
        return ["--model", "mmc", "--service", format_duration(service.mean_s)]
    if service.kind == "lognormal":
        every = [f"--endpoint-service={name}={service.spec()}" for name in ENDPOINTS]
        return ["--model", "shop", "--service", format_duration(service.mean_s), *every]
    raise NotReproducible(f"a {service.kind} service has no loadguard target model")


def target_args(scenario: Scenario, p95_ms: float) -> tuple[str, ...]:
    """``loadguard target`` arguments (but ``--seed``) serving ``scenario``."""
    args = [
        *_service_args(scenario.service),
        "--workers", str(scenario.servers),
        "--queue", str(scenario.queue),
        "--p95", f"{p95_ms:g}ms",
    ]  # fmt: skip
    if len(scenario.changes) > 1:
        raise NotReproducible("loadguard target changes capacity once (--capacity-change)")
    for change in scenario.changes:
        args += ["--capacity-change", f"{format_duration(change.at_s)}:{change.factor:g}"]
    if scenario.warmup is not None:
        w = scenario.warmup
        args += ["--warmup", f"{w.factor:g}x:{format_duration(w.over_s)}"]
    if scenario.metastable is not None:
        m = scenario.metastable
        args += ["--metastable", f"{m.enter_waiting}:{m.factor:g}:{m.exit_waiting}"]
    if len(scenario.outages) > 1:
        raise NotReproducible("loadguard target hangs once (--outage)")
    for outage in scenario.outages:
        args += ["--outage", f"{format_duration(outage.at_s)}:{format_duration(outage.duration_s)}"]
    return tuple(args)


def from_suite(plant: SuitePlant) -> RealPlant:
    """The simulator's plant on ``loadguard target`` (``not_run`` set when it cannot)."""
    threads = plant.scenario.generator_threads or DEFAULT_THREADS
    base = RealPlant(
        number=plant.number,
        key=plant.key,
        title=plant.title,
        p95_ms=plant.p95_ms,
        kind="emulator",
        run_args=(),
        phases=(),
        threads=threads,
        browse_plan=isinstance(plant.scenario.service, ShopService),
        events=plant.events,
        has_cliff=plant.has_cliff,
    )
    try:
        run_args = target_args(plant.scenario, plant.p95_ms)
        phases = tuple(
            RealPhase(
                ph.at_s,
                None if ph.variant is None else target_args(_warm(ph.variant), plant.p95_ms),
                0.0 if ph.variant is None else plant.nominal_lambda_star(ph.variant),
            )
            for ph in plant.phases()
        )
    except NotReproducible as exc:
        return dataclasses.replace(base, not_run=str(exc))
    return dataclasses.replace(base, run_args=run_args, phases=phases)


def _warm(variant: Scenario) -> Scenario:
    return dataclasses.replace(variant, warmup=None)


def teastore(layout: str) -> RealPlant:
    key = "teastore" if layout == "single" else f"teastore-{layout}"
    return RealPlant(
        number=10,
        key=key,
        title=f"the real TeaStore, {layout} layout, browse plan",
        p95_ms=TEASTORE_P95_MS,
        kind="teastore",
        run_args=("--layout", layout),
        phases=(RealPhase(0.0, ("--layout", layout), TEASTORE_NOMINAL_RPS),),
        threads=TEASTORE_THREADS,
        browse_plan=True,
    )


REAL_PLANTS: tuple[RealPlant, ...] = (
    *(from_suite(p) for p in PLANTS),
    teastore("single"),
    teastore("per-service"),
)


def select_real(names: tuple[str, ...] | list[str] | None) -> tuple[RealPlant, ...]:
    """Plants by key or number (10: both TeaStore layouts), in suite order; all for none."""
    return select_from(REAL_PLANTS, names)
