"""The headline: what a run found, in one to three sentences (pure: no I/O).

``headline(summary, cause)`` is the one builder; the report's first line, the console's
last line and ``summary.json``'s ``headline`` key all come from it, so they cannot say
different things. ``summary`` is the ``summary.json`` mapping. ``cause`` is the onset of
the last stretch of windows over the SLO, read from the decision log's rows by
``failure_cause`` (for a FAIL run: which SLO, on which label, from when).

It reads the controller's ``held_rate`` / ``capacity`` / ``violation_budget`` keys when
the summary has them (docs/decision-log.md), and today's figures otherwise:
``max_compliant_rate`` and its evidence, the run's ``violation_share``.

Sentences, by verdict:

* PASS: ``Sustained 137 req/s with p95 ≤ 250 ms in 97 % of windows (budget 95 %).
  Capacity at the SLO ≈ 151 req/s (90 % CI 146–155). No errors.``; a held share under
  the budget's reads ``in 88 % of windows, short of the budget's 95 %`` (the verdict
  reads the last windows, the share the run's second half);
* FAIL: ``p95 over 250 ms on all labels from 14:03:12 UTC (62 s into the run) to the end.``
  followed by what held before, if anything, and the errors;
* INCONCLUSIVE: ``Capacity above 151 req/s: the knee was not reached in 40 s.``;
* NO_DATA: ``No window could be judged: 0 samples in 12 s (stop: jmeter exited).``
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from loadguard import human

#: Metric key -> how a person names it.
METRIC_NAMES: dict[str, str] = {
    "p95_ms": "p95",
    "p99_ms": "p99",
    "mean_ms": "mean latency",
    "error_rate": "error rate",
}
BINDING_ORDER: tuple[str, ...] = ("p95_ms", "p99_ms", "mean_ms", "error_rate")


def slo_value(metric: str, value: float | None) -> str:
    return human.percent(value) if metric == "error_rate" else human.latency(value)


def slo_text(metric: str, threshold: float | None) -> str:
    """``p95_ms, 250.0`` -> ``p95 ≤ 250 ms``."""
    return f"{METRIC_NAMES.get(metric, metric)} ≤ {slo_value(metric, threshold)}"


def slo_list(slo: Mapping[str, Any]) -> list[str]:
    return [slo_text(m, _num(slo.get(m))) for m in BINDING_ORDER if _num(slo.get(m)) is not None]


@dataclass(frozen=True)
class Cause:
    """The onset of the last stretch of windows over the SLO."""

    #: ``p95_ms`` ...; ``None`` when the stretch is BREACH without a named metric
    metric: str | None
    #: the label in breach; ``None``: the overall (all labels) figure
    label: str | None
    from_epoch_ms: int
    #: seconds since the first tick of the run
    from_s: float
    #: the stretch lasts to the end of the run
    to_end: bool


@dataclass(frozen=True)
class Headline:
    verdict: str
    text: str
    held_rps: float | None
    held_within_share: float | None
    budget: float | None
    capacity_status: str | None
    capacity_rps: float | None
    capacity_ci90_rps: tuple[float, float] | None
    binding_slo: str | None
    cause: Cause | None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.capacity_ci90_rps is not None:
            data["capacity_ci90_rps"] = list(self.capacity_ci90_rps)
        return data


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def binding_metric(summary: Mapping[str, Any]) -> str | None:
    slo = _map(summary.get("slo"))
    named = _map(summary.get("capacity")).get("metric")
    if isinstance(named, str) and _num(slo.get(named)) is not None:
        return named
    return next((m for m in BINDING_ORDER if _num(slo.get(m)) is not None), None)


def _clock(epoch_ms: float) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000.0, tz=UTC).strftime("%H:%M:%S UTC")


def _stop(summary: Mapping[str, Any]) -> str:
    return str(summary.get("stop_reason") or "unknown").replace("_", " ")


def _errors(summary: Mapping[str, Any]) -> str:
    rate = _num(summary.get("error_rate"))
    if rate is None:
        return ""
    if rate == 0:
        return "No errors."
    slo = _num(_map(summary.get("slo")).get("error_rate"))
    bound = f" (SLO ≤ {human.percent(slo)})" if slo is not None else ""
    return f"Errors {human.percent(rate)} of {human.count(summary.get('samples'))} samples{bound}."


_ABOVE = re.compile(r"^\s*capacity\s+(?:is\s+)?above\s+[^:]*:\s*", re.IGNORECASE)


def note_tail(note: str | None) -> str | None:
    """The controller's capacity note without a leading ``capacity above X req/s:`` (the
    sentence names the rate itself), and without a final full stop."""
    if not note:
        return None
    tail = _ABOVE.sub("", note).strip().rstrip(".")
    return tail or None


def _capacity(summary: Mapping[str, Any]) -> tuple[str, str | None, float | None, Any]:
    """(sentence, status, rps, ci) from the controller's ``capacity`` key, if any."""
    cap = _map(summary.get("capacity"))
    status = cap.get("status") if isinstance(cap.get("status"), str) else None
    rps = _num(cap.get("rps"))
    ci_raw = cap.get("ci90_rps")
    ci = None
    if isinstance(ci_raw, list | tuple) and len(ci_raw) == 2:
        lo, hi = _num(ci_raw[0]), _num(ci_raw[1])
        ci = (lo, hi) if lo is not None and hi is not None else None
    note = cap.get("note") if isinstance(cap.get("note"), str) else None
    tail = note_tail(note)
    if status == "estimated" and rps is not None:
        inner = [f"90 % CI {human.number(ci[0])}–{human.number(ci[1])}"] if ci is not None else []
        inner += [tail] if tail else []
        interval = f" ({'; '.join(inner)})" if inner else ""
        return f"Capacity at the SLO ≈ {human.rate(rps)}{interval}.", status, rps, ci
    if status == "lower_bound" and rps is not None:
        why = tail or "the knee was not reached"
        return f"Capacity above {human.rate(rps)}: {why}.", status, rps, None
    if status == "unknown":
        return f"Capacity at the SLO unknown: {tail or 'no estimate'}.", status, None, None
    return "", status, rps, ci


