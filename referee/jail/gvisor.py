"""The gVisor tier: the same policy, run on an application kernel of the bot's own.

Bubblewrap confines a bot on the host's kernel: a filter decides which calls reach it, but
what a call does there is shared with every other process (the page cache, the scheduler,
the machine-wide counters). gVisor's ``runsc`` (Google's application kernel, Debian's
``runsc`` package) answers a bot's system calls in a kernel of its own, the *Sentry*, a
user-space program that runs under its own seccomp filter and reaches the host only for
what it was given: files through a separate *gofer* process, the referee's Unix socket.
Inside it, ``/proc``, ``sysinfo``, the page cache, the load average, the key store and
System V IPC are the sandbox's own.

The policy is the bubblewrap tier's (:class:`~referee.jail.sandbox.SandboxPolicy`: the
same read paths, ``/tmp``, socket, uid and host name); :func:`oci_bundle` writes it as an
OCI bundle (``config.json`` and an empty root of links and made files) and
:func:`runsc_command` is the ``runsc run`` command that starts it. The bounds are the
same too: the launcher (:mod:`referee.jail.launch`) puts ``runsc`` (Sentry, gofer and the
bot's stub processes) into the bot's control group, so its memory and CPU weight count
everything the sandbox costs (``pids.max`` leaves room for runsc's own threads:
:func:`host_limits`); the address space and the number of processes are held inside,
by the Sentry (``RLIMIT_AS``, ``RLIMIT_NPROC``), CPU time per process outside, on runsc's
processes (this build of the Sentry does not apply ``RLIMIT_CPU``); runsc's own output
goes into the bot's capped log.

A path the bot's author owns (its folder, its ``[sandbox] read``) is bound by descriptor
(:mod:`referee.jail.held`), never by name: the launcher, still root, binds each held
descriptor at a folder of the bundle in a mount namespace of its own, and runsc binds
that folder. So the tier needs a referee running as root (as a container's entry point
or a league's service does); a rootless runsc cannot bind by descriptor.

The price is the Sentry between the bot and every system call. runsc's platform decides
how it intercepts them; this tier names none, so runsc uses its default: systrap in the
runsc of bookworm-backports (20240729, which ``scripts/test.sh`` and the league's image
install), a seccomp trap into a stub that hands the call to the Sentry through shared
memory (about 2 µs a ``getppid``); ptrace in Debian 12's own (20221219), a few context
switches a call (about 50 µs) on a host without KVM. Both builds take the same flags and
bundle (see ``benchmarks/warm_tiers.py`` and docs/security.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.jail import watchdog
from referee.jail.held import open_held

if TYPE_CHECKING:
    from referee.jail.bots import Limits
    from referee.jail.sandbox import SandboxPolicy

#: The ``runsc`` program.
RUNSC = "runsc"
#: runsc's flags for every bot: no network but loopback inside (the referee's socket is a
#: host Unix socket it may open, none it may create), no cgroups of its own (the bot's
#: group is the launcher's), and the spec's filter applied by the Sentry to the bot
#: (:func:`sentry_filter`). The platform is runsc's default: systrap in 20240729
#: (bookworm-backports), ptrace in 20221219 (Debian 12), which knows no systrap, so naming
#: it would stop that build; KVM would need virtualisation this tier does not assume.
FLAGS = ("--network=none", "--host-uds=open", "--ignore-cgroups", "--oci-seccomp")
#: Flags of newer builds, each given where the runsc at hand takes it (:func:`flags`).
#: ``--directfs=false``: the bot's files stay behind the gofer, as in builds before
#: directfs (20221219), instead of the Sentry opening them itself (20240729's default).
#: With directfs a sandbox's lookups of names that do not exist reach the host's cache of
#: them directly, and a later sandbox read 64 bits left there with a median of 12 wrong
#: (chance 32) against 27 through the gofer (``benchmarks/covert.py --channel dentries``,
#: 19 and 20 runs, load 20); the gofer costs a Python bot's start about 150 ms (about
#: 900 ms against 750, two runs each of ``benchmarks/jail.py``) and 4 MiB of memory, and
#: its decisions nothing measurable.
NEWER_FLAGS = ("--directfs=false",)
#: The environment ``runsc`` itself runs with: fixed, so that nothing of the bot's
#: environment (GODEBUG, GOMAXPROCS, TMPDIR...) reaches a Go program running as root
#: outside the sandbox. The bot's environment goes into the bundle only.
RUNSC_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
#: The mount options of every bound path.
READ_ONLY = ["rbind", "ro", "nosuid", "nodev"]

#: runsc found and tried, by program: one trial per process ("" when it worked, else why).
_CHECKED: dict[str, str] = {}
#: The flags of each runsc program (:func:`flags`), found once per process.
_FLAGS: dict[str, tuple[str, ...]] = {}
_BUNDLES = itertools.count(1)
_ROOT: list[Path] = []


class Unavailable(RuntimeError):
    """runsc cannot make a sandbox here; the message says why, in one line."""


def missing(runsc: str = RUNSC) -> str:
    """Why the gVisor tier cannot run here, in a few words; "" when it can (runsc found,
    the referee is root, and a trial sandbox ran)."""
    if runsc in _CHECKED:
        return _CHECKED[runsc]
    found = shutil.which(runsc)
    if found is None:
        why = f"gVisor's {runsc} is not installed (Debian: apt-get install runsc)"
    elif os.geteuid() != 0:
        why = "the gVisor tier needs a referee running as root (it binds bot folders by descriptor)"
    else:
        why = _trial(found)
    _CHECKED[runsc] = why
    return why


def flags(runsc: str) -> tuple[str, ...]:
    """runsc's flags for every bot: :data:`FLAGS`, and those of :data:`NEWER_FLAGS` that
    this ``runsc`` takes (``runsc FLAG --version`` exits 0; an older build refuses a flag
    it does not know)."""
    if runsc not in _FLAGS:
        taken = []
        for flag in NEWER_FLAGS:
            try:
                done = subprocess.run(
                    [runsc, flag, "--version"],
                    capture_output=True,
                    timeout=30,
                    check=False,
                    env=RUNSC_ENV,
                )
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                taken.append(flag)
        _FLAGS[runsc] = (*FLAGS, *taken)
    return _FLAGS[runsc]


def _trial(runsc: str) -> str:
    """Run ``/bin/true`` in a bare sandbox; "" when it ran, else runsc's last words."""
    folder = Path(tempfile.mkdtemp(prefix="sticheln-gvisor-trial-"))
    try:
        bundle = folder / "bundle"
        rootfs = bundle / "rootfs"
        rootfs.mkdir(parents=True)
        rootfs.chmod(0o755)  # the bot's user walks it (the folders above are the gofer's)
        _system_links(rootfs)
        spec = {
            "ociVersion": "1.0.0",
            "process": {
                "user": {"uid": 65534, "gid": 65534},
                "args": ["/bin/true"],
                "env": [f"PATH={RUNSC_ENV['PATH']}"],
                "cwd": "/",
                "noNewPrivileges": True,
            },
            "root": {"path": "rootfs", "readonly": True},
            "mounts": [_bind(Path("/usr"), Path("/usr"))],
            "linux": {"namespaces": [{"type": t} for t in NAMESPACES]},
        }
        (bundle / "config.json").write_text(json.dumps(spec))
        argv = [runsc, "--root", str(folder / "state"), *flags(runsc), "run"]
        argv += ["--bundle", str(bundle), f"sticheln-trial-{os.getpid()}"]
        done = subprocess.run(
            argv, capture_output=True, timeout=60, check=False, env=RUNSC_ENV, cwd=folder
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"runsc failed ({exc})"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return f"runsc failed ({why[-1] if why else done.returncode})"
    return ""


#: The namespaces of the sandbox (all of them the Sentry's own, not the host's).
NAMESPACES = ("pid", "network", "ipc", "uts", "mount")


def _bind(source: Path, destination: Path) -> dict[str, Any]:
    return {
        "destination": str(destination),
        "type": "bind",
        "source": str(source),
        "options": READ_ONLY,
    }


#: The sandbox's private ``/tmp``, a tmpfs over the root's folder of that name.
TMP = Path("/tmp")


def tmp_link_folders(links: Sequence[tuple[Path, str]]) -> dict[Path, list[tuple[str, str]]]:
    """The links whose place is under :data:`TMP` (a bot's interpreter in an environment
    under /tmp, ``/tmp/x/.venv/bin/python3 -> ...``), by the folder that holds them: a
    link made in the root there would be hidden by the private tmpfs."""
    found: dict[Path, list[tuple[str, str]]] = {}
    for link, target in links:
        if TMP in link.parents:
            found.setdefault(link.parent, []).append((link.name, target))
    return found


def _system_links(rootfs: Path, links: Sequence[tuple[Path, str]] | None = None) -> None:
    """The links of a merged-/usr system (``/bin -> usr/bin``...) in ``rootfs``."""
    if links is None:
        links = [(Path("/") / n, os.readlink(f"/{n}")) for n in ("bin", "lib", "lib64", "sbin")]
        links = [(p, t) for p, t in links if Path(p).is_symlink()]
    for link, target in links:
        place = rootfs / link.relative_to("/")
        _folders(rootfs, place.parent)
        place.symlink_to(target)


def _folders(rootfs: Path, folder: Path) -> None:
    """``folder`` and those above it inside ``rootfs``, open to the bot's user (0755,
    whatever the referee's umask)."""
    for path in [*reversed(folder.parents), folder]:
        if (path == rootfs or rootfs in path.parents) and not path.exists():
            path.mkdir()
            path.chmod(0o755)


@dataclass(frozen=True)
class Bundle:
    """One bot's OCI bundle, ready for ``runsc run``."""

    #: The folder (``config.json``, ``rootfs``, runsc's state, the held paths' places);
    #: removed once the bot has ended (:func:`remove`).
    folder: Path
    #: The container's name for runsc.
    name: str
    #: The launcher's ``--bind-fd=FD:PLACE`` for each held path.
    binds: tuple[tuple[int, Path], ...]


def rlimits(limits: Limits) -> list[dict[str, Any]]:
    """The rlimits inside the sandbox: its address space (as the launcher sets it in the
    bubblewrap tier) and its processes, which the Sentry applies, its CPU time (which the
    launcher applies outside as well), no core dump, no priority above others, and the
    descriptors the referee's own limits allow."""
    memory = limits.memory_mb << 20
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    found = [
        ("RLIMIT_AS", memory, memory),
        ("RLIMIT_CPU", limits.cpu_seconds, limits.cpu_seconds + 5),
        ("RLIMIT_CORE", 0, 0),
        ("RLIMIT_NICE", 0, 0),
        ("RLIMIT_RTPRIO", 0, 0),
        ("RLIMIT_NOFILE", min(soft, 1 << 20), min(hard, 1 << 20)),
        ("RLIMIT_NPROC", limits.processes, limits.processes),
    ]
    return [{"type": t, "soft": s, "hard": h} for t, s, h in found]


#: Host tasks (processes and threads) of runsc itself with one idle bot: the Sentry's and
#: gofer's threads and the first stub processes (115 measured with a shell and a sleep).
RUNSC_TASKS = 160
#: Host tasks per task of the bot: each of the bot's processes is a stub process on the
#: host (ptrace: traced by Sentry threads, 8-13 measured per sleeping process; systrap:
#: its stub threads).
HOST_TASKS_PER_TASK = 12


def host_limits(limits: Limits) -> Limits:
    """The bot's cgroup bounds in this tier: the same memory and CPU for runsc and the bot
    together, and room for runsc's own host tasks in ``pids.max`` (the bot's own count
    of processes is held inside, by the Sentry's ``RLIMIT_NPROC``)."""
    processes = RUNSC_TASKS + HOST_TASKS_PER_TASK * limits.processes
    return dataclasses.replace(limits, processes=processes)


def oci_spec(
    policy: SandboxPolicy,
    command: Sequence[str],
    env: Mapping[str, str],
    limits: Limits,
    places: Mapping[Path, Path],
    link_folders: Mapping[Path, Path] | None = None,
) -> dict[str, Any]:
    """The OCI ``config.json`` of one bot: ``policy``'s view, ``command`` run with ``env``
    as ``policy.run_as`` under ``limits``; ``places`` maps each held path to the bundle
    folder its descriptor is bound at, ``link_folders`` each folder of links under the
    private ``/tmp`` to the bundle folder that holds them (:func:`tmp_link_folders`)."""
    from referee.jail.sandbox import SOCKET_DIR, outer_binds, untreed

    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
        {
            "destination": "/tmp",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "nodev", "mode=1777", f"size={policy.tmp_size_bytes}"],
        },
    ]
    # Links whose place is under /tmp: the private tmpfs there would cover them in the
    # root, so each folder of them is bound from the bundle, over the tmpfs, outer first.
    folders = link_folders or {}
    mounts += [_bind(folders[p], p) for p in sorted(folders, key=lambda p: len(p.parts))]
    system, _, hidden = untreed(policy)
    mounts += [_bind(tree, place) for tree, place in policy.trees]
    mounts += [_bind(p, p) for p in system if p.exists()]
    mounts += [
        {"destination": str(p), "type": "tmpfs", "source": "tmpfs", "options": ["ro", "size=4k"]}
        for p in hidden
    ]
    mounts += [_bind(places.get(p, p), p) for p in outer_binds(policy)]
    if policy.socket_dir is not None:
        mounts.append(_bind(policy.socket_dir, SOCKET_DIR))
    uid, gid = policy.run_as or (0, 0)
    return {
        "ociVersion": "1.0.0",
        "process": {
            "user": {"uid": uid, "gid": gid},
            "args": list(command),
            "env": [f"{k}={v}" for k, v in env.items()],
            "cwd": str(policy.workdir),
            "noNewPrivileges": True,
            "capabilities": {},
            "rlimits": rlimits(limits),
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": policy.hostname,
        "mounts": mounts,
        "linux": {"namespaces": [{"type": t} for t in NAMESPACES], "seccomp": sentry_filter()},
    }


def sentry_filter() -> dict[str, Any]:
    """The OCI filter the Sentry applies to the bot (``--oci-seccomp``): every call of its
    own kernel allowed, but those whose answer comes from the host's
    (:data:`referee.jail.seccomp.HOST_FIGURE_CALLS`: ``statfs`` on a bound path reads the
    host's file system, whose free blocks the bots' logs move)."""
    from referee.jail.seccomp import HOST_FIGURE_CALLS

    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [
            {"names": list(HOST_FIGURE_CALLS), "action": "SCMP_ACT_ERRNO", "errnoRet": 38}
        ],
    }


