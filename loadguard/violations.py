r"""The violation share: the one definition every figure of "windows over the SLO" uses.

* A *window* is judged or not: a window holding fewer than ``min_samples`` samples (the
  SLO spec's NO_DATA rule, or the suite's ``MIN_SAMPLES``) is not judged and counts
  nowhere, neither above nor below the line.
* A judged window *violates* a criterion (``p95_ms``, ``error_rate``, a label's
  ``label=checkout:p95_ms``, ...) when its value is over the criterion's limit; a value or
  a limit that is missing (``None``) or NaN is no violation (``over_limits``; NaN compares
  false in ``SloSpec.evaluate`` too).
* The *violation share* of a criterion is the judged windows violating it / the judged
  windows; the share of *any* criterion is the judged windows violating at least one.
  With no judged window the share is ``None`` (unknown, not 0): ``summary.json`` keeps
  writing 0.0 there, its contract's convention, and says so where it does.

Which windows exist is the caller's: the tumbling windows
:math:`(o + (k-1)W, o + kW]` of completion time for a set of samples
(``tumbling_observations``: the evaluation harness, with o the first send, and the
simulator, with o = 0), one tick per ``window_ms`` of a decision log (``summary``), or the
suite's own window table (``evaluate.suite_metrics``, from 30 s on).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from loadguard.observation import Observation, Zone
from loadguard.slo import SloSpec
from loadguard.window import Window

#: The criterion name ``ViolationTally.share`` takes for "any criterion".
ANY = "any"


def share(violating: int, judged: int) -> float | None:
    """``violating / judged``; ``None`` when nothing was judged."""
    return violating / judged if judged else None


def over_limits(
    values: Mapping[str, float | None], limits: Mapping[str, float | None]
) -> frozenset[str]:
    """The criteria whose value is over its limit; a missing or NaN value or limit is none."""
    out = set()
    for name, limit in limits.items():
        value = values.get(name)
        if limit is None or value is None or math.isnan(limit) or math.isnan(value):
            continue
        if value > limit:
            out.add(name)
    return frozenset(out)


@dataclass
class ViolationTally:
    """Judged windows and, per criterion and for any criterion, those that violated it."""

    min_samples: int = 1
    judged: int = 0
    violating_any: int = 0
    violating: Counter[str] = field(default_factory=Counter)

    def add(self, samples: int, breaches: Iterable[str]) -> bool:
        """Count one window of ``samples`` samples that breached ``breaches``; a window
        with fewer than ``min_samples`` is not judged. Returns whether it was judged."""
        if samples < self.min_samples:
            return False
        names = set(breaches)
        self.judged += 1
        self.violating_any += bool(names)
        self.violating.update(names)
        return True

    def add_observation(self, obs: Observation) -> bool:
        """Count a window as ``SloSpec.evaluate`` judged it (NO_DATA: not judged)."""
        if obs.zone is Zone.NO_DATA:
            return False
        return self.add(obs.stats.overall.count, obs.breaches)

    def count(self, criterion: str = ANY) -> int:
        return self.violating_any if criterion == ANY else self.violating[criterion]

    def share(self, criterion: str = ANY) -> float | None:
        """The violation share of ``criterion`` (``ANY``: of any); ``None`` if none judged."""
        return share(self.count(criterion), self.judged)


def tumbling_observations(
    spec: SloSpec, window: Window, origin_ms: int, count: int
) -> Iterator[Observation]:
    """``spec``'s judgement of each tumbling window :math:`(o + (k-1)W, o + kW]`,
    k = 1 … ``count``, of the samples already in ``window`` (W = ``spec.window_ms``)."""
    for k in range(1, count + 1):
        wall_ms = origin_ms + k * spec.window_ms
        yield spec.evaluate(window.stats(wall_ms), wall_ms, 0.0)


def tumbling_tally(spec: SloSpec, window: Window, origin_ms: int, count: int) -> ViolationTally:
    """The ``ViolationTally`` of ``tumbling_observations``."""
    tally = ViolationTally(spec.min_samples)
    for obs in tumbling_observations(spec, window, origin_ms, count):
        tally.add_observation(obs)
    return tally
