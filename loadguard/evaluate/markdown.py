"""docs/evaluation.md from the evaluation's results (pure: strings in, string out).

A hand-written block between ``<!-- notes -->`` and ``<!-- /notes -->`` in the previous
file is carried over unchanged, so the discussion survives a re-run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loadguard.evaluate.aggregate import Row, Stat, reduction
from loadguard.evaluate.config import EvalConfig
from loadguard.evaluate.lambda_star import SweepPoint
from loadguard.evaluate.run_metrics import steady_cutoff_s
from loadguard.evaluate.schemes import SCHEMES

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


def render(report: Report, previous: str | None = None) -> str:
    cfg = report.cfg
    names = [s.name for s in cfg.schemes]
    a = report.agg
    kind = (
        "QUICK smoke run (not an evaluation)"
        if cfg.quick
        else "FULL evaluation"
        if cfg.repetitions >= 5 and cfg.duration_s >= 180 and len(names) == 6
        else "REDUCED evaluation"
    )
    out: list[str] = []
    w = out.append
    on = "the real TeaStore" if cfg.target_kind == "teastore" else "the demo target"
    w(f"# Evaluation: the paper's 800 req/s experiment on {on}\n\n")
    w(
        f"**{kind}**: {len(names)} schemes × {cfg.repetitions} repetition(s) × "
        f"{cfg.duration_s:g} s runs, run {report.started} – {report.finished}."
        + (
            "\n"
            if kind.startswith("FULL")
            else f" The full evaluation is {len(SCHEMES)} schemes × 5 runs × 180 s; the command "
            "for that is below. Read these figures with their spread and repetition count in "
            "mind.\n"
        )
    )
    w("\n## How it was produced\n\n")
    w("```sh\n" + (cfg.command or "loadguard evaluate") + "\n```\n\n")
    if not kind.startswith("FULL") and cfg.target_kind == "teastore":
        w(
            f"Full evaluation ({len(SCHEMES)} schemes × 5 repetitions × 180 s plus a 6-point "
            f"sweep, each on a fresh TeaStore: ~{len(SCHEMES) * 35 / 60:.1f} h on this "
            "machine):\n\n"
            "```sh\nloadguard evaluate --target teastore "
            f"--layout {cfg.teastore_layout} --repetitions 5 --duration 180s "
            "--doc docs/evaluation-teastore.md\n```\n\n"
        )
    elif not kind.startswith("FULL"):
        w(
            f"Full evaluation ({len(SCHEMES)} schemes × 5 repetitions × 180 s, "
            f"~{len(SCHEMES) * 20 / 60:.1f} h on this machine):\n\n"
            "```sh\nloadguard evaluate --repetitions 5 --duration 180s "
            "--doc docs/evaluation.md\n```\n\n"
        )
    w(f"Seed: {cfg.seed} (target seed of run k of scheme s: seed + 100·s + k). ")
    w(f"CSV of every run: `{report.csv_path}`.\n\n")
    w("Machine:\n\n" + "\n".join(f"* {m}" for m in report.machine) + "\n")
    w(
        "\nEach run's own folder (JTL, jmeter.log, decisions.csv, summary.json, "
        f"windows.csv) is under `{cfg.out_dir}/runs/`, not committed.\n"
    )

    t = cfg.target
    w("\n## Set-up\n\n")
    if cfg.target_kind == "teastore":
        w(_teastore_setup(cfg))
    else:
        w(
            f"* **Target**: `loadguard target --model mmc --workers {t.workers} --service "
            f"{t.service_ms:g}ms --queue {t.queue}` (M/M/{t.workers}, exponential service "
            f"{t.service_ms:g} ms, wait queue {t.queue}, then 503), a **new process per run** "
            "(empty queue). Every request is `GET /tools.descartes.teastore.webui/`.\n"
            f"* **SLO**: p95 ≤ {t.p95_ms:g} ms and error rate ≤ {cfg.error_rate * 100:g} %, "
            "window 10 s.\n"
            f"* **FFA**: `benchmarks/plans/ffa_800.jmx`: the real *bzm - Free-Form Arrivals "
            f"Thread Group* (jmeter-plugins casutg 2.10), flat {cfg.stress_rps:g} arrivals/s, "
            "concurrency limit 1000.\n"
            f"* **TSTCTG**: `benchmarks/plans/tstctg_800.jmx`: the real *Throughput Shaping "
            f"Timer* (tst 2.5) at {cfg.stress_rps:g} req/s, fed by the real *Concurrency Thread "
            "Group* through `${__tstFeedback(tst800,1,1000,2)}`.\n"
            "* **LoadGuard**: `loadguard run jmx_templates/elastic_plan.jmx` "
            f"({cfg.elastic_threads} threads, the Elastic Timer), `--policy P --p95 "
            f"{t.p95_ms:g}ms --error-rate {cfg.error_rate * 100:g}% --max-rate "
            f"{cfg.stress_rps:g} --initial-rate {cfg.initial_rate:g}`, tick {cfg.tick_ms} ms, "
            "each policy with its defaults.\n"
        )
    w("\n## Definitions (identical for every scheme)\n\n")
    w(
        "Every figure is computed from the scheme's own JTL by `loadguard.evaluate."
        "run_metrics` with the sidecar's `Window` and `SloSpec` code; no scheme's own "
        "report is used.\n\n"
        "* t0 = the earliest sample start in the JTL; only samples **completing** in "
        f"(t0, t0 + {cfg.duration_s:g} s] count (start-up and the stop fall outside).\n"
        "* **p95-violation share** (the paper's SLO-violation rate): tumbling 10 s windows "
        "(t0 + 10k, t0 + 10(k+1)] of completion time; a window with < 20 samples is not "
        "judged; share = windows whose p95 exceeded the SLO / judged windows.\n"
        "* mean / p95 / p99 / error rate: over all counted samples (numpy 'linear' "
        "quantile). Successful throughput = successful counted samples / run length.\n"
        "* **efficiency** = successful throughput / λ*; **steady-state efficiency** the same "
        f"over (t0 + S, t0 + D] with S = {steady_cutoff_s(cfg.duration_s, cfg.steady_after_s):g}"
        " s (120 s when at least 60 s remain after it, else half the run); **compliant "
        "throughput** counts only the "
        "successful samples of judged windows that met every SLO.\n"
        "* **offered** = the scheme's own schedule integrated over the run (800/s for the "
        "baselines, the commanded rate in force for LoadGuard); **started** = samples "
        "started in [t0, t0 + D); **held back** = offered − started: arrivals FFA dropped "
        "at its concurrency limit, per-second budget the TST never sent, rate the Elastic "
        "Timer could not place. JTL latency leaves all of this out (coordinated omission).\n"
    )

    w("\n## λ*: fixed-rate step sweep (same session, same target configuration)\n\n")
    w(
        "Each rate held by the elastic plan's timer on a fresh target for "
        f"{cfg.sweep_seconds:g} s, the first {cfg.sweep_warmup_s:g} s dropped; p95 over "
        "the samples started after the warm-up.\n\n"
    )
    w("| offered (req/s) | achieved | p95 (ms) | errors | samples |\n|---|---|---|---|---|\n")
    for p in sorted(report.sweep, key=lambda p: p.offered_rps):
        w(
            f"| {p.offered_rps:g} | {p.achieved_rps:.1f} | {p.p95_ms:.0f} | "
            f"{_pct(p.error_rate, 2)} | {p.samples} |\n"
        )
    bound = "" if report.lambda_star_bounded else " (a lower bound: no failing rate above it)"
    w(
        f"\n**λ* measured = {_num(report.lambda_star)} req/s**{bound} (p95 interpolated "
        f"to the SLO between the last passing and first failing rate); analytic M/M/c "
        f"(Erlang C, Poisson arrivals) = {_num(report.lambda_star_analytic)} req/s. "
        "Efficiencies below use the measured value.\n"
    )

    w("\n## Results in the paper's shape (mean ± sd over repetitions)\n\n")
    w(
        "| scheme | mean RT (ms) | p95 (ms) | p99 (ms) | p95-violation share | "
        "error rate | successful throughput (req/s) |\n|---|---|---|---|---|---|---|\n"
    )
    for n in names:
        s = a[n]
        w(
            f"| {_label(n)} | {_ms(s['mean_ms'])} | {_ms(s['p95_ms'])} | {_ms(s['p99_ms'])} "
            f"| {_pms(s['violation_share_p95'])} | {_pms(s['error_rate'], 2)} "
            f"| {_ms(s['ok_rps'], 1)} |\n"
        )
    w("\n## What the paper lacks: efficiency, offered vs achieved\n\n")
    w(
        "| scheme | efficiency | steady-state eff. | compliant throughput (req/s) | "
        "offered (req/s) | started (req/s) | held back | max threads | JMeter CPU (cores) |"
        "\n|---|---|---|---|---|---|---|---|---|\n"
    )
    for n in names:
        s = a[n]
        w(
            f"| {_label(n)} | {_pms(s['efficiency'])} | {_pms(s['steady_efficiency'])} "
            f"| {_ms(s['compliant_ok_rps'], 1)} | {_ms(s['offered_rps'], 1)} "
            f"| {_ms(s['started_rps'], 1)} | {_pms(s['held_back_share'])} "
            f"| {_ms(s['max_threads'])} | {_ms(s['jmeter_cpu_cores'], 2)} |\n"
        )
    lg = [n for n in names if n not in ("FFA", "TSTCTG")]
    if lg:
        w("\n### LoadGuard decisions (mean per run)\n\n| policy | INCREASE | HOLD | DECREASE |\n")
        w("|---|---|---|---|\n")
        for n in lg:
            s = a[n]
            w(f"| {n} | {_ms(s['increase'])} | {_ms(s['hold'])} | {_ms(s['decrease'])} |\n")
        w(_targets(cfg, a, lg))
    w(_paper_section(a, names))
    w("\n## Time series\n\n")
    for key, path in report.figures.items():
        title = "All schemes, repetition 1" if key == "overview" else _label(key)
        w(f"### {title}\n\n![{title}]({path})\n\n")
    w("\n## Every run\n\n")
    w(
        "| scheme | rep | seed | p95 (ms) | p95-viol. | errors | ok/s | steady eff. | "
        "held back | load avg start→end | covered |\n" + "|---" * 11 + "|\n"
    )
    for r in report.rows:
        w(
            f"| {r['scheme']} | {r['rep']} | {r['seed']} | {_num(_f(r['p95_ms']), 0)} "
            f"| {_pct(_f(r['violation_share_p95']), 0)} | {_pct(_f(r['error_rate']), 2)} "
            f"| {_num(_f(r['ok_rps']))} | {_pct(_f(r['steady_efficiency']), 0)} "
            f"| {_pct(_f(r['held_back_share']), 0)} "
            f"| {_num(_f(r['load_start']))}→{_num(_f(r['load_end']))} | {r['covered']} |\n"
        )
    notes = None if previous is None else NOTES.search(previous)
    w(
        "\n"
        + (
            notes.group(0)
            if notes
            else "<!-- notes -->\n## Discussion\n\n(Not written yet.)\n<!-- /notes -->"
        )
        + "\n"
    )
    return "".join(out)


def _f(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) else None


def _teastore_setup(cfg: EvalConfig) -> str:
    t = cfg.target
    n = 8  # samplers per browse iteration
    return (
        f"* **Target**: the real TeaStore, `loadguard teastore --layout {cfg.teastore_layout}`"
        " (the cached build; docs/teastore.md), "
        + (
            "**one instance shared by every run and the sweep**: before every run and "
            "sweep point after the first, the harness waits until it serves again and "
            "resets it with TeaStore's own regeneration of its database, images and "
            "recommender (`loadguard.teastore.reset`); the JVMs stay, so every run after "
            "the first meets a warm JIT"
            if cfg.share_target
            else "a **new instance per run and per sweep point**: a freshly generated "
            "in-memory database, a cold JIT"
        )
        + ". Every plan is "
        "`examples/teastore/teastore-browse.jmx` (TeaStore's browse profile, 8 samplers; "
        "rates count samples, about 1.5 HTTP requests each).\n"
        f"* **SLO**: p95 ≤ {t.p95_ms:g} ms and error rate ≤ {cfg.error_rate * 100:g} %, "
        "window 10 s.\n"
        "* **FFA**: the browse samplers under `benchmarks/plans/ffa_800.jmx`'s real *bzm - "
        f"Free-Form Arrivals Thread Group*, {cfg.stress_rps / n:g} arrivals/s (each runs the "
        f"{n} samplers once: {cfg.stress_rps:g} samples/s), concurrency limit 1000 "
        "(`loadguard.evaluate.teastore_plans`).\n"
        "* **TSTCTG**: the browse samplers under `tstctg_800.jmx`'s real *Concurrency Thread "
        f"Group* and *Throughput Shaping Timer* at {cfg.stress_rps:g} samples/s.\n"
        "* **LoadGuard**: `loadguard run examples/teastore/teastore-browse.jmx` "
        f"({cfg.elastic_threads} users, its Elastic Timer), `--policy P --p95 {t.p95_ms:g}ms "
        f"--error-rate {cfg.error_rate * 100:g}% --max-rate {cfg.stress_rps:g} "
        f"--initial-rate {cfg.initial_rate:g}`, tick {cfg.tick_ms} ms.\n"
    )


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
