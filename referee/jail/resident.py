"""Every page a sandboxed bot may read, resident before it starts and kept so.

Two sandboxes that read the same file share the host's page cache: a page one of them
loaded answers the other's read in microseconds, a page nobody loaded in a hundred or
more. A bot that reads chosen pages of a file nobody reads (for the 1 bits of its hand)
leaves a message that a later bot reads back by timing its own reads, with nothing a
system-call filter could refuse: the channel from one seating of a duplicate deal to
the next (docs/security.md). In the gVisor tier the gofer reads through the same cache.

The cure here: before a bot starts, the referee makes every page of what it may read
resident (its runtime, :mod:`referee.jail.runtime`, its folder, its ``[sandbox] read``
paths) and locks it there (``mlock`` of a shared read-only mapping: the page cache's own
pages, which no reclaim and no other process can drop until the referee lets go). A
read then finds every page cached, in every seating, and changes nothing. No descriptor
is held: a mapped file's mapping keeps its inode and dentry, and those keep the folders
above them; an empty file or a folder with no mapped file below is not held (its entry
may be reclaimed), since a descriptor each would spend the referee's descriptor limit
(a runtime has thousands of folders) that its bots, sockets and viewers need.

The lists are walked at each start, cheaply (a ``stat`` per file); a file is mapped once
per process, again only when it changed. Where locking is refused (a referee that is not
root has a small ``RLIMIT_MEMLOCK``), the pages are mapped and, at each start, those no
longer resident are read in again (``mincore``): every page resident at the start, which
holds unless the host runs short of memory during a seating.

Only a run that replays deals needs it (a duplicate tournament, a comparison: their
seatings and pairs play one deal again): they turn it on for themselves and their
workers (:func:`for_replays`); a round robin, a league or a single match deals every
match afresh, and a mark left for a later match tells it nothing about its deal.
``STICHELN_JAIL_RESIDENT=0`` in the referee's environment turns it off even there, to
measure what it closes (benchmarks/covert.py, tests/test_spy.py); never for strangers.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import mmap
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The variable that turns holding on ("1", :func:`for_replays`) or off ("0", to measure).
VARIABLE = "STICHELN_JAIL_RESIDENT"
PAGE = mmap.PAGESIZE

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_MAP_FAILED = ctypes.c_void_p(-1).value


def enabled() -> bool:
    """Whether bots started by this process have what they read kept resident."""
    return os.environ.get(VARIABLE, "") == "1"


def for_replays() -> None:
    """This run replays deals: keep what its bots read resident, here and in the workers
    it starts (they inherit the environment), unless the environment says "0"."""
    os.environ.setdefault(VARIABLE, "1")


@dataclass
class _Held:
    key: tuple[int, int]  # size, mtime
    address: int
    size: int
    locked: bool


@dataclass(frozen=True)
class Report:
    """What one call to :func:`hold` found and did."""

    files: int
    folders: int
    size: int
    locked: int
    mapped_now: int
    seconds: float

    def describe(self) -> str:
        how = "locked" if self.locked >= self.size else f"{self.locked / (1 << 20):,.1f} MiB locked"
        return (
            f"{self.files:,} files, {self.size / (1 << 20):,.1f} MiB resident"
            f" ({how}; {self.seconds * 1000:,.0f} ms)"
        )

    def __add__(self, other: Report) -> Report:
        return Report(
            *(
                a + b
                for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True)
            )
        )


_HELD: dict[tuple[int, int], _Held] = {}
_ONCE: dict[tuple[tuple[Path, ...], tuple[Path, ...]], Report] = {}
_LOCK = threading.Lock()


def hold_once(paths: Sequence[Path], hidden: Sequence[Path] = ()) -> Report:
    """:func:`hold` for what does not change while the referee runs (a runtime, the host's
    own files): walked once per process; later calls cost nothing (a report of 0 ms)."""
    key = (tuple(paths), tuple(hidden))
    done = _ONCE.get(key)
    if done is not None:
        # Under the lock: bots start on several threads, and another's hold adds to it.
        with _LOCK:
            intact = all(h.locked for h in _HELD.values())
        if intact:
            return dataclasses.replace(done, mapped_now=0, seconds=0.0)
    _ONCE[key] = report = hold(paths, hidden)
    return report


#: Per folder walked: its (inode, mtime), its subfolders and its files' (device, inode).
_FOLDERS: dict[str, tuple[tuple[int, int], list[str], list[tuple[int, int]]]] = {}


def hold(paths: Iterable[Path], hidden: Sequence[Path] = ()) -> Report:
    """Make every page under ``paths`` (but ``hidden``) resident and keep it so.

    A folder whose entries did not change since the last call (its mtime) is not listed
    again and its files not looked at again: a ``stat`` per folder. (A file rewritten in
    place keeps its pages locked; one replaced or added changes its folder.)"""
    began = time.perf_counter()
    tally = [0, 0, 0, 0, 0]  # files, folders, bytes, bytes locked, mapped now
    skip = {str(p) for p in hidden}
    with _LOCK:
        stack: list[str] = []
        for root in paths:
            if root.is_symlink():  # a bound link shows what it leads to
                root = root.resolve()
            if root.is_dir():
                stack.append(str(root))
            elif root.exists():
                _one(root, False, os.lstat(root), tally)
        while stack:
            folder = stack.pop()
            try:
                st = os.lstat(folder)
            except OSError:
                continue
            _one(Path(folder), True, st, tally)
            signature = (st.st_ino, st.st_mtime_ns)
            cached = _FOLDERS.get(folder)
            if cached is not None and cached[0] == signature:
                for ident in cached[2]:
                    known = _HELD.get(ident)
                    if known is not None:
                        _count(known, tally)
                stack.extend(cached[1])
                continue
            subfolders: list[str] = []
            idents: list[tuple[int, int]] = []
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.path in skip:
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        idents.append(_one(Path(entry.path), False, info, tally))
                except OSError:
                    continue
            _FOLDERS[folder] = (signature, subfolders, idents)
            stack.extend(subfolders)
    files, folders, size, locked, mapped = tally
    return Report(files, folders, size, locked, mapped, time.perf_counter() - began)


def _count(held: _Held, tally: list[int]) -> None:
    tally[0] += 1
    tally[2] += held.size
    if held.locked:
        tally[3] += held.size
    elif held.size:
        _refresh(held)


def _one(path: Path, folder: bool, st: os.stat_result, tally: list[int]) -> tuple[int, int]:
    """Hold one file or folder (already held and unchanged: nothing to do)."""
    ident = (st.st_dev, st.st_ino)
    key = (-1 if folder else st.st_size, st.st_mtime_ns)
    known = _HELD.get(ident)
    if known is None or known.key != key:
        if known is not None:
            _release(known)
            del _HELD[ident]
        held = _map(path, key, folder)
        if held is None:
            return ident
        _HELD[ident] = known = held
        tally[4] += 1
    if folder:
        tally[1] += 1
    else:
        _count(known, tally)
    return ident


def _map(path: Path, key: tuple[int, int], folder: bool) -> _Held | None:
    size = max(0, key[0])
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
    if folder or size == 0:
        return _Held(key, 0, 0, True)  # nothing to map, and no descriptor held (see above)
    try:
        # Its access time left alone where the referee may (a file of its own): a map
        # here would otherwise set it past the file's mtime (relatime), which a bot sees.
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOATIME)
    except PermissionError:
        try:
            fd = os.open(path, flags | os.O_NONBLOCK)
        except OSError:
            return None
    except OSError:
        return None
    try:
        address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    finally:
        os.close(fd)
    if address in (None, _MAP_FAILED):
        return None
    held = _Held(key, address, size, _libc.mlock(address, size) == 0)
    if not held.locked:
        _refresh(held)
    return held


def _refresh(held: _Held) -> None:
    """Read in the pages of an unlocked mapping that are not resident."""
    pages = (held.size + PAGE - 1) // PAGE
    vector = ctypes.create_string_buffer(pages)
    if _libc.mincore(held.address, held.size, vector) != 0:
        return
    raw = vector.raw
    for i in range(pages):
        if not raw[i] & 1:
            ctypes.string_at(held.address + i * PAGE, 1)


def _release(held: _Held) -> None:
    if held.size:
        _libc.munmap(held.address, held.size)


def release_all() -> None:
    """Let go of everything held (the process is about to end, or a test is done)."""
    with _LOCK:
        for held in _HELD.values():
            _release(held)
        _HELD.clear()
        _ONCE.clear()
        _FOLDERS.clear()


def resident_bytes() -> int:
    """The bytes of file pages this process holds."""
    with _LOCK:
        return sum(h.size for h in _HELD.values())
