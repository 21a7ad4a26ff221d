"""The sandbox every started bot runs in: a declared policy, turned into one ``bwrap`` command.

A bot the referee starts must learn nothing the rules keep from its seat, and must not
reach anything it could use to learn it: the other seats' processes, the referee's
environment, its output folder (records, logs), its database, other bots' folders, the
network. The sandbox is bubblewrap (Debian's ``bubblewrap``, the sandbox Flatpak uses).

What a bot may read, write and reach is a value, :class:`SandboxPolicy`; one function,
:func:`bwrap_command`, turns a policy into the ``bwrap`` command line. The launcher adds
no flags of its own. :meth:`Sandbox.policy` builds the policy for one bot process:

- read-only: the system (``/usr`` and the few files of ``/etc`` programs need: the dynamic
  linker's cache, TLS certificates, ``alternatives``, name service, local time; users,
  groups and host names are the sandbox's own, not the host's), the referee's interpreter
  (its prefixes, with grpcio and protobuf), the generated ``sticheln`` stubs and the referee's own package (the rules engine a bot may
  simulate with), the bot's own folder (its ``workdir``), and the paths its bot file
  declares under ``[sandbox] read``, these two bound by descriptor, never by name
  (:mod:`referee.jail.held`);
- writable: a private ``/tmp`` (a size-limited tmpfs that disappears with the process),
  which is also ``HOME``;
- reachable: only its own Unix socket at :data:`SOCKET_PATH`, served by the referee for
  this one process; the network namespace is empty (not even loopback leads anywhere);
- its own PID, IPC, UTS and cgroup namespaces (it sees no other process), and its own user
  namespace when the referee is not root; of /proc, the machine-wide key lists and kernel
  internals are masked (:data:`MASKED_PROC`), and so are the host's counters
  (:data:`HOST_COUNTERS`; ``/proc/stat``, ``meminfo``, ``loadavg`` and ``uptime`` are
  the sandbox's own, :func:`counter_files`);
- system calls: those of :data:`referee.jail.seccomp.PROFILE` (Docker's default profile,
  stricter); any other fails with ``EPERM``. Bubblewrap installs the filter just before it
  starts the bot, from a descriptor passed to it alone (:func:`bwrap_descriptors`);
- descriptors: its stdio and nothing else (the launcher closes whatever the referee was
  started with).

When the referee runs as root, bubblewrap sets the sandbox up with root's rights and then
drops the bot to an unprivileged user and group with no capabilities and
``no_new_privs``: files the referee keeps private stay unreadable to the bot even if a
path were bound by mistake. Every running bot process has a uid (and gid) of its own from
:attr:`Sandbox.uids` (:mod:`referee.jail.botusers`), so that nothing the kernel keeps per
uid is shared between two bots. The bot's folder must then be readable by others. Run as
any other user, the bot keeps the referee's uid inside a user namespace of its own, and
the filter closes the per-user state that stays visible (the key facility).

``mode = "none"`` turns all of this off for trusted bots (see :data:`MODES`); the
environment stays an allowlist (:func:`bot_environment`) either way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from referee.jail import botusers, seccomp, trees
from referee.jail.held import open_held
from referee.jail.runtime import within

if TYPE_CHECKING:
    from referee.jail.runtime import ReadSet

#: The sandbox modes: bubblewrap (the default), gvisor (an application kernel of the bot's
#: own, :mod:`referee.jail.gvisor`) or none (trusted bots only); ``strongest`` (see
#: :data:`STRONGEST`) is gvisor where this machine can run it and bubblewrap elsewhere.
MODES = ("bubblewrap", "gvisor", "none")
DEFAULT_MODE = "bubblewrap"
#: The mode that picks the strongest tier this machine has (:func:`strongest_mode`).
STRONGEST = "strongest"

#: Where a sandboxed bot finds its socket (the folder is bound read-only; a socket in it
#: can still be connected to).
SOCKET_DIR = Path("/run/sticheln")
SOCKET_PATH = SOCKET_DIR / "referee.sock"
#: The address a sandboxed bot dials (``STICHELN_REFEREE``).
SOCKET_ADDRESS = f"unix:{SOCKET_PATH}"

#: The host name inside a sandbox.
HOSTNAME = "sticheln-bot"
#: System folders bound read-only when present.
SYSTEM_DIRS = (Path("/usr"),)
#: Top-level names that are symbolic links into /usr on merged-/usr systems (and bound as
#: folders where they are real folders).
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: The parts of /etc that programs need, and nothing else of it. The users, groups and
#: host names are the sandbox's own (:func:`account_files`), not the host's.
ETC_FILES = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "host.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "os-release",
    "ssl",
)
#: The configuration folders of /etc that toolchains installed under /usr read when they
#: run (a JDK's ``java.security``, ``jvm.cfg``...): bound with the whole of /usr, for
#: build steps (a bot's ``jvm`` runtime binds its own, :mod:`referee.jail.runtime`).
TOOLCHAIN_ETC = ("java-*",)
#: Files of the sandbox's /proc that speak of the whole machine rather than the sandbox,
#: masked as Docker masks them (and /proc/key-users, which counts every uid's keys): the
#: kernel's key lists are kept per uid, not per namespace, and a non-root referee's bots
#: share its uid.
MASKED_PROC = (
    "keys",
    "key-users",
    "kcore",
    "timer_list",
    "timer_stats",
    "sched_debug",
    "latency_stats",
)
#: Files of /proc that count what the whole host does (threads, load, memory, CPU time,
#: interrupts, open files, pressure): one seat moves such a counter and another, in the
#: same match or a later one, reads it, a message past every namespace. Masked as
#: :data:`MASKED_PROC` is, but for those runtimes read (:func:`counter_files`). (Root's
#: alone to read, and so left as they are: slabinfo, vmallocinfo, pagetypeinfo.)
HOST_COUNTERS = (
    "vmstat", "diskstats", "interrupts", "softirqs", "schedstat", "zoneinfo", "buddyinfo",
    "swaps", "locks",
    "pressure/cpu", "pressure/io", "pressure/memory", "pressure/irq",
    "sys/fs/file-nr", "sys/fs/inode-nr", "sys/fs/inode-state", "sys/fs/dentry-state",
    "sys/fs/aio-nr", "sys/kernel/pty/nr",
)  # fmt: skip
#: Variables a bot inherits from the referee's environment (its locale and time zone).
PASSED_VARIABLES = ("LANG", "LANGUAGE", "TZ")
#: The system part of a bot's ``PATH``, after its interpreter's folder.
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
#: The default size of a sandboxed bot's ``/tmp``.
TMP_SIZE_MB = 64


#: bwrap found and tried, by (program, as root, PATH, filtered): one trial per process.
_CHECKED: dict[tuple[str, bool, str, bool], str] = {}


class SandboxUnavailable(RuntimeError):
    """Bubblewrap cannot make a sandbox here; the message says why and what to do, in one
    line."""


def _hatch() -> str:
    return (
        'or, for trusted bots only, run without a sandbox ([sandbox] mode = "none" in a '
        "tournament or league file, --no-sandbox for referee match and check-bot)"
    )


@dataclass(frozen=True)
class SandboxPolicy:
    """Everything one sandboxed bot process may read, write and reach, as data."""

    #: The ``bwrap`` program.
    bwrap: str
    #: The working folder inside the sandbox (the bot's folder).
    workdir: Path
    #: Paths bound read-only at the same place; each must exist.
    read_only: tuple[Path, ...] = ()
    #: Those of ``read_only`` the bot's author may change while the referee runs (its
    #: folder, what its bot file reads): held by one descriptor, opened without following
    #: links, and bound through it (:mod:`referee.jail.held`), never by name.
    held: tuple[Path, ...] = ()
    #: System paths bound read-only at the same place when they exist.
    system: tuple[Path, ...] = ()
    #: Symbolic links made in the sandbox: (link, target).
    links: tuple[tuple[Path, str], ...] = ()
    #: Folders inside a bound system path shown empty (a read-only tmpfs over them).
    hidden: tuple[Path, ...] = ()
    #: Prepared folders bound read-only as one mount each in place of the system paths,
    #: links and hidden folders inside their places (:mod:`referee.jail.trees`):
    #: (tree, place).
    trees: tuple[tuple[Path, Path], ...] = ()
    #: The runtime the system paths hold (:mod:`referee.jail.runtime`); "system": all of
    #: ``/usr`` (build steps, the trial sandbox).
    runtime: str = "system"
    #: The size of the private, writable ``/tmp``, in bytes.
    tmp_size_bytes: int = TMP_SIZE_MB << 20
    #: A host folder holding the bot's socket, bound read-only at :data:`SOCKET_DIR`.
    socket_dir: Path | None = None
    #: The (uid, gid) to drop to inside the sandbox (the referee runs as root), or None.
    run_as: tuple[int, int] | None = None
    #: The ``setpriv`` program that drops to ``run_as``.
    setpriv: str = "setpriv"
    #: A user namespace of its own (when the referee is not root).
    user_namespace: bool = True
    #: Share the host's network (never for bots; here so that the policy says it).
    network: bool = False
    #: The host name inside the sandbox.
    hostname: str = HOSTNAME
    #: Paths of the sandbox's /proc made unreadable (a device on a ``nodev`` mount: EACCES).
    masked: tuple[Path, ...] = ()
    #: The seccomp filter bubblewrap installs before it starts the bot (a compiled BPF
    #: program, :func:`referee.jail.seccomp.program`); empty: none.
    seccomp: bytes = b""
    #: Files made read-only in the sandbox from the referee's text, in place of the host's:
    #: (path, content) (:func:`account_files`).
    files: tuple[tuple[Path, bytes], ...] = ()
    #: The tier that applies the policy: ``"bubblewrap"`` on the host's kernel (this
    #: module), or ``"gvisor"`` on an application kernel of the bot's own
    #: (:mod:`referee.jail.gvisor`; ``seccomp`` and ``masked`` are then runsc's own).
    tier: str = "bubblewrap"
    #: The ``runsc`` program (the gvisor tier).
    runsc: str = "runsc"


def strongest_mode() -> str:
    """The strongest tier this machine has: ``"gvisor"`` where runsc runs here (installed,
    a root referee), else ``"bubblewrap"``. Duplicate tournaments, comparisons and a
    league's hosted bots run in it (docs/security.md)."""
    from referee.jail import gvisor

    return "bubblewrap" if gvisor.missing() else "gvisor"