def _root() -> Path:
    """The referee's private (0700) folder of bundles, removed when it ends."""
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="sticheln-gvisor-")))
        watchdog.remove_on_exit(_ROOT[0])
    return _ROOT[0]


@contextlib.contextmanager
def prepared(
    policy: SandboxPolicy, command: Sequence[str], env: Mapping[str, str], limits: Limits
) -> Iterator[tuple[list[str], Bundle]]:
    """The ``runsc`` command for ``command`` confined by ``policy`` and its bundle, the
    held paths open (their descriptors in :attr:`Bundle.binds`) until the block ends: start
    the process inside it, and :func:`remove` the bundle once it has ended."""
    from referee.jail.sandbox import held_binds, untreed

    folder = _root() / f"{os.getpid()}-{next(_BUNDLES)}"
    rootfs = folder / "rootfs"
    fds: list[int] = []
    try:
        rootfs.mkdir(parents=True)
        rootfs.chmod(0o755)  # the bot's user walks it (the folders above are the gofer's)
        links = untreed(policy)[1]
        under_tmp = tmp_link_folders(links)
        _system_links(rootfs, [(k, t) for k, t in links if k.parent not in under_tmp])
        link_folders: dict[Path, Path] = {}
        for i, (place, found) in enumerate(under_tmp.items()):
            link_folders[place] = folder / "links" / str(i)
            _folders(folder, link_folders[place])
            for name, target in found:
                (link_folders[place] / name).symlink_to(target)
        for path, data in policy.files:
            place = rootfs / path.relative_to("/")
            _folders(rootfs, place.parent)
            place.write_bytes(data)
            place.chmod(0o444)
        places: dict[Path, Path] = {}
        binds: list[tuple[int, Path]] = []
        for i, path in enumerate(held_binds(policy)):
            fd = open_held(path, folder=path == policy.workdir)
            fds.append(fd)
            place = folder / "held" / str(i)
            place.parent.mkdir(exist_ok=True)
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                place.mkdir()
            else:
                place.touch()
            places[path] = place
            binds.append((fd, place))
        spec = oci_spec(policy, command, env, limits, places, link_folders)
        _mount_points(rootfs, spec["mounts"], link_folders)
        (folder / "config.json").write_text(json.dumps(spec, indent=1))
        bundle = Bundle(folder, f"sticheln-{folder.name}", tuple(binds))
        yield runsc_command(policy.runsc, bundle), bundle
    except BaseException:
        remove(folder)
        raise
    finally:
        for fd in fds:
            os.close(fd)


