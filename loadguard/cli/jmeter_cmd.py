"""``loadguard jmeter install|path``."""

from __future__ import annotations

from pathlib import Path

import click

from loadguard.cli.options import jmeter_home_option, quiet_option, rebuild_option
from loadguard.jmeter.home import find_jmeter_home
from loadguard.jmeter.install import JMETER_VERSION, install


@click.group()
def jmeter() -> None:
    """Provision and locate Apache JMeter.

    \b
    Example:
      loadguard jmeter install && loadguard jmeter path
    """


@jmeter.command("install")
@click.option(
    "--from",
    "source",
    type=click.Choice(["maven", "apache"]),
    default="maven",
    show_default=True,
    help="maven: assemble from Maven artifacts; apache: official zip, SHA-512 verified.",
)
@rebuild_option
@click.option("--no-plugins", is_flag=True, help="Skip the jmeter-plugins thread groups/timers.")
@quiet_option
def install_cmd(source: str, rebuild: bool, no_plugins: bool, quiet: bool) -> None:
    """Provision JMeter 5.6.3 (+ jmeter-plugins) into $LOADGUARD_HOME (~/.cache/loadguard).

    Idempotent: a second run finds the complete home and returns in well under a second.
    --quiet prints only the home directory.

    \b
    Example:
      loadguard jmeter install
      LOADGUARD_HOME=/opt/lg loadguard jmeter install --from apache
    """

    def log(msg: str) -> None:
        if not quiet:
            click.echo(msg, err=True)

    result = install(source=source, force=rebuild, with_plugins=not no_plugins, log=log)
    if quiet:
        click.echo(str(result.home))
        return
    state = "already installed" if result.reused else f"installed from {result.source}"
    click.echo(f"JMeter {JMETER_VERSION} {state} in {result.seconds:.1f}s: {result.home}")
    for plugin in result.plugins:
        click.echo(f"  plugin: {plugin}")


@jmeter.command("path")
@jmeter_home_option
def path_cmd(jmeter_home: Path | None) -> None:
    """Print the JMeter home LoadGuard would use.

    Search order: --jmeter-home, $JMETER_HOME, the LoadGuard cache, `jmeter` on PATH.

    \b
    Example:
      $(loadguard jmeter path)/bin/jmeter -n -t plan.jmx -l out.jtl
    """
    click.echo(str(find_jmeter_home(jmeter_home).path))