def resolve_mode(mode: str) -> tuple[str, str]:
    """``mode`` as one of :data:`MODES` (``strongest`` resolved here) and, when the
    strongest tier was asked for and is missing, why, in a few words ("" otherwise)."""
    if mode != STRONGEST:
        return mode, ""
    from referee.jail import gvisor

    why = gvisor.missing()
    return ("bubblewrap", why) if why else ("gvisor", "")


def account_files(uid: int, gid: int, hostname: str) -> tuple[tuple[Path, bytes], ...]:
    """The sandbox's ``/etc/passwd``, ``/etc/group`` and ``/etc/hosts``: root, nobody and
    the bot's own user (so that a runtime asking who it is gets an answer), and the
    loopback names. The host's would tell a bot its accounts, groups and the names and
    addresses of the organiser's network."""
    users = ["root:x:0:0:root:/root:/usr/sbin/nologin"]
    groups = ["root:x:0:"]
    if uid not in (0, 65534):
        users.append(f"bot:x:{uid}:{gid}:bot:/tmp:/usr/sbin/nologin")
    if gid not in (0, 65534):
        groups.append(f"bot:x:{gid}:")
    users.append("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin")
    groups.append("nogroup:x:65534:")
    hosts = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    hosts.append(f"127.0.1.1\t{hostname}")
    return tuple(
        (Path("/etc") / name, ("\n".join(lines) + "\n").encode())
        for name, lines in (("passwd", users), ("group", groups), ("hosts", hosts))
    )


