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
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np
import numpy.typing as npt

from loadguard.errors import SimulationError

F64 = npt.NDArray[np.float64]
BOOL = npt.NDArray[np.bool_]


class FcfsQueue:
    """FCFS queue with ``servers`` parallel servers and at most ``queue_capacity`` waiting."""

    def __init__(self, servers: int, queue_capacity: int) -> None:
        if servers < 1:
            raise SimulationError(f"servers must be >= 1, got {servers}")
        if queue_capacity < 0:
            raise SimulationError(f"queue capacity must be >= 0, got {queue_capacity}")
        self._free: list[float] = [-np.inf] * servers  # heap of next-free times
        self._capacity = queue_capacity
        self._waiting: deque[float] = deque()  # start times of accepted, not yet started
        self._last_arrival = -np.inf

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

    def offer(self, arrival_s: F64, service_s: F64) -> tuple[F64, F64, BOOL]:
        """Serve arrivals (sorted ascending, not before earlier calls' arrivals).

        Returns ``(start_s, end_s, rejected)``; rejected requests have start = end = arrival.
        """
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
