"""Which flag sets which setting: the one table, and the rewrite that uses it.

The library raises domain errors that name a *setting* (``LoadGuardError.setting``: a
configuration field such as ``tick_ms`` or ``prometheus_port``), never a command-line
flag. The CLI knows the flags: ``named_by_flag`` turns such an error into its one-line
message, ``<flag>: <problem> (<what to do>)``. ``LoadGuardGroup.invoke`` applies it to
every error a command lets through, so the exit code stays the error's own.
"""

from __future__ import annotations

from loadguard.errors import LoadGuardError

#: Setting -> the flag that sets it ("": none, the message stands alone) and what to do
#: about it ("": nothing to add).
SETTING_FLAGS: dict[str, tuple[str, str]] = {
    # SidecarConfig (loadguard.sidecar.config)
    "tick_ms": ("--tick", ""),
    "initial_rate": ("--initial-rate", ""),
    "auto_stop": ("--auto-stop", ""),
    "lag_ms": ("--actuation-lag", ""),
    "policy_params.lag_ms": ("--param lag_ms", "give the actuation lag as --actuation-lag"),
    "idle_exit_ms": ("--idle-exit", ""),
    "duration_ms": ("--duration", ""),
    "engine_max_rate": ("--engine-max-rate", ""),
    "engine_max_rate.remotes": ("--engine-max-rate", "it needs --remote"),
    "remotes": ("--remote", "give one --engine HOST:BSHPORT per --remote, in the same order"),
    "remotes.none": ("--remote", ""),
    "remotes.dry_run": ("--remote", "--dry-run is not supported"),
    "engines": ("--engine", "give --engine HOST:PORT or --dry-run"),
    "engines.not_ready": (
        "",
        "start each engine with jmeter-server -Jbeanshell.server.port=P and give --engine HOST:P+1",
    ),
    "out_dir": ("", "give another --out, or --force to replace it"),
    # -J beanshell.server.* (or after --): the key is the message's first word already
    "properties.beanshell": (
        "",
        "start JMeter yourself and use `loadguard attach` for another console",
    ),
    # OutputConfig (loadguard.outputs)
    "influx_required": ("--influx-required", "give --influx URL"),
    "prometheus_port": ("--prometheus-port", ""),
    "application": ("--application", ""),
    "influx_token_file": ("--influx-token-file", ""),
    "influx.credentials": (
        "--influx",
        "give it in $LOADGUARD_INFLUX_TOKEN or --influx-token-file",
    ),
    # the JTL's format (loadguard.jtl.columns, loadguard.report.jtl_digest)
    "jtl_columns": ("--jtl-columns", ""),
    "labels": ("--labels", ""),
    "exclude_labels": ("--exclude-labels", ""),
    "jtl_format": ("", "give the JTL's format with --jmeter-properties or --jtl-columns"),
    # report (loadguard.report.run_inputs)
    "decisions": ("", "give a run directory or --decisions decisions.csv"),
    # JMeter (loadguard.jmeter.home)
    "jmeter_home": ("", "or give --jmeter-home"),
}


def named_by_flag(exc: LoadGuardError) -> str:
    """``exc``'s one-line message for the command line: the flag that sets its setting
    first, the table's advice last. An error without a setting keeps its message."""
    if exc.setting is None:
        return exc.message
    flag, hint = SETTING_FLAGS.get(exc.setting, (exc.setting, ""))
    head = f"{flag}: {exc.message}" if flag else exc.message
    return head + (f" ({hint})" if hint else "")
