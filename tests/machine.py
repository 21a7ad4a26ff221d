"""How busy the machine is, for the tests' hang detectors.

A test's own clock is its subject only where it says so; its timeouts (pytest-timeout's,
a subprocess's, a poll's) catch a hang. On a machine held at a load average of 20 by other
work, everything takes several times longer than on a quiet one: :func:`stretched` gives
such a timeout room in proportion.
"""

from __future__ import annotations

import os
import time

#: The most a timeout is stretched: a hung test still ends, in at most twenty times its
#: quiet machine's timeout.
MOST = 20.0


def load_factor() -> float:
    """How many times longer than on a quiet machine a test may take now: the one-minute
    load average per core, at least 1 and at most :data:`MOST`."""
    try:
        return min(MOST, max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)))
    except OSError:
        return 1.0


def stretched(seconds: float) -> float:
    """``seconds`` of a quiet machine, on this one now (:func:`load_factor`)."""
    return seconds * load_factor()


#: Runnable processes per core beyond which a test marked ``quiet`` is skipped.
BUSY_PER_CORE = 2.0


def busy_by_others() -> str:
    """Why the machine is too busy for a test that judges timing, or "": the mean number of
    runnable processes over half a second (``/proc/loadavg``'s fourth field; the suite's
    serial phase runs one test at a time, so they are other work's)."""
    cores = len(os.sched_getaffinity(0))
    seen = []
    for _ in range(10):
        try:
            with open("/proc/loadavg", encoding="ascii") as f:
                seen.append(int(f.read().split()[3].split("/")[0]) - 1)  # not this process
        except (OSError, ValueError, IndexError):
            return ""
        time.sleep(0.05)
    runnable = sum(seen) / len(seen)
    if runnable <= BUSY_PER_CORE * cores:
        return ""
    return (
        f"judges timing on a quiet machine; {runnable:.0f} processes were runnable on "
        f"{cores} cores as it started (other work's)"
    )
