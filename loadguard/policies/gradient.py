r"""Setpoint tracking on log-rate: a geometric ramp, then a PI law in velocity form.

The controlled variable is the window's *pressure* P = max over SLOs of value/threshold
(``Observation.pressure``; 1.0 is on the SLO). The setpoint s sits below the SLO because
p95 is very nonlinear near the knee: in M/M/8 with 50 ms service and a 250 ms p95 SLO,
p95 is 150 ms at half of λ*, 171 ms at 0.87 λ*, 250 ms at λ* and 400 ms at 1.05 λ*, while
a 10 s window's p95 scatters by ±10 %. A setpoint of 0.7 (175 ms there) sits near 0.88 λ*
(docs/controller.md has the measured trade-off).

With :math:`x = \ln r` (r the rate in force) and :math:`e = \ln(s / P)`:

*Ramp*. Far below the knee P is flat and says nothing about the distance to it, so grow
geometrically, :math:`x \leftarrow x + \ln ρ` (ρ = ``ramp_factor``), on every judged
window. A BREACH, or a NEAR over at least ``ramp_min_samples`` samples (fewer make a p95
too noisy to mean anything), ends the ramp with a geometric bisection between the last
safe rate and this one, :math:`x \leftarrow (x_{safe} + x)/2` (a BREACH cuts at least by
its severity, as below, so a first window of errors halves the rate); a window with
:math:`P \ge s` and enough samples ends it without a cut.

*Track*. The windows seen at one rate overlap, so their errors are averaged with weights
:math:`w_j = Δt_j / W` (the share of a new window each tick adds):
:math:`\bar e = \sum w_j e_j / \sum w_j`, and the loop acts once that mean is clear of
the window noise, :math:`|\bar e| \sqrt{\sum w_j} \ge σ` (``noise_up`` for a rise,
the smaller ``noise_down`` for a cut: safety first). Then a PI law in velocity
(incremental) form,

.. math::

    Δx = K_p(\bar e_k - \bar e_{k-1}) + K_i \bar e_k,\qquad
    K_i = K_{up}\ (\bar e > 0),\ K_{down}\ (\bar e \le 0),

clipped to :math:`[\ln β_{max}, \ln ρ_{max}]`. The integrator state is the rate in force,
passed in every tick, so when a guard overrides a decision (clamp, generator limit,
settling) nothing winds up: velocity form is anti-windup by construction. Consecutive
rises grow by ``momentum`` (a re-ramp after a capacity drop), and a rise stops
``hot_margin`` below the last rate that ran above the setpoint, creeping by
``hot_margin`` per step from there, for ``hot_memory_ms``.

*Breach*. Cut at once, by the severity: :math:`Δx = -k_b \ln P`, clipped to
:math:`[\ln β_{max}, \ln β_{min}]` (``max_down``, ``breach_min_cut``): a window just over
the SLO costs 10 %, a collapse halves the rate. A BREACH therefore never increases.

*Stall*. A BREACH window holding a sample that took at least ``stall_windows`` windows
(:math:`T_{max} \ge n_s W`) comes from a target that stopped answering (a hang, a GC
pause), not from the rate: it is cut as any breach, but the rate in force
:math:`r_s` is remembered (not marked hot), and once the windows are back under the
setpoint the rises are ramp steps, :math:`Δx = \min(\ln ρ, \ln(r_s / r))`, straight back
to :math:`r_s`. A non-stall BREACH on the way back means the capacity did fall: the
memory is dropped and tracking goes on as usual.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from loadguard.errors import PolicyError
from loadguard.observation import Observation, Zone
from loadguard.policies.base import Decision, decide, hold
from loadguard.rate import RateChange


@dataclass
class GradientPolicy:
    #: Settling passes a NEAR window after an increase (it can only understate the new
    #: rate's pressure), so an overshoot is caught before it breaches.
    judges_near_early: ClassVar[bool] = True

    setpoint: float | None = 0.7
    headroom_share: float = 0.25
    ramp_factor: float = 2.0
    ramp_min_samples: int = 400
    k_up: float = 0.6
    k_down: float = 0.6
    k_breach: float = 0.7
    momentum: float = 0.5
    hot_margin: float = 0.03
    hot_memory_ms: int = 60_000
    stall_windows: float = 2.0
    kp: float = 0.0
    max_up: float = 1.25
    max_down: float = 0.5
    breach_min_cut: float = 0.9
    noise_up: float = 0.15
    noise_down: float = 0.08
    window_ms: int = 10_000
    name: str = "gradient"
    phase: str = field(default="ramp", init=False)
    last_safe: float | None = field(default=None, init=False)
    last_error: float | None = field(default=None, init=False)
    _sum_e: float = field(default=0.0, init=False)
    _sum_w: float = field(default=0.0, init=False)
    _prev_ms: int | None = field(default=None, init=False)
    _change: RateChange | None = field(default=None, init=False)
    _ups: int = field(default=0, init=False)
    _hot: float | None = field(default=None, init=False)
    _hot_ms: int = field(default=0, init=False)
    _resume: float | None = field(default=None, init=False)
    _climbing_back: bool = field(default=False, init=False)
    _idle_sum: float = field(default=0.0, init=False)
    _idle_n: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.setpoint is not None and not 0 < self.setpoint < 1:
            raise PolicyError(
                f"gradient setpoint must be in (0, 1) of the SLO, got {self.setpoint}"
            )
        if not 0 < self.headroom_share < 1:
            raise PolicyError(
                f"gradient headroom_share must be in (0, 1), got {self.headroom_share}"
            )
        if self.ramp_factor <= 1 or self.max_up < 1:
            raise PolicyError("gradient ramp_factor must be > 1 and max_up >= 1")
        if not 0 < self.max_down < 1 or not 0 < self.breach_min_cut <= 1:
            raise PolicyError("gradient max_down and breach_min_cut must be in (0, 1)")
        gains = (self.k_up, self.k_down, self.k_breach, self.kp, self.noise_up, self.noise_down)
        if min(gains) < 0 or self.k_down == 0 or self.k_breach == 0:
            raise PolicyError("gradient gains and noise must be >= 0 (k_down > 0)")
        if self.window_ms < 1 or self.ramp_min_samples < 1:
            raise PolicyError("gradient window_ms and ramp_min_samples must be >= 1")

    def decide(self, obs: Observation) -> Decision:
        rate = obs.commanded_rps  # the rate in force, as the observation holds it
        if obs.rate_change != self._change:  # a new rate in force: average afresh
            self._change, self._sum_e, self._sum_w, self._prev_ms = obs.rate_change, 0.0, 0.0, None
        if obs.zone is Zone.NO_DATA or obs.pressure is None:
            return hold(obs, rate, "no_data", phase=self.phase)
        pressure = obs.pressure
        setpoint = self.target()
        error = math.log(setpoint / pressure) if pressure > 0 else math.log(self.ramp_factor)
        breach = obs.zone is Zone.BREACH
        reason = obs.zone.lower()
        enough = obs.stats.overall.count >= self.ramp_min_samples
        if self.phase == "ramp":
            if breach or (obs.zone is Zone.NEAR and enough):
                self.phase = "track"
                self.last_error = error
                target = math.sqrt(self.last_safe * rate) if self.last_safe else rate
                # A breach cuts at least by its severity, as in tracking: a first window
                # of 100 % errors (no safe rate known yet) halves the rate, not -10 %.
                severe = rate * math.exp(self._breach_step(pressure)) if breach else rate
                new = min(rate * self.breach_min_cut, severe, max(target, rate * self.max_down))
                self._hot, self._hot_ms = rate, obs.timer_ms
                return decide(obs, rate, new, reason, phase="ramp", pressure=pressure)
            if pressure < setpoint or not enough:
                if obs.zone is Zone.SAFE and pressure > 0 and enough:
                    # Far below the knee: the idle pressure, count-weighted over the ramp.
                    self._idle_sum += obs.stats.overall.count * math.log(pressure)
                    self._idle_n += obs.stats.overall.count
                self.last_safe = rate
                return decide(
                    obs, rate, rate * self.ramp_factor, reason, phase="ramp", pressure=pressure
                )
            self.phase = "track"
        if breach:
            step = self._breach_step(pressure)
            self._ups = 0
            stalled = (obs.stats.overall.max_ms or 0.0) >= self.stall_windows * self.window_ms
            if stalled and self._resume is None:
                self._resume = rate  # the target stalled, not this rate: come back to it
            elif not stalled and self._climbing_back:
                self._resume, self._climbing_back = None, False  # the capacity did fall
            if not stalled:
                self._hot, self._hot_ms = rate, obs.timer_ms
            self.last_error = error
            return decide(
                obs, rate, rate * math.exp(step), reason,
                phase=self.phase, pressure=pressure, error=error, step=step,
            )  # fmt: skip
        # Average the error over the (overlapping) windows seen at this rate, weighting
        # each tick by the share of a window it adds; act once the mean is clear of noise.
        weight = 1.0 if self._prev_ms is None else (obs.timer_ms - self._prev_ms) / self.window_ms
        self._prev_ms = obs.timer_ms
        self._sum_e += min(weight, 1.0) * error
        self._sum_w += min(weight, 1.0)
        mean_error = self._sum_e / self._sum_w
        confidence = abs(mean_error) * math.sqrt(self._sum_w)
        if confidence < (self.noise_up if mean_error > 0 else self.noise_down):
            return hold(
                obs, rate, reason, phase=self.phase, pressure=pressure,
                mean_error=mean_error, windows=self._sum_w,
            )  # fmt: skip
        step = self._step(mean_error)
        if step > 0 and self._resume is not None and rate < self._resume:
            # Back after a stall: straight to the rate in force before it (a ramp step).
            step = max(step, min(math.log(self.ramp_factor), math.log(self._resume / rate)))
            self._climbing_back = True
            if rate * math.exp(step) >= self._resume * (1.0 - 1e-9):
                self._resume, self._climbing_back = None, False
        elif step > 0:
            # Consecutive rises far below the setpoint grow (re-ramp after a drop).
            step = min(math.log(self.max_up), step * (1.0 + self.momentum * self._ups))
            self._ups += 1
            step = self._below_hot(obs.timer_ms, rate, step)
        else:
            self._ups = 0
            self._hot, self._hot_ms = rate, obs.timer_ms
        self.last_error = mean_error
        return decide(
            obs, rate, rate * math.exp(step), reason,
            phase=self.phase, pressure=pressure, mean_error=mean_error,
            windows=self._sum_w, step=step,
        )  # fmt: skip

    @property
    def idle_pressure(self) -> float | None:
        """The pressure far below the knee, measured during the ramp."""
        return math.exp(self._idle_sum / self._idle_n) if self._idle_n else None

    def target(self) -> float:
        """The setpoint s: fixed, or ``headroom_share`` of the way from idle to the SLO,
        :math:`s = P_0 + α (1 - P_0)`, clipped to [0.3, 0.9] (0.7 before any window)."""
        if self.setpoint is not None:
            return self.setpoint
        idle = self.idle_pressure
        if idle is None:
            return 0.7
        return min(0.9, max(0.3, idle + self.headroom_share * (1.0 - min(idle, 1.0))))

    def _below_hot(self, mono_ms: int, rate: float, step: float) -> float:
        """Rise no closer than ``hot_margin`` to the last rate that ran too hot (for
        ``hot_memory_ms``); from there on, creep by ``hot_margin`` per step."""
        if self._hot is None or mono_ms - self._hot_ms > self.hot_memory_ms:
            return step
        cap = math.log(self._hot * (1.0 - self.hot_margin) / rate)
        return min(step, max(cap, math.log1p(self.hot_margin)))

    def _breach_step(self, pressure: float) -> float:
        """:math:`-k_b \\ln P` clipped to [ln max_down, ln breach_min_cut]."""
        return max(
            math.log(self.max_down),
            min(math.log(self.breach_min_cut), -self.k_breach * math.log(pressure)),
        )

    def _step(self, error: float) -> float:
        ki = self.k_up if error > 0 else self.k_down
        previous = error if self.last_error is None else self.last_error
        step = self.kp * (error - previous) + ki * error
        return min(math.log(self.max_up), max(math.log(self.max_down), step))
