"""How busy the machine is, for the tests' hang detectors.

A test's own clock is its subject only where it says so; its timeouts (pytest-timeout's,
a subprocess's, a poll's) catch a hang. On a machine held at a load average of 20 by other
work, everything takes several times longer than on a quiet one: :func:`stretched` gives
such a timeout room in proportion.
"""

from __future__ import annotations

import os


def load_factor() -> float:
    """How many times longer than on a quiet machine a test may take now: the one-minute
    load average per core, at least 1."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


def stretched(seconds: float) -> float:
    """``seconds`` of a quiet machine, on this one now (:func:`load_factor`)."""
    return seconds * load_factor()
