"""Children that do not outlive the process that started them.

On Linux a child can ask the kernel for a signal when its parent dies
(``prctl(PR_SET_PDEATHSIG)``), so even a SIGKILLed LoadGuard leaves no server or JVM
behind. The kernel sends it when the *thread* that started the child ends, so start
such children from a thread that lives as long as they should (the main thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: signal.Signals) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` when its parent
    dies (SIGTERM lets it shut down in order; SIGKILL for a JVM). ``None`` off Linux."""
    if not sys.platform.startswith("linux"):
        return None

    def preexec() -> None:  # pragma: no cover - runs in the child before exec
        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)

    return preexec
