"""Children that die with their parent, and SIGTERM as Ctrl-C for an evaluation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from loadguard.signals import interrupt_on_signals

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); its state in /proc says it has ended.
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split(") ", 1)[1][0] != "Z"


@linux_only
def test_a_child_gets_its_signal_when_a_killed_parent_dies() -> None:
    parent = textwrap.dedent(
        """
        import signal, subprocess, sys
        from loadguard.lab.child import die_with_parent
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                 preexec_fn=die_with_parent(signal.SIGTERM))
        print(child.pid, flush=True)
        sys.stdin.read()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", parent], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    assert _alive(child)
    proc.kill()  # SIGKILL: the parent runs no clean-up of its own
    proc.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_sigterm_interrupts_an_evaluation_like_ctrl_c() -> None:
    with pytest.raises(KeyboardInterrupt), interrupt_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends


def test_the_old_sigterm_handler_is_back_afterwards() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with interrupt_on_signals():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
