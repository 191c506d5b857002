"""What an engine says about itself over BeanShell: JMeter version, threads, rate.

``loadguard engines`` asks every engine at once. The script is fixed-form like every
script LoadGuard sends (no user text reaches it; the property name is validated):

    print("loadguard:version=" + JMeterUtils.getJMeterVersion());
    print("loadguard:threads=" + JMeterContextService.getNumberOfThreads());
    <read-back of the rate property, then the sentinel>
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass

from loadguard.actuator.bsh import BeanShellClient, check_property_name, get_script, parse_reply
from loadguard.actuator.elastic_timer import RATE_PROPERTY, TPM_PER_RPS
from loadguard.actuator.engines import Engine
from loadguard.errors import LoadGuardError

_VERSION = re.compile(r"loadguard:version=([^\r\n]*)")
_THREADS = re.compile(r"loadguard:threads=(-?\d+)")


def describe_script(property_name: str = RATE_PROPERTY) -> str:
    name = check_property_name(property_name)
    return (
        'print("loadguard:version=" + org.apache.jmeter.util.JMeterUtils.getJMeterVersion());\n'
        'print("loadguard:threads=" + '
        "org.apache.jmeter.threads.JMeterContextService.getNumberOfThreads());\n" + get_script(name)
    )


@dataclass(frozen=True)
class EngineInfo:
    engine: str
    reachable: bool
    version: str | None = None
    active_threads: int | None = None
    rate_property: str | None = None  # the raw value (samples/min), None: unset
    rate_rps: float | None = None
    error: str | None = None
    elapsed_ms: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "reachable": self.reachable,
            "version": self.version,
            "active_threads": self.active_threads,
            "rate_property": self.rate_property,
            "rate_rps": self.rate_rps,
            "error": self.error,
            "elapsed_ms": round(self.elapsed_ms, 1),
        }


def parse_describe(engine: str, reply: str, elapsed_ms: float) -> EngineInfo:
    """Read the describe script's reply (raises ``BeanShellReplyError`` if cut/erroneous)."""
    raw = parse_reply(reply)
    version = _VERSION.search(reply)
    threads = _THREADS.search(reply)
    rate: float | None = None
    if raw is not None:
        try:
            rate = float(raw) / TPM_PER_RPS
        except ValueError:
            rate = None
    return EngineInfo(
        engine=engine,
        reachable=True,
        version=version.group(1).strip() if version else None,
        active_threads=int(threads.group(1)) if threads else None,
        rate_property=raw,
        rate_rps=rate,
        elapsed_ms=elapsed_ms,
    )


class _DescribingClient(BeanShellClient):
    def describe(self, property_name: str) -> str:
        return self._run(describe_script(property_name))


def describe_engines(
    engines: Sequence[Engine], *, timeout_s: float = 3.0, property_name: str = RATE_PROPERTY
) -> list[EngineInfo]:
    """Ask every engine in parallel; each answer is bounded by ``timeout_s``."""
    check_property_name(property_name)

    def one(e: Engine) -> EngineInfo:
        start = time.monotonic()
        client = _DescribingClient(
            e.host, e.port, connect_timeout=timeout_s * 0.5, read_timeout=timeout_s * 0.9
        )
        try:
            reply = client.describe(property_name)
            return parse_describe(e.name, reply, (time.monotonic() - start) * 1000)
        except LoadGuardError as exc:
            return EngineInfo(
                e.name, False, error=exc.message, elapsed_ms=(time.monotonic() - start) * 1000
            )

    with ThreadPoolExecutor(max_workers=min(64, max(1, len(engines)))) as pool:
        futures = [pool.submit(one, e) for e in engines]
        wait_futures(futures, timeout=timeout_s + 1.0)
        out = []
        for e, f in zip(engines, futures, strict=True):
            if f.done() and f.exception() is None:
                out.append(f.result())
            else:
                f.cancel()
                out.append(
                    EngineInfo(e.name, False, error="timed out", elapsed_ms=timeout_s * 1000)
                )
        return out
