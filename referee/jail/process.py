"""A started bot: one process group, confined by the jail's policy and bounded by its cgroup.

:meth:`BotProcess.start` is the jail's one way in: a declared bot (:class:`~referee.jail.bots.BotSpec`:
command, folder, environment, limits) and a :class:`~referee.jail.sandbox.SandboxPolicy` in,
a started and bounded process out. It runs the command through the launcher
(:mod:`referee.jail.launch`: rlimits, the bot's cgroup, inherited descriptors closed) inside
the sandbox, with the bot's output piped into its capped log (:mod:`referee.jail.botlog`),
and under the :mod:`~referee.jail.watchdog`, so that no bot outlives the referee.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import weakref
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from referee.jail import cgroups, gvisor, launch, seccomp, watchdog
from referee.jail.bots import REFEREE_VARIABLES, BotSpec
from referee.jail.sandbox import SandboxPolicy, bot_environment, bwrap_descriptors

#: What SIGSYS means for a sandboxed bot: its filter ends a process that enters the kernel
#: through another interface than the native one (:mod:`referee.jail.seccomp`).
SIGSYS_MEANS = (
    "a system call through an interface the sandbox refuses: bots are 64-bit programs, "
    "with no int 0x80 (i386) or x32 calls"
)

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
        #: Where its log stood when a match first took one of its streams (-1: not yet):
        #: its start-up output, before any match, kept with each match's part.
        self.startup_end = -1
        self._after_exit: asyncio.Future[None] | None = None
        self._ended_by = ""
        #: The process is bubblewrap or runsc, with the bot inside its sandbox.
        self.sandboxed = False
        #: The gVisor tier: the bot's bundle (its ``runsc kill`` for a signal to the bot
        #: inside, its folder removed once it has ended), else None.
        self.bundle: gvisor.Bundle | None = None
        self._runsc = ""
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
        stdout_pipe: bool = False,
    ) -> BotProcess:
        """Start ``spec``'s command with its limits in a new process group (for one seat,
        unless ``extra_env`` sets ``STICHELN_SEATS``), confined by ``policy`` when given.

        The environment is an allowlist (:func:`referee.jail.sandbox.bot_environment`): the
        referee's own never passes. ``tls_ca`` is the certificate to trust on a TLS port
        (``STICHELN_TLS_CA``). ``on_exit`` runs once the process has ended. With
        ``stdout_pipe`` the command's stdout is a pipe the caller reads (``proc.stdout``: a
        league's build step hands over its output so) and only its stderr goes to the log.
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
        if policy is not None:
            env["JAVA_TOOL_OPTIONS"] = jvm_options(
                spec.limits.memory_mb, env.get("JAVA_TOOL_OPTIONS", "")
            )
        bundle: gvisor.Bundle | None = None
        tier: list[str] = []
        with contextlib.ExitStack() as held:
            if policy is not None and policy.tier == "gvisor":
                # The bot's environment goes into its bundle; runsc runs with a fixed one.
                command, bundle = held.enter_context(
                    gvisor.prepared(policy, spec.command, env, spec.limits)
                )
                env = dict(gvisor.RUNSC_ENV)
                fds: tuple[int, ...] = tuple(fd for fd, _ in bundle.binds)
                tier = ["--limits-inside", *(f"--bind-fd={fd}:{p}" for fd, p in bundle.binds)]
            elif policy is not None:
                command, fds = held.enter_context(bwrap_descriptors(policy, spec.command))
                # bubblewrap starts with a fixed environment too, and sets the bot's (read
                # from a descriptor: not on a command line others may read) for the
                # process it starts inside the sandbox alone.
                args_fd = seccomp.program_fd(environment_arguments(env))
                held.callback(os.close, args_fd)
                command = [command[0], "--args", str(args_fd), *command[1:]]
                fds, env = (*fds, args_fd), dict(launch.ENVIRONMENT)
            else:
                command, fds = list(spec.command), ()
            # The bot's environment reaches the launcher on a descriptor, never as its own.
            env_fd = seccomp.program_fd(launch.environment_bytes(env))
            held.callback(os.close, env_fd)
            try:
                limits = spec.limits if bundle is None else gvisor.host_limits(spec.limits)
                bounds = cgroups.bound(limits, policy, log_path)
            except BaseException:
                if bundle is not None:
                    gvisor.remove(bundle.folder)
                raise
            argv = [
                # Isolated: the launcher runs outside the sandbox in the bot's folder, and
                # must import the referee's own file, never one in the bot's folder.
                *launch.command(),
                f"--cpu-seconds={spec.limits.cpu_seconds}",
                f"--memory-mb={spec.limits.memory_mb}",
                f"--referee-pid={os.getpid()}",
                f"--env-fd={env_fd}",
                *(f"--pass-fd={fd}" for fd in fds if bundle is None),
                *tier,
                *bounds.launch_arguments,
                "--",
                *command,
            ]
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv,
                    cwd=spec.workdir,
                    env=launch.ENVIRONMENT,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE if stdout_pipe else bounds.log.write_end,
                    stderr=bounds.log.write_end,
                    start_new_session=True,
                    pass_fds=(*fds, env_fd),
                )
            except BaseException:
                bounds.abandon()
                if bundle is not None:
                    gvisor.remove(bundle.folder)
                raise
        bounds.log.start()
        bot = cls(spec, proc, log_path, bounds)
        bot.sandboxed = policy is not None
        if policy is not None and bundle is not None:
            bot.bundle, bot._runsc = bundle, policy.runsc
        bot._after_exit = asyncio.ensure_future(bot._run_after_exit(on_exit))
        return bot

    async def _run_after_exit(self, on_exit: Callable[[], Awaitable[None]] | None) -> None:
        await self.proc.wait()
        # What the bot's bounds did to it is read before its group goes.
        if self.bounds is not None:
            self._ended_by = self.bounds.describe_end()
            await self.bounds.close()
        if self.bundle is not None:
            gvisor.remove(self.bundle.folder)
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
        if code == -signal.SIGSYS and self.sandboxed:
            return f"killed by SIGSYS ({SIGSYS_MEANS})"
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
        if self.bundle is not None and self.proc.returncode is None:
            # runsc would end the sandbox at once on a SIGTERM of its own: the bot's init
            # process inside gets it.
            await self._signal_inside("TERM")
            inside: list[int] = []
        else:
            inside = _sandboxed_processes(self.proc.pid) if self.sandboxed else []
        for pid in inside:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        if not inside and self.bundle is None:
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

    async def _signal_inside(self, name: str) -> None:
        """``runsc kill``: signal ``name`` to the bot's first process inside its sandbox."""
        assert self.bundle is not None
        argv = gvisor.signal_command(self._runsc, self.bundle, name)
        with contextlib.suppress(OSError):
            done = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                env=gvisor.RUNSC_ENV,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), 5)
            if done.returncode is None:
                done.kill()
                await done.wait()


def environment_arguments(env: Mapping[str, str]) -> bytes:
    """bubblewrap's ``--args`` for ``env``: ``--clearenv`` and a ``--setenv NAME VALUE`` for
    each variable, NUL-separated, so that the process it starts gets ``env`` and nothing
    of bubblewrap's own."""
    words = ["--clearenv"]
    for key, value in env.items():
        words += ["--setenv", key, value]
    return b"".join(w.encode("utf-8", "surrogateescape") + b"\0" for w in words)


def jvm_options(memory_mb: int, given: str = "") -> str:
    """``JAVA_TOOL_OPTIONS`` for a sandboxed bot: a JVM sizes its heap from the machine's
    memory, which it asks of ``sysinfo``, and the sandbox refuses that call (a counter of
    the whole host): the C library then answers with whatever lay on its stack, and the
    heap came out anywhere between 300 MiB and 2 GiB, start to start. ``-XX:MaxRAM`` gives
    it the bot's own bound instead (a quarter of it by default). Options the bot file gave
    come after, and the command line's after those, so either overrides it."""
    return " ".join(x for x in (f"-XX:MaxRAM={memory_mb}m", given) if x)


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