def counter_files(memory_mb: int | None = None) -> tuple[tuple[Path, bytes], ...]:
    """The sandbox's ``/proc/stat``, ``/proc/meminfo``, ``/proc/loadavg`` and
    ``/proc/uptime``, in place of the host's counters, which runtimes read: the machine's
    CPUs (the C library counts them in ``/proc/stat`` where ``/sys`` is missing, Node's
    ``os.cpus()`` lists them) with no time spent, its memory as the bot's bound
    (``memory_mb``, at most the machine's) all free, no load, no uptime. Fixed values:
    nothing another process does changes them."""
    cpus = os.cpu_count() or 1
    zeros = " ".join(["0"] * 10)
    stat = [f"cpu  {zeros}", *(f"cpu{n} {zeros}" for n in range(cpus)), "intr 0", "ctxt 0"]
    stat += [
        f"btime {_host_figure('stat', 'btime ')}",
        "processes 0",
        "procs_running 1",
        "procs_blocked 0",
    ]
    stat += ["softirq " + " ".join(["0"] * 11)]
    total_kb = _host_figure("meminfo", "MemTotal:")
    if memory_mb is not None:
        total_kb = min(total_kb, memory_mb << 10) if total_kb else memory_mb << 10
    memory = [f"{name}:{total_kb:>16} kB" for name in ("MemTotal", "MemFree", "MemAvailable")]
    memory += [f"{name}:{0:>16} kB" for name in ("Buffers", "Cached", "SwapCached", "Active")]
    memory += [f"{name}:{0:>16} kB" for name in ("Inactive", "SwapTotal", "SwapFree", "Shmem")]
    texts = {
        "stat": stat,
        "meminfo": memory,
        "loadavg": ["0.00 0.00 0.00 1/1 1"],
        "uptime": ["0.00 0.00"],
    }
    return tuple(
        (Path("/proc") / name, ("\n".join(lines) + "\n").encode()) for name, lines in texts.items()
    )


