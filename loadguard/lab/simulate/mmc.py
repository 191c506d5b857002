r"""Analytic M/M/c: Erlang C, the response-time distribution, and λ*.

Notation: arrival rate λ, service rate per server μ = 1 / mean service time, c servers,
offered load a = λ/μ (Erlangs), utilisation ρ = a/c < 1.

Erlang C, the probability that an arrival waits:

.. math::

    C(c, a) = \frac{\frac{a^c}{c!}\frac{c}{c-a}}
                   {\sum_{k=0}^{c-1}\frac{a^k}{k!} + \frac{a^c}{c!}\frac{c}{c-a}}

computed through the numerically stable Erlang B recursion
``B(0)=1, B(k) = a B(k-1) / (k + a B(k-1))`` and ``C = B / (1 - ρ (1 - B))``.

Under FCFS the wait W is 0 with probability 1 - C, and otherwise exponential with rate
θ = cμ - λ. The response time T = W + S with S ~ Exp(μ) independent of W, so

.. math::

    P(T > t) = (1 - C) e^{-μ t} + C \cdot \frac{θ e^{-μ t} - μ e^{-θ t}}{θ - μ}

(the hypoexponential tail; for θ = μ the last factor is (1 + μ t) e^{-μ t}).

The q-quantile of T is found by bisection on that tail, and λ*, the largest arrival rate
whose response-time quantile stays within the SLO, by bisection on λ in (0, cμ): the
quantile is increasing in λ.
"""

from __future__ import annotations

import math

from loadguard.errors import SimulationError


def erlang_b(servers: int, offered: float) -> float:
    """Blocking probability of M/M/c/c with ``offered`` Erlangs."""
    if servers < 1 or offered < 0:
        raise SimulationError("erlang_b needs servers >= 1 and offered load >= 0")
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return b


def erlang_c(servers: int, offered: float) -> float:
    """Probability of waiting in M/M/c with ``offered`` Erlangs (needs offered < servers)."""
    if offered >= servers:
        raise SimulationError(f"unstable queue: offered load {offered:.3f} >= {servers} servers")
    if offered == 0:
        return 0.0
    b = erlang_b(servers, offered)
    rho = offered / servers
    return b / (1.0 - rho * (1.0 - b))


def response_tail(t_s: float, arrival_rps: float, servers: int, mean_service_s: float) -> float:
    """P(T > t) for the FCFS M/M/c response time."""
    mu = 1.0 / mean_service_s
    theta = servers * mu - arrival_rps
    c = erlang_c(servers, arrival_rps / mu)
    e_mu = math.exp(-mu * t_s)
    if abs(theta - mu) < 1e-9 * mu:
        hypo = (1.0 + mu * t_s) * e_mu
    else:
        hypo = (theta * e_mu - mu * math.exp(-theta * t_s)) / (theta - mu)
    return (1.0 - c) * e_mu + c * hypo


def response_quantile(q: float, arrival_rps: float, servers: int, mean_service_s: float) -> float:
    """The q-quantile of the response time, in seconds."""
    if not 0.0 < q < 1.0:
        raise SimulationError("quantile must be in (0, 1)")
    lo, hi = 0.0, mean_service_s
    while response_tail(hi, arrival_rps, servers, mean_service_s) > 1.0 - q:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if response_tail(mid, arrival_rps, servers, mean_service_s) > 1.0 - q:
            lo = mid
        else:
            hi = mid
    return hi


def lambda_star(
    servers: int, mean_service_s: float, slo_s: float, q: float = 0.95, tol: float = 1e-6
) -> float:
    """Largest arrival rate (req/s) whose response-time q-quantile is <= ``slo_s``.

    Returns 0.0 when even an idle system misses the SLO (service alone is too slow).
    """
    if servers < 1 or mean_service_s <= 0 or slo_s <= 0:
        raise SimulationError("lambda_star needs servers >= 1, service > 0, slo > 0")
    if response_quantile(q, 0.0, servers, mean_service_s) > slo_s:
        return 0.0
    lo, hi = 0.0, servers / mean_service_s * (1.0 - 1e-12)
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if response_quantile(q, mid, servers, mean_service_s) <= slo_s:
            lo = mid
        else:
            hi = mid
    return lo
