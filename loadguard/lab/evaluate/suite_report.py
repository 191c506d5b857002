"""The plant suite's report: a JSON of every figure, a frontier chart per plant, and a
Markdown block spliced into a document between two marker lines (docs/controller.md).

The goal is relative to the violation budget B the suite ran at (``suite_metrics.Goal``):
per plant its F(B), and per policy over the seeds run the mean violations, the mean
steady efficiency and its gap F(B) − efficiency, the worst seed's time to reach, recovery,
collapses and errors, and the goal items missed. A compact table across the plants comes
first. Each run configuration (budget, plants, seeds) has its own block in the document,
so the runs at several budgets or seed sets stand side by side.

A previous run's JSON (``baseline``) is shown beside the new figures: its default
policy's rows, marked "before", judged against the new run's goal."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from loadguard.errors import UsageError
from loadguard.lab.evaluate.suite import PlantResult, SuiteConfig
from loadguard.lab.evaluate.suite_metrics import Goal, SuiteMetrics, misses
from loadguard.policies import DEFAULT_POLICY

COLOURS = ("#2b5c8a", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e")


def begin_marker(key: str) -> str:
    return f"<!-- suite:begin {key} (written by loadguard evaluate --suite) -->"


def end_marker(key: str) -> str:
    return f"<!-- suite:end {key} -->"


def block_key(data: dict[str, Any]) -> str:
    """The run configuration a block reports: ``B=5% plants=1-9 seeds=1,2,3``."""
    nums = [int(p["number"]) for p in data["plants"]]
    plants = ",".join(map(str, nums))
    if nums and nums == list(range(nums[0], nums[-1] + 1)) and len(nums) > 2:
        plants = f"{nums[0]}-{nums[-1]}"
    seeds = ",".join(map(str, data["seeds"]))
    return f"B={100 * data['violation_budget']:g}% plants={plants} seeds={seeds}"


def default_out(doc: Path, data: dict[str, Any]) -> Path:
    """Where a run's suite.json and charts go by default: ``<doc folder>/controller`` for
    the suite's own configuration (B = 5 %, plants 1-9, seeds 1-3), else a folder named
    by its block key inside it, so the runs at other budgets and seeds keep their own."""
    base = doc.parent / "controller"
    key = block_key(data)
    if key == "B=5% plants=1-9 seeds=1,2,3":
        return base
    slug = key.lower().replace("=", "").replace("%", "pct").replace(",", "-").replace(" ", "_")
    return base / slug


def commit() -> str | None:
    """The commit of the checkout the command runs in, "+changes" if its ``loadguard``
    package differs from it (the documents it writes do not count); ``None`` outside a
    checkout (an installed wheel reads no path outside itself)."""
    package = Path.cwd() / "loadguard"
    if not package.is_dir():
        return None

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(package), *args],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip

    try:
        head = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--", str(package))
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+changes" if changed else head or None


def summarise(runs: Sequence[dict[str, Any]], goal: Goal) -> list[dict[str, Any]]:
    """Per policy (in the order run) over its seeds: the goal's figures and misses."""
    out: list[dict[str, Any]] = []
    for policy in dict.fromkeys(r["policy"] for r in runs):
        mine = [r for r in runs if r["policy"] == policy]
        ms = [SuiteMetrics.from_json(_metrics_of(r)) for r in mine]
        v = _mean([m.violations for m in ms])
        e = _mean([m.steady_efficiency for m in ms])
        rec = [math.inf if x is None else x for m in ms for x in m.recovery_s]
        out.append(
            {
                "policy": policy,
                "seeds": [r["seed"] for r in mine],
                "mean_violations": v,
                "mean_steady_efficiency": e,
                "gap": None if goal.frontier is None or e is None else goal.frontier - e,
                "worst_time_to_90_s": _worst([m.time_to_90_s for m in ms]),
                "worst_recovery_s": (None if not rec or math.isinf(max(rec)) else max(rec)),
                "recovered": bool(rec) and not math.isinf(max(rec)),
                "max_collapses": max(m.collapses for m in ms),
                "worst_errors": _worst([m.errors for m in ms]),
                "misses": misses(ms, goal),
            }
        )
    return out


def _metrics_of(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if k not in ("policy", "seed", "misses")}


