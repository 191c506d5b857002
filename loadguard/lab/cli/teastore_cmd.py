"""``loadguard teastore``: the real TeaStore, built from source, served in the foreground."""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from loadguard.cli.options import DURATION, port_option, rebuild_option
from loadguard.durations import Seconds
from loadguard.errors import UsageError
from loadguard.lab.cli.options import layout_option
from loadguard.lab.teastore.build import ensure_build
from loadguard.lab.teastore.runner import TeaStoreOptions, running_teastore
from loadguard.lab.teastore.source import SOURCE_ENV, resolve_source
from loadguard.signals import interrupt_on_signals

READY_PREFIX = "loadguard teastore ready:"
_HEAP = re.compile(r"^[1-9][0-9]*[kmgKMG]?$")


def format_ready_line(url: str, port: int) -> str:
    return f"{READY_PREFIX} url={url} port={port}"


def _info(line: str) -> None:
    click.echo(f"loadguard teastore: {line}", err=True)


@click.command("teastore")
@click.option(
    "--source",
    type=click.Path(path_type=Path),
    envvar=SOURCE_ENV,
    show_envvar=True,
    help="TeaStore 1.4.2's source: a folder or a .tar.gz (its GitHub release tarball).",
)
@port_option
@layout_option
@click.option("--heap", default="512m", show_default=True, help="-Xmx of every Tomcat JVM.")
@click.option(
    "--max-threads", type=int, default=200, show_default=True, help="Connector maxThreads."
)
@click.option(
    "--logs",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep catalina and access logs here (per-service: a folder per service).",
)
@click.option(
    "--start-timeout", type=DURATION, default="10m", show_default=True,
    help="Give up if not ready by then.",
)  # fmt: skip
@rebuild_option
def teastore(
    source: Path | None,
    port: int,
    layout: str,
    heap: str,
    max_threads: int,
    logs: Path | None,
    start_timeout: Seconds,
    rebuild: bool,
) -> None:
    """Build (once, cached) and serve the real TeaStore (web UI on --port) until SIGINT/SIGTERM.

    Builds the six services with Maven and assembles Tomcat 10.1 with an in-memory
    HSQLDB (cached under ~/.cache/loadguard/teastore/<hash>; $LOADGUARD_HOME moves it),
    starts the Tomcats on 127.0.0.1 with a fresh instance folder, waits until the status
    page shows every service ready (database and images populated, recommender trained)
    and prints one line: loadguard teastore ready: url=... port=...

    \b
    Example:
      loadguard teastore --port 8080 --source teastore-1.4.2.tar.gz
      export LOADGUARD_TEASTORE_SOURCE=teastore-1.4.2.tar.gz
      loadguard teastore --layout per-service --heap 256m --logs teastore-logs/
      loadguard run examples/teastore/teastore-browse.jmx --p95 500ms -- -Jport=8080
    """
    if port < 0 or port > 65535:
        raise UsageError(f"--port must be 0..65535, got {port}")
    if not _HEAP.match(heap):
        raise UsageError(f"--heap: expected a JVM size like 512m or 2g, got {heap!r}")
    if max_threads < 1:
        raise UsageError(f"--max-threads must be >= 1, got {max_threads}")
    src = resolve_source(source)
    # SIGINT/SIGTERM unwind once (KeyboardInterrupt); later ones are ignored, so the
    # shutdown of the JVMs is never cut short.
    click.get_current_context().with_resource(interrupt_on_signals())
    try:
        built = ensure_build(src, force=rebuild, log=_info)
        how = "reused" if built.reused else f"built in {built.seconds:.0f}s"
        _info(f"build {how}: {built.build.root}")
        options = TeaStoreOptions(
            layout=layout,
            port=port,
            heap=heap,
            max_threads=max_threads,
            logs=logs,
            start_timeout_s=start_timeout,
        )
        started = time.monotonic()
        with running_teastore(built.build, options, log=_info) as store:
            rss = store.rss_bytes() / 2**20
            _info(
                f"layout={layout}: {len(store.tomcats)} JVM(s), ready after "
                f"{time.monotonic() - started:.0f}s, RSS {rss:.0f} MiB"
            )
            click.echo(format_ready_line(store.url, store.port))
            while True:
                store.check_alive()
                time.sleep(1.0)
    except KeyboardInterrupt:
        _info("stopped every Tomcat")
