"""A runtime's many small binds made one: prepared trees of hard links.

A runtime (:mod:`referee.jail.runtime`) is a list of files and folders at their places:
for the ``python3`` runtime about thirty libraries of ``/usr/lib/x86_64-linux-gnu`` and
sixty entries of ``site-packages``, each bound on its own. Every mount costs a sandbox's
start (bubblewrap makes each, the kernel copies each into the bot's namespace and tears
each down at its end; in the gVisor tier each is one more gofer mount): a hundred of them
doubled the time bubblewrap takes to start a process.

So the members of a runtime that share a folder are gathered, once per host, into a
*tree*: a folder of the referee's own holding a hard link to each of those files (their
folders made anew, with their modes and owners), the links between them, and an empty
folder for each hidden one, bound read-only as one mount at the folder's place. A hard
link is the same file, not a copy: the same inode, the same pages of the host's page
cache, which the referee keeps resident as before (:mod:`referee.jail.resident`); a bot
sees exactly what the separate binds showed it.

A tree is named by a hash of what it holds (its folders' and member files' paths, inodes
and times), so a file replaced on the host (an upgrade) makes a new tree, and built in a temporary folder
renamed into place, under a lock referees sharing a host take to check or make it, so that
they share one and none sees half of it.
Trees live in a folder only the referee's user may enter (``/var/tmp/sticheln-trees-UID``,
or ``STICHELN_JAIL_TREES``): nobody else can put a file into what a bot reads. Old trees
are not removed (a tree is folders and links: a few MiB; it keeps a replaced file's
blocks until it is deleted). A tree is counted when first used by a process: one that
lost entries (a cleaner of ``/var/tmp`` removes files nobody read for weeks) is made anew
and the old one put aside, not deleted (a running sandbox may have it bound).

Where a tree cannot be made, the separate binds stay: the files lie on another file
system than the trees' folder, the kernel refuses the links (``protected_hardlinks`` for
a referee that is not root and does not own them), the file system is an overlay (a link
would copy the file up, a second copy of its pages), or another mount of the sandbox
(the bot's folder, a path its file reads) lies inside the folder.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import stat
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from referee.jail.runtime import within

#: A folder whose members, links and hidden folders are fewer than this keeps them as
#: separate mounts.
MIN_MEMBERS = 3
#: The variable naming the folder trees are kept in ("0": none made, every member bound
#: on its own, to measure what trees save: benchmarks/resident.py).
VARIABLE = "STICHELN_JAIL_TREES"


def gather(
    system: Sequence[Path],
    links: Sequence[tuple[Path, str]],
    hidden: Sequence[Path],
    others: Sequence[Path],
) -> tuple[tuple[Path, Path], ...]:
    """The trees that stand in for ``system``'s members (bound files and folders), with
    the ``links`` and ``hidden`` folders inside them: (tree, place) pairs. ``others`` are
    the sandbox's other mounts' places (its folder, its read paths, made files), which no
    tree may hold. Made once per process for one set of arguments."""
    if os.environ.get(VARIABLE) == "0":
        return ()
    return _gather(tuple(system), tuple(links), tuple(hidden), tuple(others))


@functools.cache
def _gather(
    system: tuple[Path, ...],
    links: tuple[tuple[Path, str], ...],
    hidden: tuple[Path, ...],
    others: tuple[Path, ...],
) -> tuple[tuple[Path, Path], ...]:
    members = [p for p in system if p.exists() and not p.is_symlink()]
    parents = sorted({p.parent for p in members}, key=lambda p: len(p.parts))

    def allowed(place: Path) -> bool:
        return (
            place != Path("/")
            and not within(place, members)
            and not any(within(o, [place]) or within(place, [o]) for o in others)
        )

    places = [p for p in parents if allowed(p)]
    groups: dict[Path, list[Path]] = {}
    for member in members:
        # The outermost folder above it that holds some member and no other mount.
        anchor = next((p for p in places if within(member.parent, [p])), None)
        if anchor is not None:
            groups.setdefault(anchor, []).append(member)
    trees: list[tuple[Path, Path]] = []
    for place, group in sorted(groups.items()):
        inner = tuple((k, v) for k, v in links if within(k, [place]))
        shown = tuple(h for h in hidden if within(h, [place]))
        # What it saves: a bind per member, a link per link, a tmpfs per hidden folder.
        if len(group) + len(inner) + len(shown) < MIN_MEMBERS:
            continue
        tree = _made(place, tuple(sorted(group)), inner, shown)
        if tree is not None:
            trees.append((tree, place))
    return tuple(trees)


def _base(device: int) -> Path | None:
    """The referee's folder for trees of files on ``device``, made 0700; None when there
    is none on that file system (or the folder is not the referee's alone)."""
    uid = os.getuid()
    named = os.environ.get(VARIABLE, "")
    candidates = [Path(named)] if named else [Path("/var/tmp") / f"sticheln-trees-{uid}"]
    for base in candidates:
        try:
            base.mkdir(mode=0o700, exist_ok=True)
            st = os.lstat(base)
        except OSError:
            continue
        if (
            stat.S_ISDIR(st.st_mode)
            and st.st_uid == uid
            and not st.st_mode & 0o077
            and st.st_dev == device
            and not _overlay(base)
        ):
            return base
    return None


def _overlay(path: Path) -> bool:
    """Whether ``path`` lies on an overlay file system (the longest mount point above it
    in ``/proc/self/mountinfo``)."""
    best, kind = "", ""
    text = str(path.resolve())
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                point = fields[4]
                fstype = fields[fields.index("-") + 1]
                if within(Path(text), [Path(point)]) and len(point) >= len(best):
                    best, kind = point, fstype
    except (OSError, ValueError, IndexError):
        return True
    return kind == "overlay"


def _signature(
    place: Path, members: Sequence[Path], links: Sequence[tuple[Path, str]], hidden: Sequence[Path]
) -> tuple[str, set[int]]:
    """What names a tree: the place, each member file's path and inode, every folder's path,
    inode, mtime, mode and owner (a file replaced, added or removed changes its folder's
    mtime; a file changed in place is the tree's file too), the links and hidden folders;
    and the devices seen."""
    skip = {str(h) for h in hidden}
    digest = hashlib.sha256(str(place).encode())
    devices: set[int] = set()
    stack = [str(m) for m in members]
    while stack:
        path = stack.pop()
        st = os.lstat(path)
        devices.add(st.st_dev)
        # (A file's ctime moves with its link count: a tree's own links change it.)
        seen = (
            (st.st_mtime_ns, st.st_mode, st.st_uid, st.st_gid) if stat.S_ISDIR(st.st_mode) else ()
        )
        digest.update(f"\0{path}\0{st.st_ino}\0{seen}".encode())
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(path) as it:
                stack.extend(
                    e.path for e in it if e.path not in skip and e.is_dir(follow_symlinks=False)
                )
    for link, target in links:
        digest.update(f"\0L{link}\0{target}".encode())
    for folder in hidden:
        digest.update(f"\0H{folder}".encode())
    return digest.hexdigest()[:32], devices


def _entries(members: Iterable[Path], hidden: Sequence[Path]) -> list[tuple[Path, os.stat_result]]:
    """Every file, folder and link of ``members`` (folders walked, ``hidden`` left out)."""
    skip = {str(h) for h in hidden}
    found: list[tuple[Path, os.stat_result]] = []
    for member in members:
        stack = [str(member)]
        while stack:
            path = stack.pop()
            st = os.lstat(path)
            found.append((Path(path), st))
            if stat.S_ISDIR(st.st_mode):
                with os.scandir(path) as it:
                    stack.extend(e.path for e in it if e.path not in skip)
    return found


def _made(
    place: Path,
    members: tuple[Path, ...],
    links: tuple[tuple[Path, str], ...],
    hidden: tuple[Path, ...],
) -> Path | None:
    """The tree of ``members`` at ``place`` (made now if this host has none yet), or None
    when it cannot be made here."""
    try:
        name, devices = _signature(place, members, links, hidden)
    except OSError:
        return None
    if len(devices) != 1:
        return None
    base = _base(devices.pop())
    if base is None:
        return None
    tree, count = base / name, base / f"{name}.count"
    # Referees sharing the host (a test suite's several processes; a tournament's workers)
    # make and check a tree one at a time: without the lock, two making the same tree at
    # once saw each other's tree before its count was written, took it for a damaged one
    # and put it aside while the other's sandbox was binding it (its bot could not start).
    try:
        with open(base / f".{name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _intact(tree, count):
                return tree
            return _make(tree, count, name, place, members, links, hidden)
    except OSError:
        return None


def _intact(tree: Path, count: Path) -> bool:
    """Whether ``tree`` is made and holds every entry it was made with."""
    try:
        return tree.is_dir() and count.read_text() == str(_count(tree))
    except (OSError, ValueError):
        return False


def _make(
    tree: Path,
    count: Path,
    name: str,
    place: Path,
    members: tuple[Path, ...],
    links: tuple[tuple[Path, str], ...],
    hidden: tuple[Path, ...],
) -> Path:
    """Make ``tree`` (none yet, or one that lost entries: a cleaner of /var/tmp removes
    files nobody read for weeks) anew, and put it in its place whole, its count with it
    (under the caller's lock)."""
    base = tree.parent
    building = base / f".{name}.{os.getpid()}"
    # A damaged tree is put aside, not deleted: a running sandbox may have it bound.
    stale = base / f".{name}.{os.getpid()}.{time.time_ns()}.stale"
    made = base / f".{name}.count.{os.getpid()}"
    try:
        _build(building, place, _entries(members, hidden), links, hidden)
        made.write_text(str(_count(building)))
        if tree.is_dir():
            tree.rename(stale)
        building.rename(tree)
        made.replace(count)
    finally:
        made.unlink(missing_ok=True)
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)
    return tree


def _count(root: Path) -> int:
    """The entries (files, folders, links) under ``root``."""
    found = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                found += 1
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return found


def _build(
    root: Path,
    place: Path,
    entries: list[tuple[Path, os.stat_result]],
    links: tuple[tuple[Path, str], ...],
    hidden: tuple[Path, ...],
) -> None:
    as_root = os.getuid() == 0
    # Folders are made open to the referee and given their modes once full (deepest
    # first): a member's folder may be read-only.
    modes: list[tuple[Path, int, tuple[int, int]]] = []

    def folder(at: Path, mode: int = 0o755, owner: tuple[int, int] = (0, 0)) -> None:
        if not at.is_dir():
            at.mkdir(mode=0o700)
            modes.append((at, mode, owner))

    def parents(at: Path) -> None:
        # The folders between the place and a member, as bubblewrap makes them.
        for p in reversed([p for p in at.parents if within(p, [root])]):
            folder(p)

    folder(root)
    for path, st in entries:
        at = root / path.relative_to(place)
        parents(at)
        if stat.S_ISDIR(st.st_mode):
            folder(at, stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid))
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(path), at)
        elif stat.S_ISREG(st.st_mode):
            os.link(path, at, follow_symlinks=False)
    for link, target in links:
        at = root / link.relative_to(place)
        parents(at)
        if not at.is_symlink():
            os.symlink(target, at)
    for path in hidden:
        at = root / path.relative_to(place)
        parents(at)
        folder(at)
    for at, mode, owner in sorted(modes, key=lambda m: -len(m[0].parts)):
        if as_root:
            os.chown(at, *owner)
        at.chmod(mode)
