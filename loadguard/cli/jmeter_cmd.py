"""``loadguard jmeter install|path``."""

from __future__ import annotations

import click

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
    "--source",
    type=click.Choice(["maven", "apache"]),
    default="maven",
    show_default=True,
    help="maven: assemble from Maven artifacts; apache: official zip, SHA-512 verified.",
)
@click.option("--force", is_flag=True, help="Rebuild even if the cache holds a complete home.")
@click.option("--no-plugins", is_flag=True, help="Skip the jmeter-plugins thread groups/timers.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the home directory.")
def install_cmd(source: str, force: bool, no_plugins: bool, quiet: bool) -> None:
    """Provision JMeter 5.6.3 (+ jmeter-plugins) into $LOADGUARD_HOME (~/.cache/loadguard).

    Idempotent: a second run finds the complete home and returns in well under a second.

    \b
    Example:
      loadguard jmeter install
      LOADGUARD_HOME=/opt/lg loadguard jmeter install --source apache
    """

    def log(msg: str) -> None:
        if not quiet:
            click.echo(msg, err=True)

    result = install(source=source, force=force, with_plugins=not no_plugins, log=log)
    if quiet:
        click.echo(str(result.home))
        return
    state = "already installed" if result.reused else f"installed from {result.source}"
    click.echo(f"JMeter {JMETER_VERSION} {state} in {result.seconds:.1f}s: {result.home}")
    for plugin in result.plugins:
        click.echo(f"  plugin: {plugin}")


@jmeter.command("path")
@click.option("--jmeter-home", type=click.Path(file_okay=False), help="Explicit JMeter home.")
def path_cmd(jmeter_home: str | None) -> None:
    """Print the JMeter home LoadGuard would use.

    Search order: --jmeter-home, $JMETER_HOME, the LoadGuard cache, `jmeter` on PATH.

    \b
    Example:
      $(loadguard jmeter path)/bin/jmeter -n -t plan.jmx -l out.jtl
    """
    click.echo(str(find_jmeter_home(jmeter_home).path))
