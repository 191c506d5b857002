"""The one error hierarchy.

The library raises these; ``loadguard.cli`` turns them into a one-line message and an
exit code. Anything else escaping the library is a bug.

Exit codes (a public contract, documented under "Exit codes" in docs/decision-log.md):

* 1 -- the SLO verdict failed (not an error: raised by nobody here, returned by commands);
* 2 -- bad usage or bad input (``UsageError`` and every input error);
* 3 -- JMeter or an engine failed (``EngineError`` and its children);
* 5 -- the SLO held but the knee was never reached: ``INCONCLUSIVE`` (a verdict, returned
  by ``run``/``attach`` like 0 and 1, and by ``demo``; ``loadguard.summary.INCONCLUSIVE_EXIT``);
* 4 -- an internal error: any other exception (a bug). The CLI prints one line,
  ``internal error: <type>: <message>`` (``--debug`` adds the traceback); ``run`` and
  ``attach`` still write the summary and the decision log first;
* 130 -- interrupted (Ctrl-C) outside a run's control loop.
"""

from __future__ import annotations

#: Exit code of an unexpected exception (not a ``LoadGuardError``): a bug, not a verdict.
INTERNAL_ERROR_EXIT = 4
#: Exit code of a Ctrl-C that reaches the CLI (128 + SIGINT, as shells report it).
INTERRUPTED_EXIT = 130


class LoadGuardError(Exception):
    """Base of every error LoadGuard raises on purpose."""

    exit_code: int = 2
    #: The setting at fault (a configuration field such as ``tick_ms``), or ``None``. The
    #: library names settings, never command-line flags: the CLI, which knows which flag
    #: sets which setting (``loadguard.cli.flags``), puts the flag in front of the message.
    setting: str | None = None

    def __init__(self, message: str, setting: str | None = None) -> None:
        # Keep messages to one line: the CLI prints them as ``error: <message>``.
        super().__init__(" ".join(str(message).split()))
        self.setting = setting

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class UsageError(LoadGuardError):
    """A bad option value or a bad combination of options."""


class ConfigError(UsageError):
    """A configuration the library cannot run (``SidecarConfig``, ``OutputConfig``, the fleet).

    ``setting`` names the configuration field at fault (``tick_ms``, ``remotes``...); the
    message describes the problem in the library's words, naming no command-line flag. The
    CLI, which knows which flag sets which field (``loadguard.cli.flags``), rewrites it
    into its own one-line message (``--tick: ...``); the exit code stays 2.
    """

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message, setting)


class PluginError(LoadGuardError):
    """A command's ``loadguard.commands`` entry point cannot be loaded (a broken install)."""


class JtlError(LoadGuardError):
    """A results file that cannot be read at all (single bad rows are counted, not raised)."""


class SloSpecError(LoadGuardError):
    """A bad SLO spec: unknown key, negative value, missing unit, percentage over 100."""


class JmxError(LoadGuardError):
    """A test plan that is not a well-formed JMX, or cannot be transformed."""


class PolicyError(LoadGuardError):
    """A bad policy name or policy parameter."""


class SimulationError(LoadGuardError):
    """A simulator scenario that cannot be run (unstable parameters, bad distribution)."""


class ReportError(LoadGuardError):
    """A report that cannot be produced from the inputs given."""


class DecisionLogError(LoadGuardError):
    """The decision log or summary cannot be written (unwritable directory, disk full)."""

    exit_code = 3


class OutputPathError(DecisionLogError):
    """An output path (decision log, summary, JUnit) that cannot be created: bad input."""

    exit_code = 2


class EngineError(LoadGuardError):
    """JMeter, or a JMeter engine, failed or could not be reached."""

    exit_code = 3


class JMeterNotFoundError(EngineError):
    """No JMeter home could be found; the message says how to install one."""

    exit_code = 2


class ProvisioningError(EngineError):
    """`loadguard jmeter install` failed (missing tool, download, checksum, assembly)."""


class ActuatorError(EngineError):
    """A push to an engine's BeanShell server failed (refused, timeout, `// Error:` reply)."""


class BeanShellReplyError(ActuatorError):
    """The BeanShell server answered, but its reply reports an error or lacks the sentinel."""


class DashboardError(EngineError):
    """JMeter's report generator failed on ``loadguard report --dashboard``."""
