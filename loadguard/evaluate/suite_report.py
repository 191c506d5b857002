"""The plant suite's report: a JSON of every figure, a frontier chart per plant, and a
Markdown block spliced into a document between two marker lines (docs/controller.md).

A previous run's JSON (``baseline``) is shown beside the new figures: its default
policy's rows, marked "before"."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from loadguard.errors import UsageError
from loadguard.evaluate.suite import PlantResult, SuiteConfig
from loadguard.evaluate.suite_metrics import misses
from loadguard.policies import DEFAULT_POLICY

BEGIN = "<!-- suite:begin (written by loadguard evaluate --suite) -->"
END = "<!-- suite:end -->"
COLOURS = ("#2b5c8a", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e")


def to_json(results: Sequence[PlantResult], cfg: SuiteConfig, command: str) -> dict[str, Any]:
    plants: list[dict[str, Any]] = []
    for r in results:
        plants.append(
            {
                "number": r.plant.number,
                "key": r.plant.key,
                "title": r.plant.title,
                "p95_ms": r.plant.p95_ms,
                "has_events": bool(r.plant.events),
                "has_cliff": r.plant.has_cliff,
                "lambda_star": [
                    {"nominal": s.nominal, "measured": s.lam.rps, "bounded": s.lam.bounded}
                    for s in r.sweeps
                ],
                "capacity": [list(step) for step in r.capacity.steps],
                "frontier": [{"fraction": p.fraction, **p.metrics.to_json()} for p in r.frontier],
                "runs": [
                    {
                        "policy": run.policy,
                        "seed": run.seed,
                        "misses": list(run.misses),
                        **run.metrics.to_json(),
                    }
                    for run in r.runs
                ],
            }
        )
    return {
        "command": command,
        "default_policy": DEFAULT_POLICY,
        "duration_s": cfg.duration_s,
        "seeds": list(cfg.seeds),
        "policies": list(cfg.policies),
        "plants": plants,
    }


def load_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--baseline: cannot read {path}: {exc}") from None
    if "plants" not in data:
        raise UsageError(f"--baseline: {path} is not a suite result (no 'plants')")
    return data


def _mean(values: list[float | None]) -> float | None:
    real = [v for v in values if v is not None]
    return statistics.fmean(real) if real and len(real) == len(values) else None


def _worst(values: list[float | None], high: bool = True) -> float | None:
    if any(v is None for v in values):
        return None
    real = [v for v in values if v is not None]
    return (max(real) if high else min(real)) if real else None


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _secs(x: float | None) -> str:
    return "never" if x is None else f"{x:.0f} s"


def _policy_rows(plant: dict[str, Any], label: str) -> list[str]:
    rows: list[str] = []
    by_policy: dict[str, list[dict[str, Any]]] = {}
    for run in plant["runs"]:
        by_policy.setdefault(run["policy"], []).append(run)
    for policy, runs in by_policy.items():
        n = len(runs)

        def col(key: str, runs: list[dict[str, Any]] = runs) -> list[float | None]:
            return [r[key] for r in runs]

        rec = "–"
        if plant["has_events"]:
            worst = max(math.inf if x is None else x for r in runs for x in r["recovery_s"])
            rec = "never" if math.isinf(worst) else f"{worst:.0f} s"
        missed = sorted({m for r in runs for m in r["misses"]})
        rows.append(
            f"| {label}{policy}{'' if n == 1 else f' ({n} seeds)'} "
            f"| {_pct(_worst(col('violations')))} | {_pct(_worst(col('errors')))} "
            f"| {_pct(_worst(col('steady_efficiency'), high=False))} "
            f"| {_gap(_worst(col('frontier_gap')))} "
            f"| {_secs(_worst(col('time_to_90_s')))} | {rec} "
            f"| {max(int(r['collapses']) for r in runs)} "
            f"| {', '.join(missed) if missed else '**goal met**'} |"
        )
    return rows


def default_of(data: dict[str, Any]) -> str:
    """The default policy of a suite result: recorded, or (files written before it was)
    the first policy listed, as the suite lists the default first."""
    recorded = data.get("default_policy")
    return str(recorded) if recorded else str((data.get("policies") or [DEFAULT_POLICY])[0])


def _default_only(plant: dict[str, Any], policy: str) -> dict[str, Any]:
    """A baseline plant with only its default policy's runs (the numbers before)."""
    return {**plant, "runs": [r for r in plant["runs"] if r["policy"] == policy]}


def _gap(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f} pt"


def feasible(plant: dict[str, Any]) -> bool:
    """Does some oracle (fixed-fraction) point meet violations and efficiency at once?"""
    return any(
        p["violations"] is not None
        and p["steady_efficiency"] is not None
        and p["violations"] <= 0.05
        and p["steady_efficiency"] >= 0.9
        for p in plant["frontier"]
    )


