"""docs/evaluation.md from the evaluation's results (pure: strings in, string out).

The prose is ``loadguard/data/evaluation/report.md`` (and ``setup-emulator.md`` /
``setup-teastore.md``), ``string.Template`` files; ``render`` fills them from the
evaluation's data. The facts come from where they live: the full evaluation's shape from
``EvalConfig``'s defaults, the plugin versions from ``jmeter.install.PLUGINS``, the window
and minimum sample count from the run's ``SloSpec``, the browse plan's samplers from the
plan, and the full evaluation's duration from this evaluation's own wall time per run.

A hand-written block between ``<!-- notes -->`` and ``<!-- /notes -->`` in the previous
file is carried over unchanged, so the discussion survives a re-run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Template

from lxml import etree

from loadguard.jmeter.install import PLUGINS
from loadguard.lab.evaluate.aggregate import Row, Stat, reduction
from loadguard.lab.evaluate.config import PLAN_THREADS, TEASTORE_SWEEP, EvalConfig
from loadguard.lab.evaluate.lambda_star import SweepPoint
from loadguard.lab.evaluate.run_metrics import steady_cutoff_s
from loadguard.lab.evaluate.runner import slo_spec
from loadguard.lab.evaluate.schemes import SCHEMES
from loadguard.resources import data_file, teastore_browse_plan

#: The jmeter-plugins versions ``loadguard jmeter install`` provisions, by artifact.
PLUGIN_VERSIONS = {p.artifact: p.version for p in PLUGINS}

NOTES = re.compile(r"<!-- notes -->.*?<!-- /notes -->", re.S)

#: The paper's own figures (abstract, /work/shared/paper: "LoadGuard-JMeter: An SLO-Aware
#: Closed-Loop Elastic Load Generation Plugin for Apache JMeter"), five-run means.
PAPER_OK_RPS = {"FFA": 741.20, "TSTCTG": 154.10, "LoadGuard": 88.15}
PAPER_VIOLATION = {"FFA": 1.00, "TSTCTG": 1.00, "LoadGuard": 0.22}
PAPER_ERROR_RATE = {"LoadGuard": 0.0}
#: LoadGuard's reduction against (FFA, TSTCTG).
PAPER_REDUCTION = {
    "mean_ms": (0.9654, 0.9537),
    "p95_ms": (0.9470, 0.9562),
    "p99_ms": (0.9432, 0.9587),
}


@dataclass(frozen=True)
class Report:
    cfg: EvalConfig
    sweep: Sequence[SweepPoint]
    lambda_star: float | None
    lambda_star_bounded: bool
    lambda_star_analytic: float | None
    rows: Sequence[Row]
    agg: Mapping[str, Mapping[str, Stat]]
    figures: Mapping[str, str]  # scheme (or "overview") -> path relative to the doc
    csv_path: str
    machine: Sequence[str]
    started: str
    finished: str


def _num(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def _pct(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v * 100:.{digits}f} %"


def _ms(s: Stat, digits: int = 0) -> str:
    if s.mean is None:
        return "–"
    return f"{s.mean:,.{digits}f}" + ("" if s.sd is None else f" ± {s.sd:,.{digits}f}")


def _pms(s: Stat, digits: int = 1) -> str:
    if s.mean is None:
        return "–"
    sd = "" if s.sd is None else f" ± {s.sd * 100:.{digits}f}"
    return f"{s.mean * 100:.{digits}f}{sd} %"


def _label(name: str) -> str:
    return name if name in ("FFA", "TSTCTG") else f"LoadGuard {name}"


def _kind(cfg: EvalConfig) -> str:
    full = EvalConfig(out_dir=cfg.out_dir)
    if cfg.quick:
        return "QUICK smoke run (not an evaluation)"
    if (
        cfg.repetitions >= full.repetitions
        and cfg.duration_s >= full.duration_s
        and len(cfg.schemes) == len(SCHEMES)
    ):
        return "FULL evaluation"
    return "REDUCED evaluation"


def _full_run_estimate(report: Report, runs: int) -> str:
    """``, ~H h on this machine`` for ``runs`` full-length runs, from this evaluation's own
    mean wall time per run (its overhead beyond the run length kept); empty without it."""
    walls = [w for w in (_f(r.get("wall_s")) for r in report.rows) if w is not None]
    if not walls:
        return ""
    overhead = max(0.0, sum(walls) / len(walls) - report.cfg.duration_s)
    hours = runs * (EvalConfig(out_dir=report.cfg.out_dir).duration_s + overhead) / 3600
    return f", ~{hours:.1f} h on this machine"


def _full_command(report: Report, kind: str) -> str:
    """The paragraph naming the full evaluation's command, for a run that is not one."""
    cfg = report.cfg
    if kind.startswith("FULL"):
        return ""
    full = EvalConfig(out_dir=cfg.out_dir)
    reps, secs = full.repetitions, f"{full.duration_s:g}"
    shape = f"{len(SCHEMES)} schemes × {reps} repetitions × {secs} s"
    if cfg.target_kind == "teastore":
        sweep = len(TEASTORE_SWEEP)
        estimate = _full_run_estimate(report, len(SCHEMES) * reps + sweep)
        return (
            f"Full evaluation ({shape} plus a {sweep}-point sweep, each on a fresh TeaStore"
            f"{estimate}):\n\n```sh\nloadguard evaluate --target teastore --layout "
            f"{cfg.teastore_layout} --repetitions {reps} --duration {secs}s "
            "--doc docs/evaluation-teastore.md\n```\n\n"
        )
    estimate = _full_run_estimate(report, len(SCHEMES) * reps + len(full.sweep_rates))
    return (
        f"Full evaluation ({shape}{estimate}):\n\n```sh\nloadguard evaluate --repetitions "
        f"{reps} --duration {secs}s --doc docs/evaluation.md\n```\n\n"
    )


