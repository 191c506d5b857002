"""The sidecar: ``attach`` (beside a running JMeter) and ``run`` (start it too).

One module per job; this package re-exports what the CLI and the other modules use:

* ``config``: ``Paths`` and ``SidecarConfig`` (which validates itself: ``ConfigError``);
* ``staging``: the run folder, and the plan JMeter runs (the Elastic Timer injected);
* ``local_jmeter``: the ``Generator`` protocol and ``LocalJMeter``, our child JMeter;
* ``probes``: ``preflight`` (can every output be written?) and the engine probes;
* ``compose``: ``drive``, the composition root (tail -> stats -> SLO -> policy ->
  actuator -> decision log -> outputs), and its entry points ``attach`` and ``run_plan``.
"""

from loadguard.sidecar.compose import (
    attach,
    drive,
    fleet_actuator,
    open_live_outputs,
    prepare,
    run_plan,
)
from loadguard.sidecar.config import Paths, SidecarConfig
from loadguard.sidecar.local_jmeter import Generator, LocalJMeter, Started
from loadguard.sidecar.probes import EngineGoneProbe, ProcessProbe, preflight
from loadguard.sidecar.staging import RunPlan, claim_run_folder, planned_xml, staged_plan

__all__ = [
    "EngineGoneProbe",
    "Generator",
    "LocalJMeter",
    "Paths",
    "ProcessProbe",
    "RunPlan",
    "SidecarConfig",
    "Started",
    "attach",
    "claim_run_folder",
    "drive",
    "fleet_actuator",
    "open_live_outputs",
    "planned_xml",
    "preflight",
    "prepare",
    "run_plan",
    "staged_plan",
]
