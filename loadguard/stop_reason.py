"""Why a run ended: the stop reasons, one ``str``-valued enum like ``Zone`` and ``Action``.

The values are the exact strings the summary (``stop_reason``), the console line and the
evaluation tables have always carried, so users' files and scripts read them unchanged.

Who says which:

* the loop: ``duration`` (``--duration`` reached), ``auto_stop`` (a STOP decision),
  ``stopped`` (ended without a recorded reason);
* the sidecar: ``signal`` (SIGINT/SIGTERM), ``decision_log_failed`` (the log became
  unwritable), ``internal_error`` (a bug inside the loop);
* the probes: ``jmeter_exited`` (JMeter finished, exit 0), ``jmeter_failed`` (it exited
  with an error), ``engine_lost`` (it was killed), ``jmeter_gone`` (``attach``: the
  engines no longer answer or run no threads).
"""

from __future__ import annotations

from enum import StrEnum


class StopReason(StrEnum):
    DURATION = "duration"
    AUTO_STOP = "auto_stop"
    STOPPED = "stopped"
    SIGNAL = "signal"
    DECISION_LOG_FAILED = "decision_log_failed"
    INTERNAL_ERROR = "internal_error"
    JMETER_EXITED = "jmeter_exited"
    JMETER_FAILED = "jmeter_failed"
    ENGINE_LOST = "engine_lost"
    JMETER_GONE = "jmeter_gone"

    @property
    def engine_failure(self) -> bool:
        """The generator failed rather than finished (the run exits with code 3)."""
        return self in ENGINE_FAILURES


#: Stop reasons that mean the generator failed rather than finished (exit code 3).
ENGINE_FAILURES = frozenset({StopReason.ENGINE_LOST, StopReason.JMETER_FAILED})