def _setup(cfg: EvalConfig) -> str:
    t, spec = cfg.target, slo_spec(cfg)
    common = {
        "p95_ms": f"{t.p95_ms:g}",
        "error_pct": f"{cfg.error_rate * 100:g}",
        "window_s": f"{spec.window_ms / 1000:g}",
        "stress": f"{cfg.stress_rps:g}",
        "threads": cfg.elastic_threads,
        "initial_rate": f"{cfg.initial_rate:g}",
        "tick_ms": cfg.tick_ms,
    }
    if cfg.target_kind != "teastore":
        return _template("setup-emulator.md").substitute(
            common,
            workers=t.workers,
            service_ms=f"{t.service_ms:g}",
            queue=t.queue,
            casutg=PLUGIN_VERSIONS["jmeter-plugins-casutg"],
            tst=PLUGIN_VERSIONS["jmeter-plugins-tst"],
        )
    samplers = browse_samplers()
    instances = (
        "**one instance shared by every run and the sweep**: before every run and sweep "
        "point after the first, the harness waits until it serves again and resets it with "
        "TeaStore's own regeneration of its database, images and recommender "
        "(`loadguard.lab.teastore.reset`); the JVMs stay, so every run after the first meets a "
        "warm JIT"
        if cfg.share_target
        else "a **new instance per run and per sweep point**: a freshly generated in-memory "
        "database, a cold JIT"
    )
    return _template("setup-teastore.md").substitute(
        common,
        layout=cfg.teastore_layout,
        instances=instances,
        samplers=samplers,
        arrivals=f"{cfg.stress_rps / samplers:g}",
        baseline_threads=cfg.baseline_threads or PLAN_THREADS,
    )


def _template(name: str) -> Template:
    return Template(data_file("evaluation", name).read_text(encoding="utf-8"))


def browse_samplers() -> int:
    """The samplers of TeaStore's browse plan (one browse iteration), counted in it."""
    tree = etree.parse(str(teastore_browse_plan()))
    return len(tree.findall(".//HTTPSamplerProxy"))


def _lines(items: Sequence[str]) -> str:
    return "".join(items)


