"""The sidecar's checks: before the run (``preflight``: can every output be written?)
and during it (is the load generator still there? ``EngineProbe``s for the loop)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence

from loadguard.actuator.engines import Engine
from loadguard.decisions import DecisionLogWriter, check_writable
from loadguard.jmeter.launch import JMeterProcess
from loadguard.sidecar.config import Paths
from loadguard.stop_reason import StopReason

log = logging.getLogger(__name__)


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


class EngineGoneProbe:
    """For ``attach``: JMeter counts as gone when its BeanShell port refuses connections.

    The loop ends once the JTL has also been idle for ``idle_exit_ms``.
    """

    def __init__(self, engines: Sequence[Engine]) -> None:
        self.engines = engines

    def check(self) -> StopReason | None:
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
