"""Files only the organiser may read: match records, bot logs, the database.

A record holds every hand and, at its end, the match seed; the database holds the deal
key. They are created readable and writable by their owner only (0600), in folders only
the owner may enter (0700). A folder the user named that exists already (the output
folder, the database's folder) keeps its mode; the folders the referee makes for itself
inside it (``matches/``, ``logs/``) are set to 0700 even when they exist.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path, *, own: bool = True) -> Path:
    """Make ``path`` (and missing parents) with mode 0700. With ``own``, a folder that
    exists already is set to 0700 as well (the referee's own ``matches/`` and ``logs/``)."""
    path = Path(path)
    missing = []
    here = path
    while not here.exists() and here != here.parent:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            folder.mkdir(mode=DIR_MODE)
        _chmod(folder, DIR_MODE)
    if own and path not in missing:
        _chmod(path, DIR_MODE)
    return path


def create_private(path: Path) -> Path:
    """Make sure the file ``path`` exists with mode 0600 (an existing file is set to 0600).

    An existing file is not opened: closing any descriptor of a file drops every POSIX
    lock this process holds on it, and SQLite's locks are such locks. A connection to the
    database already open in this process (the league's registry) would lose them without
    knowing, and another process closing its own connection would then take itself for
    the last one, checkpoint and delete the write-ahead log that this process still
    writes to: what it commits afterwards reaches no other reader.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        os.chmod(path, FILE_MODE)
        return path
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def open_private(path: Path, *, append: bool = False) -> int:
    """A file descriptor for writing ``path``, created 0600 (truncated unless ``append``)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return fd


def _chmod(path: Path, mode: int) -> None:
    # A folder of another user (a shared mount) keeps its mode: ours to tighten only.
    with contextlib.suppress(PermissionError):
        os.chmod(path, mode)
