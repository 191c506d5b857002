r"""SLO specs and zones (pure core).

A spec comes from command-line options (``--p95 500ms --error-rate 1%``) or from the
``[slo]`` table of a TOML file; options override the file, key by key. Keys:

=================  ==================  ==============================================
key                value               meaning
=================  ==================  ==============================================
p50 p90 p95 p99    ``250ms`` / ``1s``  that percentile of the window's elapsed times
mean max           ``250ms`` / ``1s``  mean / max elapsed
error_rate         ``1%``              share of failed samples (``0%`` .. ``100%``)
warn_margin        ``80%``             NEAR starts at this share of each threshold
min_samples        ``20``              fewer samples in the window: NO_DATA
window             ``10s``             the window length
min_rate max_rate  ``1`` / ``"5/s"``    rate bounds in req/s (a number, ``N/s`` or ``N/min``)
violation_budget   ``5%``              share of windows the user accepts over the SLO
=================  ==================  ==============================================

Per-label overrides are ``[[slo.label]]`` tables with a ``pattern`` (a Python regex,
``re.search``: anchor it yourself) and their own thresholds; a label is judged by every
rule it matches, and only when it has at least ``min_samples`` samples in the window.
Overall thresholds apply to the overall window. Units are always explicit.

Zone of a window, with thresholds :math:`θ_i`, window values :math:`v_i` and margin m:

.. math::

    \text{NO\_DATA} &\iff n < n_{min} \\
    \text{BREACH}   &\iff \exists i: v_i > θ_i \\
    \text{NEAR}     &\iff \neg\text{BREACH} \wedge \exists i: v_i > m θ_i \\
    \text{SAFE}     &\text{ otherwise}

and the *pressure* :math:`P = \max_i v_i / θ_i` (1.0 on a threshold).

A threshold of 0 (``--error-rate 0%``, ``--p95 0ms``) is valid: nothing may exceed it,
so any non-zero value breaches (one failed sample, one request slower than 0 ms) and a
value of 0 is SAFE. Its ratio is :math:`v/0`, so such a breach counts as
``ZERO_LIMIT_PRESSURE`` (10: ten times over, the severest cut a policy makes) and a 0
value as pressure 0; policies never see an infinite pressure.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loadguard.durations import parse_duration_s
from loadguard.errors import SloSpecError, UsageError
from loadguard.observation import Observation, Zone, wall_staleness
from loadguard.rate import RateChange
from loadguard.stats import LabelStats, WindowStats

if TYPE_CHECKING:
    from loadguard.ledger import LedgerView

#: Public spec key -> ``LabelStats`` field.
METRICS: dict[str, str] = {
    "p50": "p50_ms",
    "p90": "p90_ms",
    "p95": "p95_ms",
    "p99": "p99_ms",
    "mean": "mean_ms",
    "max": "max_ms",
    "error_rate": "error_rate",
}
_SETTINGS = ("warn_margin", "min_samples", "window", "min_rate", "max_rate", "violation_budget")
_KEYS = (*METRICS, *_SETTINGS)

_PERCENT = re.compile(r"^\s*(-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*%\s*$")
_RATE = re.compile(r"^\s*(-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(/s|/min)?\s*$")
_NUMBER = r"^\s*-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?\s*"

#: The default violation budget: 5 % of windows over the SLO (the share a p95 itself allows
#: of samples, applied to windows).
DEFAULT_VIOLATION_BUDGET = 0.05

#: The pressure of a non-zero value against a threshold of 0 (the ratio v/0 is unbounded).
ZERO_LIMIT_PRESSURE = 10.0


def _with_unit(
    key: str, value: object, pattern: re.Pattern[str], what: str, example: str
) -> tuple[float, re.Match[str]]:
    """The number of ``value`` (finite, >= 0) and the match of ``pattern``, whose group 1
    is the number: a number without the unit and anything else say so differently."""
    text = str(value)
    match = pattern.match(text)
    if match is None:
        if re.match(_NUMBER + "$", text):
            raise SloSpecError(f"{key}: missing unit in {text!r} (write e.g. {example})")
        raise SloSpecError(f"{key}: bad {what} {text!r} (write e.g. {example})")
    number = float(match.group(1))
    if not math.isfinite(number) or number < 0:
        raise SloSpecError(f"{key}: negative or non-finite value {text!r}")
    return number, match


def parse_duration_ms(key: str, value: object) -> float:
    """``"250ms"`` -> 250.0, ``"1.5s"`` -> 1500.0, ``"1m"`` -> 60000.0; the unit is required.

    The one duration parser (``loadguard.durations``), with ``SloSpecError`` and the key."""
    try:
        return parse_duration_s(value, what=key) * 1000.0
    except UsageError as exc:
        raise SloSpecError(f"{exc.message} (write e.g. 250ms or 1s)") from None


def parse_percent(key: str, value: object) -> float:
    """``"1%"`` -> 0.01; the ``%`` is required, 0..100."""
    number, _match = _with_unit(key, value, _PERCENT, "percentage", "1%")
    if number > 100:
        raise SloSpecError(f"{key}: percentage over 100 in {str(value)!r}")
    return number / 100.0


def parse_rate_rps(key: str, value: object) -> float:
    """``5``, ``"5/s"`` -> 5.0 req/s; ``"600/min"`` -> 10.0 req/s."""
    if isinstance(value, bool):
        raise SloSpecError(f"{key}: expected a rate, got {value!r}")
    text = str(value)
    match = _RATE.match(text)
    if match is None:
        raise SloSpecError(f"{key}: bad rate {text!r} (write e.g. 5, 5/s or 300/min)")
    number = float(match.group(1))
    if not math.isfinite(number) or number <= 0:
        raise SloSpecError(f"{key}: rate must be > 0, got {text!r}")
    return number / 60.0 if match.group(2) == "/min" else number


def _parse_threshold(key: str, value: object) -> Threshold:
    field = METRICS[key]
    limit = parse_percent(key, value) if key == "error_rate" else parse_duration_ms(key, value)
    return Threshold(field, limit)


@dataclass(frozen=True, slots=True)
class Threshold:
    """``metric`` (a ``LabelStats`` field, e.g. ``p95_ms``) must stay <= ``limit``."""

    metric: str
    limit: float


@dataclass(frozen=True, slots=True)
class LabelRule:
    """Thresholds for every label matching ``pattern`` (``re.search``)."""

    pattern: str
    thresholds: tuple[Threshold, ...]

    def matches(self, label: str) -> bool:
        return re.search(self.pattern, label) is not None


@dataclass(frozen=True)
class SloSpec:
    """The SLO: thresholds, per-label rules, and the window/zone/rate settings."""

    limits: tuple[Threshold, ...]
    labels: tuple[LabelRule, ...] = ()
    warn_margin: float = 0.8
    min_samples: int = 20
    window_ms: int = 10_000
    min_rate: float = 0.5
    max_rate: float = 100_000.0
    #: The share of windows the user accepts over the SLO (``--violation-budget``): the
    #: controller climbs while the share it predicts at the rate in force stays below it.
    violation_budget: float = DEFAULT_VIOLATION_BUDGET

    def __post_init__(self) -> None:
        if not self.limits and not self.labels:
            raise SloSpecError("no SLO given: set at least one of " + ", ".join(METRICS))
        if not 0.0 < self.warn_margin <= 1.0:
            raise SloSpecError(f"warn_margin: must be in (0%, 100%], got {self.warn_margin:.0%}")
        if self.min_samples < 1:
            raise SloSpecError(f"min_samples: must be >= 1, got {self.min_samples}")
        if self.window_ms < 1:
            raise SloSpecError(f"window: must be > 0, got {self.window_ms} ms")
        if not 0.0 < self.violation_budget < 1.0:
            raise SloSpecError(
                "violation_budget: must be above 0% and below 100%, "
                f"got {self.violation_budget:.1%}"
            )
        if not 0.0 < self.min_rate <= self.max_rate:
            raise SloSpecError(
                f"min_rate/max_rate: need 0 < min_rate <= max_rate, "
                f"got {self.min_rate:g} and {self.max_rate:g}"
            )

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, where: str = "[slo]") -> SloSpec:
        """Build from the ``[slo]`` table's contents (strings as in the TOML file)."""
        unknown = [k for k in data if k not in (*_KEYS, "label")]
        if unknown:
            raise SloSpecError(f"unknown key {unknown[0]!r} in {where} (known: {', '.join(_KEYS)})")
        thresholds = tuple(_parse_threshold(k, data[k]) for k in METRICS if k in data)
        rules: list[LabelRule] = []
        raw_rules = data.get("label", [])
        if not isinstance(raw_rules, list):
            raise SloSpecError(f"label: expected [[slo.label]] tables in {where}")
        for i, raw in enumerate(raw_rules):
            rules.append(_parse_rule(raw, f"{where} label #{i + 1}"))
        kwargs: dict[str, Any] = {}
        if "warn_margin" in data:
            kwargs["warn_margin"] = parse_percent("warn_margin", data["warn_margin"])
        if "min_samples" in data:
            raw = data["min_samples"]
            if isinstance(raw, bool) or not re.match(r"^\s*-?[0-9]+\s*$", str(raw)):
                raise SloSpecError(f"min_samples: expected a whole number, got {raw!r}")
            if int(raw) < 1:
                raise SloSpecError(f"min_samples: negative or zero value {raw!r}")
            kwargs["min_samples"] = int(raw)
        if "window" in data:
            kwargs["window_ms"] = round(parse_duration_ms("window", data["window"]))
        if "min_rate" in data:
            kwargs["min_rate"] = parse_rate_rps("min_rate", data["min_rate"])
        if "max_rate" in data:
            kwargs["max_rate"] = parse_rate_rps("max_rate", data["max_rate"])
        if "violation_budget" in data:
            kwargs["violation_budget"] = parse_percent("violation_budget", data["violation_budget"])
        return cls(thresholds, tuple(rules), **kwargs)

    @classmethod
    def from_options(cls, **options: str | int | float | None) -> SloSpec:
        """From CLI options named like the keys (``p95="500ms"``, ``error_rate="1%"``);
        ``None`` means not given."""
        return cls.from_mapping(
            {k: v for k, v in options.items() if v is not None}, where="the options"
        )

    @classmethod
    def load(cls, path: str | Path | None = None, **options: str | int | float | None) -> SloSpec:
        """The ``[slo]`` table of the TOML file at ``path`` (if any), overridden by
        ``options`` given on the command line (``None`` = not given)."""
        data: dict[str, Any] = {}
        where = "the options"
        if path is not None:
            data = dict(_read_toml(Path(path)))
            where = f"[slo] of {path}"
        data.update({k: v for k, v in options.items() if v is not None})
        return cls.from_mapping(data, where=where)

    # ---------------------------------------------------------------- judging
    def threshold(self, metric: str) -> float | None:
        """The overall limit for ``metric`` (``p95_ms``, ``error_rate``...), if set."""
        for t in self.limits:
            if t.metric == metric:
                return t.limit
        return None

    def log_thresholds(self) -> dict[str, float | None]:
        """The thresholds the decision log has columns for (``slo_p95_ms``...)."""
        return {m: self.threshold(m) for m in ("p95_ms", "p99_ms", "mean_ms", "error_rate")}

    def thresholds(self) -> dict[str, float | None]:
        """Same as ``log_thresholds`` (which the loop's ``Evaluator`` protocol names); kept
        for the example in docs/controller.md."""
        return self.log_thresholds()

    def evaluate(
        self,
        stats: WindowStats,
        wall_ms: int,
        commanded_rps: float,
        *,
        mono_ms: int | None = None,
        staleness_ms: int | None = None,
        rate_change: RateChange | None = None,
        ledger: LedgerView | None = None,
    ) -> Observation:
        """Judge one window and build its ``Observation``, once, from its whole input (see
        the module docstring for the zone rules): the window's ``stats`` at ``wall_ms``,
        the rate in force (``commanded_rps`` and its last change ``rate_change``), the
        tick's ``mono_ms``, its ``staleness_ms`` as the caller carries it
        (``clock.Staleness``; default: the window's wall staleness, ``wall_staleness``),
        and the exceedance ledger's ``ledger`` view."""
        if staleness_ms is None:
            staleness_ms = wall_staleness(stats, wall_ms)
        zone, breaches, near, pressure = self._judge(stats)
        return Observation(
            wall_ms, stats, zone, breaches, near, staleness_ms, commanded_rps, pressure,
            mono_ms=mono_ms, rate_change=rate_change, ledger=ledger,
        )  # fmt: skip

    def _judge(
        self, stats: WindowStats
    ) -> tuple[Zone, tuple[str, ...], tuple[str, ...], float | None]:
        """The window's zone, breaches, near misses and pressure (``None``: NO_DATA)."""
        if stats.overall.count < self.min_samples:
            return Zone.NO_DATA, (), (), None
        breaches: list[str] = []
        near: list[str] = []
        pressure = 0.0
        scopes: list[tuple[str, LabelStats, tuple[Threshold, ...]]] = [
            ("", stats.overall, self.limits)
        ]
        for rule in self.labels:
            for name in sorted(stats.labels):
                label_stats = stats.labels[name]
                if label_stats.count >= self.min_samples and rule.matches(name):
                    scopes.append((f"label={name}:", label_stats, rule.thresholds))
        for prefix, values, thresholds in scopes:
            for t in thresholds:
                value = values.metric(t.metric)
                if value is None:
                    continue
                if t.limit > 0:
                    ratio = value / t.limit
                else:
                    ratio = ZERO_LIMIT_PRESSURE if value > 0 else 0.0
                pressure = max(pressure, ratio)
                if value > t.limit:
                    breaches.append(prefix + t.metric)
                elif value > self.warn_margin * t.limit:
                    near.append(prefix + t.metric)
        zone = Zone.BREACH if breaches else Zone.NEAR if near else Zone.SAFE
        return zone, tuple(breaches), tuple(near), pressure


def _parse_rule(raw: object, where: str) -> LabelRule:
    if not isinstance(raw, Mapping):
        raise SloSpecError(f"{where}: expected a table with pattern = ... and thresholds")
    unknown = [k for k in raw if k not in (*METRICS, "pattern")]
    if unknown:
        raise SloSpecError(f"unknown key {unknown[0]!r} in {where}")
    pattern = raw.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise SloSpecError(f"pattern: missing in {where}")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise SloSpecError(f"pattern: bad regex {pattern!r} in {where}: {exc}") from None
    thresholds = tuple(_parse_threshold(k, raw[k]) for k in METRICS if k in raw)
    if not thresholds:
        raise SloSpecError(f"{where}: no thresholds for pattern {pattern!r}")
    return LabelRule(pattern, thresholds)


def _read_toml(path: Path) -> Mapping[str, Any]:
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise SloSpecError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SloSpecError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise SloSpecError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    table = doc.get("slo")
    if not isinstance(table, Mapping):
        raise SloSpecError(f"{path}: no [slo] table")
    return table
