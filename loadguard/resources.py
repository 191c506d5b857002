"""The files the package ships as data (``loadguard/data/``), read with importlib.resources.

``loadguard/data/`` is the only copy of each file. The checkout's ``jmx_templates/``,
``benchmarks/plans`` and ``examples/teastore/teastore-browse.jmx`` are symbolic links to
it, so the paths the docs name keep working and nothing can drift.

* ``jmx_templates/``: the Elastic Timer and the minimal elastic plan (generated from
  ``loadguard.jmx.elastic_xml``; a golden test keeps them equal);
* ``plans/``: the two open-loop baselines of ``loadguard evaluate`` (FFA, TSTCTG);
* ``teastore/teastore-browse.jmx``: TeaStore's browse profile with the Elastic Timer.

JMeter reads a plan by path, so each is handed out as a ``Path``: the file itself in a
regular or editable install, a temporary copy (kept until the process ends) when the
package is imported from a zip.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack
from importlib.resources import as_file, files
from pathlib import Path

from loadguard.errors import UsageError

_COPIES = ExitStack()
atexit.register(_COPIES.close)


def data_file(*parts: str) -> Path:
    """``loadguard/data/<parts>`` as a real file; ``UsageError`` if the install lacks it."""
    resource = files("loadguard").joinpath("data", *parts)
    if not resource.is_file():
        name = "/".join(parts)
        raise UsageError(f"loadguard/data/{name} is missing from this install (reinstall it)")
    if isinstance(resource, Path):
        return resource
    return _COPIES.enter_context(as_file(resource))


def elastic_plan() -> Path:
    """The minimal elastic plan (one thread group, one HTTP GET, the Elastic Timer)."""
    return data_file("jmx_templates", "elastic_plan.jmx")


def baseline_plan(name: str) -> Path:
    """An open-loop baseline plan of ``loadguard evaluate`` (``ffa_800.jmx``, ...)."""
    return data_file("plans", name)


def teastore_browse_plan() -> Path:
    """TeaStore's browse profile (8 samplers) carrying the Elastic Timer."""
    return data_file("teastore", "teastore-browse.jmx")
