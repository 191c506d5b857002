"""``loadguard demo``: the whole loop on the embedded default, in one command.

1. provision JMeter (a no-op when the cache is complete);
2. start the demo target as a child process (M/M/8, 50 ms exponential service, so its
   max SLO-compliant rate lambda* is known analytically: 144.4 req/s for p95 <= 250 ms);
3. ``loadguard run`` the elastic plan from ``jmx_templates/`` against it with the paper's
   scenario: a stress ceiling of 800 req/s, SLOs on p95 and error rate;
4. generate JMeter's own HTML dashboard (``dashboard/``), render ``report.html`` (which
   links to it) and print a short summary ending with the headline.

Everything lands in ``results/<timestamp>/``. Both children end with the demo; Ctrl-C
stops JMeter gracefully and then the target.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from loadguard.dashboard import dashboard_for_run
from loadguard.jmeter.home import find_jmeter_home
from loadguard.jmeter.install import install
from loadguard.lab.target.process import spawn_target
from loadguard.loop import LoopOutcome
from loadguard.policies import DEFAULT_POLICY
from loadguard.resources import elastic_plan
from loadguard.sidecar import Paths, RunPlan, SidecarConfig, run_plan
from loadguard.slo import SloSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoOptions:
    out_dir: Path
    duration_s: float = 180.0
    policy: str = DEFAULT_POLICY
    p95: str = "250ms"
    error_rate: str = "1%"
    max_rate: float = 800.0
    workers: int = 8
    service: str = "50ms"
    threads: int = 200
    initial_rate: float = 5.0
    force: bool = False
    quiet: bool = False
    dashboard: bool = True


@dataclass(frozen=True)
class DemoResult:
    outcome: LoopOutcome
    out_dir: Path
    report: Path | None
    lambda_star_rps: float | None
    #: the console line about JMeter's dashboard (loadguard.dashboard)
    dashboard: str | None = None


def demo_target_args(opts: DemoOptions) -> list[str]:
    """``loadguard target`` options of the demo target (M/M/c, its queue, its SLO)."""
    return [
        "--model",
        "mmc",
        "--workers",
        str(opts.workers),
        "--service",
        opts.service,
        "--queue",
        "1000",
        "--p95",
        opts.p95,
    ]


def demo_properties(port: int, opts: DemoOptions) -> dict[str, str]:
    """The elastic plan's JMeter properties for the demo target on ``port``."""
    return {
        "target.port": str(port),
        "target.path": "/tools.descartes.teastore.webui/",
        "threads": str(opts.threads),
        "duration": str(int(opts.duration_s) + 60),
    }


def run_demo(opts: DemoOptions, progress: logging.Logger = log) -> DemoResult:
    install(log=progress.info)
    home = find_jmeter_home()
    out = opts.out_dir
    out.mkdir(parents=True, exist_ok=True)
    spec = SloSpec.from_options(
        p95=opts.p95, error_rate=opts.error_rate, max_rate=str(opts.max_rate)
    )
    with spawn_target(demo_target_args(opts)) as target:
        lam = target.ready.lambda_star_rps
        progress.info(
            "demo target on port %d: lambda* = %s req/s for p95 <= %s",
            target.port,
            "-" if lam is None else f"{lam:.1f}",
            opts.p95,
        )
        cfg = SidecarConfig(
            paths=Paths.in_dir(out),
            spec=spec,
            policy=opts.policy,
            initial_rate=opts.initial_rate,
            duration_ms=round(opts.duration_s * 1000),
            quiet=opts.quiet,
        )
        run = RunPlan(
            plan=elastic_plan(),
            jmeter=home,
            out_dir=out,
            properties=demo_properties(target.port, opts),
            force=opts.force,
        )
        outcome, _code = run_plan(run, cfg)
    (out / "target.json").write_text(
        json.dumps(
            {
                "lambda_star_rps": lam,
                "workers": opts.workers,
                "service": opts.service,
                "p95": opts.p95,
            },
            indent=2,
        )
        + "\n"
    )
    paths = Paths.in_dir(out)
    made = dashboard_for_run(home, out, paths.jtl, paths.summary, enabled=opts.dashboard)
    report: Path | None = None
    try:
        from loadguard.report.render import render_report

        report = render_report(out)
    except Exception as exc:  # the run's data is safe; a report failure must not hide it
        progress.warning("report failed: %s", exc)
    return DemoResult(replace(outcome), out, report, lam, made.line(out))
