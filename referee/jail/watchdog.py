"""A watchdog that kills every bot's process group once the referee process is gone,
however it went (SIGKILL and out-of-memory kills included).

Each started bot leads a process group of its own. ``PR_SET_PDEATHSIG`` (set by
:mod:`referee.jail.launch`) kills only the process the referee started: a bot's
children live on, and so does a sandbox whose set-up was cut short (bubblewrap's pid-1
process waits for a parent that is gone, without its own death signal yet). The
watchdog closes both gaps. It is a small separate process, started with the first bot,
that reads the process groups to guard from a pipe (``+PGID`` when a bot starts,
``-PGID`` once it has been stopped) and the folders to remove (the referee's private
socket folders) and the referee's cgroups (:mod:`referee.jail.cgroups`: every
process left in them is killed, then they are removed). The kernel closes the pipe when the referee ends, and at end of file the
watchdog kills every group it still guards, removes those folders, and exits.

The pipe's write end is close-on-exec, so no bot inherits it (a bot holding it open
would keep the watchdog waiting). The watchdog has a session of its own and ignores
SIGINT, SIGTERM and SIGHUP: a Ctrl-C or a container's SIGTERM to every process must not
end it before the referee.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

#: The watchdog's whole program (run by ``python -I -S -c``, so that it starts in a few
#: milliseconds and imports nothing of the referee).
PROGRAM = """
import os, shutil, signal, sys, time
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
guarded = set()
folders = set()
cgroups = set()
for line in sys.stdin.buffer:
    kind, what = line[:1], line[1:-1]
    if kind in b"+-":
        try:
            pgid = int(what)
        except ValueError:
            continue
        (guarded.add if kind == b"+" else guarded.discard)(pgid)
    elif kind in b"df" and what:
        (folders.add if kind == b"d" else folders.discard)(what)
    elif kind in b"cu" and what:
        (cgroups.add if kind == b"c" else cgroups.discard)(what)
for pgid in guarded:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
for folder in folders:
    shutil.rmtree(folder, ignore_errors=True)
for tree in cgroups:
    for group, _, _ in sorted(os.walk(tree), key=lambda w: -len(w[0])):
        for _ in range(1000):
            try:
                with open(os.path.join(group, b"cgroup.kill"), "wb") as f:
                    f.write(b"1")
            except OSError:
                pass
            try:
                with open(os.path.join(group, b"cgroup.procs"), "rb") as f:
                    pids = [int(p) for p in f.read().split()]
            except (OSError, ValueError):
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.rmdir(group)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.005)
"""

_lock = threading.Lock()
_watchdog: subprocess.Popen[bytes] | None = None
_owner = 0  # the pid that started it: a forked child starts its own


def _running() -> subprocess.Popen[bytes]:
    global _watchdog, _owner
    if _watchdog is None or _owner != os.getpid() or _watchdog.poll() is not None:
        _watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", PROGRAM],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _owner = os.getpid()
        atexit.register(_close)
    return _watchdog


def _close() -> None:
    """At a normal exit: close the pipe (the watchdog kills what is left and ends)."""
    if _watchdog is not None and _owner == os.getpid():
        assert _watchdog.stdin is not None
        with contextlib.suppress(OSError):
            _watchdog.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            _watchdog.wait(5)


def _send(line: bytes) -> None:
    with _lock:
        watchdog = _running()
        assert watchdog.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            watchdog.stdin.write(line)
            watchdog.stdin.flush()


def guard(pgid: int) -> None:
    """Kill process group ``pgid`` if this process ends before :func:`release`."""
    _send(b"+%d\n" % pgid)


def release(pgid: int) -> None:
    """Stop guarding ``pgid`` (its processes have been stopped)."""
    if _watchdog is not None and _owner == os.getpid():
        _send(b"-%d\n" % pgid)


def remove_on_exit(folder: Path) -> None:
    """Remove ``folder`` (the referee's private sockets) if this process ends before
    :func:`forget`."""
    _send(b"d" + _line(folder))


def forget(folder: Path) -> None:
    """``folder`` has been removed by its owner."""
    if _watchdog is not None and _owner == os.getpid():
        _send(b"f" + _line(folder))


def remove_cgroup_on_exit(subtree: Path) -> None:
    """Kill every process in the cgroup ``subtree`` and remove it (the referee's bots'
    groups) if this process ends before :func:`forget_cgroup`."""
    _send(b"c" + _line(subtree))


def forget_cgroup(subtree: Path) -> None:
    """``subtree`` has been removed by its owner."""
    if _watchdog is not None and _owner == os.getpid():
        _send(b"u" + _line(subtree))


def _line(folder: Path) -> bytes:
    name = os.fsencode(folder.resolve())
    if b"\n" in name:
        raise ValueError(f"{folder}: a folder name with a line break cannot be guarded")
    return name + b"\n"


def watchdog_pid() -> int | None:
    """The watchdog's process id, if this process has started one (for tests)."""
    return _watchdog.pid if _watchdog is not None and _owner == os.getpid() else None
