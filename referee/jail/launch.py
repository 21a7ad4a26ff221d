"""Start a bot command under resource limits: ``python -m referee.jail.launch [limits] -- CMD...``
(the referee runs it as :func:`command` says, which costs a third of that to start).

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

import ctypes
import os
import resource
import sys

_PR_SET_PDEATHSIG = 1
#: signal.SIGKILL (the signal module would import enum, a tenth of the start-up).
_SIGKILL = 9
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


#: Options taking one number each, and whether they must be given.
_NUMBERS = {
    "cpu-seconds": True,  # RLIMIT_CPU
    "memory-mb": True,  # RLIMIT_AS, unless --limits-inside
    # The bot's environment (:func:`environment_bytes`), read and closed first.
    "env-fd": True,
    # The referee's process id: gone between fork and prctl, this one's parent differs.
    "referee-pid": True,
    # Where no control group could be made, the resource limits that stand in for it.
    "nproc": False,
    "fsize-bytes": False,
}


class Arguments:
    """The launcher's arguments, as :func:`command`'s callers write them:
    ``--name=value`` items (``--limits-inside`` alone), then ``--`` and the bot command.

    Parsed by hand, not with argparse: the launcher runs before every bot, and argparse
    (with ``re``, ``enum`` and ``gettext``) would be most of its start-up."""

    #: Options that may be repeated: descriptors to keep; the bot's control group, one
    #: folder per hierarchy (referee.jail.cgroups); in the gVisor tier, each held
    #: descriptor and its place in the bundle (``FD:PLACE``), bound in a mount namespace of
    #: the launcher's own for runsc to bind in turn.
    LISTS = ("pass-fd", "cgroup", "bind-fd")

    def __init__(self, argv: list[str]) -> None:
        numbers: dict[str, int] = {}
        lists: dict[str, list[str]] = {name: [] for name in self.LISTS}
        #: The gVisor tier: the address space is left to the Sentry, which applies it to
        #: the bot (on runsc itself it would bound the application kernel's reservations).
        self.limits_inside = False
        rest = iter(argv)
        for item in rest:
            if item == "--":
                break
            name, equals, value = item.removeprefix("--").partition("=")
            if item == "--limits-inside":
                self.limits_inside = True
            elif not (item.startswith("--") and equals):
                raise _usage(f"unexpected argument {item!r}")
            elif name in self.LISTS:
                lists[name].append(value)
            elif name in _NUMBERS and value.lstrip("-").isdigit():
                numbers[name] = int(value)
            else:
                raise _usage(f"unknown option or not a number: {item!r}")
        missing = [f"--{n}" for n, required in _NUMBERS.items() if required and n not in numbers]
        if missing:
            raise _usage(f"missing {', '.join(missing)}")
        self.command = list(rest)
        if not self.command:
            raise _usage("no bot command given after --")
        self.cpu_seconds = numbers["cpu-seconds"]
        self.memory_mb = numbers["memory-mb"]
        self.env_fd = numbers["env-fd"]
        self.referee_pid = numbers["referee-pid"]
        self.nproc = numbers.get("nproc")
        self.fsize_bytes = numbers.get("fsize-bytes")
        if not all(x.isdigit() for x in lists["pass-fd"]):
            raise _usage(f"--pass-fd takes a descriptor number: {lists['pass-fd']}")
        self.pass_fd = [int(x) for x in lists["pass-fd"]]
        self.cgroup = lists["cgroup"]
        self.bind_fd = lists["bind-fd"]


def _usage(problem: str) -> SystemExit:
    """Say what is wrong with the arguments; the caller raises what this returns."""
    print(
        f"referee.jail.launch: {problem}\nusage: launch --cpu-seconds=N --memory-mb=N "
        "--env-fd=FD --referee-pid=PID [--pass-fd=FD] [--cgroup=DIR] [--nproc=N] "
        "[--fsize-bytes=N] [--bind-fd=FD:PLACE] [--limits-inside] -- COMMAND...",
        file=sys.stderr,
    )
    return SystemExit(2)


def command() -> list[str]:
    """How the referee runs this launcher: this interpreter, isolated (``-I``: nothing of
    the bot's folder or environment on its path) and without ``site`` (``-S``: the
    launcher needs the standard library alone), importing this file's folder last."""
    folder = os.path.dirname(os.path.abspath(__file__))
    boot = f"import sys; sys.path.append({folder!r}); import launch; launch.main()"
    return [sys.executable, "-I", "-S", "-c", boot]


def main(argv: list[str] | None = None) -> None:
    """Apply the limits and exec the bot command."""
    args = Arguments(sys.argv[1:] if argv is None else argv)
    command = args.command
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
            libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL)
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


def environment_bytes(env: dict[str, str]) -> bytes:
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
