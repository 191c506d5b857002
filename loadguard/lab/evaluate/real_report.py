"""The real-JMeter plant suite's report: a JSON of every figure and a Markdown block spliced
between two marker lines of a document (docs/controller-jmeter.md), rewritten after every
plant so a run cut short keeps what it finished.

Every plant carries the command, commit and times of the invocation that ran it; a later
invocation replaces the plants it runs and keeps the others (``merge``), so the suite
can be measured a few plants at a time."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadguard.errors import UsageError
from loadguard.lab.evaluate.real_charts import chart
from loadguard.lab.evaluate.real_suite import RealPlantResult, RealSuiteConfig

BEGIN = "<!-- suite-jmeter:begin (written by loadguard evaluate --suite --real) -->"
END = "<!-- suite-jmeter:end -->"


def to_json(
    results: Sequence[RealPlantResult], cfg: RealSuiteConfig, meta: dict[str, Any]
) -> dict[str, Any]:
    plants: list[dict[str, Any]] = []
    for r in results:
        p = r.plant
        plants.append(
            {
                **_meta(meta),
                "duration_s": cfg.duration_s,
                "number": p.number,
                "key": p.key,
                "title": p.title,
                "p95_ms": p.p95_ms,
                "kind": p.kind,
                "target_args": list(p.run_args),
                "threads": p.threads,
                "not_run": r.not_run,
                "steps": [list(s) for s in r.steps],
                "sweeps": [
                    None
                    if s is None
                    else {
                        "nominal": s.nominal,
                        "measured": s.lam.rps,
                        "bounded": s.lam.bounded,
                        "load": list(s.load),
                        "points": [
                            {
                                "fraction": f,
                                "offered": pt.offered_rps,
                                "achieved": pt.achieved_rps,
                                "p95_ms": pt.p95_ms,
                                "errors": pt.error_rate,
                                "samples": pt.samples,
                            }
                            for f, pt in s.points
                        ],
                    }
                    for s in r.sweeps
                ],
                "runs": [
                    {
                        "policy": run.policy,
                        "round": run.round,
                        "misses": list(run.misses),
                        "offset_s": run.offset_s,
                        "covered": run.covered,
                        "stop_reason": run.stop_reason,
                        "load": list(run.load),
                        "run_dir": str(run.run_dir),
                        "peak_rate": max((r for _t, r in run.rates), default=None),
                        **run.metrics.to_json(),
                    }
                    for run in r.runs
                ],
            }
        )
    return {
        **meta,
        "duration_s": cfg.duration_s,
        "policies": list(cfg.policies),
        "rounds": cfg.rounds,
        "plants": plants,
    }


def _meta(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta[k] for k in ("command", "commit", "started", "finished")}


def merge(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """``new``'s plants, and ``old``'s plants ``new`` did not run, by plant number."""
    if old is None:
        return new
    fresh = {p["key"] for p in new["plants"]}
    kept = [
        {**_meta(old), "duration_s": old["duration_s"], **p}
        for p in old["plants"]
        if p["key"] not in fresh
    ]
    plants = sorted([*kept, *new["plants"]], key=lambda p: (p["number"], p["key"]))
    return {**new, "plants": plants}


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _secs(x: float | None) -> str:
    return "–" if x is None else f"{x:.0f} s"


def _lam(plant: dict[str, Any]) -> str:
    parts = []
    for (at, lam), sweep in zip(plant["steps"], plant["sweeps"], strict=True):
        label = f"{lam:.1f}" if lam else "0"
        if sweep is not None and sweep["measured"] is None:
            lowest = min(pt["offered"] for pt in sweep["points"])
            label = f"none: < {lowest:.1f}"
        elif sweep is not None and not sweep["bounded"]:
            label = f"≥ {label}"
        parts.append(label if at == 0 else f"{label} from {at:g} s")
    return ", ".join(parts) or "–"


def _sweep_line(plant: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for i, sweep in enumerate(plant["sweeps"]):
        if sweep is None:
            continue
        pts = "; ".join(
            f"{pt['offered']:.1f} → {pt['achieved']:.1f}/s p95 {pt['p95_ms']:.0f} ms "
            f"err {100 * pt['errors']:.1f} % (n={pt['samples']})"
            for pt in sweep["points"]
        )
        lo, hi = sweep["load"]
        out.append(
            f"- {plant['number']} {plant['key']}, phase {i} (nominal {sweep['nominal']:.1f}): "
            f"{pts}; load {lo:.2f}–{hi:.2f}"
        )
    return out


def markdown(data: dict[str, Any], charts: dict[str, str] | None = None) -> str:
    out = [BEGIN, ""]
    invocations: dict[tuple[str, str, str, str, float], list[str]] = {}
    for p in data["plants"]:
        at = (p["command"], p["commit"], p["started"], p["finished"], p["duration_s"])
        invocations.setdefault(at, []).append(p["key"])
    for (command, commit, started, finished, d), keys in invocations.items():
        out.append(
            f"- `{command}` on commit `{commit}` ({started} – {finished} UTC, {d:g} s runs): "
            + ", ".join(keys)
        )
    out += [
        "",
        "| plant | λ* measured | policy | violations | errors | steady eff. | t→90 % "
        "| recovery | collapses | goal misses | load avg (start–end) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in data["plants"]:
        name = f"{p['number']} {p['key']}"
        if p["not_run"]:
            out.append(f"| {name} | – | not run: {p['not_run']} |" + " |" * 8)
            continue
        several = len({r.get("round", 1) for r in p["runs"]}) > 1
        for run in p["runs"]:
            rec = ", ".join(_secs(x) for x in run["recovery_s"]) or "–"
            lo, hi = run["load"]
            cut = "" if run["covered"] else " (cut short)"
            nth = f", round {run.get('round', 1)}" if several else ""
            out.append(
                f"| {name} | {_lam(p)} | {run['policy']}{nth}{cut} | {_pct(run['violations'])} "
                f"| {_pct(run['errors'])} | {_pct(run['steady_efficiency'])} "
                f"| {_secs(run['time_to_90_s'])} | {rec} | {run['collapses']} "
                f"| {', '.join(run['misses']) or 'none'} | {lo:.2f}–{hi:.2f} |"
            )
    for plant_key, rel in (charts or {}).items():
        out += ["", f"![{plant_key}]({rel})"]
    out += ["", "Sweeps (offered → achieved, p95 and errors over the measured span):", ""]
    for p in data["plants"]:
        out += _sweep_line(p)
    offsets = [f"{p['key']} {run['offset_s']:.1f} s" for p in data["plants"] for run in p["runs"]]
    if offsets:
        out += ["", "JMeter's first sample after the target was ready: " + ", ".join(offsets)]
    out += ["", END, ""]
    return "\n".join(out)


def splice(doc: Path, block: str) -> None:
    """Replace the block between the markers in ``doc`` (or append it)."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block.rstrip("\n") + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block
    tmp = doc.with_suffix(doc.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(doc)


def data_dir(doc: Path) -> Path:
    """Where the JSON and the charts of ``doc`` live: a folder of the same name beside it."""
    return doc.parent / doc.stem


def write(data: dict[str, Any], doc: Path) -> Path:
    """The JSON, a chart per plant whose run folders exist, and the block in ``doc``.

    A plant whose run folders are gone keeps the chart an earlier ``write`` left beside
    ``doc`` (a later invocation keeps the other plants' rows, and their charts with them)."""
    out = data_dir(doc)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "suite.json"
    json_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    charts: dict[str, str] = {}
    for plant in data["plants"]:
        if plant["not_run"]:
            continue
        path = out / f"{plant['key']}.png"
        png = chart(plant, plant["duration_s"], path)
        if png is None and path.exists():
            png = path
        if png is not None:
            charts[plant["key"]] = f"{out.name}/{png.name}"
    splice(doc, markdown(data, charts))
    return json_path


def load(doc: Path) -> dict[str, Any]:
    """The figures an earlier ``write`` left beside ``doc``."""
    path = data_dir(doc) / "suite.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: no figures of an earlier real suite run ({exc})") from exc
    # an older suite.json names its invocation only once, at the top
    top = {**_meta(data), "duration_s": data["duration_s"]}
    data["plants"] = [{**top, **p} for p in data["plants"]]
    return data