def _host_figure(name: str, key: str) -> int:
    """A fixed figure of the host's ``/proc/NAME`` (the number after ``key``: the boot
    time, the memory size); 0 when unknown."""
    with (
        contextlib.suppress(OSError, ValueError, StopIteration, IndexError),
        open(Path("/proc") / name, encoding="ascii") as f,
    ):
        return next(int(line.split()[1]) for line in f if line.startswith(key))
    return 0


def bwrap_command(
    policy: SandboxPolicy,
    command: Sequence[str],
    seccomp_fd: int | None = None,
    file_fds: Sequence[int] = (),
    held_fds: Mapping[Path, int] | None = None,
) -> list[str]:
    """The command line that runs ``command`` confined by ``policy``; ``seccomp_fd`` is the
    descriptor bubblewrap reads the policy's filter from, ``file_fds`` those it reads the
    policy's made files from, in order, ``held_fds`` those of its held paths that are
    bound (:func:`held_binds`; see :func:`bwrap_descriptors`)."""
    if bool(policy.seccomp) != (seccomp_fd is not None):
        raise ValueError("a policy's seccomp filter needs a descriptor, and only then")
    if len(file_fds) != len(policy.files):
        raise ValueError("each of a policy's made files needs a descriptor")
    held_fds = held_fds or {}
    if set(held_fds) != set(held_binds(policy)):
        raise ValueError("each bound held path needs a descriptor, and only those")
    argv = [policy.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv.append("--unshare-cgroup-try")
    if not policy.network:
        argv.append("--unshare-net")
    if policy.user_namespace:
        argv.append("--unshare-user")
    # The sandbox dies with the process that started it, and has no terminal to write to.
    argv += ["--die-with-parent", "--new-session", "--hostname", policy.hostname]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for path in policy.masked:
        argv += ["--ro-bind", "/dev/null", str(path)]
    argv += ["--perms", "1777", "--size", str(policy.tmp_size_bytes), "--tmpfs", "/tmp"]
    places = [place for _, place in policy.trees]
    system, links, hidden = untreed(policy)
    covered = [*places, *system, *(link for link, _ in links)]
    binds = outer_binds(policy)
    mounts = [*places, *system, *binds, *([SOCKET_DIR] if policy.socket_dir else [])]
    # bwrap makes missing parents of a mount point private (0700); make them 0755 first
    # (a folder under /tmp is bound into the private /tmp).
    made = [*mounts, *(link for link, _ in links)]
    for parent in [p for p in _parents(made, covered) if p != Path("/tmp")]:
        argv += ["--dir", str(parent)]
    for tree, place in policy.trees:
        argv += ["--ro-bind", str(tree), str(place)]
    for path in system:
        argv += ["--ro-bind-try", str(path), str(path)]
    for (path, _), fd in zip(policy.files, file_fds, strict=True):
        # Readable by the bot's user (bubblewrap makes them 0600, root's, otherwise).
        argv += ["--perms", "0444", "--ro-bind-data", str(fd), str(path)]
    for link, target in links:
        argv += ["--symlink", target, str(link)]
    for path in hidden:
        argv += ["--perms", "0755", "--size", "4096", "--tmpfs", str(path)]
        argv += ["--remount-ro", str(path)]
    for path in binds:
        if path in held_fds:
            argv += ["--ro-bind-fd", str(held_fds[path]), str(path)]
        else:
            argv += ["--ro-bind", str(path), str(path)]
    if policy.socket_dir is not None:
        argv += ["--ro-bind", str(policy.socket_dir), str(SOCKET_DIR)]
    argv += ["--chdir", str(policy.workdir)]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if policy.run_as is not None:
        uid, gid = policy.run_as
        # Only the rights to drop to the bot's user pass into the sandbox; setpriv gives
        # them up with root's uid, and no_new_privs keeps the bot from gaining any back.
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", policy.setpriv]
        argv += [f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all"]
        argv += ["--no-new-privs"]
    argv += ["--", *command]
    return argv


@contextlib.contextmanager
def bwrap_descriptors(
    policy: SandboxPolicy, command: Sequence[str]
) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """The ``bwrap`` command line for ``command`` and the descriptors to pass it (the
    seccomp filter's, the made files'), open until the block ends: start the process
    inside it."""
    fds: list[int] = []
    try:
        # Each one a fresh descriptor bubblewrap reads to the end, as the filter's.
        for _, data in policy.files:
            fds.append(seccomp.program_fd(data))
        filter_fd = seccomp.program_fd(policy.seccomp) if policy.seccomp else None
        if filter_fd is not None:
            fds.append(filter_fd)
        held: dict[Path, int] = {}
        for path in held_binds(policy):
            held[path] = open_held(path, folder=path == policy.workdir)
            fds.append(held[path])
        argv = bwrap_command(policy, command, filter_fd, fds[: len(policy.files)], held)
        yield argv, tuple(fds)
    finally:
        for fd in fds:
            os.close(fd)


def held_binds(policy: SandboxPolicy) -> list[Path]:
    """The held paths bound on their own (not inside another bound path)."""
    return [p for p in outer_binds(policy) if p in policy.held]


def outer_binds(policy: SandboxPolicy) -> list[Path]:
    """The read-only paths bound on their own: those not inside another one, a system
    path, a tree or a link, outer first."""
    covered = [*(p for _, p in policy.trees), *policy.system, *(k for k, _ in policy.links)]
    return _outermost(policy.read_only, covered)


def untreed(
    policy: SandboxPolicy,
) -> tuple[list[Path], list[tuple[Path, str]], list[Path]]:
    """The policy's system paths, links and hidden folders that no tree holds: each a
    mount (or link) of its own."""
    places = [place for _, place in policy.trees]
    return (
        [p for p in policy.system if not within(p, places)],
        [(k, v) for k, v in policy.links if not within(k, places)],
        [p for p in policy.hidden if not within(p, places)],
    )


def _outermost(paths: Sequence[Path], covered: Sequence[Path]) -> list[Path]:
    """``paths`` without those inside another one or inside a system path, outer first."""
    result: list[Path] = []
    for path in sorted(set(paths), key=lambda p: (len(p.parts), str(p))):
        if not within(path, [*covered, *result]):
            result.append(path)
    return result


def _parents(paths: Sequence[Path], covered: Sequence[Path]) -> list[Path]:
    """The folders above ``paths`` that bwrap would have to make, outer first."""
    found: set[Path] = set()
    for path in paths:
        for parent in path.parents:
            if parent != Path("/") and not within(parent, covered):
                found.add(parent)
    return sorted(found, key=lambda p: (len(p.parts), str(p)))


def bot_environment(
    bot_env: Mapping[str, str],
    referee_env: Mapping[str, str],
    *,
    home: str,
    referee: Mapping[str, str],
    interpreter_bin: str = "",
) -> dict[str, str]:
    """A started bot's whole environment: an allowlist, never the referee's own.

    ``PATH`` (the referee's interpreter first, then the system), ``HOME``, the locale and
    time zone (``LANG``, ``LC_*``, ``TZ``), then the bot file's ``env`` table, then the
    ``STICHELN_*`` variables the referee sets (``referee``), which nothing overrides.
    Secrets in the referee's environment (an admin token, a database password or URL) and
    its gRPC tuning (``GRPC_*``) never pass.
    """
    env = {
        "PATH": os.pathsep.join([p for p in (interpreter_bin, *SYSTEM_PATH) if p]),
        "HOME": home,
        "PYTHONUNBUFFERED": "1",
    }
    for key, value in referee_env.items():
        if key in PASSED_VARIABLES or key.startswith("LC_"):
            env[key] = value
    env.update(bot_env)
    for key in [k for k in env if k.startswith("STICHELN_")]:
        del env[key]  # the referee's say only
    env.update(referee)
    return env


def shared_paths() -> list[Path]:
    """The host paths every started bot may read, whatever its bot file says: the system
    (``/usr`` and its links, the parts of ``/etc``), the referee's interpreter and its
    packages. What a run keeps secret must not lie inside one of them
    (:func:`referee.jail.policy.check_run`)."""
    paths = [*SYSTEM_DIRS, *(Path("/etc") / name for name in ETC_FILES)]
    paths += [Path("/") / n for n in SYSTEM_LINKS if (Path("/") / n).is_dir()]
    return [Path(p).resolve() for p in (*paths, *_python_paths())]


def _toolchain_etc() -> list[Path]:
    """The folders of :data:`TOOLCHAIN_ETC` this host has."""
    found = (p for pattern in TOOLCHAIN_ETC for p in Path("/etc").glob(pattern))
    return sorted(p for p in found if p.is_dir())


def _python_paths() -> list[Path]:
    """The referee's interpreter and the packages a Python bot may import from it."""
    paths = {
        Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix) if p
    }
    # An editable install maps these packages to the source tree, outside the prefixes.
    for name in ("sticheln", "referee"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            paths.update(Path(p) for p in spec.submodule_search_locations)
    # The compiled rules engine's shared runtime, when it lives next to the packages.
    referee_spec = importlib.util.find_spec("referee")
    if referee_spec is not None and referee_spec.origin:
        root = Path(referee_spec.origin).parent.parent
        paths.update(root.glob("*__mypyc*.so"))
    return sorted(p for p in paths if p.exists())


@dataclass(frozen=True)
class Sandbox:
    """How bots the referee starts are confined: the mode, and the host facts it needs."""

    #: ``"bubblewrap"``, ``"gvisor"`` or ``"none"`` (:data:`MODES`); ``"strongest"``
    #: becomes one of the first two here (:func:`resolve_mode`).
    mode: str = DEFAULT_MODE
    #: The bubblewrap program (a name found on ``PATH``, or a path).
    bwrap: str = "bwrap"
    #: The size of each bot's ``/tmp``, in MiB.
    tmp_size_mb: int = TMP_SIZE_MB
    #: The uids (first, last) bot processes run as when the referee runs as root, one
    #: of its own for each running process (:mod:`referee.jail.botusers`).
    uids: tuple[int, int] = dataclasses.field(default_factory=botusers.configured_range)
    #: Filter system calls (:mod:`referee.jail.seccomp`); off only to measure its cost.
    filter_syscalls: bool = True
    #: The ``runsc`` program (a name found on ``PATH``, or a path), for the gvisor tier.
    runsc: str = "runsc"
    #: Why the strongest tier was asked for and a weaker one runs ("" otherwise).
    weaker_because: str = dataclasses.field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.mode not in (*MODES, STRONGEST):
            raise ValueError(
                f"sandbox mode {self.mode!r} is not allowed; allowed: "
                f"{', '.join((*MODES, STRONGEST))}"
            )
        mode, why = resolve_mode(self.mode)
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "weaker_because", why)
        botusers.check_range(self.uids)

    @property
    def enabled(self) -> bool:
        """True when bots run in a sandbox (bubblewrap or gVisor)."""
        return self.mode != "none"

    @property
    def as_root(self) -> bool:
        """The referee runs as root: each bot is dropped to a uid of its own (:meth:`lease_user`)."""
        return os.geteuid() == 0

    def describe(self) -> str:
        """One line for the start of a run."""
        if not self.enabled:
            return (
                "sandbox: none (bots run unconfined, as the referee's user, with the "
                "network; for trusted bots only)"
            )
        who = (
            f"a uid of its own from {self.uids[0]}-{self.uids[1]}"
            if self.as_root
            else "the referee's uid in a user namespace"
        )
        if self.mode == "gvisor":
            return (
                f"sandbox: gvisor (each bot process on an application kernel of its own: its "
                f"folder read-only, a private {self.tmp_size_mb} MiB /tmp, no network but its "
                f"own socket, {who})"
            )
        calls = ", system calls filtered" if self.filter_syscalls else ""
        weaker = f"; the strongest tier, gvisor, is not used: {self.weaker_because}"
        return (
            f"sandbox: bubblewrap (each bot process: its folder read-only, a private "
            f"{self.tmp_size_mb} MiB /tmp, no network but its own socket{calls}, {who})"
            f"{weaker if self.weaker_because else ''}"
        )

    def check(self) -> str:
        """The path of ``bwrap`` (``runsc`` in the gvisor tier) once a trial sandbox has
        run; raise :class:`SandboxUnavailable` in one line when none can be made here."""
        if self.mode == "gvisor":
            from referee.jail import gvisor

            absent = gvisor.missing(self.runsc)
            if absent:
                raise SandboxUnavailable(
                    f"cannot sandbox bots in gVisor: {absent}; use [sandbox] mode = "
                    '"bubblewrap" or "strongest" (gvisor where it can run, else bubblewrap)'
                )
            return shutil.which(self.runsc) or self.runsc
        key = (self.bwrap, self.as_root, os.environ.get("PATH", ""), self.filter_syscalls)
        if key in _CHECKED:
            return _CHECKED[key]
        found = shutil.which(self.bwrap)
        if found is None:
            raise SandboxUnavailable(
                f"cannot sandbox bots: bubblewrap ({self.bwrap}) is not installed; install "
                f"Debian's bubblewrap package (apt-get install bubblewrap), {_hatch()}"
            )
        if self.as_root and shutil.which("setpriv") is None:
            raise SandboxUnavailable(
                "cannot sandbox bots: setpriv is missing (Debian's util-linux package), " + _hatch()
            )
        try:
            code = seccomp.program() if self.filter_syscalls else b""
        except seccomp.SeccompUnavailable as exc:
            raise SandboxUnavailable(f"cannot sandbox bots: {exc}, {_hatch()}") from None
        try:
            lease = botusers.pool(self.uids).lease() if self.as_root else None
        except botusers.NoFreeUid as exc:
            raise SandboxUnavailable(f"cannot sandbox bots: {exc}") from None
        policy = self._base_policy(found, Path("/"), code, lease.ids if lease else None)
        try:
            with bwrap_descriptors(policy, ["/bin/true"]) as (argv, fds):
                done = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=30,
                    check=False,
                    pass_fds=fds,
                )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"cannot sandbox bots: {exc}; {_hatch()}") from None
        finally:
            if lease is not None:
                lease.release()
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()
            need = (
                "root's rights to make namespaces and mounts (CAP_SYS_ADMIN)"
                if self.as_root
                else "unprivileged user namespaces (kernel.unprivileged_userns_clone=1, "
                "user.max_user_namespaces > 0)"
            )
            raise SandboxUnavailable(
                f"cannot sandbox bots: bubblewrap failed ({why[-1] if why else done.returncode}); "
                f"it needs {need} and a seccomp/AppArmor profile that allows them, {_hatch()}"
            )
        _CHECKED[key] = found
        return found

    def _base_policy(
        self,
        bwrap: str,
        workdir: Path,
        code: bytes,
        run_as: tuple[int, int] | None,
        memory_mb: int | None = None,
    ) -> SandboxPolicy:
        links: list[tuple[Path, str]] = []
        system = list(SYSTEM_DIRS)
        for name in SYSTEM_LINKS:
            host = Path("/") / name
            if host.is_symlink():
                links.append((host, os.readlink(host)))
            elif host.is_dir():
                system.append(host)
        system += [Path("/etc") / name for name in ETC_FILES]
        return SandboxPolicy(
            bwrap=bwrap,
            workdir=workdir,
            system=tuple(system),
            links=tuple(links),
            tmp_size_bytes=self.tmp_size_mb << 20,
            run_as=run_as,
            setpriv=shutil.which("setpriv") or "setpriv",
            user_namespace=not self.as_root,
            seccomp=code,
            files=(
                *account_files(*(run_as or (os.getuid(), os.getgid())), HOSTNAME),
                *counter_files(memory_mb),
            ),
            masked=tuple(
                p for p in (Path("/proc") / n for n in (*MASKED_PROC, *HOST_COUNTERS)) if p.exists()
            ),
        )

    def lease_user(self) -> botusers.Lease | None:
        """A uid and gid for one bot process (the referee runs as root), to release once
        the process has ended; None when bots keep the referee's uid."""
        return botusers.pool(self.uids).lease() if self.as_root else None

    def policy(
        self,
        workdir: Path,
        read: Sequence[Path] = (),
        socket_dir: Path | None = None,
        user: tuple[int, int] | None = None,
        memory_mb: int | None = None,
        runtime: ReadSet | None = None,
    ) -> SandboxPolicy:
        """The policy for one bot process: its folder ``workdir``, the extra read-only
        paths its bot file declares, the folder of its socket, the (uid, gid) it runs
        as (:meth:`lease_user`; required when the referee runs as root), its memory
        bound, which its ``/proc/meminfo`` shows (:func:`counter_files`), and the runtime
        it reads (:func:`referee.jail.runtime.read_set`; None: all of ``/usr``, for build
        steps only)."""
        if self.as_root and user is None:
            raise ValueError("a referee running as root drops every bot to a uid of its own")
        if self.mode == "gvisor":
            # The bot's calls never reach the host's kernel: runsc filters its Sentry, whose
            # /proc and counters are its own (nothing to mask or make there).
            runsc = self.check()
            base = self._base_policy("bwrap", workdir, b"", user)
            files = tuple(f for f in base.files if Path("/proc") not in f[0].parents)
            base = dataclasses.replace(base, tier="gvisor", runsc=runsc, masked=(), files=files)
        else:
            code = seccomp.program() if self.filter_syscalls else b""
            run_as = user if self.as_root else None
            base = self._base_policy(self.check(), workdir, code, run_as, memory_mb)
        if runtime is None:
            read_only = [*_python_paths(), workdir, *read]
            return dataclasses.replace(
                base,
                system=(*base.system, *_toolchain_etc()),
                read_only=tuple(read_only),
                held=(workdir, *read),
                socket_dir=socket_dir,
            )
        links = dict(base.links)
        system = [Path("/etc") / name for name in ETC_FILES]
        extra = [runtime]
        if base.run_as is not None:  # setpriv drops the bot to its user inside the sandbox
            extra.append(_setpriv_reads(base.setpriv))
        for reads in extra:
            system += [p for p in reads.binds if p not in system]
        for reads in extra:  # a link inside a bound folder is there already
            links.update((k, v) for k, v in reads.links if not within(k, [*system, *links]))
        # The sandbox's other mounts, which no tree may hold.
        others = [workdir, *read, SOCKET_DIR, *(f for f, _ in base.files), *base.masked]
        others += [Path("/tmp"), Path("/proc"), Path("/dev")]
        return dataclasses.replace(
            base,
            system=tuple(system),
            links=tuple(links.items()),
            hidden=runtime.hidden,
            trees=trees.gather(system, tuple(links.items()), runtime.hidden, others),
            runtime=runtime.runtime,
            read_only=(workdir, *read),
            held=(workdir, *read),
            socket_dir=socket_dir,
        )


