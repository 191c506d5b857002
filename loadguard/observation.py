"""What the controller sees at one tick: a window judged against the SLO (pure values).

``SloSpec.evaluate`` builds an ``Observation``, once, from its whole input: a
``WindowStats``, both clocks' readings of the tick, the staleness, the rate in force and its
last change, and the ledger's view. Policies and guard rails read nothing else (not even
the rate beside it: ``Policy.decide(obs)``), so a run can be replayed from its decision
log.

Offered vs achieved (coordinated omission). ``commanded_rps`` is the rate the controller
asked for (offered); ``achieved_rps`` is what the window actually holds (``stats.overall.rps``).
JTL latency only covers a request from the moment it was sent, so when the generator falls
behind (threads exhausted, timer catching up) the wait it imposes is invisible there:

    shortfall = 1 - achieved / offered

is the share of the offered load that never reached the target in this window. A run whose
latency looks good while ``shortfall`` is large measured less load than it claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from loadguard.rate import RateChange
from loadguard.stats import WindowStats

if TYPE_CHECKING:
    from loadguard.ledger import LedgerView


def wall_staleness(stats: WindowStats, wall_ms: int) -> int | None:
    """How old the window's newest sample is at ``wall_ms`` on the wall clock (``None``: no
    sample yet); ``clock.Staleness`` carries it across a wall-clock step."""
    return None if stats.newest_sample_ms is None else wall_ms - stats.newest_sample_ms


class Zone(StrEnum):
    SAFE = "SAFE"
    NEAR = "NEAR"
    BREACH = "BREACH"
    NO_DATA = "NO_DATA"


class Action(StrEnum):
    INCREASE = "INCREASE"
    HOLD = "HOLD"
    DECREASE = "DECREASE"
    STOP = "STOP"


@dataclass(frozen=True)
class Observation:
    """One window judged against the SLO.

    ``pressure`` is the largest ``value / threshold`` over every SLO judged in this window
    (overall and per label; 1.0 is exactly on a threshold; a breach of a 0 threshold
    counts as ``slo.ZERO_LIMIT_PRESSURE``, never infinity), ``None`` for NO_DATA. Policies
    that steer toward a setpoint below the SLO read it.

    ``wall_ms`` is wall-clock epoch ms (the window's edge, the log's timestamp);
    ``mono_ms`` is the same tick on the loop's monotonic clock (``None`` where the two
    cannot differ: the simulator, replays). Policies time their timers on ``timer_ms``,
    so a wall-clock step never stretches or skips a settling, probe or auto-stop wait.

    ``rate_change`` is the last change of the rate in force (``commanded_rps``), as its
    owner (``loadguard.rate.RateInForce``) recorded it: when, on the ``timer_ms`` clock,
    and which way. ``None``: the start rate has been in force since the first sample.
    Policies and guards ask it "has the rate changed, and how long ago?" and keep no
    copy of the rate.
    """

    wall_ms: int
    stats: WindowStats
    zone: Zone
    breaches: tuple[str, ...]
    near: tuple[str, ...]
    staleness_ms: int | None
    commanded_rps: float
    pressure: float | None = None
    mono_ms: int | None = None
    rate_change: RateChange | None = None
    #: The exceedance ledger's view at this tick (samples by send time, per rate in
    #: force), for the policies that count; ``None`` where no ledger is kept.
    ledger: LedgerView | None = None

    @property
    def timer_ms(self) -> int:
        """The tick's time for measuring elapsed time: monotonic when known."""
        return self.wall_ms if self.mono_ms is None else self.mono_ms

    @property
    def offered_rps(self) -> float:
        return self.commanded_rps

    @property
    def achieved_rps(self) -> float:
        return self.stats.overall.rps

    @property
    def shortfall(self) -> float:
        """1 - achieved / offered (negative when a backlog drains faster than offered)."""
        if self.commanded_rps <= 0:
            return 0.0
        return 1.0 - self.achieved_rps / self.commanded_rps