def to_json(results: Sequence[PlantResult], cfg: SuiteConfig, command: str) -> dict[str, Any]:
    plants: list[dict[str, Any]] = []
    for r in results:
        runs = [
            {
                "policy": run.policy,
                "seed": run.seed,
                "misses": list(run.misses),
                **run.metrics.to_json(),
            }
            for run in r.runs
        ]
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
                "goal": r.goal.to_json(),
                "frontier": [{"fraction": p.fraction, **p.metrics.to_json()} for p in r.frontier],
                "runs": runs,
                "summary": summarise(runs, r.goal),
            }
        )
    return {
        "command": command,
        "commit": commit(),
        "default_policy": DEFAULT_POLICY,
        "duration_s": cfg.duration_s,
        "violation_budget": cfg.violation_budget,
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


def _mean(values: Sequence[float | None]) -> float | None:
    real = [v for v in values if v is not None]
    return sum(real) / len(real) if real and len(real) == len(values) else None


def _worst(values: Sequence[float | None], high: bool = True) -> float | None:
    if any(v is None for v in values):
        return None
    real = [v for v in values if v is not None]
    return (max(real) if high else min(real)) if real else None


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _pct2(x: float | None) -> str:
    """A violation share to two decimals (57 windows: one is 1.75 points; the goal's
    B + 2 points must not look met when it is missed by a fraction of a window)."""
    return "–" if x is None else f"{100 * x:.2f} %"


def _secs(x: float | None) -> str:
    return "never" if x is None else f"{x:.0f} s"


def _gap(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f} pt"


def _f_b(goal: dict[str, Any]) -> str:
    f = goal["frontier_at_budget"]
    return "none ≥ 0.5 λ*" if f is None else _pct(f)


def _row(s: dict[str, Any], goal: dict[str, Any], has_events: bool, label: str) -> str:
    n = len(s["seeds"])
    rec = "–"
    if has_events:
        rec = _secs(s["worst_recovery_s"]) if s["recovered"] else "never"
    t90 = _secs(s["worst_time_to_90_s"]) + (" (exempt)" if goal["t90_exempt"] else "")
    missed = ", ".join(s["misses"]) if s["misses"] else "**goal met**"
    seeds = "seed" if n == 1 else "seeds"
    return (
        f"| {label}{s['policy']} ({seeds} {','.join(map(str, s['seeds']))}) "
        f"| {_pct2(s['mean_violations'])} | {_pct(s['mean_steady_efficiency'])} "
        f"| {_gap(s['gap'])} | {t90} | {rec} | {s['max_collapses']} "
        f"| {_pct(s['worst_errors'])} | {missed} |"
    )


def _seed_rows(plant: dict[str, Any]) -> list[str]:
    rows: list[str] = []
    f = plant["goal"]["frontier_at_budget"]
    for run in plant["runs"]:
        gap = (
            None if f is None or run["steady_efficiency"] is None else f - run["steady_efficiency"]
        )
        rec = "–"
        if plant["has_events"]:
            worst = max((math.inf if x is None else x for x in run["recovery_s"]), default=0.0)
            rec = "never" if math.isinf(worst) else f"{worst:.0f} s"
        rows.append(
            f"| · {run['policy']} seed {run['seed']} | {_pct2(run['violations'])} "
            f"| {_pct(run['steady_efficiency'])} | {_gap(gap)} | {_secs(run['time_to_90_s'])} "
            f"| {rec} | {run['collapses']} | {_pct(run['errors'])} "
            f"| {', '.join(run['misses']) or '–'} |"
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


def _summary_of(plant: dict[str, Any]) -> list[dict[str, Any]]:
    """The plant's per-policy summary (recomputed for files written before it was kept)."""
    if "summary" in plant:
        return list(plant["summary"])
    return summarise(plant["runs"], Goal.from_json(plant["goal"]))


HEAD = (
    "| policy | violations (mean) | steady eff. (mean) | gap F(B) − eff. | t→reach (worst) "
    "| recovery (worst) | collapses (max) | errors (worst) | goal misses |"
)
RULE = "|---|---|---|---|---|---|---|---|---|"


def markdown(data: dict[str, Any], baseline: dict[str, Any] | None, charts: str) -> str:
    key = block_key(data)
    budget = data["violation_budget"]
    out = [
        begin_marker(key),
        "",
        f"Command: `{data['command']}` (commit {data.get('commit') or 'unknown'}; "
        f"{data['duration_s']:g} s runs; violation budget B = {100 * budget:g} %; seeds "
        f"{', '.join(map(str, data['seeds']))}).",
        "",
        f"Goal at B = {100 * budget:g} %: mean violations ≤ {100 * budget + 2:g} %, mean "
        "steady efficiency ≥ F(B) − 5 points, and in every seed: a commanded rate ≥ "
        "0.9 F(B) λ*(t) within 60 s (t→reach; exempt where λ*·W < 100 samples), recovery "
        "≤ 60 s, at most one collapse on the cliff, errors ≤ 0.5 %. F(B): the best steady "
        "efficiency of the fixed rates whose violation share is ≤ B. Violations: "
        "p95-violating 10 s windows after the first 30 s; steady efficiency: successful "
        "samples/s over the measured λ*(t); collapses: windows > 10 % errors or p95 > 5× "
        "SLO, consecutive ones counted once.",
        "",
        "| plant | F(B) | policy | violations (mean) | steady eff. (mean) | gap | t→reach "
        "(worst) | recovery (worst) | collapses (max) | errors (worst) | goal misses |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for plant in data["plants"]:
        for s in _summary_of(plant):
            row = _row(s, plant["goal"], plant["has_events"], "")
            cells = row.split(" | ", 1)[1]
            out.append(
                f"| {plant['number']} {plant['key']} | {_f_b(plant['goal'])} "
                f"| {s['policy']} | {cells}"
            )
    out.append("")
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
        goal = plant["goal"]
        floor = goal["min_efficiency"]
        out += [
            f"**{plant['number']}. {plant['title']}** (p95 ≤ {plant['p95_ms']:g} ms; "
            f"λ* measured {lams} req/s, nominal {noms}; F({100 * budget:g} %) = "
            f"{_f_b(goal)}; goal: violations ≤ {_pct(goal['max_violations'])}, efficiency ≥ "
            f"{'not judged' if floor is None else _pct(floor)}, reach "
            f"{100 * goal['reach']:.1f} % of λ*"
            f"{', t→reach exempt (λ*·W < 100)' if goal['t90_exempt'] else ''})",
            "",
            f"![frontier {plant['key']}]({charts}/suite-{plant['key']}.png)",
            "",
            HEAD,
            RULE,
        ]
        if plant["key"] in before:
            was = _default_only(before[plant["key"]], old)
            for s in summarise(was["runs"], Goal.from_json(goal)):
                out.append(_row(s, goal, plant["has_events"], "before: "))
        for s in _summary_of(plant):
            out.append(_row(s, goal, plant["has_events"], ""))
        out += _seed_rows(plant)
        oracle = ", ".join(
            f"{p['fraction']:.2f}: {_pct(p['violations'])}/{_pct(p['steady_efficiency'])}"
            for p in plant["frontier"]
        )
        out += ["", f"Frontier (fraction of λ*: violations/efficiency): {oracle}", ""]
    out.append(end_marker(key))
    return "\n".join(out) + "\n"


def splice(doc: Path, block: str) -> None:
    """Replace the block with the same key (its first line) in ``doc``, or append it."""
    first = block.split("\n", 1)[0]
    key = first.removeprefix("<!-- suite:begin ").removesuffix(
        " (written by loadguard evaluate --suite) -->"
    )
    begin, end = begin_marker(key), end_marker(key)
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
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
    goal = plant.get("goal")
    if goal is not None:
        ax.axvline(100 * goal["max_violations"], color="#c33", lw=0.8, ls="--")
        ax.axvline(100 * goal["budget"], color="#c33", lw=0.6, ls=":")
        if goal["min_efficiency"] is not None:
            ax.axhline(100 * goal["min_efficiency"], color="#c33", lw=0.8, ls="--")
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


def goal_misses(plant: dict[str, Any], runs: Sequence[dict[str, Any]]) -> list[str]:
    """Recompute the misses of stored runs (one policy's seeds) against the plant's goal."""
    goal = Goal.from_json(plant["goal"])
    return misses([SuiteMetrics.from_json(_metrics_of(r)) for r in runs], goal)