def markdown(data: dict[str, Any], baseline: dict[str, Any] | None, charts: str) -> str:
    out = [
        BEGIN,
        "",
        f"Command: `{data['command']}` ({data['duration_s']:g} s runs, seeds "
        f"{', '.join(map(str, data['seeds']))}; each column the worst over the seeds; "
        "'before:' the default policy before this change). Columns: p95-violating "
        "10 s windows after the first 30 s; errors; steady efficiency (successful "
        "samples/s over the measured λ*(t)); gap to the fixed-rate frontier at the run's "
        "violation share (+ = below it); time to 90 % λ* from 5 req/s; recovery after the "
        "event; collapses (windows > 10 % errors or p95 > 5× SLO, consecutive ones "
        "counted once). *frontier feasible*: some fixed fraction of λ* meets ≤ 5 % "
        "violations and ≥ 90 % efficiency at once.",
        "",
    ]
    before = {p["key"]: p for p in (baseline or {}).get("plants", [])}
    old = default_of(baseline) if baseline is not None else DEFAULT_POLICY
    for plant in data["plants"]:
        lams = ", ".join(
            f"{x['measured']:.1f}" + ("" if x["bounded"] else " (unbounded sweep)")
            if x["measured"] is not None
            else "–"
            for x in plant["lambda_star"]
        )
        noms = ", ".join(f"{x['nominal']:.1f}" for x in plant["lambda_star"])
        out += [
            f"**{plant['number']}. {plant['title']}** (p95 ≤ {plant['p95_ms']:g} ms; "
            f"λ* measured {lams} req/s, nominal {noms}; frontier feasible: "
            f"{'yes' if feasible(plant) else 'no'})",
            "",
            f"![frontier {plant['key']}]({charts}/suite-{plant['key']}.png)",
            "",
            "| policy | violations | errors | steady eff. | frontier gap | t→90 % "
            "| recovery | collapses | goal misses |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        if plant["key"] in before:
            out += _policy_rows(_default_only(before[plant["key"]], old), "before: ")
        out += _policy_rows(plant, "")
        oracle = ", ".join(
            f"{p['fraction']:.2f}: {_pct(p['violations'])}/{_pct(p['steady_efficiency'])}"
            for p in plant["frontier"]
        )
        out += ["", f"Frontier (fraction of λ*: violations/efficiency): {oracle}", ""]
    out.append(END)
    return "\n".join(out) + "\n"


def splice(doc: Path, block: str) -> None:
    """Replace the block between the markers in ``doc`` (or append it)."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + block.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block
    tmp = doc.with_suffix(doc.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(doc)


def chart(
    plant: dict[str, Any], baseline: dict[str, Any] | None, path: Path, before_policy: str = ""
) -> Path:
    """Steady efficiency against violation share: the fixed-rate frontier and each run."""
    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    pts = sorted(
        (p["violations"], p["steady_efficiency"], p["fraction"])
        for p in plant["frontier"]
        if p["violations"] is not None and p["steady_efficiency"] is not None
    )
    ax.plot(
        [100 * v for v, _e, _f in pts],
        [100 * e for _v, e, _f in pts],
        "o-",
        color="#999",
        label="fixed rate (frontier points)",
    )
    for v, e, f in pts:
        ax.annotate(f"{f:.2f}", (100 * v, 100 * e), fontsize=6, color="#777")
    sets = [("", plant)]
    if baseline is not None:
        sets.insert(0, ("before: ", _default_only(baseline, before_policy or DEFAULT_POLICY)))
    i = 0
    for label, source in sets:
        for policy in dict.fromkeys(r["policy"] for r in source["runs"]):
            xs = [
                (100 * r["violations"], 100 * r["steady_efficiency"])
                for r in source["runs"]
                if r["policy"] == policy
                and r["violations"] is not None
                and r["steady_efficiency"] is not None
            ]
            marker = "x" if label else "s"
            ax.scatter(
                [x for x, _ in xs],
                [y for _, y in xs],
                marker=marker,
                color=COLOURS[i % len(COLOURS)],
                label=label + policy,
            )
            i += 1
    ax.axvline(5.0, color="#c33", lw=0.8, ls="--")
    ax.axhline(90.0, color="#c33", lw=0.8, ls="--")
    ax.set_xlabel("p95-violating windows (%)")
    ax.set_ylabel("steady efficiency (% of λ*)")
    return save_plant_chart(fig, plant, path)


def save_plant_chart(fig: Figure, plant: dict[str, Any], path: Path, suffix: str = "") -> Path:
    """Title a plant's one-axes chart ("N. title" + ``suffix``), add its legend, write it."""
    (ax,) = fig.axes
    ax.set_title(f"{plant['number']}. {plant['title']}{suffix}", fontsize=9)
    ax.legend(fontsize=6, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    return path


def write(
    data: dict[str, Any],
    baseline: dict[str, Any] | None,
    doc: Path,
    out_dir: Path,
) -> None:
    """suite.json and the charts into ``out_dir``; the Markdown block into ``doc``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "suite.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    before = {p["key"]: p for p in (baseline or {}).get("plants", [])}
    old = default_of(baseline) if baseline is not None else DEFAULT_POLICY
    for plant in data["plants"]:
        chart(plant, before.get(plant["key"]), out_dir / f"suite-{plant['key']}.png", old)
    try:
        charts = str(out_dir.resolve().relative_to(doc.resolve().parent))
    except ValueError:
        charts = str(out_dir.resolve())
    splice(doc, markdown(data, baseline, charts))


def goal_misses(plant: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """Recompute a stored run's misses (for tests and baselines)."""
    from loadguard.evaluate.suite_metrics import SuiteMetrics

    m = SuiteMetrics.from_json({k: v for k, v in run.items() if k not in ("policy", "seed")})
    return misses(m, has_events=plant["has_events"], has_cliff=plant["has_cliff"])