def _against_budget(within: float | None, budget: float | None) -> str:
    """``, short of the budget's 95 %`` when the held share is under the budget's, else
    ``""``. A PASS reads the last windows and the share the run's second half, so
    ``88 % (budget 95 %)`` under PASS would read as a slip."""
    if within is None or budget is None or within >= 1.0 - budget:
        return ""
    return f", short of the budget's {human.percent(1.0 - budget)}"


def _held(
    summary: Mapping[str, Any], metric: str | None
) -> tuple[str, float | None, float | None, float | None]:
    """(sentence, held rps, share of windows within the binding SLO, budget)."""
    slo = _map(summary.get("slo"))
    budget = _num(summary.get("violation_budget"))
    held = _map(summary.get("held_rate"))
    if budget is None:
        budget = _num(held.get("budget"))
    bound = slo_text(metric, _num(slo.get(metric))) if metric else "every SLO"
    budget_text = f" (budget {human.percent(1.0 - budget)})" if budget is not None else ""
    rps = _num(held.get("rps"))
    if rps is not None:
        share = _num(held.get("violation_share"))
        within = None if share is None else 1.0 - share
        where = f" in {human.percent(within)} of windows" if within is not None else ""
        against = _against_budget(within, budget) or budget_text
        return f"Sustained {human.rate(rps)} with {bound}{where}{against}.", rps, within, budget
    # Today's figures: the highest rate held across whole windows in which every SLO held.
    best = _num(summary.get("max_compliant_rate"))
    shares = _map(summary.get("violation_share"))
    share = _num(shares.get(metric)) if metric else None
    within = None if share is None else 1.0 - share
    if best is None:
        return "", None, within, budget
    ev = _map(summary.get("max_compliant_evidence"))
    span = ""
    a, b = _num(ev.get("from_epoch_ms")), _num(ev.get("to_epoch_ms"))
    if a is not None and b is not None and b > a:
        span = f" for {human.duration((b - a) / 1000.0)}"
    overall = (
        f"; over the run, {bound} in {human.percent(within)} of windows{budget_text}"
        if within is not None and metric
        else ""
    )
    return f"Sustained {human.rate(best)} within every SLO{span}{overall}.", best, within, budget


