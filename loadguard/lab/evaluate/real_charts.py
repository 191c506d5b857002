"""One chart per plant of the real-JMeter suite: each run's rate in force and successful
samples per 10 s window against λ*(t), on the run's clock, read back from the run's own
JTL and decision log (so a report can be drawn again while the run folders exist)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from loadguard.lab.evaluate.offered import schedule_from_decisions
from loadguard.lab.evaluate.real_data import run_data, shift_capacity
from loadguard.lab.evaluate.runner import read_jtl
from loadguard.lab.evaluate.suite_metrics import WINDOW_S
from loadguard.lab.evaluate.suite_report import save_plant_chart
from loadguard.sidecar import Paths

COLOURS = ("#2b5c8a", "#d95f02", "#1b9e77", "#7570b3")


def chart(plant: dict[str, Any], duration_s: float, path: Path) -> Path | None:
    """The plant's runs over time; ``None`` when none of its run folders is left."""
    runs = [r for r in plant["runs"] if (Path(r["run_dir"]) / "results.jtl").exists()]
    if not runs:
        return None
    fig = Figure(figsize=(6.0, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    several = len({r.get("round", 1) for r in runs}) > 1
    for i, run in enumerate(runs):
        paths = Paths.in_dir(Path(run["run_dir"]))
        data = run_data(
            read_jtl(paths.jtl), schedule_from_decisions(paths.decisions, 5.0), duration_s
        )
        colour = COLOURS[i % len(COLOURS)]
        t = [0.0, *(tick for tick, _r in data.ticks)]
        rate = [5.0, *(r for _t, r in data.ticks)]
        nth = f" #{run.get('round', 1)}" if several else ""
        ax.step(t, rate, where="post", color=colour, lw=1.0, label=f"{run['policy']}{nth}: rate")
        edges = np.arange(0.0, duration_s + WINDOW_S / 2, WINDOW_S)
        done, _ = np.histogram(data.end[data.ok], bins=edges)
        ax.plot(edges[1:], done / WINDOW_S, "o", ms=2.5, color=colour, label="  ok samples/s")
        cap = shift_capacity([tuple(s) for s in plant["steps"]], run["offset_s"])
        xs = [at for at, _lam in cap.steps] + [duration_s]
        ys = [lam for _at, lam in cap.steps]
        ax.step(xs, [*ys, ys[-1]], where="post", color="#c33", lw=0.8, ls="--")
    ax.plot([], [], color="#c33", lw=0.8, ls="--", label="λ*(t) measured")
    ax.set_xlim(0, duration_s)
    ax.set_xlabel("s since JMeter's first sample")
    ax.set_ylabel("req/s")
    return save_plant_chart(fig, plant, path, " (real JMeter)")
