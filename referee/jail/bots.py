"""Bot declarations (small TOML files) and launching command bots under resource limits.

A bot file declares either a command the referee starts for each seat::

    name = "random"
    command = ["python3", "random_bot.py"]   # or one string, split like a shell would
    runtime = "python3"                      # python3, node, native or jvm (default: from the command)
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

Started bots run in a sandbox (:mod:`referee.jail.sandbox`): they see their own folder
read-only and ``[sandbox] read`` besides their runtime (:mod:`referee.jail.runtime`) and a
few files of ``/etc``.

A started bot finds the referee's address in ``STICHELN_REFEREE`` and its per-seat token
in ``STICHELN_TOKEN``. A bot that declares ``seats = N`` can play N matches at once: a
tournament's bot pool starts it with ``STICHELN_SEATS=N`` as well, and the process opens
N streams with that one token, each serving one match at a time (see
:mod:`referee.match.pool`); started for a single seat, it gets no ``STICHELN_SEATS``. It runs in
its own process group and its own control group (:mod:`referee.jail.cgroups`: bounds
for the whole process tree); its stdout and stderr go through a pipe into a per-bot log
file, up to ``log_mb`` (:mod:`referee.jail.botlog`); the whole group is killed when the
match ends or the referee exits, and by the :mod:`~referee.jail.watchdog` when the
referee is killed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The variables the referee sets for a started bot (a bot file's ``env`` cannot).
REFEREE_VARIABLES = ("STICHELN_REFEREE", "STICHELN_TOKEN", "STICHELN_SEATS", "STICHELN_TLS_CA")

#: The most matches one bot process may declare to play at once (``seats``).
MAX_SEATS = 64


class BotConfigError(ValueError):
    """A bot file that cannot be used; the message says what is wrong, in one line."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for a launched bot (applied by :func:`referee.jail.cgroups.bound`)."""

    #: CPU time of each process (RLIMIT_CPU), in seconds.
    cpu_seconds: int = 600
    #: Memory of the whole bot, children and ``/tmp`` included (its cgroup), and the
    #: address space of each process (RLIMIT_AS), in MiB.
    memory_mb: int = 4096
    #: Processes and threads the bot may have at once (``pids.max``).
    processes: int = 256
    #: CPU time per second of wall time, at most (the cgroup's CPU quota), in CPUs; 0 is no
    #: quota: the bot then gets what CPU time no one else wants, and under contention its
    #: equal weight (see :mod:`referee.jail.cgroups`). A quota costs the other seats on a
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
    #: Who wrote the bot, as its file says ("" when it does not): a tournament warns when
    #: it seats two bots of one owner at a table (:mod:`referee.tournament.lineup`).
    owner: str = ""
    #: The runtime it runs on (:data:`referee.jail.runtime.RUNTIMES`); "": the one its
    #: command implies (:func:`referee.jail.runtime.infer`).
    runtime: str = ""

    @property
    def external(self) -> bool:
        """True for a bot that connects by itself instead of being started."""
        return not self.command


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
