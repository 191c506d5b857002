r"""An incremental FCFS multi-server queue with a bounded wait queue (G/G/c/K).

Requests are offered in arrival order, in as many calls as you like (the simulator offers
one tick at a time; the demo target one request at a time). Each accepted request gets its
start and end time at once, so a call is O(n log c) with no event list.

Recursion (Kiefer-Wolfowitz form of FCFS with c servers). Let ``F`` be the multiset of the
times at which each server next becomes free. For request n with arrival a_n and service s_n:

.. math::

    f = \min F, \qquad start_n = \max(a_n, f), \qquad end_n = start_n + s_n,
    \qquad F \leftarrow F - \{f\} + \{end_n\}

Under FCFS, start times are non-decreasing in arrival order, so the requests *waiting* at
time a_n are exactly the earlier accepted requests with start > a_n: a FIFO of their start
times, popped from the left once start <= a_n, gives the queue length ``q(a_n)``.

Bounded queue: when ``q(a_n) >= queue_capacity`` the request is rejected -- answered at once
(start = end = a_n), an error to the client; it takes no server time. ``queue_capacity = 0``
is the loss system M/M/c/c.

Capacity change (``set_servers``): adding servers makes them free at once. Removing k
servers retires the k that become free first: work in progress completes, and the first
servers to finish leave instead of taking the next request. Requests already offered keep
the times they were given (the change affects requests offered after it).

Plant features (the controller's plant suite, ``offer_full``):

* **Metastable cliff** (``Metastable(B, s, b)``): once an arrival finds at least B
  requests waiting, every request accepted from then on takes s times its drawn service
  time, until an arrival finds at most b waiting. With s-fold slower service the capacity
  is c/(s E[S]), so the queue drains -- and the service recovers -- only once the offered
  rate falls below that, far under the knee (a retry storm, a thrashing cache or GC).
* **Hang outage** (``pause(t0, t1)``): the servers do nothing in [t0, t1): a server idle
  at t0 is next free at t1, a busy one finishes t1 - t0 later. Requests arriving in the
  outage wait (they hang) and are served after it. Requests already offered keep their
  times (a request in service at t0 is not stretched).
* **Generator threads** (``generator_threads=N``): the load generator has N threads and a
  request holds one from its send to its response. A request scheduled at a while every
  thread is busy is sent when the first thread frees, :math:`sent = \max(a, \min G)`,
  with G the threads' next-free times (so the JTL time stamp is the send, and the
  delay is invisible in the elapsed time: coordinated omission). Since min G never
  decreases, the send times stay sorted. Throughput is then bounded by Little's law,
  :math:`X \le N / \bar T`. The arrivals scheduled while that request waited for a
  thread are *not* sent, as the Elastic Timer does (``loadguard.actuator.elastic_timer``:
  it reserves no slot ahead, and a schedule that fell behind by more than
  :math:`\max(1/r, 20\,ms)` restarts at the release instead of bursting): a wait
  shorter than that (the gap to the previous arrival stands for 1/r) keeps the
  schedule, and the arrivals in it are sent in turn as threads free. Without this a
  20 s hang would be followed by a burst of every arrival scheduled in it, which the
  real generator never sends.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loadguard.errors import SimulationError

F64 = npt.NDArray[np.float64]
BOOL = npt.NDArray[np.bool_]

#: The Elastic Timer keeps its schedule for a release this late (its lower bound on the
#: interval; ``jmx_templates/elastic_timer.jmx``), and restarts it past that.
RESTART_S = 0.020


@dataclass(frozen=True, slots=True)
class Metastable:
    """A backlog of ``enter_waiting`` makes service ``factor`` times slower until an
    arrival finds at most ``exit_waiting`` waiting."""

    enter_waiting: int
    factor: float
    exit_waiting: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.exit_waiting < self.enter_waiting or not self.factor >= 1:
            raise SimulationError("metastable needs 0 <= exit < enter waiting and factor >= 1")


@dataclass(frozen=True, slots=True)
class Served:
    """What ``offer_full`` gives each request: send, service start and end, rejection."""

    sent: F64
    start: F64
    end: F64
    rejected: BOOL
    #: which of the arrivals offered were sent (the others fell in a restarted schedule)
    kept: BOOL | None = None


class FcfsQueue:
    """FCFS queue with ``servers`` parallel servers and at most ``queue_capacity`` waiting."""

    def __init__(
        self,
        servers: int,
        queue_capacity: int,
        *,
        metastable: Metastable | None = None,
        generator_threads: int | None = None,
    ) -> None:
        if servers < 1:
            raise SimulationError(f"servers must be >= 1, got {servers}")
        if queue_capacity < 0:
            raise SimulationError(f"queue capacity must be >= 0, got {queue_capacity}")
        if generator_threads is not None and generator_threads < 1:
            raise SimulationError(f"generator threads must be >= 1, got {generator_threads}")
        self._free: list[float] = [-np.inf] * servers  # heap of next-free times
        self._capacity = queue_capacity
        self._waiting: deque[float] = deque()  # start times of accepted, not yet started
        self._last_arrival = -np.inf
        self.metastable = metastable
        self.slow = False  # the metastable plant is in its slow state
        self._threads: list[float] | None = (
            None if generator_threads is None else [-np.inf] * generator_threads
        )
        #: arrivals scheduled before this are dropped (the timer's schedule restarted)
        self._restart_at = -np.inf

    @property
    def servers(self) -> int:
        return len(self._free)

    @property
    def queue_capacity(self) -> int:
        return self._capacity

    def waiting_at(self, t_s: float) -> int:
        """Requests waiting (accepted, not started) at time ``t_s`` >= the last arrival."""
        return sum(1 for start in self._waiting if start > t_s)

    def busy_at(self, t_s: float) -> int:
        """Servers busy at time ``t_s`` (free time in the future)."""
        return sum(1 for free in self._free if free > t_s)

    def set_servers(self, servers: int) -> None:
        """Change the number of servers for requests offered from now on."""
        if servers < 1:
            raise SimulationError(f"servers must be >= 1, got {servers}")
        current = len(self._free)
        if servers > current:
            # New servers are free at once; the last arrival is a safe "now".
            for _ in range(servers - current):
                heapq.heappush(self._free, self._last_arrival)
        else:
            # Retire the servers that become free first (they finish, then leave).
            for _ in range(current - servers):
                heapq.heappop(self._free)

    def pause(self, t_from: float, t_to: float) -> None:
        """A hang outage: no server works in ``[t_from, t_to)`` (see the module doc)."""
        if t_to < t_from:
            raise SimulationError("an outage must end after it starts")
        gap = t_to - t_from
        self._free = [t_to if f <= t_from else f + gap for f in self._free]
        heapq.heapify(self._free)

    def offer_full(self, arrival_s: F64, service_s: F64) -> Served:
        """``offer`` with the send times; the only path with metastable service and
        generator threads."""
        if self.metastable is None and self._threads is None:
            t_start, t_end, t_rej = self.offer(arrival_s, service_s)
            return Served(np.asarray(arrival_s, np.float64), t_start, t_end, t_rej)
        arrivals = np.asarray(arrival_s, dtype=np.float64)
        services = np.asarray(service_s, dtype=np.float64)
        n = len(arrivals)
        self._check(arrivals, services)
        free, waiting, threads, meta = self._free, self._waiting, self._threads, self.metastable
        sent = [0.0] * n
        start = [0.0] * n
        end = [0.0] * n
        rejected = np.zeros(n, np.bool_)
        kept = np.ones(n, np.bool_)
        a_list = arrivals.tolist()
        s_list = services.tolist()
        for i in range(n):
            a = a_list[i]
            if threads is not None and a < self._restart_at:
                kept[i] = False  # scheduled while the timer's head waited: never sent
                continue
            if threads is not None and threads[0] > a:
                # every generator thread is busy: sent when one frees; a schedule that
                # fell behind by more than the interval (or 20 ms) restarts there
                late = threads[0] - a
                gap = a - (a_list[i - 1] if i else self._last_arrival)
                if late >= max(gap, RESTART_S):
                    self._restart_at = threads[0]
                a = threads[0]
            sent[i] = a
            while waiting and waiting[0] <= a:
                waiting.popleft()
            found = len(waiting)
            f = free[0]
            if f <= a:
                st = a
            elif found >= self._capacity:
                start[i] = end[i] = a
                rejected[i] = True
                if threads is not None:
                    heapq.heapreplace(threads, a)
                continue
            else:
                st = f
                waiting.append(st)
            s = s_list[i]
            if meta is not None:
                if self.slow and found <= meta.exit_waiting:
                    self.slow = False
                elif not self.slow and found >= meta.enter_waiting:
                    self.slow = True
                if self.slow:
                    s *= meta.factor
            e = st + s
            heapq.heapreplace(free, e)
            if threads is not None:
                heapq.heapreplace(threads, e)
            start[i], end[i] = st, e
        if n:
            self._last_arrival = a_list[-1]
        return Served(
            np.array(sent)[kept],
            np.array(start)[kept],
            np.array(end)[kept],
            rejected[kept],
            kept,
        )

    def _check(self, arrivals: F64, services: F64) -> None:
        n = len(arrivals)
        if len(services) != n:
            raise SimulationError("arrival_s and service_s must have the same length")
        if n == 0:
            return
        if arrivals[0] < self._last_arrival or (n > 1 and bool(np.any(np.diff(arrivals) < 0))):
            raise SimulationError("arrivals must be sorted ascending across calls")
        if bool(np.any(services < 0)):
            raise SimulationError("service times must be >= 0")

    def offer(self, arrival_s: F64, service_s: F64) -> tuple[F64, F64, BOOL]:
        """Serve arrivals (sorted ascending, not before earlier calls' arrivals).

        Returns ``(start_s, end_s, rejected)``; rejected requests have start = end = arrival.
        With generator threads, only for the arrivals sent (``offer_full``'s ``kept``).
        """
        if self.metastable is not None or self._threads is not None:
            served = self.offer_full(arrival_s, service_s)
            return served.start, served.end, served.rejected
        arrivals = np.asarray(arrival_s, dtype=np.float64)
        services = np.asarray(service_s, dtype=np.float64)
        n = len(arrivals)
        if len(services) != n:
            raise SimulationError("arrival_s and service_s must have the same length")
        start = np.empty(n, np.float64)
        end = np.empty(n, np.float64)
        rejected = np.zeros(n, np.bool_)
        if n == 0:
            return start, end, rejected
        if arrivals[0] < self._last_arrival or (n > 1 and bool(np.any(np.diff(arrivals) < 0))):
            raise SimulationError("arrivals must be sorted ascending across calls")
        if bool(np.any(services < 0)):
            raise SimulationError("service times must be >= 0")

        free = self._free
        waiting = self._waiting
        capacity = self._capacity
        heapreplace = heapq.heapreplace
        popleft = waiting.popleft
        append = waiting.append
        a_list = arrivals.tolist()
        s_list = services.tolist()
        start_list = [0.0] * n
        end_list = [0.0] * n
        rej_idx: list[int] = []
        for i in range(n):
            a = a_list[i]
            while waiting and waiting[0] <= a:
                popleft()
            f = free[0]
            if f <= a:
                st = a
            elif len(waiting) >= capacity:
                # Every server busy and the wait queue full: reject at once.
                start_list[i] = a
                end_list[i] = a
                rej_idx.append(i)
                continue
            else:
                st = f
                append(st)
            e = st + s_list[i]
            heapreplace(free, e)
            start_list[i] = st
            end_list[i] = e
        self._last_arrival = a_list[-1]
        start[:] = start_list
        end[:] = end_list
        if rej_idx:
            rejected[rej_idx] = True
        return start, end, rejected
