"""Who may widen a started bot's sandbox, and what no one may: the read policy as data.

A bot file is its author's; the tournament, league or comparison file (or the command
line of ``referee match`` and ``referee check-bot``) is the organiser's. What a bot may
read besides the system and the referee's own packages (:mod:`referee.jail.sandbox`) is:

- its **folder** (the bot's ``workdir``) and the bot file's ``[sandbox] read`` paths: the
  author may name only paths inside the folder that holds the bot file (after following
  symbolic links and ``..``), or inside a path the organiser has granted;
- what the **organiser** grants: ``[sandbox] read`` in the organiser's file (every bot it
  starts) or in one ``[[bots]]`` entry (that bot), ``--read PATH`` on the command line. A
  grant is bound read-only into the sandboxes it applies to;
- **never**, whoever asks: :data:`HOST_NEVER` (the host's ``/proc``, ``/sys``, ``/dev``,
  ``/run`` and everything in them), the output folder, the database and its folder, the
  deal key file and the referee's private socket folders; nor a path that holds one of
  them (``/``, ``/tmp``, a folder above the output folder).

A bot file's ``[limits]`` are held to the organiser's maxima (:class:`MaxLimits`):
asking for more is refused, in one line, before any bot starts. Its ``[env]`` may not set
what the dynamic loader reads (:data:`LOADER_VARIABLES`, ``LD_*``), and its time zone and
locale are names, not paths (:func:`path_variable`): the launcher and bubblewrap, outside
the sandbox, start with environments of their own, but the program that starts the bot
inside it (``setpriv``, as root, for a root referee) gets the bot's.

Every refusal is one line naming the file (or flag) and the path. docs/bot-protocol.md
("Who may change what") is the same policy as a table.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from referee.jail.bots import BotConfigError, BotSpec, Limits

#: Host folders no bot may read, whoever grants them: a bot's sandbox has its own
#: ``/proc`` and ``/dev``, and nothing of ``/sys`` or ``/run`` (where the referee's socket
#: is bound), because the host's show every process (their environments hold the other
#: seats' tokens), the devices, and the sockets of the machine's services.
HOST_NEVER: tuple[tuple[Path, str], ...] = (
    (Path("/proc"), "the host's /proc (every process, the other seats' tokens)"),
    (Path("/sys"), "the host's /sys (the machine's devices and kernel settings)"),
    (Path("/dev"), "the host's /dev (the machine's devices)"),
    (Path("/run"), "the host's /run (the machine's services and their sockets)"),
)

#: Variables a bot file's ``[env]`` may not set for a sandboxed bot: the bot's environment
#: is also the environment of what starts it inside the sandbox (``setpriv``, which drops
#: a root referee's rights to the bot's uid), and the dynamic loader and the C library read
#: these when a program starts (glibc's own list of variables it ignores for privileged
#: programs, ``GLIBC_TUNABLES`` added): an ``LD_PRELOAD`` would run the bot author's code
#: as root before the drop. (The launcher and bubblewrap, outside, never get it.)
LOADER_VARIABLES = (
    "GCONV_PATH",
    "GETCONF_DIR",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "LOCPATH",
    "MALLOC_TRACE",
    "NIS_PATH",
    "NLSPATH",
    "RESOLV_HOST_CONF",
    "RES_OPTIONS",
    "TZDIR",
)

#: Variables that name a file the C library opens (a time zone, a locale, a message
#: catalogue): a bot file gives them as names, which the system's files resolve.
NAME_VARIABLES = ("TZ", "LANG", "LANGUAGE")


def path_variable(env: dict[str, str]) -> str:
    """The first of ``env``'s time zone and locale variables (``TZ``, ``LANG``,
    ``LANGUAGE``, ``LC_*``) whose value is a path rather than a name, or "". ``TZ`` is a
    name (``Europe/Berlin``, ``:Europe/Berlin``, ``CET-1CEST,M3.5.0,M10.5.0/3``) unless it
    begins with ``/`` (after an optional ``:``) or climbs with ``..``: the C library opens
    it under /usr/share/zoneinfo. A locale name has no ``/`` at all (glibc takes one with
    a ``/`` for a folder)."""
    for key, value in env.items():
        if key == "TZ":
            name = value.removeprefix(":")
            if name.startswith("/") or ".." in name.split("/"):
                return key
        elif (key in NAME_VARIABLES or key.startswith("LC_")) and "/" in value:
            return key
    return ""


#: The name the referee's private socket folders begin with, in the temporary folder
#: (:meth:`referee.match.server.RefereeServer.open_bot_socket`).
SOCKET_ROOT_PREFIX = "sticheln-sockets-"
#: The longest path a Unix socket may have (``sun_path``, less its closing NUL).
SOCKET_PATH_MAX = 107
#: Random bytes in the name of a bot socket's own folder (written as twice as many hex
#: digits): a random name, as a sandboxed bot sees it in its mount table.
SOCKET_FOLDER_BYTES = 4
#: What a bot's socket adds to the folder its socket folders are made in: the private
#: folder (``mkdtemp``'s 8 random letters), a folder per socket and the socket.
_SOCKET_TAIL = len(f"/{SOCKET_ROOT_PREFIX}{'x' * 8}/{'x' * 2 * SOCKET_FOLDER_BYTES}/referee.sock")


def socket_parent() -> Path:
    """Where the referee makes its private socket folders: the temporary folder
    (``TMPDIR``), or ``/tmp`` when a socket's path there would be longer than a Unix
    socket's may be (a deep ``TMPDIR``, as a test runner's)."""
    tmp = Path(tempfile.gettempdir()).resolve()
    if len(str(tmp)) + _SOCKET_TAIL <= SOCKET_PATH_MAX:
        return tmp
    return Path("/tmp")


#: Where the refusal says the organiser grants a path.
GRANT_HOW = (
    "[sandbox] read in the tournament, league or comparison file, or --read for referee "
    "match and check-bot"
)


@dataclass(frozen=True)
class Protected:
    """A path no bot may read, nor any path that holds it, with what it is in words."""

    path: Path
    what: str

    def clash(self, path: Path) -> str:
        """Why ``path`` may not be read because of this one, or ""."""
        if path == self.path or self.path in path.parents:
            return f"it is {self.what}" if path == self.path else f"it is inside {self.what}"
        if path in self.path.parents:
            return f"it holds {self.what}"
        return ""


@dataclass(frozen=True)
class SocketFolders:
    """The referee's private socket folders: ``TMPDIR/sticheln-sockets-*``, made while it
    runs, so matched by their name."""

    parent: Path

    def clash(self, path: Path) -> str:
        """Why ``path`` may not be read because it is or holds a socket folder, or ""."""
        what = f"the referee's private socket folders ({self.parent}/{SOCKET_ROOT_PREFIX}*)"
        if path == self.parent or path in self.parent.parents:
            return f"it holds {what}"
        if self.parent in path.parents:
            first = path.relative_to(self.parent).parts[0]
            if first.startswith(SOCKET_ROOT_PREFIX):
                return f"it is inside {what}"
        return ""


Rule = Protected | SocketFolders


def never_readable(
    out: Path | None = None,
    database: Path | str | None = None,
    deal_key_file: Path | None = None,
) -> tuple[Rule, ...]:
    """Everything no bot may read in a run with this output folder, database (a path, or
    a URL, which has no folder) and deal key file."""
    rules: list[Rule] = [Protected(path, what) for path, what in HOST_NEVER]
    rules.append(SocketFolders(socket_parent()))
    if out is not None:
        rules.append(Protected(_real(out), f"the output folder {_real(out)}"))
    if database is not None and "://" not in str(database):
        db = _real(Path(database))
        rules.append(Protected(db, f"the database {db}"))
        rules.append(Protected(db.parent, f"the database's folder {db.parent}"))
    if deal_key_file is not None:
        key = _real(deal_key_file)
        rules.append(Protected(key, f"the deal key file {key}"))
    return tuple(rules)


def _real(path: Path) -> Path:
    return Path(path).resolve()


def why_never(path: Path, rules: Sequence[Rule]) -> str:
    """Why no bot may read ``path`` (a resolved path), or "" when some grant may give it."""
    for rule in rules:
        reason = rule.clash(path)
        if reason:
            return reason
    return ""


def refuse_never(
    paths: Iterable[tuple[str, Path]], where: str, rules: Sequence[Rule], error: type[Exception]
) -> None:
    """``error`` in one line for the first of ``paths`` ((key, resolved path)) that no bot
    may read."""
    for key, path in paths:
        reason = why_never(path, rules)
        if reason:
            # A flag names its value without "=" (``--read '/tmp'``), a key with it.
            said = f"{key} {str(path)!r}" if key.startswith("--") else f"{key} = {str(path)!r}"
            prefix = f"{where}: " if where else ""
            raise error(f"{prefix}{said} can never be given to a bot: {reason}")


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


@dataclass(frozen=True)
class MaxLimits:
    """The most a bot file's ``[limits]`` may ask for (the organiser's maxima); each name
    is a field of :class:`~referee.jail.bots.Limits`."""

    cpu_seconds: int = Limits.cpu_seconds
    memory_mb: int = Limits.memory_mb
    processes: int = Limits.processes
    cpus: float = Limits.cpus
    log_mb: int = Limits.log_mb


@dataclass(frozen=True)
class Grants:
    """What the organiser gives the bots of one run: paths bound read-only into every
    started bot's sandbox, and the maxima of the bot files' ``[limits]``."""

    #: Resolved paths (already checked against :func:`never_readable`'s host part).
    read: tuple[Path, ...] = ()
    max_limits: MaxLimits = MaxLimits()
    #: Where the grants were given, for the refusals ("league.toml", "--read").
    source: str = "the organiser"
    #: How the organiser raises a maximum (the file's key, or the flag), for refusals.
    max_how: str = "[sandbox.max_limits] in the tournament, league or comparison file"
    #: False when bots run without a sandbox (trusted, ``mode = "none"``): they read
    #: anything their user may, so what a file names is not checked.
    sandboxed: bool = True

    def plus(self, read: Sequence[Path]) -> Grants:
        """These grants with more paths (one ``[[bots]]`` entry's own)."""
        return dataclasses.replace(self, read=tuple(dict.fromkeys((*self.read, *read))))


def confine_bot_file(
    spec: BotSpec,
    folder: Path,
    asked: Sequence[tuple[str, str]],
    grants: Grants,
    limits_given: Iterable[str] = (),
) -> BotSpec:
    """``spec`` (read from a bot file in ``folder``) held to the policy: its folder and
    ``[sandbox] read`` inside ``folder`` or a grant, never a host folder no bot may read,
    its limits within the maxima; with the organiser's grants added to what it reads.

    ``asked`` is what the file gave, (key, value as written), in the order of
    ``(spec.workdir, *spec.read)``; ``limits_given`` the ``[limits]`` keys it set (a limit
    it left out is the referee's default, lowered to the maximum when that is lower).
    Raises :class:`BotConfigError` in one line naming the bot file and the path."""
    if spec.external:
        return spec  # dials in by itself: nothing of the host is given to it
    where = spec.source
    host = never_readable()
    loader = sorted(k for k in spec.env if k.startswith("LD_") or k in LOADER_VARIABLES)
    if loader and grants.sandboxed:
        raise BotConfigError(
            f"{where}: [env] {loader[0]} is not allowed: the program that starts the bot "
            "in its sandbox (as root) would read it too; set it in the command instead, e.g. "
            f'command = ["env", "{loader[0]}=...", "./bot"]'
        )
    named = path_variable(spec.env) if grants.sandboxed else ""
    if named:
        raise BotConfigError(
            f"{where}: [env] {named} = {spec.env[named]!r} is a path; a time zone or locale "
            'is a name the system resolves (TZ = "Europe/Berlin", LANG = "C.UTF-8")'
        )
    checked = zip(asked, (spec.workdir, *spec.read), strict=True) if grants.sandboxed else ()
    for (key, written), path in checked:
        shown = f"{key} = {written!r}" + ("" if written == str(path) else f" ({path})")
        reason = why_never(path, host)
        if reason:
            raise BotConfigError(f"{where}: {shown} can never be given to a bot: {reason}")
        if not _inside(path, (folder, *grants.read)):
            raise BotConfigError(
                f"{where}: {shown} is outside the bot's folder {folder}; a bot file may "
                f"name only paths inside its own folder, anything else is the organiser's "
                f"to grant ({GRANT_HOW})"
            )
    given = set(limits_given)
    lowered: dict[str, int] = {}
    for item in fields(MaxLimits):
        asked_value = getattr(spec.limits, item.name)
        most = getattr(grants.max_limits, item.name)
        if _amount(item.name, asked_value) <= _amount(item.name, most):
            continue
        if item.name not in given:
            lowered[item.name] = most
            continue
        asked_text = f"{asked_value}" + (
            " (no quota)" if _amount(item.name, asked_value) == math.inf else ""
        )
        raise BotConfigError(
            f"{where}: [limits] {item.name} = {asked_text} is over the organiser's "
            f"maximum of {most} ({grants.max_how}); ask for at most {most}, or have the "
            "organiser raise it"
        )
    if lowered:
        spec = dataclasses.replace(spec, limits=dataclasses.replace(spec.limits, **lowered))
    return with_grants(spec, grants)


def _amount(name: str, value: float) -> float:
    """A limit's value for comparing with a maximum: ``cpus = 0`` is no quota, more than any."""
    return math.inf if name == "cpus" and value == 0 else value


def with_grants(spec: BotSpec, grants: Grants) -> BotSpec:
    """``spec`` reading the granted paths as well (a started bot only)."""
    if spec.external or not grants.read:
        return spec
    return dataclasses.replace(spec, read=tuple(dict.fromkeys((*spec.read, *grants.read))))


def _refuse_shared(rules: Sequence[Rule], where: str, error: type[Exception]) -> None:
    """``error`` in one line when the output folder, the database or the deal key lies
    inside a path every started bot reads (the system, the referee's interpreter)."""
    from referee.jail.sandbox import shared_paths  # the sandbox imports nothing of this

    for shared in shared_paths():
        for rule in rules:
            if isinstance(rule, Protected) and (shared == rule.path or shared in rule.path.parents):
                prefix = f"{where}: " if where else ""
                raise error(
                    f"{prefix}{rule.what} lies inside {shared}, which every started bot may "
                    "read (the system, or the referee's interpreter and packages); put it "
                    "elsewhere"
                )


def check_run(
    bots: Sequence[BotSpec],
    grants: Sequence[tuple[str, Path]],
    rules: Sequence[Rule],
    where: str,
    error: type[Exception],
    sandboxed: bool = True,
) -> None:
    """Refuse, in one line, a grant (``(key as written, resolved path)`` of ``where``) or a
    started bot's folder or read path that no bot may read in this run (``rules``: see
    :func:`never_readable`). Called once the output folder, the database and the deal key
    file are known, before any bot starts. Without a sandbox (``sandboxed`` False: trusted
    bots) the bots' own paths are not checked, the organiser's grants still are."""
    refuse_never(grants, where, rules, error)
    if sandboxed and any(not bot.external for bot in bots):
        _refuse_shared(rules, where, error)
    for bot in bots if sandboxed else ():
        if bot.external:
            continue
        paths = [("workdir", bot.workdir), *(("[sandbox] read", p) for p in bot.read)]
        refuse_never(paths, bot.source or bot.name, rules, error)