@functools.cache
def _setpriv_reads(setpriv: str) -> ReadSet:
    from referee.jail.runtime import assemble

    return assemble("native", (), [Path(setpriv)])


def bot_path() -> str:
    """The ``PATH`` a started bot gets (:func:`bot_environment`)."""
    return os.pathsep.join([os.path.dirname(sys.executable), *SYSTEM_PATH])


def unreadable(policy: SandboxPolicy, uids: tuple[int, int]) -> str:
    """Why a bot running as one of ``uids`` could not read its folder in the jail
    ``policy`` makes, in one line; "" when it can.

    Judged on what the jail shows, not on the host: a folder above the bot's that no mount
    covers is made by bubblewrap (0755), whatever its mode on the host (a clone under a
    0700 ``/root`` is fine). Only the bot's folder and the folders above it inside a bound
    path keep their modes; the outermost of them that is closed to others is named.
    """
    folder = policy.workdir
    covered = [*policy.system, *(link for link, _ in policy.links)]
    shown = [*covered, *_outermost(policy.read_only, covered)]
    blocked = None
    try:
        for path in [*reversed(folder.parents), folder]:
            # The bot's folder must be listed and entered; a folder above it, entered.
            need = stat.S_IXOTH | (stat.S_IROTH if path == folder else 0)
            if within(path, shown) and path.stat().st_mode & need != need:
                blocked = path
                break
    except OSError as exc:
        return f"bot folder {folder}: {exc.strerror}"
    if blocked is None:
        return ""
    where, fix = (
        ("it is", f"chmod -R o+rX {folder}")
        if blocked == folder
        else (f"the folder above it, {blocked}, is", f"chmod o+x {blocked}")
    )
    return (
        f"bot folder {folder} cannot be read by the bot: bots run as uids {uids[0]}-{uids[1]} "
        f"and {where} closed to others ({fix})"
    )