def _mount_points(
    rootfs: Path, mounts: Sequence[Mapping[str, Any]], link_folders: Mapping[Path, Path]
) -> None:
    """Every mount's place in ``rootfs`` (or in the bundle's folder of links that will be
    bound over it), its folders above it open to the bot's user (0755; runsc would make
    them for the referee's alone)."""
    outer_first = sorted(link_folders, key=lambda p: len(p.parts))
    for mount in mounts:
        destination = Path(mount["destination"])
        base, inner = rootfs, destination.relative_to("/")
        for over in outer_first:
            if over in destination.parents:
                base, inner = link_folders[over], destination.relative_to(over)
        place = base / inner
        _folders(base, place.parent)
        source = Path(mount["source"])
        if place.exists() or place.is_symlink():
            continue
        if mount["type"] == "bind" and not source.is_dir():
            place.touch()
            place.chmod(0o444)
        else:
            _folders(base, place)


def runsc_command(runsc: str, bundle: Bundle) -> list[str]:
    """``runsc run`` for ``bundle``, its state kept inside the bundle's folder."""
    argv = [runsc, "--root", str(bundle.folder / "state"), *flags(runsc), "run"]
    return [*argv, "--bundle", str(bundle.folder), bundle.name]


def signal_command(runsc: str, bundle: Bundle, signal: str) -> list[str]:
    """``runsc kill``: ``signal`` to the bot inside (a signal to ``runsc run`` itself would
    end the sandbox at once)."""
    return [runsc, "--root", str(bundle.folder / "state"), "kill", bundle.name, signal]


def remove(folder: Path) -> None:
    """Remove a bundle's folder (the bot has ended; its mounts were the launcher's)."""
    shutil.rmtree(folder, ignore_errors=True)
