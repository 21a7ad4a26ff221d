"""A child process of the referee's that must end with it: ``PR_SET_PDEATHSIG``."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> bool:
    """Have the kernel kill this process (SIGKILL) when ``parent`` ends, even by SIGKILL;
    False when ``parent`` was already gone (this process then has another parent: init, or
    a subreaper; not "is the parent 1": in a container the referee is often process 1)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    return os.getppid() == parent
