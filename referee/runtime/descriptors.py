"""The referee's file descriptors: raised to the most the host allows, and a reserve kept
for starting bots.

Every started bot costs the referee descriptors (its socket and the server behind it, its
output pipe, its control group, the process itself), and so does every web viewer. A
viewer may wait; a bot's start may not fail for the referee's want of them. So the
referee raises its soft limit to the hard one when it starts (:func:`raise_limit`), the
web server refuses new viewers while fewer than :data:`RESERVE` descriptors are free
(:func:`free`), and a shortage that still reaches a bot's start is the referee's fault,
never the bot's (:func:`is_shortage`): the match is void and played again.
"""

from __future__ import annotations

import errno
import os
import resource

#: Descriptors kept free for bot starts: the web server takes no new viewer below it.
RESERVE = 64
_SHORT = (errno.EMFILE, errno.ENFILE)


def raise_limit() -> tuple[int, int]:
    """Raise this process's soft limit of open files to its hard limit (its children
    inherit it); the (soft, hard) limits now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # a hard limit of "unlimited" the kernel caps lower: keep the soft one
    return soft, hard


def limit() -> int:
    """The soft limit of open files."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_count() -> int:
    """Descriptors this process holds now."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # the listing's own
    except OSError:
        return 0


def free() -> int:
    """Descriptors this process may still open."""
    return limit() - open_count()


def is_shortage(exc: BaseException) -> bool:
    """``exc`` says the process or the system ran out of descriptors (``EMFILE``,
    ``ENFILE``; gRPC says it only in words)."""
    if isinstance(exc, OSError) and exc.errno in _SHORT:
        return True
    text = str(exc)
    return "Too many open files" in text or "EMFILE" in text
