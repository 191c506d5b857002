"""SIGINT and SIGTERM, handled in one place.

* ``on_signals(handle)``: both call ``handle`` inside the ``with`` block; the old handlers
  are back afterwards. The sidecar asks its loop to stop this way.
* ``interrupt_on_signals()``: the first of them raises ``KeyboardInterrupt`` inside the
  block, as Ctrl-C does, so every ``finally`` and ``with`` unwinds and stops what it
  started (targets, JMeter, Tomcats); later ones are ignored, so a second signal never
  cuts that shutdown short. ``loadguard evaluate`` and ``loadguard teastore`` use it.

Only the main thread can set handlers; elsewhere the block runs without them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def on_signals(handle: Callable[[], None]) -> Iterator[None]:
    """SIGINT/SIGTERM call ``handle`` for the ``with`` block, then the old handlers are
    back. Only the main thread can set handlers; elsewhere the block runs without."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        handle()

    old = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def interrupt_on_signals() -> contextlib.AbstractContextManager[None]:
    """The first SIGINT/SIGTERM in the block raises ``KeyboardInterrupt``; later ones are
    ignored while the block unwinds."""
    fired = False

    def interrupt() -> None:
        nonlocal fired
        if not fired:
            fired = True
            raise KeyboardInterrupt

    return on_signals(interrupt)
