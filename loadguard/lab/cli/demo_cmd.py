"""``loadguard demo``: the full loop on the embedded demo target."""

from __future__ import annotations

import logging
import sys
from datetime import datetime
from pathlib import Path

import click

from loadguard import human
from loadguard.cli.options import (
    duration_option,
    error_rate_option,
    force_option,
    no_dashboard_option,
    out_option,
    p95_option,
    policy_option,
    quiet_option,
)
from loadguard.cli.sidecar_cmd import headline_line
from loadguard.durations import Seconds, format_duration
from loadguard.lab.demo import DemoOptions, run_demo
from loadguard.sidecar import Paths
from loadguard.summary import INCONCLUSIVE_EXIT, Summary

#: The demo's SLO when none is given (the paper's scenario).
DEFAULT_P95 = DemoOptions.p95
DEFAULT_ERROR_RATE = DemoOptions.error_rate


@click.command("demo")
@duration_option("180s")
@out_option
@policy_option
@p95_option
@error_rate_option
@force_option
@no_dashboard_option
@quiet_option
def demo(
    duration: Seconds,
    out: Path | None,
    policy: str,
    p95: Seconds | None,
    error_rate: str | None,
    force: bool,
    no_dashboard: bool,
    quiet: bool,
) -> None:
    """Provision JMeter, start the demo target, and let LoadGuard find its capacity.

    The paper's scenario: an 800 req/s stress ceiling against a target whose real
    SLO-compliant capacity is far lower (M/M/8, 50 ms service: lambda* = 144 req/s at
    p95 <= 250 ms). The SLO is --p95 (default 250ms) and --error-rate (default 1%).
    Leaves --out (default results/<timestamp>/) with results.jtl, decisions.csv,
    summary.json, report.html, jmeter.log and JMeter's own dashboard/.

    Exit code: 0 when the loop ran (PASS or FAIL, shown in the verdict line), 5 when
    the verdict is INCONCLUSIVE (a --duration too short to reach the knee), 3 when
    JMeter or the target failed.

    \b
    Example:
      loadguard demo --duration 3m --policy threezone
      loadguard demo --p95 300ms --out results/demo --force
    """
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    out_dir = out or Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S")
    opts = DemoOptions(
        out_dir=out_dir,
        duration_s=duration,
        policy=policy,
        p95=DEFAULT_P95 if p95 is None else format_duration(p95),
        error_rate=DEFAULT_ERROR_RATE if error_rate is None else error_rate,
        force=force,
        quiet=quiet,
        dashboard=not no_dashboard,
    )
    result = run_demo(opts, logging.getLogger("loadguard.lab.demo"))
    s = result.outcome.summary
    lam = result.lambda_star_rps
    click.echo("")
    click.echo(f"verdict:               {s.verdict} (stop: {result.outcome.stop_reason})")
    if lam:
        click.echo(f"target's analytic λ*:  {human.rate(lam)}{against_lambda(s, lam)}")
    click.echo(f"results:               {result.out_dir}")
    if result.report is not None:
        click.echo(f"report:                {result.report}")
    if result.dashboard:
        click.echo(result.dashboard)
    click.echo(headline_line(result.outcome, Paths.in_dir(result.out_dir)))
    sys.exit(demo_exit_code(result.outcome.exit_code))


def against_lambda(s: Summary, lam: float) -> str:
    """The run's answer against the target's analytic λ*: the capacity estimate (or its
    lower bound when the knee was not reached) and the rate held, each as a share of λ*;
    empty when the run has neither."""
    parts = []
    cap = s.capacity or {}
    if cap.get("rps"):
        share = human.percent(float(cap["rps"]) / lam)
        below = cap.get("status") == "lower_bound"
        parts.append(f"capacity above {share} of it" if below else f"capacity {share} of it")
    held = s.held_rate or {}
    if held.get("rps"):
        parts.append(f"held rate {human.percent(float(held['rps']) / lam)}")
    return f" ({', '.join(parts)})" if parts else ""


def demo_exit_code(run_exit: int) -> int:
    """The demo's exit code from the loop's (``loop.exit_code_for``): 3 (JMeter or an
    engine failed) and 5 (INCONCLUSIVE: the knee was not reached, e.g. a run too short
    to climb to it) as ``run`` exits; 0 for PASS and for FAIL, since the demo target is
    driven past its knee on purpose and a FAIL there is the demo working, reported in
    the verdict line."""
    return run_exit if run_exit in (3, INCONCLUSIVE_EXIT) else 0
