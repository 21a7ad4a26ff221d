"""A uid of its own for every running bot process, when the referee runs as root.

The kernel keeps some state per uid rather than per namespace: the user keyring, the
processes a uid may signal or trace, ``RLIMIT_NPROC``. Bots that shared one uid
(``nobody``) would share all of it, across seats, matches and tournaments on the host.
So each started bot process runs as a uid (and a gid of the same number) of its own,
leased from a range no real user has, and given back once the process has ended and been
reaped.

A lease is never held by two live bots: within the referee a set of leased uids says so;
between referee processes on one host (parallel tournaments, a tournament's worker
processes) a byte-range lock on :data:`LOCK_FILE`, one byte per uid, says so (the kernel
drops it if the referee dies); and a uid any process still runs as is passed over. Leases
rotate through the range from a random start, so that a bot does not get the uid a bot
just gave back (and whatever per-uid state the kernel may still hold for it).

The default range, :data:`DEFAULT_UIDS`, is the first 65,536 uids of the block systemd
leaves unused (0x70000000 upwards, above the ranges it hands to containers and below
2^31, see systemd's "Users, Groups, UIDs and GIDs on systemd Systems"); an organiser
chooses another with ``--bot-uids FIRST-LAST`` or ``STICHELN_BOT_UIDS=FIRST-LAST``
(:func:`configured_range`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

#: The default range of bot uids (first, last), inclusive.
DEFAULT_UIDS = (0x7000_0000, 0x7000_0000 + 0xFFFF)
#: The variable an organiser sets to choose another range ("FIRST-LAST").
RANGE_ENV = "STICHELN_BOT_UIDS"
#: The lock file that keeps referee processes on one host from leasing the same uid.
LOCK_FILE = Path("/run/sticheln-bot-uids.lock")


class NoFreeUid(OSError):
    """Every uid of the range is in use; the message says so in one line."""


def parse_range(text: str) -> tuple[int, int]:
    """``"FIRST-LAST"`` as (first, last); raises ValueError in one line."""
    first, sep, last = text.partition("-")
    try:
        uids = (int(first), int(last)) if sep else (-1, -1)
    except ValueError:
        uids = (-1, -1)
    check_range(uids, text)
    return uids


def configured_range() -> tuple[int, int]:
    """The range ``$STICHELN_BOT_UIDS`` names, else :data:`DEFAULT_UIDS` (a tournament's
    worker processes inherit the variable, so every process of a run leases from one
    range); raises ValueError in one line."""
    text = os.environ.get(RANGE_ENV, "").strip()
    if not text:
        return DEFAULT_UIDS
    try:
        return parse_range(text)
    except ValueError as exc:
        raise ValueError(f"${RANGE_ENV}: {exc}") from None


def check_range(uids: tuple[int, int], given: str = "") -> None:
    """Raise ValueError in one line unless ``uids`` is a usable range for bots."""
    first, last = uids
    if not (1000 <= first <= last < 2**31 - 1) or first <= 65534 <= last:
        raise ValueError(
            f"bot uids {given or f'{first}-{last}'} are not allowed; allowed: FIRST-LAST with "
            f"1000 <= FIRST <= LAST < 2147483647, leaving out 65534 (nobody); "
            f"default {DEFAULT_UIDS[0]}-{DEFAULT_UIDS[1]}"
        )


@dataclass(frozen=True)
class Lease:
    """One bot process's uid and gid, until :meth:`release`."""

    uid: int
    pool: BotUsers

    @property
    def ids(self) -> tuple[int, int]:
        """(uid, gid): the gid has the uid's number."""
        return (self.uid, self.uid)

    def release(self) -> None:
        """Give the uid back (its process has ended and been reaped)."""
        self.pool.release(self.uid)


class BotUsers:
    """Leases uids of one range to running bot processes (see the module docstring)."""

    def __init__(self, uids: tuple[int, int], lock_file: Path | None = LOCK_FILE) -> None:
        check_range(uids)
        self.first, self.last = uids
        self._lock = threading.Lock()
        self._leased: set[int] = set()
        self._next = self.first + secrets.randbelow(self.last - self.first + 1)
        self._lock_fd = _open_lock(lock_file) if lock_file is not None else -1

    @property
    def size(self) -> int:
        """How many uids the range holds."""
        return self.last - self.first + 1

    def lease(self) -> Lease:
        """A uid no live bot has; raises :class:`NoFreeUid` when the range is used up."""
        with self._lock:
            running = _running_uids()
            for _ in range(self.size):
                uid = self._next
                self._next = self.first if uid == self.last else uid + 1
                if uid in self._leased or uid in running or not self._try_lock(uid):
                    continue
                self._leased.add(uid)
                return Lease(uid, self)
        raise NoFreeUid(
            f"no free bot uid: all {self.size} uids of {self.first}-{self.last} are in use"
        )

    def release(self, uid: int) -> None:
        """Give ``uid`` back."""
        with self._lock:
            if uid in self._leased:
                self._leased.discard(uid)
                if self._lock_fd >= 0:
                    with contextlib.suppress(OSError):
                        fcntl.lockf(self._lock_fd, fcntl.LOCK_UN, 1, uid)

    def leased(self) -> set[int]:
        """The uids leased now (for tests and reports)."""
        with self._lock:
            return set(self._leased)

    def _try_lock(self, uid: int) -> bool:
        if self._lock_fd < 0:
            return True
        try:
            fcntl.lockf(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, uid)
        except OSError:
            return False  # another referee process holds it
        return True


def _open_lock(path: Path) -> int:
    """The lock file, opened for good (closing any descriptor of it would drop every lock
    this process holds on it); -1 where it cannot be made (no shared lock then, but the
    running-process check still holds)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return -1


def _running_uids() -> set[int]:
    """The uids of the processes running now (each /proc/PID belongs to its process's
    effective uid)."""
    found: set[int] = set()
    with contextlib.suppress(OSError), os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    found.add(entry.stat(follow_symlinks=False).st_uid)
    return found


_pools: dict[tuple[int, int, int], BotUsers] = {}
_pools_lock = threading.Lock()


def pool(uids: tuple[int, int]) -> BotUsers:
    """This process's one :class:`BotUsers` for ``uids`` (a forked child makes its own:
    byte-range locks are not inherited)."""
    key = (os.getpid(), *uids)
    with _pools_lock:
        if key not in _pools:
            _pools[key] = BotUsers(uids)
        return _pools[key]
