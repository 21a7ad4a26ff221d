"""Bounds per bot, not per process: a control group for each started bot's process tree.

Resource limits (``setrlimit``) hold per process: a bot that forks gets a fresh allowance
for every child. A control group holds for the whole tree, children included, which is how
systems trusted with strangers' code bound it (CMS's ``isolate``, nsjail, Docker). Each
started bot gets one group with

- ``pids.max``: how many processes and threads it may have at once (a fork bomb stops
  there, and only its own forks fail);
- ``memory.max`` with swap at zero (cgroup v1: ``memory.limit_in_bytes`` and
  ``memory.memsw.limit_in_bytes``): its whole memory, children and its ``/tmp`` included;
  past it the kernel kills inside that group alone (cgroup v2 kills the whole group);
- a CPU weight equal to every other bot's and a quota (``cpu.max``; v1 ``cpu.shares`` and
  ``cpu.cfs_quota_us``): however many children spin, the bot gets no more than its quota
  and weighs as one process. Where the group has the ``cpu`` controller it sits beside the
  referee's subtree, not in it (:meth:`Cgroups._folder`): in one subtree all bots share
  one entity of the scheduler, and a bot whose children spin uses up its time, so that an
  honest bot woken for a decision waits behind it.

What is written where is data (:func:`settings`, from a bot's
:class:`~referee.jail.bots.Limits`), tested on its own; :class:`Cgroups` is the one place
that applies it. The referee makes its groups under its own, in a subtree named for its
process (``sticheln-referee-PID-TOKEN``: a process number alone is not unique where
referees run in PID namespaces of their own, as in containers); the bot's launcher
(:mod:`referee.jail.launch`) moves itself into the bot's group before it starts bubblewrap, so nothing of the bot runs
outside it. A bot's group is emptied and removed when the bot has ended, and the
:mod:`~referee.jail.watchdog` removes what is left when the referee is killed.

cgroup v2 is used where the referee's group has the memory and pids controllers delegated;
otherwise cgroup v1, where that is what the host mounts. Where neither can be made (no
permission, nothing mounted), :func:`system` says so in one line and the launcher falls
back to resource limits that still hold (``RLIMIT_NPROC`` for the bot's user,
``RLIMIT_FSIZE``, besides ``RLIMIT_AS`` and ``RLIMIT_CPU``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import itertools
import os
import secrets
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from referee.jail.botlog import BotLog

if TYPE_CHECKING:
    from referee.jail.bots import Limits
    from referee.jail.sandbox import SandboxPolicy

#: Where the referee looks for the control group file systems.
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Set to a folder to look for cgroup file systems there instead (a folder that holds no
#: usable cgroup forces the fallback: for tests and for hosts where cgroups must stay
#: untouched).
ROOT_VARIABLE = "STICHELN_CGROUP_ROOT"
#: The controllers a bot's group must have (without them: the fallback).
REQUIRED = ("memory", "pids")
#: Controllers used when present.
OPTIONAL = ("cpu",)
#: The scheduler's period for the CPU quota, in microseconds.
CPU_PERIOD_US = 100_000
#: The CPU weight of one bot (cgroup v2 ``cpu.weight``; v1 ``cpu.shares`` is 1024 times
#: this over 100): every bot the same.
CPU_WEIGHT = 100


@dataclass(frozen=True)
class Setting:
    """One value written into one file of a bot's control group."""

    #: The controller the file belongs to (``memory``, ``pids``, ``cpu``).
    controller: str
    #: The file name inside the group's folder.
    file: str
    #: What is written.
    value: str
    #: False for a file some kernels lack (swap accounting): skipped when absent.
    required: bool = True


