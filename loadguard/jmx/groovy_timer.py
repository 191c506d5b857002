"""The Elastic Timer's Groovy source (a JSR223 Timer), kept here so it ships with the
package; ``jmx_templates/*.jmx`` are generated from it (a golden test keeps them equal).

Design (maths in ``loadguard.actuator.elastic_timer``): one schedule per engine and rate
property, held in JMeter's ``props`` as ``[fair lock, long[]{t_last}, test start]``.
Threads queue FIFO on the fair lock; the head alone waits for its slot, parked in steps
of at most ``STEP_NS``, re-reading the property at every step, so no slot is ever handed
out ahead of time and a pushed rate takes hold within one step. Scheduling is in
nanoseconds (no whole-ms rounding, apache/jmeter#6278). The script returns 0: the waiting
happened inside it. It gives up its wait when the thread is told to stop (graceful
``Shutdown``: JMeterThread's ``running`` flag; ``StopTestNow``: interrupt) or its
thread group's scheduled end passes; then it returns a delay past the end so JMeter ends
the thread without a further sample.
"""

from __future__ import annotations

from typing import Final

#: Script version, written into the timer's name comment so plans can be told apart.
ELASTIC_TIMER_VERSION: Final = 1

GROOVY_SOURCE: Final = r"""// LoadGuard Elastic Timer v1 -- docs/jmeter-integration.md
// Parameters: <rate property> <initial samples/min>, e.g. "loadguard.tpm 60".
// The property holds the ENGINE's total rate in samples per minute; every Elastic Timer
// reading the same property shares one schedule. Unset or bad value -> the initial rate;
// anything below 6/min (0.1/s) is clamped to 6/min: pacing never stops.
import java.util.concurrent.TimeUnit
import java.util.concurrent.locks.LockSupport
import java.util.concurrent.locks.ReentrantLock
import org.apache.jmeter.threads.JMeterContextService
import org.apache.jmeter.util.JMeterUtils

final String prop = args.length > 0 ? args[0] : 'loadguard.tpm'
double initialTpm = 60d
try {
    if (args.length > 1) initialTpm = Double.parseDouble(args[1])
} catch (NumberFormatException e) { }
final double floorTpm = 6d
final long stepNs = 50000000L       // the head re-reads the rate at least every 50 ms
final long waiterStepNs = 2000000000L // queued threads look for a stop every 2 s
final long catchUpNs = 20000000L    // a late head may catch up on at most 20 ms of slots

final String key = 'loadguard.elastic.' + prop
final long testStart = JMeterContextService.getTestStartTime()
Object[] st = (Object[]) props.get(key)
if (st == null || st[2] != testStart) {
    synchronized (props) {
        st = (Object[]) props.get(key)
        if (st == null || st[2] != testStart) {
            long[] last = new long[1]
            last[0] = Long.MIN_VALUE
            st = [new ReentrantLock(true), last, testStart] as Object[]
            props.put(key, st)
        }
    }
}
final ReentrantLock lock = (ReentrantLock) st[0]
final long[] last = (long[]) st[1]
final def jmThread = ctx.getThread()
final long endMs = jmThread != null ? jmThread.getEndTime() : 0L

// true when this thread must not sample again: stop asked, interrupted, or past its end
def stopping = { ->
    if (Thread.currentThread().isInterrupted()) return true
    if (endMs > 0L && System.currentTimeMillis() >= endMs) return true
    try { return jmThread != null && !jmThread.@running } catch (Throwable t) { return false }
}
// a delay JMeter turns into "end this thread" when scheduled; unscheduled: running is false
def stopDelay = { -> endMs > 0L ? Math.max(1000L, endMs - System.currentTimeMillis() + 1000L) : 0L }
// the interval in ns at the rate set now
def intervalNs = { ->
    double tpm = initialTpm
    String v = JMeterUtils.getProperty(prop)
    if (v != null) {
        try { tpm = Double.parseDouble(v.trim()) } catch (NumberFormatException e) { }
    }
    if (!(tpm >= floorTpm)) tpm = floorTpm  // also catches NaN
    return (long) (60.0e9d / tpm)
}

// queued threads sleep until they are the head; a stop unwinds the queue through the
// head (each thread, once head, sees its own stop), so they only wake on their own for
// StopTestNow (interrupt), their group's scheduled end, or every 2 s as a safety net
def waiterNs = { ->
    long left = endMs > 0L ? (endMs - System.currentTimeMillis()) * 1000000L : waiterStepNs
    return Math.max(1000000L, Math.min(waiterStepNs, left))
}
try {
    while (!lock.tryLock(waiterNs(), TimeUnit.NANOSECONDS)) {
        if (stopping()) return stopDelay()
    }
} catch (InterruptedException e) {
    Thread.currentThread().interrupt()
    return stopDelay()
}
try {
    while (true) {
        if (stopping()) return stopDelay()
        long interval = intervalNs()
        long now = System.nanoTime()
        if (last[0] == Long.MIN_VALUE) { last[0] = now; return 0L }
        long due = last[0] + interval
        if (due <= now) {
            // late by less than max(one interval, 20 ms) -- a slow wake-up: keep the grid so
            // the rate holds; later (threads ran out): restart the grid, no catch-up burst
            last[0] = (now - due < Math.max(interval, catchUpNs)) ? due : now
            return 0L
        }
        LockSupport.parkNanos(Math.min(due - now, stepNs))
    }
} finally {
    lock.unlock()
}
"""
