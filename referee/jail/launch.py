"""Start a bot command under resource limits: ``python -m referee.jail.launch [limits] -- CMD...``.

The referee starts every command bot through this small launcher, which joins the bot's
control group (made by :mod:`referee.jail.cgroups`), sets the limits on itself, closes
every descriptor but stdio and those it is told to pass on, and then replaces itself with
the bot (``exec``), so the group and the limits apply to the bot and everything it
starts. Doing it here rather than in a ``preexec_fn`` keeps the referee's own (threaded)
process safe; closing the descriptors here covers every way the referee may spawn it (an
event loop's ``close_fds`` is not to be relied on: uvloop's let the referee's inherited
descriptors through). On Linux the bot is also killed if the referee
dies (``PR_SET_PDEATHSIG``); what the bot started itself, and a sandbox cut short while
it was being set up, are killed by :mod:`referee.jail.watchdog`, so even a referee
killed with SIGKILL leaves no bot behind.

The launcher runs as the referee's user (root, often), outside the sandbox, so it starts
with an environment of its own (:data:`ENVIRONMENT`), never the bot's: what a bot's
environment names (a ``TZ`` or a locale that is a path, opened when Python starts) is
opened by no process outside the jail. The environment of the command it execs comes on
a descriptor (``--env-fd``, ``NAME=value`` items ended by NUL bytes): for a sandboxed bot
a fixed one again, bubblewrap's or runsc's (the bot's own reaches bubblewrap on a
descriptor of its own, ``--args``, and only the process it starts inside the sandbox gets
it; runsc finds it in the bot's bundle); without a sandbox, the bot's.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import signal
import sys
from collections.abc import Mapping

_PR_SET_PDEATHSIG = 1
#: The launcher's own environment (the referee starts it with this one, whatever the bot's).
ENVIRONMENT = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}
#: Limits every bot gets whatever the host grants the referee (``docker run --ulimit``,
#: systemd's ``LimitNICE=``): no core dump (handed to the host's core handler, it costs
#: the host's disk and CPU), and no priority above the other seats' (a nice value below
#: 0, a real-time scheduling class that would starve them). Hard limits: the bot cannot
#: raise them again.
ZERO_LIMITS = (resource.RLIMIT_CORE, resource.RLIMIT_NICE, resource.RLIMIT_RTPRIO)
#: Above every descriptor a process can hold (os.closerange uses close_range(2) when the
#: kernel has it, so the size of the range costs nothing).
_MAX_FD = 1 << 20


def main(argv: list[str] | None = None) -> None:
    """Apply the limits and exec the bot command."""
    parser = argparse.ArgumentParser(prog="python -m referee.jail.launch")
    parser.add_argument("--cpu-seconds", type=int, required=True)
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--pass-fd", type=int, action="append", default=[])
    # The bot's environment (:func:`environment_bytes`), read and closed before anything else.
    parser.add_argument("--env-fd", type=int, required=True)
    # The referee's process id: gone between fork and prctl, this process's parent differs.
    parser.add_argument("--referee-pid", type=int, required=True)
    # The bot's control group, one folder per hierarchy (referee.jail.cgroups) ...
    parser.add_argument("--cgroup", action="append", default=[])
    # ... or, where none could be made, the resource limits that stand in for it.
    parser.add_argument("--nproc", type=int)
    parser.add_argument("--fsize-bytes", type=int)
    # The gVisor tier (referee.jail.gvisor): bind each held descriptor at its place in the
    # bundle, in a mount namespace of the launcher's own, for runsc to bind in turn ...
    parser.add_argument("--bind-fd", action="append", default=[], metavar="FD:PLACE")
    # ... and leave the address space to the Sentry, which applies it to the bot (on
    # runsc itself it would bound the application kernel's reservations, not the bot).
    parser.add_argument("--limits-inside", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no bot command given after --")
    env = read_environment(args.env_fd)
    if args.bind_fd:
        try:
            bind_held([_fd_place(x) for x in args.bind_fd])
        except OSError as exc:
            print(f"referee.jail.launch: cannot bind a held path: {exc}", file=sys.stderr)
            sys.exit(125)
    close_inherited(args.pass_fd)
    # Into the bot's group before anything of the bot runs or forks.
    for folder in args.cgroup:
        try:
            with open(os.path.join(folder, "cgroup.procs"), "w", encoding="ascii") as f:
                f.write(str(os.getpid()))
        except OSError as exc:
            print(f"referee.jail.launch: cannot join {folder}: {exc.strerror}", file=sys.stderr)
            sys.exit(125)
    if args.nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (args.nproc, args.nproc))
    if args.fsize_bytes is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize_bytes, args.fsize_bytes))
    for limit in ZERO_LIMITS:
        resource.setrlimit(limit, (0, 0))
    # CPU time per process: in the gVisor tier the Sentry and each stub process that runs
    # the bot's code inherit it (runsc does not apply the bot's RLIMIT_CPU itself).
    resource.setrlimit(resource.RLIMIT_CPU, (args.cpu_seconds, args.cpu_seconds + 5))
    if not args.limits_inside:
        memory = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            # The referee may already be gone between fork and prctl: this process then has
            # another parent (init, or a subreaper). Not "is the parent 1": in a container
            # the referee itself is often process 1.
            if os.getppid() != args.referee_pid:
                sys.exit(1)
        except OSError:
            pass
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        print(f"referee.jail.launch: cannot start {command[0]!r}: {exc.strerror}", file=sys.stderr)
        sys.exit(127)


def environment_bytes(env: Mapping[str, str]) -> bytes:
    """``env`` as the launcher reads it from ``--env-fd``: ``NAME=value`` items, each ended
    by a NUL byte (no name or value holds one: an environment cannot)."""
    return b"".join(
        f"{key}={value}".encode("utf-8", "surrogateescape") + b"\0" for key, value in env.items()
    )


def read_environment(fd: int) -> dict[str, str]:
    """The environment on descriptor ``fd`` (read to its end, then closed)."""
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    env = {}
    for item in data.split(b"\0"):
        if item:
            key, _, value = item.decode("utf-8", "surrogateescape").partition("=")
            env[key] = value
    return env


_CLONE_NEWNS = 0x20000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV = 1, 2, 4
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
#: open_tree(2) and move_mount(2): the same number on every architecture (Linux 5.2).
_OPEN_TREE, _MOVE_MOUNT = 428, 429
_OPEN_TREE_CLONE, _AT_EMPTY_PATH, _MOVE_MOUNT_F_EMPTY_PATH = 1, 0x1000, 4


def _fd_place(text: str) -> tuple[int, str]:
    fd, _, place = text.partition(":")
    return int(fd), place


def bind_held(binds: list[tuple[int, str]]) -> None:
    """In a mount namespace of this process's own (nothing propagates to the host's),
    bind each descriptor read-only at its place, then close it: what runsc binds by name
    is then what the referee checked through the descriptor (:mod:`referee.jail.held`).

    Each descriptor's mount is copied (``open_tree``) while still in the host's namespace,
    where it lives (a bind across namespaces is refused), and attached (``move_mount``)
    once in the new one."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def call(result: int, what: str) -> int:
        if result < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")
        return result

    flags = _OPEN_TREE_CLONE | _AT_EMPTY_PATH | os.O_CLOEXEC
    trees = [
        (call(libc.syscall(_OPEN_TREE, fd, b"", flags), f"copy {place}"), fd, place)
        for fd, place in binds
    ]
    call(libc.unshare(_CLONE_NEWNS), "unshare")
    call(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "private mounts")
    for tree, fd, place in trees:
        target = place.encode()
        attach = libc.syscall(_MOVE_MOUNT, tree, b"", -100, target, _MOVE_MOUNT_F_EMPTY_PATH)
        call(attach, f"bind {place}")
        remount = _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
        call(libc.mount(None, target, None, remount, None), f"read-only {place}")
        os.close(tree)
        os.close(fd)


def close_inherited(keep: list[int]) -> None:
    """Close every descriptor above stdio but ``keep`` (the sandbox's seccomp filter): a
    bot gets its stdio and nothing the referee was started with or opened (an inherited
    descriptor of a file the bot could not open itself, the referee's own pipes)."""
    low = 3
    for fd in sorted({fd for fd in keep if fd >= low}):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, _MAX_FD)


if __name__ == "__main__":
    main()
