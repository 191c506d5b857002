"""SIGINT/SIGTERM in one place (loadguard.signals), with real signals to this process and
to a child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loadguard.signals import interrupt_on_signals, on_signals


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_on_signals_calls_the_handler_and_puts_the_old_one_back(sig: signal.Signals) -> None:
    before = signal.getsignal(sig)
    got: list[str] = []
    with on_signals(lambda: got.append("stop")):
        os.kill(os.getpid(), sig)
        time.sleep(0.01)  # the handler runs between bytecodes of the main thread
    assert got == ["stop"]
    assert signal.getsignal(sig) is before


def test_the_first_signal_interrupts_and_later_ones_are_ignored() -> None:
    unwound = []
    with pytest.raises(KeyboardInterrupt), interrupt_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # a second one, mid-shutdown
            time.sleep(0.01)
            unwound.append("cleanup finished")
    assert unwound == ["cleanup finished"]


CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from loadguard.signals import interrupt_on_signals
    done = Path(sys.argv[1])
    try:
        with interrupt_on_signals():
            try:
                print("ready", flush=True)
                time.sleep(30)
            finally:
                time.sleep(0.5)  # a shutdown that a second SIGTERM must not cut short
                done.write_text("stopped what it started")
    except KeyboardInterrupt:
        sys.exit(130)
    """
)


def test_a_child_sent_sigterm_twice_finishes_its_shutdown(tmp_path: Path) -> None:
    done = tmp_path / "done"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(done)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 130
    assert done.read_text() == "stopped what it started"
