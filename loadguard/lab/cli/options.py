"""The options only the lab's commands take, defined once (the shared ones are
``loadguard.cli.options``'s; ``tests/unit/test_cli_vocabulary.py`` checks both)."""

from __future__ import annotations

import click

from loadguard.cli.options import DURATION, seed_option, stack
from loadguard.lab.teastore.layout import LAYOUTS

#: The real TeaStore's layout (``loadguard teastore``, ``evaluate --target teastore``).
layout_option = click.option(
    "--layout", type=click.Choice(LAYOUTS), default="single", show_default=True,
    help="TeaStore layout: single: all six services in one Tomcat; per-service: one "
    "Tomcat (and JVM) per service on its own port, found through the registry.",
)  # fmt: skip

#: The queueing target: c workers, a K-deep queue, a service time, capacity changes
#: (``loadguard target`` serves it, ``loadguard simulate`` simulates it).
plant_options = stack(
    click.option("--workers", type=int, default=8, show_default=True, help="c: parallel workers."),
    click.option(
        "--queue", type=int, default=100, show_default=True,
        help="K: wait-queue bound (an arrival beyond it is an error at once).",
    ),
    click.option(
        "--service", type=DURATION, default="50ms", show_default=True,
        help="Mean service time (shop model: the base its endpoints scale).",
    ),
    click.option(
        "--capacity-change", "changes", multiple=True, metavar="TIME:FACTOR",
        help="Multiply the workers by FACTOR at TIME, e.g. 120s:0.5 (repeat).",
    ),
    seed_option,
)  # fmt: skip