def render(report: Report, previous: str | None = None) -> str:
    """The report: ``loadguard/data/evaluation/report.md`` filled from the evaluation."""
    cfg = report.cfg
    names = [s.name for s in cfg.schemes]
    a = report.agg
    kind = _kind(cfg)
    spec = slo_spec(cfg)
    notes = None if previous is None else NOTES.search(previous)
    fields = {
        "stress": f"{cfg.stress_rps:g}",
        "target_name": "the real TeaStore" if cfg.target_kind == "teastore" else "the demo target",
        "kind": kind,
        "n_schemes": len(names),
        "repetitions": cfg.repetitions,
        "duration_s": f"{cfg.duration_s:g}",
        "started": report.started,
        "finished": report.finished,
        "kind_note": ""
        if kind.startswith("FULL")
        else f" The full evaluation is {len(SCHEMES)} schemes × "
        f"{EvalConfig(out_dir=cfg.out_dir).repetitions} runs × "
        f"{EvalConfig(out_dir=cfg.out_dir).duration_s:g} s; the command for that is below. "
        "Read these figures with their spread and repetition count in mind.",
        "command": cfg.command or "loadguard evaluate",
        "full_command": _full_command(report, kind),
        "seed": cfg.seed,
        "csv_path": report.csv_path,
        "machine": "\n".join(f"* {m}" for m in report.machine),
        "out_dir": cfg.out_dir,
        "setup": _setup(cfg),
        "window_s": f"{spec.window_ms / 1000:g}",
        "min_samples": spec.min_samples,
        "steady_s": f"{steady_cutoff_s(cfg.duration_s, cfg.steady_after_s):g}",
        "steady_after_s": f"{cfg.steady_after_s:g}",
        "sweep_seconds": f"{cfg.sweep_seconds:g}",
        "sweep_warmup_s": f"{cfg.sweep_warmup_s:g}",
        "lambda_star": _num(report.lambda_star),
        "bound": "" if report.lambda_star_bounded else " (a lower bound: no failing rate above it)",
        "lambda_star_analytic": _num(report.lambda_star_analytic),
        "sweep_rows": _sweep_rows(report),
        "result_rows": _result_rows(a, names),
        "efficiency_rows": _efficiency_rows(a, names),
        "decisions": _decisions(cfg, a, names),
        "paper": _paper_section(a, names),
        "figures": _lines([_figure(key, path) for key, path in report.figures.items()]),
        "run_rows": _lines([_run_row(r) for r in report.rows]),
        "notes": notes.group(0)
        if notes
        else "<!-- notes -->\n## Discussion\n\n(Not written yet.)\n<!-- /notes -->",
    }
    return _template("report.md").substitute(fields)


def _decisions(cfg: EvalConfig, a: Mapping[str, Mapping[str, Stat]], names: list[str]) -> str:
    """LoadGuard's decision counts and its targets, when LoadGuard ran."""
    lg = [n for n in names if n not in ("FFA", "TSTCTG")]
    decisions = ""
    if lg:
        decisions = (
            "\n### LoadGuard decisions (mean per run)\n\n| policy | INCREASE | HOLD | DECREASE |\n"
            "|---|---|---|---|\n"
            + _lines(
                [
                    f"| {n} | {_ms(a[n]['increase'])} | {_ms(a[n]['hold'])} "
                    f"| {_ms(a[n]['decrease'])} |\n"
                    for n in lg
                ]
            )
            + _targets(cfg, a, lg)
        )
    return decisions


def _sweep_rows(report: Report) -> str:
    return _lines(
        [
            f"| {p.offered_rps:g} | {p.achieved_rps:.1f} | {p.p95_ms:.0f} | "
            f"{_pct(p.error_rate, 2)} | {p.samples} |\n"
            for p in sorted(report.sweep, key=lambda p: p.offered_rps)
        ]
    )


def _result_rows(a: Mapping[str, Mapping[str, Stat]], names: list[str]) -> str:
    return _lines(
        [
            f"| {_label(n)} | {_ms(a[n]['mean_ms'])} | {_ms(a[n]['p95_ms'])} "
            f"| {_ms(a[n]['p99_ms'])} | {_pms(a[n]['violation_share_p95'])} "
            f"| {_pms(a[n]['error_rate'], 2)} | {_ms(a[n]['ok_rps'], 1)} |\n"
            for n in names
        ]
    )


def _efficiency_rows(a: Mapping[str, Mapping[str, Stat]], names: list[str]) -> str:
    return _lines(
        [
            f"| {_label(n)} | {_pms(a[n]['efficiency'])} | {_pms(a[n]['steady_efficiency'])} "
            f"| {_ms(a[n]['compliant_ok_rps'], 1)} | {_ms(a[n]['offered_rps'], 1)} "
            f"| {_ms(a[n]['started_rps'], 1)} | {_pms(a[n]['held_back_share'])} "
            f"| {_ms(a[n]['max_threads'])} | {_ms(a[n]['jmeter_cpu_cores'], 2)} |\n"
            for n in names
        ]
    )


