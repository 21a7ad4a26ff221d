"""Bot declarations (small TOML files) and launching command bots under resource limits.

A bot file declares either a command the referee starts for each seat::

    name = "random"
    command = ["python3", "random_bot.py"]   # or one string, split like a shell would
    workdir = "."                            # relative to this file (default: its folder)
    [env]
    EXTRA = "value"
    seats = 4                                # optional: matches one process plays at once
    [limits]
    cpu_seconds = 120                        # RLIMIT_CPU of each bot process
    memory_mb = 2048                         # the whole bot's memory (and each process's)
    processes = 256                          # processes and threads at once
    cpus = 1.0                               # CPU time per second of wall time, at most (0: no cap)
    log_mb = 4                               # stdout and stderr kept in its log
    [sandbox]
    read = ["/opt/my-runtime"]               # more read-only paths (relative to this file)

or an external bot that dials in by itself with a token (no ``command``)::

    name = "remote"
    token = "a-long-secret"

Started bots run in a sandbox (:mod:`referee.match.sandbox`): they see their own folder
read-only and ``[sandbox] read`` besides the system and the referee's interpreter.

A started bot finds the referee's address in ``STICHELN_REFEREE`` and its per-seat token
in ``STICHELN_TOKEN``. A bot that declares ``seats = N`` can play N matches at once: a
tournament's bot pool starts it with ``STICHELN_SEATS=N`` as well, and the process opens
N streams with that one token, each serving one match at a time (see
:mod:`referee.match.pool`); started for a single seat, it gets no ``STICHELN_SEATS``. It runs in
its own process group and its own control group (:mod:`referee.match.cgroups`: bounds
for the whole process tree); its stdout and stderr go through a pipe into a per-bot log
file, up to ``log_mb`` (:mod:`referee.match.botlog`); the whole group is killed when the
match ends or the referee exits, and by the :mod:`~referee.match.watchdog` when the
referee is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import sys
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.match import cgroups, watchdog
from referee.match.sandbox import SandboxPolicy, bot_environment, bwrap_descriptors

#: The variables the referee sets for a started bot (a bot file's ``env`` cannot).
REFEREE_VARIABLES = ("STICHELN_REFEREE", "STICHELN_TOKEN", "STICHELN_SEATS", "STICHELN_TLS_CA")

#: The most matches one bot process may declare to play at once (``seats``).
MAX_SEATS = 64


class BotConfigError(ValueError):
    """A bot file that cannot be used; the message says what is wrong, in one line."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for a launched bot (applied by :func:`referee.match.cgroups.bound`)."""

    #: CPU time of each process (RLIMIT_CPU), in seconds.
    cpu_seconds: int = 600
    #: Memory of the whole bot, children and ``/tmp`` included (its cgroup), and the
    #: address space of each process (RLIMIT_AS), in MiB.
    memory_mb: int = 4096
    #: Processes and threads the bot may have at once (``pids.max``).
    processes: int = 256
    #: CPU time per second of wall time, at most (the cgroup's CPU quota), in CPUs; 0 is no
    #: quota: the bot then gets what CPU time no one else wants, and under contention its
    #: equal weight (see :mod:`referee.match.cgroups`). A quota costs the other seats on a
    #: small host: while it holds a busy bot back, cores fall idle, and on a virtual machine
    #: a woken bot or referee then waits for an idle core to wake (honest seats beside a CPU
    #: hog at a quota of one of two cores: 43-47% of their speed without it; without a quota:
    #: 88-96%, ``benchmarks/tournament.py --sandbox-only``).
    cpus: float = 0.0
    #: How much of its stdout and stderr is kept in its log per started process, in MiB.
    log_mb: int = 4

    def fingerprint(self) -> dict[str, Any]:
        """What of the limits decides a run's results, for its resume check: the bounds
        added with the cgroups only where they differ from their defaults, so that a run
        begun before them still resumes."""
        default = Limits()
        return {
            "cpu_seconds": self.cpu_seconds,
            "memory_mb": self.memory_mb,
            **{
                key: getattr(self, key)
                for key in ("processes", "cpus", "log_mb")
                if getattr(self, key) != getattr(default, key)
            },
        }


