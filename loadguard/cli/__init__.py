"""The ``loadguard`` command line: a thin click adapter.

Each command group lives in its own module under ``loadguard.cli`` and only parses,
wires and prints; the work is done by the library. The lab's commands (``demo``,
``evaluate``, ``simulate``, ``target``, ``teastore``) live in ``loadguard.lab.cli`` and
arrive through the ``loadguard.commands`` entry points (``loadguard.cli.plugins``), so
this package never imports the lab. ``main`` maps every ``LoadGuardError`` to ``error:
<one line>`` and its exit code, so no traceback reaches a user for bad input. Any other
exception is a bug: one line, ``internal error: <type>: <message>``, and exit 4 (never
1, which pipelines read as "SLO failed"); ``--debug`` (or ``LOADGUARD_DEBUG=1``) prints
its traceback too. A Ctrl-C that reaches here exits 130 quietly.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Callable
from typing import Any

import click

from loadguard import __version__
from loadguard.cli import plugins
from loadguard.cli.flags import named_by_flag
from loadguard.errors import INTERNAL_ERROR_EXIT, INTERRUPTED_EXIT, LoadGuardError


class LoadGuardGroup(click.Group):
    """The ``loadguard`` group: its commands are imported when first asked for.

    ``add_lazy(name, loader)`` registers a command by name; ``get_command`` imports it
    (``loader()``) the first time it is resolved and keeps it in ``commands``, so
    ``loadguard target`` imports the target's modules and not the report's matplotlib
    or the sidecar's pandas. ``--help`` and ``subcommands`` load every command."""

    #: The commands the ``loadguard.commands`` entry points added (``plugins.register``).
    plugin_commands: list[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugin_commands = []
        self._lazy: dict[str, Callable[[], click.Command]] = {}

    def add_lazy(self, name: str, loader: Callable[[], click.Command]) -> None:
        self._lazy[name] = loader

    def known(self, name: str) -> bool:
        """A command of that name is registered, loaded or not."""
        return name in self.commands or name in self._lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self._lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        loader = self._lazy.pop(cmd_name, None)
        if loader is not None:
            self.add_command(loader(), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        unknown = name[:1] not in ("", "-") and self.get_command(ctx, name) is None
        if unknown and not self.plugin_commands:
            # No entry point at all: the install predates them or lost its metadata.
            hint = f"no '{plugins.GROUP}' entry point is installed: {plugins.REINSTALL}"
            raise click.UsageError(f"No such command '{name}' ({hint}).", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except LoadGuardError as exc:
            click.echo(f"error: {named_by_flag(exc)}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            # click's own parameter errors, on one line like ours (exit 2).
            message = " ".join(exc.format_message().split())
            if isinstance(exc, click.BadParameter) and isinstance(exc.param, click.Option):
                # ``--p95: missing unit '250': ...``: the option first, as our errors do.
                message = f"{max(exc.param.opts, key=len)}: {' '.join(exc.message.split())}"
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"error: {message}{hint}", err=True)
            sys.exit(2)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click's own control flow (--help, --version, ctx.exit)
        except KeyboardInterrupt:
            sys.exit(INTERRUPTED_EXIT)
        except BrokenPipeError:
            raise  # ``loadguard report ... | head``: click ends quietly
        except Exception as exc:
            debug = bool(ctx.params.get("debug"))
            if debug:
                traceback.print_exception(exc, file=sys.stderr)
            message = " ".join(str(exc).split()) or "(no message)"
            hint = "" if debug else " (--debug shows the traceback)"
            click.echo(f"internal error: {type(exc).__name__}: {message}{hint}", err=True)
            sys.exit(INTERNAL_ERROR_EXIT)


@click.group(cls=LoadGuardGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="loadguard")
@click.option(
    "--debug",
    is_flag=True,
    envvar="LOADGUARD_DEBUG",
    help="On an internal error, print the traceback too (env LOADGUARD_DEBUG=1).",
)
def cli(debug: bool) -> None:
    """SLO-aware closed-loop load control for Apache JMeter.

    LoadGuard tails the JTL a running JMeter writes, computes rolling p95/p99 and error
    rate, decides INCREASE / HOLD / DECREASE against your SLOs and pushes the new rate
    into JMeter through its BeanShell server.

    \b
    Example:
      loadguard jmeter install
      loadguard run plan.jmx --p95 300ms --error-rate 1% --out results/
      loadguard --debug report results/run1
    """


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """Every command of ``group`` by name, each loaded (the options table, the CLI's tests)."""
    ctx = click.Context(group)
    found = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    return {name: cmd for name, cmd in found.items() if cmd is not None}


#: The product's commands: name -> ``module:attribute`` of its click command, imported
#: only when the command is resolved (``LoadGuardGroup.get_command``).
PRODUCT_COMMANDS: dict[str, str] = {
    "attach": "loadguard.cli.sidecar_cmd:attach_cmd",
    "compare": "loadguard.cli.report_cmd:compare",
    "engines": "loadguard.cli.engines_cmd:engines",
    "inject": "loadguard.cli.inject_cmd:inject",
    "jmeter": "loadguard.cli.jmeter_cmd:jmeter",
    "metrics": "loadguard.cli.metrics_cmd:metrics",
    "options-table": "loadguard.cli.table_cmd:options_table",
    "push": "loadguard.cli.push_cmd:push",
    "report": "loadguard.cli.report_cmd:report",
    "run": "loadguard.cli.sidecar_cmd:run_cmd",
    "stop": "loadguard.cli.stop_cmd:stop",
}


def _importer(target: str) -> Callable[[], click.Command]:
    module, _, attr = target.partition(":")

    def load() -> click.Command:
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command), target
        return command

    return load


def _register() -> None:
    assert isinstance(cli, LoadGuardGroup)
    for name, target in PRODUCT_COMMANDS.items():
        cli.add_lazy(name, _importer(target))
    # The lab's commands (demo, evaluate, simulate, target, teastore) and any other
    # package's: the ``loadguard.commands`` entry points, never a static import.
    cli.plugin_commands = plugins.register(cli)


_register()


def main() -> None:
    cli(prog_name="loadguard")