def settings(limits: Limits, version: int) -> tuple[Setting, ...]:
    """What a bot's control group holds for ``limits``, for cgroup ``version`` (1 or 2), in
    the order it is written."""
    memory = str(limits.memory_mb << 20)
    # cpus = 0: no quota ("max" on v2, -1 on v1); the weight alone shares the CPUs.
    quota = round(limits.cpus * CPU_PERIOD_US) if limits.cpus > 0 else None
    if version == 2:
        return (
            Setting("memory", "memory.max", memory),
            Setting("memory", "memory.swap.max", "0", required=False),
            # Out of memory, the whole bot ends (not one of its children at random).
            Setting("memory", "memory.oom.group", "1", required=False),
            Setting("pids", "pids.max", str(limits.processes)),
            Setting("cpu", "cpu.weight", str(CPU_WEIGHT)),
            Setting("cpu", "cpu.max", f"{'max' if quota is None else quota} {CPU_PERIOD_US}"),
        )
    if version == 1:
        return (
            Setting("memory", "memory.limit_in_bytes", memory),
            # memory and swap together, no higher than memory alone: no swapping out of it.
            Setting("memory", "memory.memsw.limit_in_bytes", memory, required=False),
            Setting("pids", "pids.max", str(limits.processes)),
            Setting("cpu", "cpu.shares", str(CPU_WEIGHT * 1024 // 100)),
            Setting("cpu", "cpu.cfs_period_us", str(CPU_PERIOD_US)),
            Setting("cpu", "cpu.cfs_quota_us", str(-1 if quota is None else quota)),
        )
    raise ValueError(f"cgroup version {version} is not 1 or 2")


#: The referee's own time slice with the scheduler (EEVDF, Linux 6.12 and later), in
#: nanoseconds: the shortest the kernel accepts. A task with a short slice gets an early
#: deadline when it wakes, so the referee, woken by a bot's answer, preempts a bot whose
#: children spin at once instead of after the spinner's slice; it gets no more CPU time
#: for it, only sooner.
REFEREE_SLICE_NS = 100_000
#: ``sched_setattr``'s system call number per machine (the C library has no wrapper).
SCHED_SETATTR = {"x86_64": 314, "aarch64": 274, "riscv64": 274, "i686": 351, "armv7l": 380}


class _SchedAttr(ctypes.Structure):
    _fields_ = [  # the kernel's struct sched_attr
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
    ]


_SLICED: set[tuple[int, int]] = set()


def shorten_own_slice(slice_ns: int = REFEREE_SLICE_NS) -> bool:
    """Give the calling thread of the referee (and the threads it starts later) the time
    slice ``slice_ns`` at its present nice value, once per thread; False where the kernel or
    the machine cannot (the referee runs on at the default slice)."""
    key = (os.getpid(), threading.get_native_id())
    if key in _SLICED:
        return True
    number = SCHED_SETATTR.get(os.uname().machine)
    if number is None:
        return False
    attr = _SchedAttr(
        size=ctypes.sizeof(_SchedAttr),
        sched_policy=os.SCHED_OTHER,
        sched_nice=os.getpriority(os.PRIO_PROCESS, 0),
        sched_runtime=slice_ns,
    )
    if ctypes.CDLL(None, use_errno=True).syscall(number, 0, ctypes.byref(attr), 0) != 0:
        return False
    _SLICED.add(key)
    return True


class CgroupUnavailable(OSError):
    """No control group can be made here; the message says why, in one line."""


@dataclass(frozen=True)
class Hierarchy:
    """One mounted cgroup hierarchy the referee uses: where its own group is, and which of
    the controllers it serves."""

    #: The referee's own group in this hierarchy (a folder).
    own: Path
    #: The controllers it serves, of :data:`REQUIRED` and :data:`OPTIONAL`.
    controllers: tuple[str, ...]


def _mounts(root: Path) -> list[tuple[Path, Path, str, set[str]]]:
    """The cgroup mounts under ``root``: (mount point, mount root, type, controllers)."""
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if len(fields) < 5 or len(after) < 3 or after[0] not in ("cgroup", "cgroup2"):
            continue
        point = Path(fields[4].replace("\\040", " "))
        if point != root and root not in point.parents:
            continue
        options = set(after[2].split(","))
        found.append((point, Path(fields[3]), after[0], options))
    return found


def _own_groups() -> dict[str, str]:
    """The referee's group per hierarchy: ``controllers`` (``""`` for v2) -> path."""
    groups = {}
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f.read().splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3:
                groups[parts[1]] = parts[2]
    return groups


def _within(mount_point: Path, mount_root: Path, path: str) -> Path | None:
    rel = Path(path)
    try:
        inside = rel.relative_to(mount_root)
    except ValueError:
        return None
    folder = mount_point / inside
    return folder if folder.is_dir() else None


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(value)


def _v2(root: Path) -> list[Hierarchy]:
    own = _own_groups().get("")
    if own is None:
        raise CgroupUnavailable("no cgroup v2 group")
    for point, mount_root, kind, _ in _mounts(root):
        if kind != "cgroup2":
            continue
        folder = _within(point, mount_root, own)
        if folder is None:
            continue
        available = set((folder / "cgroup.controllers").read_text().split())
        missing = [c for c in REQUIRED if c not in available]
        if missing:
            raise CgroupUnavailable(
                f"cgroup v2 group {folder} has no {', '.join(missing)} controller delegated"
            )
        used = tuple(c for c in (*REQUIRED, *OPTIONAL) if c in available)
        return [Hierarchy(folder, used)]
    raise CgroupUnavailable("no cgroup v2 file system mounted")


def _v1(root: Path) -> list[Hierarchy]:
    own = _own_groups()
    hierarchies: list[Hierarchy] = []
    for point, mount_root, kind, options in _mounts(root):
        if kind != "cgroup":
            continue
        serves = tuple(c for c in (*REQUIRED, *OPTIONAL) if c in options)
        if not serves:
            continue
        path = next((p for key, p in own.items() if set(key.split(",")) & set(serves)), None)
        folder = _within(point, mount_root, path) if path is not None else None
        if folder is not None:
            hierarchies.append(Hierarchy(folder, serves))
    served = {c for h in hierarchies for c in h.controllers}
    missing = [c for c in REQUIRED if c not in served]
    if missing:
        raise CgroupUnavailable(f"no cgroup v1 {', '.join(missing)} hierarchy mounted")
    return hierarchies


class BotCgroup:
    """One bot's control group (a folder per hierarchy), made before the bot starts."""

    def __init__(self, system: Cgroups, folders: Sequence[Path], limits: Limits) -> None:
        self.system = system
        #: The group's folder in each hierarchy (the launcher joins each).
        self.folders = tuple(folders)
        self.limits = limits
        self._closed = False
        self._oom_kills = 0
        self._oom_event: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _file(self, controller: str, name: str) -> Path | None:
        for hierarchy, folder in zip(self.system.hierarchies, self.folders, strict=True):
            if controller in hierarchy.controllers:
                return folder / name
        return None

    def oom_kills(self) -> int:
        """How many of the bot's processes the kernel killed at its memory limit."""
        if self._closed:
            return self._oom_kills
        return max(self._oom_kills, self._counted_oom_kills())

    def _counted_oom_kills(self) -> int:
        name = "memory.events" if self.system.version == 2 else "memory.oom_control"
        path = self._file("memory", name)
        with contextlib.suppress(OSError, ValueError):
            if path is not None:
                for line in path.read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return 0

    def describe_end(self) -> str:
        """Why the kernel ended the bot, when its bounds did ("" otherwise)."""
        if self.oom_kills():
            return f"killed: memory limit {self.limits.memory_mb} MiB"
        return ""

    def processes(self) -> list[int]:
        """The processes in the group now."""
        return _procs(self.folders)

    def end_whole_on_oom(self) -> None:
        """Out of memory, end the whole bot, not one of its processes (cgroup v2 does so by
        itself, ``memory.oom.group``; on v1 the kernel signals an eventfd the referee's
        event loop watches)."""
        control = self._file("memory", "memory.oom_control")
        events = self._file("memory", "cgroup.event_control")
        if self.system.version != 1 or control is None or events is None:
            return
        event = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        try:
            watched = os.open(control, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _write(events, f"{event} {watched}")
            finally:
                os.close(watched)  # the kernel holds what it needs
        except OSError:
            os.close(event)
            return
        self._oom_event = event
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(event, self._out_of_memory)

    def _out_of_memory(self) -> None:
        # The kernel may not have killed anything yet (the referee is told first).
        self._oom_kills = max(self._oom_kills, 1)
        if self._oom_event is not None:
            with contextlib.suppress(OSError):
                os.eventfd_read(self._oom_event)
        for _ in range(10):  # a process forking meanwhile is caught on the next pass
            pids = self.processes()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def _unwatch(self) -> None:
        if self._oom_event is not None:
            if self._loop is not None:
                self._loop.remove_reader(self._oom_event)
            os.close(self._oom_event)
            self._oom_event = None

    async def close(self) -> None:
        """Kill whatever is left in the group and remove it."""
        if self._closed:
            return
        self._oom_kills = self.oom_kills()
        self._closed = True
        self._unwatch()
        await _empty_and_remove(self.folders)
        self.system.released(self)

    def discard(self) -> None:
        """Remove the group at once (no bot was started in it)."""
        self._closed = True
        self._unwatch()
        empty_and_remove(self.folders)
        self.system.released(self)


def _procs(folders: Sequence[Path]) -> list[int]:
    pids: set[int] = set()
    for folder in folders:
        with contextlib.suppress(OSError, ValueError):
            pids.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
    return sorted(pids)


def kill_and_remove(folders: Sequence[Path]) -> bool:
    """One pass at ending a group (one folder per hierarchy): kill every process in it,
    then try to remove it. True once it is gone (or cannot be removed at all); a process
    that forked while the others were killed is caught by the next pass, and the group's
    ``pids.max`` bounds how many there can be."""
    for folder in folders:
        with contextlib.suppress(OSError):
            _write(folder / "cgroup.kill", "1")  # cgroup v2: the kernel kills them all
    for pid in _procs(folders):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    gone = True
    for folder in folders:
        try:
            folder.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            gone = gone and exc.errno != errno.EBUSY  # busy: still being torn down
    return gone


def empty_and_remove(folders: Sequence[Path], deadline_s: float = 5.0) -> None:
    """Kill every process in ``folders`` and remove them, waiting up to ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while not kill_and_remove(folders) and time.monotonic() < end:
        time.sleep(0.005)  # the killed processes are still being torn down


async def _empty_and_remove(folders: Sequence[Path], deadline_s: float = 5.0) -> None:
    end = time.monotonic() + deadline_s
    while not kill_and_remove(folders) and time.monotonic() < end:
        await asyncio.sleep(0.005)  # the killed processes are still being torn down


_INSTANCE: dict[int, str] = {}


def instance() -> str:
    """This process's part of its group names: its process number and a random token.

    The number alone collides where referees share a cgroup file system but not a PID
    namespace (two containers, or two referees each started as process 1 of its own
    namespace): both would be ``sticheln-referee-1``, and the second's first bot would
    fail with "File exists"."""
    pid = os.getpid()
    if pid not in _INSTANCE:
        _INSTANCE[pid] = f"{pid}-{secrets.token_hex(4)}"
    return _INSTANCE[pid]


class Cgroups:
    """The referee's subtree of control groups, and the one place bots' bounds are applied."""

    def __init__(self, version: int, hierarchies: Sequence[Hierarchy]) -> None:
        #: 1 or 2.
        self.version = version
        self.hierarchies = tuple(hierarchies)
        #: The referee's subtree in each hierarchy (made with the first bot's group).
        self.subtrees = tuple(h.own / f"sticheln-referee-{instance()}" for h in hierarchies)
        self._made = False
        self._numbers = itertools.count(1)

    @property
    def controllers(self) -> tuple[str, ...]:
        """Every controller in use."""
        return tuple(c for h in self.hierarchies for c in h.controllers)

    def describe(self) -> str:
        """One line for the start of a run."""
        return (
            f"bounds: a cgroup v{self.version} group per bot "
            f"({', '.join(sorted(self.controllers))}) under {self.subtrees[0].parent}"
        )

    def _make_subtree(self) -> None:
        from referee.jail import watchdog  # the watchdog imports nothing of this module

        for hierarchy, subtree in zip(self.hierarchies, self.subtrees, strict=True):
            subtree.mkdir(exist_ok=True)
            watchdog.remove_cgroup_on_exit(subtree)
            if self.version == 2:
                _write(
                    subtree / "cgroup.subtree_control",
                    " ".join(f"+{c}" for c in hierarchy.controllers),
                )
        self._made = True

    def make(self, limits: Limits) -> BotCgroup:
        """A new, empty group for one bot, with ``limits`` written into it (raises
        :class:`OSError` when the kernel refuses)."""
        if not self._made:
            self._make_subtree()
        from referee.jail import watchdog  # the watchdog imports nothing of this module

        name = f"bot-{next(self._numbers)}"
        folders = [
            self._folder(hierarchy, subtree, name)
            for hierarchy, subtree in zip(self.hierarchies, self.subtrees, strict=True)
        ]
        for folder in folders:
            folder.mkdir()
            if folder.parent not in self.subtrees:
                watchdog.remove_cgroup_on_exit(folder)
        group = BotCgroup(self, folders, limits)
        try:
            for setting in settings(limits, self.version):
                path = group._file(setting.controller, setting.file)
                if path is None:
                    continue  # a controller this host does not offer (cpu)
                if not setting.required and not path.exists():
                    continue
                _write(path, setting.value)
        except OSError:
            group.discard()
            raise
        return group

    @staticmethod
    def _folder(hierarchy: Hierarchy, subtree: Path, name: str) -> Path:
        """Where a bot's group goes in ``hierarchy``: under the referee's subtree, except
        where the group has the CPU controller. There it goes beside the subtree, so that
        the scheduler weighs each bot on its own against the referee and the host's other
        processes: under one subtree, a bot whose children spin would use up the share of
        the whole subtree, and an honest bot woken for a decision would wait for it."""
        if "cpu" in hierarchy.controllers:
            return subtree.parent / f"{subtree.name}-{name}"
        return subtree / name

    def released(self, group: BotCgroup) -> None:
        """``group`` has been removed."""
        from referee.jail import watchdog

        for folder in group.folders:
            if folder.parent not in self.subtrees:
                watchdog.forget_cgroup(folder)


def _probe(root: Path) -> Cgroups:
    """The referee's cgroups under ``root``, after a trial group was made and removed."""
    errors = []
    for version, find in ((2, _v2), (1, _v1)):
        try:
            hierarchies = find(root)
        except (CgroupUnavailable, OSError) as exc:
            errors.append(str(exc))
            continue
        system = Cgroups(version, hierarchies)
        trial = [h.own / f"sticheln-trial-{instance()}" for h in hierarchies]
        try:
            for folder in trial:
                folder.mkdir(exist_ok=True)
        except OSError as exc:
            errors.append(f"cannot make a cgroup v{version} group in {trial[0].parent}: {exc}")
            empty_and_remove(trial)
            continue
        empty_and_remove(trial)
        if version == 2:
            try:
                _enable(hierarchies[0])
            except OSError as exc:
                errors.append(
                    f"cannot delegate {', '.join(hierarchies[0].controllers)} below "
                    f"{hierarchies[0].own}: {exc.strerror}"
                )
                continue
        return system
    raise CgroupUnavailable("; ".join(errors) or "no cgroup file system")


def _enable(hierarchy: Hierarchy) -> None:
    """Turn the controllers on for the children of the referee's own v2 group.

    A v2 group other than the root that holds processes cannot pass controllers on ("no
    internal processes"). Where the referee is the only process of its group (a container
    whose first process it is, a ``systemd-run --scope -p Delegate=yes``), it moves itself
    into a leaf of its own first, ``sticheln-referee-PID-TOKEN-self``; with other processes
    there, the referee needs a delegated group of its own.
    """
    control = hierarchy.own / "cgroup.subtree_control"
    enabled = set(control.read_text().split())
    wanted = " ".join(f"+{c}" for c in hierarchy.controllers if c not in enabled)
    if not wanted:
        return
    try:
        _write(control, wanted)
    except OSError as exc:
        if exc.errno != errno.EBUSY or _procs([hierarchy.own]) != [os.getpid()]:
            raise
        leaf = hierarchy.own / f"sticheln-referee-{instance()}-self"
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))
        _write(control, wanted)


_SYSTEM: dict[tuple[int, str], Cgroups | CgroupUnavailable] = {}


def system() -> Cgroups | CgroupUnavailable:
    """This referee process's cgroups, or why there are none (found once per process)."""
    root = Path(os.environ.get(ROOT_VARIABLE) or CGROUP_ROOT)
    key = (os.getpid(), str(root))
    if key not in _SYSTEM:
        try:
            _SYSTEM[key] = _probe(root)
        except CgroupUnavailable as exc:
            _SYSTEM[key] = exc
        except OSError as exc:
            _SYSTEM[key] = CgroupUnavailable(str(exc))
    return _SYSTEM[key]


def describe() -> str:
    """One line for the start of a run: how bots are bounded here."""
    found = system()
    if isinstance(found, Cgroups):
        return found.describe()
    return (
        f"bounds: no cgroup per bot ({found}); each bot is held by resource limits instead "
        "(processes per bot user, file size, memory and CPU time per process)"
    )


def user_tasks(uid: int) -> int:
    """How many processes and threads user ``uid`` runs now (what ``RLIMIT_NPROC``
    counts)."""
    count = 0
    for entry in _proc_entries():
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
    return count


def _proc_entries() -> Iterator[str]:
    with contextlib.suppress(OSError):
        yield from (e for e in os.listdir("/proc") if e.isdigit())


@dataclass
class Bounds:
    """Everything that bounds one started bot: its control group (or the resource limits
    that stand in for one) and its capped output pipe."""

    #: The bot's group, or None where none can be made.
    group: BotCgroup | None
    #: The pipe the bot writes its stdout and stderr to.
    log: BotLog
    #: What the launcher is told (join these groups, or set these limits).
    launch_arguments: tuple[str, ...]

    def describe_end(self) -> str:
        """Why the bot's bounds ended it ("" when they did not)."""
        return self.group.describe_end() if self.group is not None else ""

    async def close(self) -> None:
        """Once the bot's process has ended: end what is left of it, then read the rest of
        its output."""
        if self.group is not None:
            await self.group.close()
        await self.log.finish()

    def abandon(self) -> None:
        """The bot could not be started: give back its group and pipe."""
        if self.group is not None:
            self.group.discard()
        self.log.abandon()


def bound(limits: Limits, policy: SandboxPolicy | None, log_path: Path) -> Bounds:
    """The bounds of one bot about to start with ``limits`` (confined by ``policy``, or
    not), its output going to ``log_path``: the one place a bot's limits are applied."""
    log = BotLog(log_path, limits.log_mb << 20)
    shorten_own_slice()  # the referee's wake-ups beside bots that spin: see the constant
    found = system()
    try:
        if isinstance(found, Cgroups):
            group = found.make(limits)
            group.end_whole_on_oom()
            joins = tuple(f"--cgroup={folder}" for folder in group.folders)
            return Bounds(group, log, joins)
        # No group: a bound on the processes of the bot's user (its own uid per seat, when
        # the referee is root), counted from what that user runs already.
        uid = policy.run_as[0] if policy is not None and policy.run_as else os.getuid()
        fallback = [f"--nproc={user_tasks(uid) + limits.processes}"]
        if policy is not None:
            fallback.append(f"--fsize-bytes={policy.tmp_size_bytes}")
        return Bounds(None, log, tuple(fallback))
    except BaseException:
        log.abandon()
        raise
