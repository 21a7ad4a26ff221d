"""Folders of a seating's own: no name a seating looks up is looked up in a later one's.

A lookup of a name leaves a note in the host's cache of names (the *dentry* cache) under
the folder it was looked up in: "no such name here" for a name that does not exist (a
negative dentry), the file for one that does. A later lookup of the same name in the same
folder is answered from that note, faster. Folders bound into two sandboxes are the same
folders, so a seating of a duplicate deal could leave a few dozen bits (a hand's key) for
a later seating of the same deal as names it looked up, in its own folder or in any
folder of its runtime, with nothing a filter can refuse.

So, in a run that replays deals (where :mod:`referee.jail.resident` holds pages), every
folder a sandbox sees is made anew for it: the prepared trees of its runtime
(:mod:`referee.jail.trees`), the runtime's folders bound on their own, its bot's folder
and the folders its bot file reads. A folder made anew is a new inode, with no notes
under it; its files are hard links to the same files (the same inodes: the same cached
pages, held resident as before), so what the bot reads is unchanged and nothing is
copied. A file on another file system than the seating folders' home (the bot's folder on
another disk) cannot be linked: it is copied, a private copy whose pages no other seating
reads (its cost is the file's size, at each start). The seating's folders live in the
trees' home (``/var/tmp/sticheln-trees-UID``, 0700) and are removed once the sandbox has
ended.

The bot's folder and read paths are walked by descriptor, never following a link (an
author may change them while the referee runs, :mod:`referee.jail.held`): what the
sandbox sees is what the walk found, a link copied as a link.
"""

from __future__ import annotations

import dataclasses
import errno
import itertools
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from referee.jail import trees
from referee.jail.held import open_held
from referee.jail.runtime import within

if TYPE_CHECKING:
    from referee.jail.sandbox import SandboxPolicy

_NAMES = itertools.count()


def home() -> Path:
    """The folder seatings' folders are made in: the trees' home (0700, the referee's)."""
    uid = os.getuid()
    named = os.environ.get(trees.VARIABLE, "")
    base = Path(named) if named not in ("", "0") else Path("/var/tmp") / f"sticheln-trees-{uid}"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        raise OSError(errno.EPERM, f"{base} is not a folder of the referee's alone (0700)")
    return base


def private(policy: SandboxPolicy) -> tuple[SandboxPolicy, Path]:
    """``policy`` with every folder its bot sees made anew for this sandbox (hard links to
    the same files), and the folder holding them, to :func:`remove` once it has ended."""
    from referee.jail.sandbox import held_binds, outer_binds, untreed

    folder = Path(tempfile.mkdtemp(prefix=f".seating-{os.getpid()}-", dir=home()))
    try:
        made: list[Path] = []

        def place() -> Path:
            at = folder / str(next(_NAMES))
            made.append(at)
            return at

        own_trees = []
        for tree, where in policy.trees:
            at = place()
            mirror(tree, at)
            own_trees.append((at, where))
        system, _, hidden = untreed(policy)
        mirrors: dict[Path, Path] = {}
        for path in system:
            try:
                is_folder = stat.S_ISDIR(os.lstat(path).st_mode)
            except OSError:
                continue
            if is_folder:
                mirrors[path] = at = place()
                mirror(path, at, hidden=hidden)
        held = held_binds(policy)
        for path in outer_binds(policy):
            fd = open_held(path) if path in held else os.open(path, os.O_PATH)
            try:
                if stat.S_ISDIR(os.fstat(fd).st_mode):
                    mirrors[path] = at = place()
                    mirror_fd(fd, at)
            finally:
                os.close(fd)
        return (
            dataclasses.replace(
                policy,
                trees=tuple(own_trees),
                mirrors=tuple(mirrors.items()),
                held=tuple(p for p in policy.held if p not in mirrors),
            ),
            folder,
        )
    except BaseException:
        remove(folder)
        raise


def mirror(source: Path, at: Path, hidden: tuple[Path, ...] | list[Path] = ()) -> None:
    """``at`` made a copy of the folder ``source`` whose folders are new and whose files
    are hard links to ``source``'s (``hidden`` folders inside it made empty)."""
    fd = os.open(source, os.O_PATH | os.O_DIRECTORY)
    try:
        mirror_fd(fd, at, source, {h for h in hidden if within(h, [source])})
    finally:
        os.close(fd)


def mirror_fd(
    fd: int, at: Path, source: Path | None = None, hidden: set[Path] | None = None
) -> None:
    """:func:`mirror` of the folder open as ``fd`` (an ``O_PATH`` descriptor will do)."""
    as_root = os.getuid() == 0
    modes: list[tuple[str, os.stat_result]] = []
    _walk(fd, str(at), source, hidden or set(), modes)
    # Modes and owners last, deepest first: a folder may be read-only.
    for path, st in reversed(modes):
        if as_root:
            os.chown(path, st.st_uid, st.st_gid)
        os.chmod(path, stat.S_IMODE(st.st_mode))


def _walk(
    fd: int,
    at: str,
    source: Path | None,
    hidden: set[Path],
    modes: list[tuple[str, os.stat_result]],
) -> None:
    folder = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    try:
        st = os.fstat(folder)
        os.mkdir(at, 0o700)
        modes.append((at, st))
        if source is not None and source in hidden:
            return
        with os.scandir(folder) as it:
            entries = list(it)
        for entry in entries:
            name, target = entry.name, os.path.join(at, entry.name)
            inner = source / name if source is not None else None
            if entry.is_dir(follow_symlinks=False):
                sub = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                try:
                    _walk(sub, target, inner, hidden, modes)
                finally:
                    os.close(sub)
            elif entry.is_symlink():
                os.symlink(os.readlink(name, dir_fd=folder), target)
            elif entry.is_file(follow_symlinks=False):
                try:
                    os.link(name, target, src_dir_fd=folder, follow_symlinks=False)
                except OSError as exc:
                    if exc.errno not in (errno.EXDEV, errno.EPERM):
                        raise
                    _copy(folder, name, target)
            # Sockets, pipes and devices are not shown.
    finally:
        os.close(folder)


def _copy(folder: int, name: str, target: str) -> None:
    """A private copy of the file ``name`` in ``folder`` (one that cannot be linked)."""
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
    try:
        st = os.fstat(src)
        dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            while os.sendfile(dst, src, None, 1 << 24):
                pass
            if os.getuid() == 0:
                os.fchown(dst, st.st_uid, st.st_gid)
            os.fchmod(dst, stat.S_IMODE(st.st_mode))
        finally:
            os.close(dst)
    finally:
        os.close(src)


def remove(folder: Path) -> None:
    """A seating's folder removed (its read-only folders opened to the referee first)."""

    if os.getuid() == 0:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for root, dirs, _ in os.walk(folder):
        for d in dirs:
            path = os.path.join(root, d)
            if not os.path.islink(path):
                os.chmod(path, 0o700)
        os.chmod(root, 0o700)
    shutil.rmtree(folder, ignore_errors=True)
