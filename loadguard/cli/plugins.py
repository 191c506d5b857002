"""Commands other packages add to ``loadguard``: the ``loadguard.commands`` entry points.

The product registers its own commands in ``loadguard.cli``. The lab's (``demo``,
``evaluate``, ``simulate``, ``target``, ``teastore``) are declared in pyproject.toml as
entry points of the group ``loadguard.commands`` (``name = "module:click_command"``) and
read here with importlib.metadata when the CLI starts, so the product never imports
``loadguard.lab``; a command's module is imported only when that command is resolved
(``loadguard.cli.LoadGuardGroup``). The metadata is written by the install: ``make
install`` (or ``pip install -e .``) writes it again after pyproject.toml changes.

Nothing here can stop the product's own commands from working:

* an entry point that cannot be imported, or that is not a click command, becomes a
  command of its name that answers every invocation with one line, ``error: the
  'loadguard <name>' command could not be loaded from <module:attr> (<why>); ...``, and
  exit 2 (``PluginError``);
* an entry point that has a product command's name is ignored (the product's stands);
* a command the group lacks is click's "No such command", plus a hint to reinstall when
  no entry point is installed at all (a stale install).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol

import click

from loadguard.errors import PluginError

#: The entry-point group the CLI reads its added commands from.
GROUP = "loadguard.commands"

REINSTALL = "reinstall loadguard (make install, or pip install -e .)"


def installed(group: str = GROUP) -> list[EntryPoint]:
    """The group's entry points, by name (one per name: the first the metadata lists)."""
    seen: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        seen.setdefault(ep.name, ep)
    return [seen[name] for name in sorted(seen)]


def load(ep: EntryPoint) -> click.Command:
    """The click command ``ep`` names, or one that reports in one line why it is not."""
    try:
        obj = ep.load()
    except Exception as exc:  # any failure of the plugin's import is the plugin's
        why = " ".join(str(exc).split()) or "(no message)"
        return broken(ep, f"{type(exc).__name__}: {why}")
    if not isinstance(obj, click.Command):
        return broken(ep, f"it is a {type(obj).__name__}, not a click command")
    return obj


def broken(ep: EntryPoint, why: str) -> click.Command:
    """A stand-in for ``ep``: every invocation, ``--help`` included, raises ``PluginError``."""
    message = (
        f"the 'loadguard {ep.name}' command could not be loaded from {ep.value} "
        f"({why}); {REINSTALL}"
    )

    def fail(**_: Any) -> None:
        raise PluginError(message)

    return click.Command(
        ep.name,
        callback=fail,
        help=f"Could not be loaded from {ep.value}: run it to see why.\n\n"
        f"\b\nExample:\n  loadguard {ep.name}",
        short_help="(could not be loaded: run it to see why)",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


class LazyGroup(Protocol):
    """What ``register`` needs of a group (``loadguard.cli.LoadGuardGroup``)."""

    def known(self, name: str) -> bool: ...

    def add_lazy(self, name: str, loader: Callable[[], click.Command]) -> None: ...


def register(group: LazyGroup, eps: list[EntryPoint] | None = None) -> list[str]:
    """Add each entry point's command to ``group``, to be loaded (``load``) when it is
    first resolved; the names added."""
    added = []
    for ep in installed() if eps is None else eps:
        if group.known(ep.name):
            continue
        group.add_lazy(ep.name, functools.partial(load, ep))
        added.append(ep.name)
    return added