def _figure(key: str, path: str) -> str:
    title = "All schemes, repetition 1" if key == "overview" else _label(key)
    return f"### {title}\n\n![{title}]({path})\n\n"


def _run_row(r: Row) -> str:
    return (
        f"| {r['scheme']} | {r['rep']} | {r['seed']} | {_num(_f(r['p95_ms']), 0)} "
        f"| {_pct(_f(r['violation_share_p95']), 0)} | {_pct(_f(r['error_rate']), 2)} "
        f"| {_num(_f(r['ok_rps']))} | {_pct(_f(r['steady_efficiency']), 0)} "
        f"| {_pct(_f(r['held_back_share']), 0)} "
        f"| {_num(_f(r['load_start']))}→{_num(_f(r['load_end']))} | {r['covered']} |\n"
    )


def _f(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) else None


def _targets(cfg: EvalConfig, a: Mapping[str, Mapping[str, Stat]], lg: Sequence[str]) -> str:
    lines = [
        "\n### Against the evaluation's targets (means over repetitions)\n\n",
        f"| policy | errors ≤ {cfg.error_rate * 100:g} % | p95-violation share ≤ 5 % | "
        "steady-state efficiency ≥ 85 % |\n|---|---|---|---|\n",
    ]

    def mark(value: float | None, ok: bool) -> str:
        return "–" if value is None else ("yes" if ok else "**no**")

    for n in lg:
        e, v, s = (a[n][k].mean for k in ("error_rate", "violation_share_p95", "steady_efficiency"))
        lines.append(
            f"| {n} | {mark(e, e is not None and e <= cfg.error_rate)} ({_pct(e, 2)}) "
            f"| {mark(v, v is not None and v <= 0.05)} ({_pct(v)}) "
            f"| {mark(s, s is not None and s >= 0.85)} ({_pct(s)}) |\n"
        )
    return "".join(lines)


def _paper_section(a: Mapping[str, Mapping[str, Stat]], names: Sequence[str]) -> str:
    lines = ["\n## Beside the paper's own numbers\n\n"]
    lines.append(
        "Source: the paper's abstract (LoadGuard-JMeter: An SLO-Aware Closed-Loop Elastic "
        "Load Generation Plugin for Apache JMeter; TeaStore, 800 RPS stress, five-run "
        "means). The paper gives only these absolute figures; its latencies appear as "
        "reductions. Ours: the paper's rule is `threezone`.\n\n"
    )
    lines.append("| figure | paper | ours |\n|---|---|---|\n")
    ours_lg = a.get("threezone")
    for scheme in ("FFA", "TSTCTG"):
        if scheme in a:
            lines.append(
                f"| {scheme} successful throughput | {PAPER_OK_RPS[scheme]:.2f} req/s "
                f"| {_ms(a[scheme]['ok_rps'], 2)} req/s |\n"
                f"| {scheme} p95-violation share | 100 % "
                f"| {_pms(a[scheme]['violation_share_p95'])} |\n"
            )
    if ours_lg is not None:
        lines.append(
            f"| LoadGuard (threezone) successful throughput | 88.15 req/s "
            f"| {_ms(ours_lg['ok_rps'], 2)} req/s |\n"
            f"| LoadGuard (threezone) p95-violation share | 22 % "
            f"| {_pms(ours_lg['violation_share_p95'])} |\n"
            f"| LoadGuard (threezone) error rate | 0 % | {_pms(ours_lg['error_rate'], 2)} |\n"
        )
        for metric, label in (("mean_ms", "mean RT"), ("p95_ms", "p95"), ("p99_ms", "p99")):
            for i, base in enumerate(("FFA", "TSTCTG")):
                if base not in a:
                    continue
                ours = reduction(ours_lg[metric].mean, a[base][metric].mean)
                paper = PAPER_REDUCTION[metric][i]
                lines.append(
                    f"| {label} reduction vs {base} | {paper * 100:.2f} % | {_pct(ours, 2)} |\n"
                )
    best = [n for n in names if n not in ("FFA", "TSTCTG", "threezone")]
    for n in best:
        s = a[n]
        for base in ("FFA", "TSTCTG"):
            if base in a:
                ours = reduction(s["p95_ms"].mean, a[base]["p95_ms"].mean)
                lines.append(f"| {n}: p95 reduction vs {base} | – | {_pct(ours, 2)} |\n")
    return "".join(lines)
