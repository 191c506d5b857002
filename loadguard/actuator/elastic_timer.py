"""The Elastic Timer's contract with the rest of LoadGuard: property, units, limits, lag.

The Elastic Timer (``jmx_templates/elastic_timer.jmx``, injected by ``loadguard inject``)
is a Groovy JSR223 Timer. All Elastic Timers of one engine share one arrival schedule,
keyed by the property they read, so the property is the **engine's total** rate:

    RATE_PROPERTY = "loadguard.tpm"   samples per minute, per engine (like the CTT's unit)

Every sampler in a thread group carrying the timer counts as one arrival. Across several
engines the controller pushes ``rate_i = R * w_i / sum(w)`` to engine *i*.

Schedule (the design, see docs/jmeter-integration.md): threads queue FIFO on a fair
lock; only the head of the queue waits for its slot, in steps of at most ``STEP_MS``,
re-reading the property at every step. With ``t_last`` the last slot granted and ``r``
the rate read *now*, the head is released at

    t_next = t_last + 1 / r,    and sets  t_last = t_next  if  now - t_next < max(1/r, 20 ms),
                                          t_last = now     otherwise (no catch-up burst),

so a head woken a little late keeps the grid (the rate holds at 1000 req/s), while a
schedule that fell behind (no idle thread) restarts instead of bursting.

No slot is ever reserved ahead, so a push re-times the schedule within one step: the lag
is ``STEP_MS`` + one new interval + the BeanShell round trip, instead of the
``idle threads / old rate`` of the stock Constant Throughput Timer.
"""

from __future__ import annotations

import math
from typing import Final

from loadguard.errors import UsageError

#: The property every Elastic Timer reads: samples per minute for the whole engine.
RATE_PROPERTY: Final = "loadguard.tpm"
#: Unit multiplier: property value = req/s * TPM_PER_RPS.
TPM_PER_RPS: Final = 60.0
#: The positive floor pushed instead of 0 (or anything lower): 0.1 req/s = 6/min.
MIN_RATE_RPS: Final = 0.1
#: Rate a freshly injected timer uses while the property is unset (``--initial-rate``).
DEFAULT_INITIAL_RATE_RPS: Final = 1.0
#: The longest the head of the queue sleeps before re-reading the property.
STEP_MS: Final = 50
#: Actuation lag of the Elastic Timer, push confirmed -> schedule re-timed (5 gaps at the
#: new interval), for rates >= 1 req/s. Theory: <= STEP_MS + 1/r + BeanShell round trip.
#: Measured on JMeter 5.6.3 (docs/jmeter-integration.md, "Measured lag"): 7-247 ms for
#: 11 pushes to rates between 5 and 1000 req/s, 0.99 s for pushes to 1 req/s (one interval),
#: versus 12.5-14.6 s for the stock Constant Throughput Timer. The settling guard adds
#: this to its window.
ELASTIC_TIMER_LAG_MS: Final = 1_000
#: Lag of the stock Constant Throughput Timer (calcMode 4, 120 threads, 10 -> 40 req/s),
#: measured the same way on JMeter 5.6.3 (12.5 s and 14.6 s in two runs; 11 s on 2.13).
CTT_LAG_MS: Final = 12_500


def rps_to_tpm(rate_rps: float) -> float:
    """req/s -> the property's samples/min, clamped to the positive floor."""
    return max(rate_rps, MIN_RATE_RPS) * TPM_PER_RPS


def tpm_to_rps(tpm: float) -> float:
    return tpm / TPM_PER_RPS


def threads_needed(rate_rps: float, latency_ms: float, headroom: float = 1.2) -> int:
    """Little's law: threads busy = rate x time per iteration; ``headroom`` keeps idle
    threads queued at the timer so a rise is served at once.

        N >= ceil(headroom * rate * latency)
    """
    needed = headroom * rate_rps * latency_ms / 1000.0
    if not math.isfinite(needed):
        raise UsageError(f"rate {rate_rps:g} req/s x latency {latency_ms:g} ms is out of range")
    return max(1, math.ceil(needed))
