"""``loadguard demo``: the full loop on the embedded demo target."""

from __future__ import annotations

import logging
import sys
from datetime import datetime
from pathlib import Path

import click

from loadguard.demo import DemoOptions, run_demo
from loadguard.durations import parse_duration_s
from loadguard.policies import DEFAULT_POLICY


@click.command("demo")
@click.option("--duration", default="180s", show_default=True, help="Length of the run.")
@click.option(
    "--out", type=click.Path(file_okay=False), help="Run folder (default results/<timestamp>)."
)
@click.option(
    "--policy",
    type=click.Choice(["knee", "threezone", "aimd", "gradient", "search"]),
    default=DEFAULT_POLICY,
    show_default=True,
)
@click.option("--p95", default="250ms", show_default=True, help="p95 SLO.")
@click.option("--error-rate", default="1%", show_default=True, help="Error-rate SLO.")
@click.option("--force", is_flag=True, help="Replace an earlier run in --out instead of refusing.")
@click.option("-q", "--quiet", is_flag=True, help="No live console.")
def demo(
    duration: str,
    out: str | None,
    policy: str,
    p95: str,
    error_rate: str,
    force: bool,
    quiet: bool,
) -> None:
    """Provision JMeter, start the demo target, and let LoadGuard find its capacity.

    The paper's scenario: an 800 req/s stress ceiling against a target whose real
    SLO-compliant capacity is far lower (M/M/8, 50 ms service: lambda* = 144 req/s at
    p95 <= 250 ms). Leaves results/<timestamp>/ with results.jtl, decisions.csv,
    summary.json, report.html and jmeter.log.

    \b
    Example:
      loadguard demo --duration 3m --policy gradient
    """
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    out_dir = Path(out) if out else Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S")
    opts = DemoOptions(
        out_dir=out_dir,
        duration_s=parse_duration_s(duration, what="--duration"),
        policy=policy,
        p95=p95,
        error_rate=error_rate,
        force=force,
        quiet=quiet,
    )
    result = run_demo(opts, logging.getLogger("loadguard.demo"))
    s = result.outcome.summary
    lam = result.lambda_star_rps
    found = s.max_compliant_rate
    click.echo("")
    click.echo(f"verdict:                 {s.verdict} (stop: {result.outcome.stop_reason})")
    click.echo(f"max SLO-compliant rate:  {'-' if found is None else f'{found:.1f}'} req/s")
    click.echo(f"target's analytic λ*:    {'-' if lam is None else f'{lam:.1f}'} req/s")
    if found is not None and lam:
        click.echo(f"found / analytic:        {found / lam:.0%}")
    share = s.violation_share_p95
    click.echo(f"p95-violating windows:   {'-' if share is None else f'{share:.0%}'}")
    click.echo(f"actions:                 {dict(s.actions)}")
    click.echo(f"results:                 {result.out_dir}")
    if result.report is not None:
        click.echo(f"report:                  {result.report}")
    # The demo succeeded when the loop ran; the SLO verdict is reported above.
    sys.exit(3 if result.outcome.exit_code == 3 else 0)
