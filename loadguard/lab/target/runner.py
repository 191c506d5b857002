"""Running the target: in this process (a background thread) or in the foreground (CLI).

``running_target(model)`` is what tests and an in-process demo use::

    with running_target(build_model("mmc", workers=8, queue=100, service_s=0.05)) as t:
        t.port, t.base_url, t.lambda_star(0.3).lambda_star_rps

It starts an aiohttp server on its own event loop in a daemon thread, yields once the
socket listens, and on exit stops the server and joins the thread. For a separate
process (no GIL shared with the caller) use ``loadguard.lab.target.process.spawn_target``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from aiohttp import web

from loadguard.errors import EngineError
from loadguard.lab.target.capacity import CapacityEstimate
from loadguard.lab.target.gate import GateCounters
from loadguard.lab.target.model import TargetModel
from loadguard.lab.target.pages import BASE
from loadguard.lab.target.server import GATE, EstimateCache, build_app

SHUTDOWN_TIMEOUT_S = 2.0


class TargetServer:
    """The aiohttp site around ``build_app``; start/stop on the running event loop."""

    def __init__(
        self,
        model: TargetModel,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int | None = None,
        estimates: EstimateCache | None = None,
        access_log: bool = False,
        default_slo_s: float = 0.3,
    ) -> None:
        self.model = model
        self.host = host
        self._requested_port = port
        self.estimates = EstimateCache(model) if estimates is None else estimates
        self.app = build_app(
            model, seed=seed, estimates=self.estimates, default_slo_s=default_slo_s
        )
        # In-flight requests may be asleep for seconds (a long queue): on stop, give them
        # SHUTDOWN_TIMEOUT_S to finish, then close their connections.
        self._runner = web.AppRunner(
            self.app,
            access_log=None if not access_log else _log(),
            shutdown_timeout=SHUTDOWN_TIMEOUT_S,
        )
        self.port = 0

    async def start(self) -> int:
        """Listen; returns the bound port (the OS picks one for port 0)."""
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._requested_port, backlog=1024)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            where = f"{self.host}:{self._requested_port}"
            raise EngineError(f"cannot listen on {where}: {exc}") from exc
        addresses = self._runner.addresses  # (host, port[, ...]) of every bound socket
        self.port = int(addresses[0][1]) if addresses else self._requested_port
        return self.port

    async def stop(self) -> None:
        await self._runner.cleanup()

    def counters(self) -> GateCounters:
        return self.app[GATE].counters()


def _log() -> object:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    return logging.getLogger("aiohttp.access")


@dataclass(frozen=True)
class RunningTarget:
    """A target serving in a background thread."""

    host: str
    port: int
    model: TargetModel
    _estimates: EstimateCache
    _counters: Callable[[], GateCounters]

    @property
    def base_url(self) -> str:
        """``http://host:port/tools.descartes.teastore.webui`` (no trailing slash)."""
        return f"http://{self.host}:{self.port}{BASE}"

    def lambda_star(
        self, slo_s: float, *, quantile: float = 0.95, workers: int | None = None
    ) -> CapacityEstimate:
        """λ* of the target's model for that SLO (with the initial workers by default)."""
        c = self.model.workers if workers is None else workers
        return self._estimates.get(slo_s, quantile, c)

    def counters(self) -> GateCounters:
        return self._counters()


@contextmanager
def running_target(
    model: TargetModel,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    seed: int | None = None,
    startup_timeout_s: float = 10.0,
) -> Iterator[RunningTarget]:
    """Serve ``model`` in a daemon thread for the ``with`` block; yields once listening."""
    server = TargetServer(model, host=host, port=port, seed=seed)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    failure: list[BaseException] = []
    stop: asyncio.Event | None = None

    async def main() -> None:
        nonlocal stop
        stop = asyncio.Event()
        try:
            await server.start()
        except BaseException as exc:
            failure.append(exc)
            ready.set()
            return
        ready.set()
        try:
            await stop.wait()
        finally:
            await server.stop()

    thread = threading.Thread(
        target=loop.run_until_complete, args=(main(),), name="loadguard-target", daemon=True
    )
    thread.start()
    try:
        if not ready.wait(startup_timeout_s):
            raise EngineError("the demo target did not start listening in time")
        if failure:
            raise failure[0]
        yield RunningTarget(host, server.port, model, server.estimates, server.counters)
    finally:
        if stop is not None and thread.is_alive():
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10.0)
        if not thread.is_alive():
            loop.close()