def _cause_sentence(summary: Mapping[str, Any], cause: Cause | None, metric: str | None) -> str:
    slo = _map(summary.get("slo"))
    verdicts = _map(summary.get("slo_verdicts"))
    failed = [m for m in BINDING_ORDER if verdicts.get(m) == "FAIL"]
    if cause is not None:
        m = cause.metric or (failed[0] if failed else None)
        if m is None:
            what = "the SLO was missed"
        elif cause.label is not None:
            what = f"{METRIC_NAMES.get(m, m)} on label {cause.label} over its SLO"
        else:
            what = f"{METRIC_NAMES.get(m, m)} over {slo_value(m, _num(slo.get(m)))} on all labels"
        until = " to the end of the run" if cause.to_end else ""
        return (
            f"{_cap(what)} from {_clock(cause.from_epoch_ms)} "
            f"({human.duration(cause.from_s)} into the run){until}."
        )
    if failed:
        names = " and ".join(slo_text(m, _num(slo.get(m))) for m in failed)
        return f"{_cap(names)} not met in the last windows of the run."
    return "The SLO was not met in the last windows of the run."


def _cap(text: str) -> str:
    """A sentence's first letter up, but ``p95``/``p99`` stay as they are written."""
    return text if text[:1] == "p" else text[:1].upper() + text[1:]


def headline(summary: Mapping[str, Any], cause: Cause | None = None) -> Headline:
    """The headline of a run from its ``summary.json`` mapping (see module docstring)."""
    verdict = str(summary.get("verdict") or "")
    metric = binding_metric(summary)
    held_text, held_rps, within, budget = _held(summary, metric)
    cap_text, status, cap_rps, ci = _capacity(summary)
    errors = _errors(summary)
    if verdict == "NO_DATA":
        sentences = [
            f"No window could be judged: {human.count(summary.get('samples'))} samples in "
            f"{human.duration(_num(summary.get('duration_s')))} (stop: {_stop(summary)})."
        ]
    elif verdict == "INCONCLUSIVE":
        floor = cap_rps if cap_rps is not None else held_rps
        tail = note_tail(_map(summary.get("capacity")).get("note") or None)
        if not (tail and re.search(r"\bin \d", tail)):  # the note gives no time: the run's
            tail = f"the knee was not reached in {human.duration(_num(summary.get('duration_s')))}"
        cap_text = f"Capacity above {human.rate(floor)}: {tail}."
        sentences = [cap_text, held_text, errors]
    elif verdict == "FAIL":
        sentences = [_cause_sentence(summary, cause, metric), held_text, cap_text, errors]
    else:
        sentences = [held_text, cap_text, errors]
    text = " ".join(s for s in sentences if s)
    if verdict != "FAIL":
        cause = None  # the onset of a breach explains a FAIL only
    return Headline(
        verdict=verdict,
        text=text,
        held_rps=held_rps,
        held_within_share=within,
        budget=budget,
        capacity_status=status,
        capacity_rps=cap_rps,
        capacity_ci90_rps=ci,
        binding_slo=metric,
        cause=cause,
    )


def _violating(row: Mapping[str, Any]) -> bool:
    return str(row.get("zone")) == "BREACH" or bool(str(row.get("breaches") or "").strip())


def failure_cause(rows: Iterable[Mapping[str, Any]]) -> Cause | None:
    """The onset of the last stretch of evaluated windows over the SLO, from decision-log
    rows (mappings with ``epoch_ms``, ``zone``, ``breaches``); ``None`` if none was over.

    NO_DATA ticks neither end nor extend a stretch. The metric and label named are the
    onset tick's first breach (``p95_ms``, or ``label=/cart:p95_ms``)."""
    t0: float | None = None
    onset: Mapping[str, Any] | None = None
    in_stretch = False
    last_violating = False
    for row in rows:
        epoch = _num(row.get("epoch_ms"))
        if epoch is None:
            try:
                epoch = float(str(row.get("epoch_ms")))
            except ValueError:
                continue
        t0 = epoch if t0 is None else t0
        if str(row.get("zone")) == "NO_DATA":
            continue
        bad = _violating(row)
        if bad and not in_stretch:
            onset = {**row, "epoch_ms": epoch}
        in_stretch = bad
        last_violating = bad
    if onset is None or t0 is None:
        return None
    breaches = [b for b in str(onset.get("breaches") or "").split(";") if b]
    metric: str | None = None
    label: str | None = None
    if breaches:
        first = next((b for b in breaches if not b.startswith("label=")), breaches[0])
        if first.startswith("label="):
            label, _, metric = first.removeprefix("label=").rpartition(":")
        else:
            metric = first
    start = float(onset["epoch_ms"])
    return Cause(metric, label, int(start), (start - t0) / 1000.0, last_violating)