@dataclass(frozen=True)
class BotSpec:
    """A declared bot: a command to start, or an external bot with a token."""

    name: str
    command: tuple[str, ...] = ()
    workdir: Path = Path(".")
    env: dict[str, str] = field(default_factory=dict)
    token: str = ""
    limits: Limits = Limits()
    source: str = ""
    #: Matches one process of this bot can play at once (one stream each).
    seats: int = 1
    #: More paths the bot may read in its sandbox (its bot file's ``[sandbox] read``).
    read: tuple[Path, ...] = ()

    @property
    def external(self) -> bool:
        """True for a bot that connects by itself instead of being started."""
        return not self.command


# Every live bot process group, so that an exiting referee kills them all (no orphans).
_LIVE: weakref.WeakSet[BotProcess] = weakref.WeakSet()


class BotProcess:
    """One started bot process (the leader of its own process group)."""

    def __init__(
        self,
        spec: BotSpec,
        proc: asyncio.subprocess.Process,
        log_path: Path,
        bounds: cgroups.Bounds | None = None,
    ) -> None:
        self.spec = spec
        self.proc = proc
        self.log_path = log_path
        #: The bot's control group and output pipe (None: started without).
        self.bounds = bounds
        #: Why a stream this process opened was refused, when the server could tell
        #: (:mod:`referee.match.peers`); "" otherwise.
        self.refusal = ""
        #: The Unix socket made for this process alone (a sandboxed bot), else "".
        self.origin = ""
        self._after_exit: asyncio.Future[None] | None = None
        self._ended_by = ""
        #: The process is bubblewrap, with the bot inside its sandbox.
        self.sandboxed = False
        _LIVE.add(self)
        watchdog.guard(proc.pid)

    @classmethod
    async def start(
        cls,
        spec: BotSpec,
        address: str,
        token: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
        *,
        policy: SandboxPolicy | None = None,
        tls_ca: str = "",
        on_exit: Callable[[], Awaitable[None]] | None = None,
    ) -> BotProcess:
        """Start ``spec``'s command with its limits in a new process group (for one seat,
        unless ``extra_env`` sets ``STICHELN_SEATS``), confined by ``policy`` when given.

        The environment is an allowlist (:func:`referee.match.sandbox.bot_environment`): the
        referee's own never passes. ``tls_ca`` is the certificate to trust on a TLS port
        (``STICHELN_TLS_CA``). ``on_exit`` runs once the process has ended.
        """
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # Where to dial, with which token and certificate, and how many streams to open
        # (one, unless extra_env says more) are the referee's to say, not the bot file's.
        bot_env = {k: v for k, v in spec.env.items() if k not in REFEREE_VARIABLES}
        ours = {**(extra_env or {}), "STICHELN_REFEREE": address, "STICHELN_TOKEN": token}
        if tls_ca:
            ours["STICHELN_TLS_CA"] = tls_ca
        env = bot_environment(
            bot_env,
            os.environ,
            home="/tmp" if policy is not None else os.environ.get("HOME", "/"),
            referee=ours,
            # The referee's own interpreter comes first on the bot's PATH, so that a bot
            # file's "python3" is the environment the referee was installed in (with grpc
            # and protobuf).
            interpreter_bin=os.path.dirname(sys.executable),
        )
        with contextlib.ExitStack() as held:
            command, fds = (
                (list(spec.command), ())
                if policy is None
                else held.enter_context(bwrap_descriptors(policy, spec.command))
            )
            bounds = cgroups.bound(spec.limits, policy, log_path)
            argv = [
                sys.executable,
                # Isolated: the launcher runs outside the sandbox in the bot's folder with
                # the bot's environment, and must import the referee's own modules, never
                # a "referee" package in the bot's folder or on its PYTHONPATH.
                "-I",
                "-m",
                "referee.match.launch",
                f"--cpu-seconds={spec.limits.cpu_seconds}",
                f"--memory-mb={spec.limits.memory_mb}",
                f"--referee-pid={os.getpid()}",
                *(f"--pass-fd={fd}" for fd in fds),
                *bounds.launch_arguments,
                "--",
                *command,
            ]
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv,
                    cwd=spec.workdir,
                    env=env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=bounds.log.write_end,
                    stderr=bounds.log.write_end,
                    start_new_session=True,
                    pass_fds=fds,
                )
            except BaseException:
                bounds.abandon()
                raise
        bounds.log.start()
        bot = cls(spec, proc, log_path, bounds)
        bot.sandboxed = policy is not None
        bot._after_exit = asyncio.ensure_future(bot._run_after_exit(on_exit))
        return bot

    async def _run_after_exit(self, on_exit: Callable[[], Awaitable[None]] | None) -> None:
        await self.proc.wait()
        # What the bot's bounds did to it is read before its group goes.
        if self.bounds is not None:
            self._ended_by = self.bounds.describe_end()
            await self.bounds.close()
        if on_exit is not None:
            await on_exit()

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has ended (negative: killed by that signal)."""
        return self.proc.returncode

    def describe_exit(self) -> str:
        """The process's end in words, for a fault detail."""
        code = self.proc.returncode
        if code is None:
            return "still running"
        if self.sandboxed and code > 128:
            code = 128 - code  # bubblewrap exits with 128 + the signal that killed the bot
        ended_by = self._ended_by or (self.bounds.describe_end() if self.bounds else "")
        if ended_by:
            return ended_by
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"

    async def stop(self, grace: float = 2.0) -> None:
        """End the whole process group: SIGTERM, then SIGKILL after ``grace`` seconds.

        In a sandbox the SIGTERM goes to the bot's own processes: bubblewrap would end the
        sandbox at once on a SIGTERM of its own, before the bot could act on it.
        """
        inside = _sandboxed_processes(self.proc.pid) if self.sandboxed else []
        for pid in inside:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        if not inside:
            _kill_group(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), grace)
        # The leader may be gone while children it started live on: kill the group.
        _kill_group(self.proc.pid, signal.SIGKILL)
        if self.proc.returncode is None:
            await self.proc.wait()
        if self._after_exit is not None:
            await asyncio.gather(self._after_exit, return_exceptions=True)
        _LIVE.discard(self)
        watchdog.release(self.proc.pid)


