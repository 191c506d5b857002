r"""Knee tracking: hold the rate where the window pressure has risen a fixed ratio above idle.

The pressure P of a window (``Observation.pressure``, 1.0 on the SLO) is flat far below
the knee of the p95 curve, at the *idle pressure* :math:`P_0`, and rises steeply near
λ*. Where it stands at 0.92 λ* differs from plant to plant (0.73 on M/M/8 with a 250 ms
SLO, 0.47 on the shop, 0.39 on the warm-up plant), but its rise over idle does not: the
long-run mean of :math:`P/P_0` at 0.92 λ* is 1.19-1.30 on the M/M/8, shop, heavy-tail
and warm-up plants of the suite (docs/controller.md). So the setpoint is

.. math::

    s = \min(s_{max}, \max(s_{min}, γ P_0)) \qquad (γ = ``knee_ratio`` = 1.3)

(``default_setpoint`` while :math:`P_0` is unknown), with :math:`x = \ln r` and
:math:`e = \ln(s/P)`. :math:`s_{max}` = 0.75 keeps plants whose idle p95 is already
60 % of the SLO (the M/M/8) at ~0.92 λ* (γ and :math:`s_{max}` were chosen on the suite,
plants 1-9, seeds 1-3; γ = 1.25, and s_max = 0.72 or 0.85, did worse there).

*Idle pressure*. A window is *flat* when :math:`P < \min(s, ρ_r P_0)` (``ramp_ratio``).
:math:`\ln P_0` is the count-weighted mean of :math:`\ln P` over the ramp's flat windows
with at least ``ramp_min_samples`` samples, once ``idle_samples`` are in (after the ramp,
if it had too few). Then two updates keep it current (Netflix Gradient2's long-run
baseline): a flat window at a rate at most ``idle_rate_share`` of the last rate that ran
hot moves it by an EWMA step :math:`a = α \min(1, n / n_{idle})` (``idle_ema``); and as
P does not fall when the rate rises, the mean :math:`\ln P` of a rate held for
``idle_windows`` windows bounds it from above, :math:`\ln P_0 \leftarrow \min(\ln P_0,
\overline{\ln P})` (a service warming up).

*Ramp*. While the windows are flat, or too few samples to see a knee,
:math:`x \leftarrow x + \ln ρ` on every judged window: the first rise over idle ends it.
A NEAR over enough samples ends it with a geometric bisection toward the last flat rate,
:math:`x \leftarrow \max(\ln β_{max} + x, (x_{safe} + x)/2)`, at least a
``breach_min_cut`` cut; a BREACH the same way, no higher than the breach cut below.

*Track*. Errors are averaged over the (overlapping) windows at one rate with weights
:math:`w_j = Δt_j / W`, :math:`\bar e = \sum w_j e_j / \sum w_j`; nothing moves until
:math:`|\bar e| \sqrt{\sum w_j} \ge σ` (``noise_up``, or the smaller ``noise_down``). Then

.. math::

    Δx = k\,\bar e\,b, \quad b = 1 + m\,n_{up}, \quad
    Δx \in [\ln β_{max},\ u], \quad
    u = \begin{cases} \ln ρ_{max} & \bar e \ge \ln γ \ \text{(at or below idle)} \\
        \min(\ln ρ_{max},\ b \ln(1 + δ_{near})) & \text{else} \end{cases}

with rises no smaller than :math:`\ln(1 + δ_{min})` (``min_step``: below the knee P moves
little with the rate) and :math:`n_{up}` the consecutive rises (momentum: a climb after
a cut speeds up until a window runs hot). Every rise also stops at the *ceiling*
:math:`c (1 - δ_{near})`, c the lowest rate whose breach answered a rise; a rate held
below it with :math:`\bar e \sqrt{\sum w} \ge 2 σ_{up}` (strong evidence of headroom:
the plant changed) lifts c by :math:`e^u`, as a rise. So a rate that breached, a cliff,
is not probed again on unchanged evidence, and there is no creep on a timer.

*Breach*. A mild one (:math:`P <` ``thin_breach``) of a window with fewer than
``ramp_min_samples`` samples in the ramp (a cold first window, a noisy host) is no
verdict: HOLD until the window fills. A breach that answers a rise (the ramp, or within
``rise_judged_windows`` windows of one) is cut at once by the severity,
:math:`Δx = -k_b \ln P` clipped to :math:`[\ln β_{max}, \ln β_{min}]`, and its rate
becomes the ceiling (unless a stall, a sample that took ``stall_windows`` windows: the
target hung, not the rate; or a window too thin to show a knee). Any other breach is
judged by flow conservation, the window's delivered rate X against the rate r in force:

* :math:`X > (1 + ε) r`: more completions than arrivals, an older backlog drains (not
  this rate's verdict: judge a rate by what was sent under it): HOLD;
* :math:`X \ge (1 - ε) r`: served as fast as offered, no queue grows at r: the window
  is one more sample for the tracking mean above;
* :math:`X < (1 - ε) r`: a queue grows, r is past capacity, and past capacity the
  delivery rate *is* the capacity (TCP BBR): the severity cut, and at most :math:`g X`
  (``delivery_share``). The cuts that follow a breach do not lower the ceiling.

Each update ends in the clamp :math:`r_{new} \in [β_{max} r, ρ_{max} r]` (the ramp:
:math:`ρ`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from loadguard.errors import PolicyError
from loadguard.observation import Observation, Zone
from loadguard.policies.base import Decision, decide, hold, same_rate
from loadguard.rate import RateChange


@dataclass
class KneePolicy:
    #: Settling passes a NEAR window after an increase (it can only understate the new
    #: rate's pressure), so a ramp overshoot is caught before it breaches.
    judges_near_early: ClassVar[bool] = True

    knee_ratio: float = 1.3
    default_setpoint: float = 0.7
    min_setpoint: float = 0.3
    max_setpoint: float = 0.75
    idle_samples: int = 1000
    idle_windows: float = 5.0
    ramp_factor: float = 2.0
    ramp_min_samples: int = 200
    gain: float = 0.5
    momentum: float = 0.5
    near_step: float = 0.05
    idle_ema: float = 0.3
    idle_rate_share: float = 0.75
    rise_judged_windows: float = 1.5
    ramp_ratio: float = 1.15
    min_step: float = 0.03
    max_up: float = 1.25
    max_down: float = 0.5
    k_breach: float = 0.7
    breach_min_cut: float = 0.9
    delivery_share: float = 0.9
    shortfall: float = 0.1
    stall_windows: float = 2.0
    thin_breach: float = 1.5
    noise_up: float = 0.15
    noise_down: float = 0.08
    window_ms: int = 10_000
    name: str = "knee"
    phase: str = field(default="ramp", init=False)
    ceiling: float | None = field(default=None, init=False)
    _log_idle: float | None = field(default=None, init=False)
    _last_safe: float | None = field(default=None, init=False)
    _change: RateChange | None = field(default=None, init=False)
    _sum_e: float = field(default=0.0, init=False)
    _sum_w: float = field(default=0.0, init=False)
    _sum_lp: float = field(default=0.0, init=False)
    _n: int = field(default=0, init=False)
    _sum_lw: float = field(default=0.0, init=False)
    _prev_ms: int | None = field(default=None, init=False)
    _ups: int = field(default=0, init=False)
    _rose_ms: int = field(default=0, init=False)
    _hot_rate: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        if self.knee_ratio <= 1:
            raise PolicyError(f"knee knee_ratio must be > 1, got {self.knee_ratio}")
        if not 0 < self.min_setpoint <= self.default_setpoint <= self.max_setpoint < 1:
            raise PolicyError("knee needs 0 < min_setpoint <= default_setpoint <= max_setpoint < 1")
        if self.ramp_factor <= 1 or self.max_up < 1 or self.near_step < 0:
            raise PolicyError("knee ramp_factor must be > 1, max_up >= 1, near_step >= 0")
        if not 0 < self.max_down < 1 or not 0 < self.breach_min_cut <= 1:
            raise PolicyError("knee max_down and breach_min_cut must be in (0, 1)")
        if not 0 < self.delivery_share <= 1 or not 0 <= self.shortfall < 1:
            raise PolicyError("knee delivery_share must be in (0, 1], shortfall in [0, 1)")
        if min(self.gain, self.k_breach) <= 0 or min(self.noise_up, self.noise_down) < 0:
            raise PolicyError("knee gain and k_breach must be > 0, noise >= 0")
        if self.window_ms < 1 or self.ramp_min_samples < 1 or self.idle_samples < 1:
            raise PolicyError("knee window_ms, ramp_min_samples, idle_samples must be >= 1")

    @property
    def idle_pressure(self) -> float | None:
        return None if self._log_idle is None else math.exp(self._log_idle)

    def setpoint(self) -> float:
        """s = γ P0 clipped to [min_setpoint, max_setpoint] (the default before P0)."""
        idle = self.idle_pressure
        if idle is None:
            return self.default_setpoint
        return min(self.max_setpoint, max(self.min_setpoint, self.knee_ratio * idle))

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        if obs.rate_change != self._change:  # a new rate in force: average afresh
            self._change, self._sum_e, self._sum_w, self._prev_ms = obs.rate_change, 0.0, 0.0, None
            self._sum_lw = 0.0
        if obs.zone is Zone.NO_DATA or obs.pressure is None:
            return hold(obs, rate, "no_data", phase=self.phase)
        pressure = max(obs.pressure, 1e-6)
        count = obs.stats.overall.count
        s = self.setpoint()
        flat = pressure < self.ramp_top(s)
        if obs.zone is Zone.SAFE and flat and count >= self.ramp_min_samples:
            if self.phase == "ramp" or self._log_idle is None:
                self._learn_idle(count, pressure)
            elif self.idle_ema > 0 and rate <= self.idle_rate_share * self._hot_rate:
                # Flat windows while tracking keep P0 current (a service warming up).
                a = self.idle_ema * min(1.0, count / self.idle_samples)
                self._log_idle += a * (math.log(pressure) - self._log_idle)
            s = self.setpoint()
        enough = count >= self.ramp_min_samples
        reason = obs.zone.lower()
        if obs.zone is Zone.BREACH:
            return self._breach(obs, rate, pressure, reason)
        if self.phase == "ramp":
            if obs.zone is Zone.NEAR and enough:
                self.phase = "track"
                new = self._bisect(rate, rate * self.breach_min_cut)
                return self._out(obs, rate, new, reason, pressure=pressure, setpoint=s)
            if flat or not enough:
                self._last_safe = rate
                new = rate * self.ramp_factor
                return self._out(obs, rate, new, reason, pressure=pressure, setpoint=s)
            self.phase = "track"
        return self._track(obs, rate, pressure, s, reason)

    def _learn_idle(self, count: int, pressure: float) -> None:
        """Ramp: the count-weighted mean of ln P over its flat windows is ln P0."""
        if count < self.ramp_min_samples:
            return
        self._sum_lp += count * math.log(pressure)
        self._n += count
        if self._n >= self.idle_samples:
            self._log_idle = self._sum_lp / self._n

    def ramp_top(self, s: float) -> float:
        r"""The ramp goes on while :math:`P < \min(s, ρ_r P_0)` (``ramp_ratio``): the
        first rise over idle ends it, before the knee."""
        idle = self.idle_pressure
        return s if idle is None else min(s, self.ramp_ratio * idle)

    def _bisect(self, rate: float, cut: float) -> float:
        safe = math.sqrt(self._last_safe * rate) if self._last_safe else rate
        return min(cut, max(safe, rate * self.max_down))

    def _breach(self, obs: Observation, rate: float, pressure: float, reason: str) -> Decision:
        # A verdict on the last rise: the window still holds samples sent before it.
        recent = obs.timer_ms - self._rose_ms < self.rise_judged_windows * self.window_ms
        raised = self.phase == "ramp" or (self._ups > 0 and recent)
        self._hot_rate = rate
        self._ups = 0
        delivered = obs.achieved_rps
        if not raised and delivered > (1.0 + self.shortfall) * rate:
            # More completions than arrivals: an older backlog drains, and this rate
            # is being served faster than it arrives (attribution: not its verdict).
            return hold(obs, rate, "draining", phase=self.phase, delivered_rps=delivered)
        if not raised and delivered >= (1.0 - self.shortfall) * rate:
            # Served as fast as offered (no queue growing at this rate): one window's
            # breach is evidence for the tracking mean, not a verdict on its own; but
            # never a rise (a BREACH whose pressure is under the setpoint -- a label's
            # breach, an error SLO -- would otherwise track upward).
            tracked = self._track(obs, rate, pressure, self.setpoint(), reason)
            if tracked.new_rate > rate:
                return hold(obs, rate, reason, **tracked.detail)
            return tracked
        step = max(
            math.log(self.max_down),
            min(math.log(self.breach_min_cut), -self.k_breach * math.log(pressure)),
        )
        new = rate * math.exp(step)
        thin = obs.stats.overall.count < self.ramp_min_samples
        if self.phase == "ramp" and thin and pressure < self.thin_breach:
            # A mild breach of a window too thin to show a knee (a cold first window, a
            # noisy host): no verdict either way; hold until the window fills.
            return hold(obs, rate, "thin_breach", phase=self.phase, pressure=pressure)
        if self.phase == "ramp":
            self.phase = "track"
            new = self._bisect(rate, new)
        if not raised and delivered < (1.0 - self.shortfall) * rate:
            # Past capacity the delivery rate is the capacity (a window at this rate
            # only: right after a rise it still holds the previous rate's samples).
            new = min(new, self.delivery_share * delivered)
        stalled = (obs.stats.overall.max_ms or 0.0) >= self.stall_windows * self.window_ms
        if (raised or self.ceiling is None) and not stalled and not thin:
            # The rate that broke the SLO; the cuts that follow do not lower it.
            self.ceiling = rate if self.ceiling is None else min(self.ceiling, rate)
        return self._out(
            obs, rate, new, reason, pressure=pressure, step=step,
            delivered_rps=delivered, stalled="true" if stalled else "false",
        )  # fmt: skip

    def _track(
        self, obs: Observation, rate: float, pressure: float, s: float, reason: str
    ) -> Decision:
        error = math.log(s / pressure)
        weight = 1.0 if self._prev_ms is None else (obs.timer_ms - self._prev_ms) / self.window_ms
        self._prev_ms = obs.timer_ms
        self._sum_e += min(weight, 1.0) * error
        self._sum_w += min(weight, 1.0)
        self._sum_lw += min(weight, 1.0) * math.log(pressure)
        if self._sum_w >= self.idle_windows and self._log_idle is not None:
            # P rises with the rate, so a rate's mean ln P bounds ln P0 (warm-up).
            self._log_idle = min(self._log_idle, self._sum_lw / self._sum_w)
            s = self.setpoint()
            error = math.log(s / pressure)
        mean = self._sum_e / self._sum_w
        confidence = abs(mean) * math.sqrt(self._sum_w)
        detail: dict[str, float | str] = {
            "phase": self.phase, "pressure": pressure, "setpoint": s,
            "mean_error": mean, "windows": self._sum_w,
        }  # fmt: skip
        if confidence < (self.noise_up if mean > 0 else self.noise_down):
            return hold(obs, rate, reason, **detail)
        if mean <= 0:
            self._ups = 0
            self._hot_rate = rate
            step = self.gain * mean
            return self._out(obs, rate, rate * math.exp(step), reason, step=step, **detail)
        flat = mean >= math.log(self.knee_ratio)  # P at or below P0: far from the knee
        boost = 1.0 + self.momentum * self._ups
        up = (
            math.log(self.max_up)
            if flat
            else min(math.log(self.max_up), boost * math.log1p(self.near_step))
        )
        step = self.gain * mean * boost
        step = min(up, max(math.log1p(self.min_step), step))
        new = rate * math.exp(step)
        if self.ceiling is not None:
            cap = self.ceiling * (1.0 - self.near_step)
            if new > cap and confidence >= 2.0 * self.noise_up and rate >= cap * (1 - 1e-9):
                self.ceiling *= math.exp(up)  # strong evidence of headroom: as a rise
                cap = self.ceiling * (1.0 - self.near_step)
            new = max(rate, min(new, cap))
        if same_rate(rate, new):
            return hold(obs, rate, "ceiling", ceiling=self.ceiling or 0.0, **detail)
        self._ups += 1
        self._rose_ms = obs.timer_ms
        return self._out(obs, rate, new, reason, step=step, **detail)

    def _out(
        self, obs: Observation, rate: float, new: float, reason: str, **detail: float | str
    ) -> Decision:
        """The decision, clamped to [max_down, max(max_up, ramp_factor)] x rate."""
        top = self.ramp_factor if self.phase == "ramp" else self.max_up
        new = min(rate * top, max(rate * self.max_down, new))
        if self.ceiling is not None:
            detail.setdefault("ceiling", self.ceiling)
        if self._log_idle is not None:
            detail.setdefault("idle_pressure", math.exp(self._log_idle))
        detail.setdefault("phase", self.phase)
        return decide(obs, rate, new, reason, **detail)