#: The characters of a bot name kept as they are in its log file names (besides letters
#: and digits). Log names add their own parts after :data:`LOG_PART`, which is none of them.
LOG_NAME_CHARS = "-_."
#: What separates a bot's :func:`log_name` from what a log file name adds (a process number).
LOG_PART = "+"
_LOG_NAME_MAX = 40


def log_name(name: str) -> str:
    """A bot name made safe for a log file name, one to one: a name of letters, digits and
    :data:`LOG_NAME_CHARS` (as config files require) of at most 40 characters is kept as
    it is; any other name becomes its safe prefix, ``~`` and 64 bits of a SHA-256 of the
    whole name, so that no two names share a log name (short of a hash collision) and
    none contains :data:`LOG_PART`."""
    safe = "".join(c if c.isalnum() or c in LOG_NAME_CHARS else "_" for c in name)
    if safe == name and 0 < len(name) <= _LOG_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{safe[: _LOG_NAME_MAX - 17]}~{digest}"


def process_log_name(name: str, process: str | int) -> str:
    """The log file of one process of bot ``name``: ``<log name>+<process>.log``. The bot's
    part never holds :data:`LOG_PART`, so no other bot's process log has this name."""
    return f"{log_name(name)}{LOG_PART}{process}.log"


def _sandboxed_processes(pid: int) -> list[int]:
    """The processes below bubblewrap process ``pid``, bubblewrap's own left out (seen
    from outside the sandbox, through /proc/PID/task/TID/children)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children", encoding="ascii") as f:
                    children = [int(c) for c in f.read().split()]
            except (OSError, ValueError):
                continue
            for child in children:
                todo.append(child)
                try:
                    with open(f"/proc/{child}/comm", encoding="utf-8") as f:
                        if f.read().strip() != "bwrap":
                            found.append(child)
                except OSError:
                    continue
    return found


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def live_bots() -> list[BotProcess]:
    """Every bot process started and not yet stopped."""
    return list(_LIVE)


def kill_all_bots() -> None:
    """Kill every bot process group still alive (called when the referee exits)."""
    for bot in list(_LIVE):
        _kill_group(bot.proc.pid, signal.SIGKILL)
