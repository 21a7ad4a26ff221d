"""Bot processes kept between matches: each stream serves one match at a time.

Starting a bot costs far more than a decision (an interpreter, its gRPC runtime). A
tournament therefore keeps each started bot process with its stream and seats it again
in a later match once its match is over. A stream never serves two matches at once: it
is either idle in the pool or lent to exactly one match. One that crashed, disconnected
or is still busy is never lent; a fresh one is started instead. Duplicate mode does not
use the pool, so that every replay starts the bots afresh.

A bot file may declare ``seats = N``: one process of it then plays up to N matches at
once. The pool starts such a bot with ``STICHELN_SEATS=N``; the process opens N streams,
all with the one token it was given, and each stream is lent on its own. Two streams of
one process are never lent to the same match, so a process never sees two hands of one
deal. With ``parallel`` matches at once this starts far fewer processes than one per
seat (and their start-up is most of a short tournament's CPU).

A ``single_use`` pool (``referee compare``) lends each process to one match only (with one
stream, whatever ``seats`` says) and ends it after that match, but starts a replacement
whenever it lends one: the next match finds its bots started and greeted, through the same
start path and jail.

A process never plays two seatings of one deal: each match names its deal (its seed) when
it asks for a seat, and a process that has been dealt those cards once is not lent for
them again, so a duplicate deal's later seatings always get another process.

A league's warm pool (:mod:`referee.league.worker`) keeps the hosted bots it started within
stated bounds (:class:`Bounds`): at most ``processes`` of them, their memory (their
cgroups') at most ``memory_mb``, and none idle longer than ``idle_s``; before one more
starts, the least recently used idle ones stop. A process is known by its bot's name,
command, folder, environment and source (:func:`pool_key`), so a league entry's new
submission never gets the old one's processes, and :meth:`BotPool.retire` stops those
no longer wanted. One that dies is replaced by the next match that needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from referee import jail
from referee.jail.bots import BotSpec, process_log_name
from referee.jail.process import BotProcess
from referee.jail.resident import Report
from referee.jail.sandbox import SOCKET_ADDRESS, SandboxPolicy, SandboxUnavailable, unreadable
from referee.match.server import RefereeServer, SeatSlot, SeatStream
from referee.runtime import descriptors

if TYPE_CHECKING:
    from referee.jail.runtime import ReadSet

log = structlog.get_logger("referee.pool")

#: ``Welcome.message`` of a stream the pool keeps for several matches.
POOLED_WELCOME = (
    "ready for matches: this stream serves one match at a time, each begins with a "
    "MatchStart naming the seat and the match"
)
#: How long a bot may take to exit by itself after its last stream ended, before SIGTERM:
#: what ``referee check-bot`` allows (a bot it passed is not stopped here). A process exits
#: in well under a second; on a loaded machine several ending at once take longer.
EXIT_GRACE_S = 5.0


async def await_handshake(slot: SeatSlot, process: BotProcess | None, timeout_s: float) -> str:
    """Wait until ``slot``'s stream completes its handshake, ``process`` exits, or the
    start-up time is up. Returns "" when the stream is attached, otherwise why not."""
    waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(slot.attached.wait())]
    if process is not None:
        waiters.append(asyncio.ensure_future(process.proc.wait()))
    try:
        await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Also when this wait is cancelled (a pool closing while a bot starts): no waiter
        # may outlive it.
        for waiter in waiters:
            waiter.cancel()
    if slot.attached.is_set() and slot.stream is not None:
        return ""
    refusal = process.refusal if process is not None else ""
    why = slot.handshake_error or refusal or f"no valid handshake within {timeout_s:g} s"
    if process is not None and process.returncode is not None:
        why += f"; the bot process {process.describe_exit()}"
        why += changed_under(process)
    return why


#: What bubblewrap says, before the bot runs, when a path it binds by descriptor
#: (:mod:`referee.jail.held`) was swapped for something else while it made the sandbox.
_BWRAP_CHANGED = (
    b"bwrap: Race condition binding dirfd",
    b"bwrap: Can't get type of source",
    b"bwrap: Can't find source path",
    b"bwrap: Can't bind mount ",
)


def changed_under(process: BotProcess) -> str:
    """``"; ..."`` saying that the bot's folder changed while its sandbox was made, when
    bubblewrap stopped the start for that (its last words in the bot's log), else ""."""
    if not process.sandboxed:
        return ""
    try:
        with open(process.log_path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - 4096))
            tail = f.read().splitlines()
    except OSError:
        return ""
    if not any(line.startswith(_BWRAP_CHANGED) for line in tail[-3:]):
        return ""
    return (
        "; its folder or a path it reads changed while its sandbox was made (bubblewrap "
        "found another file where it had opened one): a bot's folder and the paths it "
        "reads may not change while the referee runs"
    )


class RefereeFault(Exception):
    """A bot could not be started, or could not reach its seat, for the referee's own want
    (of file descriptors): not the bot's fault. Its match is void and played again."""


#: Fewer free descriptors than this when a start or a handshake fails: the referee's want.
SHORT_OF_DESCRIPTORS = 16


def referee_short(why: object) -> RefereeFault | None:
    """A :class:`RefereeFault` when ``why`` (an error, or a failed handshake's words) came
    with the referee short of descriptors, else None."""
    short = isinstance(why, BaseException) and descriptors.is_shortage(why)
    if short or descriptors.free() < SHORT_OF_DESCRIPTORS:
        return RefereeFault(
            f"the referee ran out of file descriptors ({descriptors.open_count()} open of "
            f"{descriptors.limit()}): {why}"
        )
    return None


async def start_bot(
    server: RefereeServer,
    spec: BotSpec,
    slots: Sequence[SeatSlot],
    log_path: Path,
    extra_env: dict[str, str] | None = None,
) -> BotProcess:
    """Start one process of ``spec`` for ``slots`` (its seats, one token), confined as
    ``server.sandbox`` says.

    A sandboxed process dials a Unix socket made for it alone (bound into its sandbox);
    its seats open only there, and the socket closes when the process ends. Without a
    sandbox it dials the server's TCP port (and trusts the port's certificate, if any).
    Raises :class:`OSError` when it cannot be started,
    :class:`~referee.jail.sandbox.SandboxUnavailable` when no sandbox can be made here,
    and :class:`RefereeFault` when the referee is short of descriptors.
    """
    try:
        return await _start_bot(server, spec, slots, log_path, extra_env)
    except (OSError, RuntimeError) as exc:  # gRPC's "Failed to bind" is a RuntimeError
        fault = referee_short(exc)
        if fault is not None:
            raise fault from None
        raise


async def _start_bot(
    server: RefereeServer,
    spec: BotSpec,
    slots: Sequence[SeatSlot],
    log_path: Path,
    extra_env: dict[str, str] | None,
) -> BotProcess:
    token = slots[0].token
    sandbox = server.sandbox
    if not sandbox.enabled:
        tls = server.tls
        return await jail.start(
            spec,
            server.address,
            token,
            log_path,
            extra_env,
            tls_ca=str(tls.cert_file.resolve()) if tls is not None else "",
        )
    sandbox.check()
    moved = moved_path(spec)
    if moved:
        raise OSError(moved)
    # A uid of its own while it runs (as root), given back once it has ended and been reaped.
    user = sandbox.lease_user()
    try:
        socket = await server.open_bot_socket(user.ids if user else None)
    except BaseException:
        if user is not None:
            user.release()
        raise

    async def ended() -> None:
        await socket.close()
        if user is not None:
            user.release()
        if socket.cut:  # said where the bot's author looks first
            with contextlib.suppress(OSError), open(log_path, "a", encoding="utf-8") as log:
                log.write(f"referee: {socket.cut}\n")

    try:
        for slot in slots:
            slot.origin = socket.origin
        reads = await asyncio.to_thread(bot_reads, spec)
        policy = sandbox.policy(
            spec.workdir,
            spec.read,
            socket.folder,
            user.ids if user else None,
            memory_mb=spec.limits.memory_mb,
            runtime=reads,
        )
        # Every page it may read resident before it starts, and kept so: nothing it reads
        # carries a bit to a later seating (referee.jail.resident).
        held = await asyncio.to_thread(keep_resident, policy)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"referee: {reads_line(reads, held)}\n")
        if user is not None and (why := unreadable(policy, sandbox.uids)):
            # Said where the bot's author looks first; a bot that never reads its folder
            # (a command given with full paths) still runs.
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(f"referee: {why}\n")
        process = await jail.start(
            spec,
            SOCKET_ADDRESS,
            token,
            log_path,
            extra_env,
            policy=policy,
            on_exit=ended,
        )
        process.origin = socket.origin
        return process
    except BaseException:
        await ended()
        raise


def bot_reads(spec: BotSpec) -> ReadSet:
    """The runtime ``spec`` reads (:mod:`referee.jail.runtime`): the one its file names,
    else the one its command implies. Raise :class:`OSError` in one line when it cannot
    run here."""
    from referee.jail import runtime
    from referee.jail.sandbox import bot_path

    path = bot_path()
    name = spec.runtime or runtime.infer(spec.command, spec.workdir, path)
    try:
        return runtime.read_set(name, spec.command, spec.workdir, path)
    except runtime.RuntimeUnavailable as exc:
        raise OSError(f"{spec.source or spec.name}: {exc}") from None


def keep_resident(policy: SandboxPolicy) -> Report | None:
    """Every page ``policy``'s bot may read made resident and kept so, in a run that
    replays deals; None otherwise (:func:`referee.jail.resident.enabled`)."""
    from referee.jail import resident

    if not resident.enabled():
        return None
    # The runtime and /etc once per process; the bot's own paths at every start (a
    # stat per file; a file is read in again only when it changed).
    # (A tree's files are the same files as the runtime's, its links: held once.)
    runtime = (*policy.system, *(tree for tree, _ in policy.trees))
    return resident.hold_once(runtime, policy.hidden) + resident.hold(policy.read_only)


def reads_line(reads: ReadSet, held: Report | None) -> str:
    """What a started bot may read of the host, in one line."""
    line = f"reads {reads.describe()}, its folder and read paths, and a few files of /etc"
    return f"{line}: in all {held.describe()}" if held else line


def moved_path(spec: BotSpec) -> str:
    """Why ``spec``'s folder or a read path no longer leads where it led when its file was
    checked (:mod:`referee.jail.policy`; a link put in its place since), or "".
    bubblewrap follows links when it binds a path: checked again just before the bot
    starts, a path swapped for a link to ``/proc`` or the output folder is refused rather
    than bound."""
    for path in (spec.workdir, *spec.read):
        path, now = path.absolute(), path.resolve()
        if now != path:
            return (
                f"{path} now leads to {now}: a bot's folder and the paths it reads may not "
                "be replaced by links while the referee runs"
            )
    return ""


class StartFailed(Exception):
    """A bot could not be started or did not complete its handshake; the text says why."""


def _taken(bot: str, task: asyncio.Task[None]) -> None:
    """A start's failure is the pool's to take: acquirers waiting on it get it raised, and
    a process started ahead that no match asked for yet is replaced by the next acquire
    (noted in the log, not left to asyncio's "Task exception was never retrieved")."""
    if task.cancelled():
        return
    exc = task.exception()
    if isinstance(exc, StartFailed):
        log.info("bot_start_failed", bot=bot, why=str(exc))


def pool_key(spec: BotSpec) -> Hashable:
    """What makes two specs one bot to the pool: its name, command, folder, environment
    and source (a league entry's new submission is another source, even with the same
    code, so another bot)."""
    env = tuple(sorted(spec.env.items()))
    return (spec.name, spec.command, str(spec.workdir), env, spec.source)


def memory_bytes(process: BotProcess) -> int:
    """What ``process`` uses of memory now: its cgroup's usage (in the gVisor tier runsc's
    Sentry and gofer included), else the resident sets of its process group; 0 once it
    has ended."""
    group = process.bounds.group if process.bounds is not None else None
    if group is not None:
        name = "memory.current" if group.system.version == 2 else "memory.usage_in_bytes"
        for hierarchy, folder in zip(group.system.hierarchies, group.folders, strict=True):
            if "memory" in hierarchy.controllers:
                with contextlib.suppress(OSError, ValueError):
                    return int((folder / name).read_text())
                return 0
    if process.returncode is not None:
        return 0
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == process.proc.pid:  # its process group
                total += int(fields[21]) * page
    return total


#: How long a warm process may idle before it stops, when nothing names a bound: in the
#: bubblewrap tier (and without a sandbox) an idle process costs next to nothing and a
#: start about 0.16 s of CPU (the Python sample bot), so it may wait ten minutes for a
#: match.
IDLE_S = 600.0
#: The same in the gVisor tier: an idle sandbox costs 20-50 ms of CPU a second (runsc
#: 20240729's systrap timer, docs/hosting.md) and a start about 1.1 s, so after a minute
#: or so a warm process has cost more than starting it again would.
IDLE_S_GVISOR = 60.0


def default_idle_s(mode: str) -> float:
    """:attr:`Bounds.idle_s` for processes of the sandbox ``mode`` when none is given."""
    return IDLE_S_GVISOR if mode == "gvisor" else IDLE_S


@dataclass(frozen=True)
class Bounds:
    """What a pool keeps (0: no bound). Processes serving a match are never stopped for
    these bounds; idle ones are, least recently used first, before another starts."""

    #: Bot processes kept, started or starting.
    processes: int = 0
    #: Their memory together (their cgroups' usage), in MiB.
    memory_mb: int = 0
    #: An idle process is stopped after this many seconds without a match.
    idle_s: float = 0.0


@dataclass(frozen=True)
class HeldProcess:
    """A process a pool holds: its bot's name, ``"starting"``, ``"serving"`` (a match
    holds one of its streams) or ``"idle"``, and its memory in bytes (0 while starting)."""

    bot: str
    state: str
    memory_bytes: int


@dataclass(eq=False)
class PooledBot:
    """One stream of a started bot process (a process with ``seats = N`` has N)."""

    spec: BotSpec
    process: BotProcess
    slot: SeatSlot
    stream: SeatStream
    launch: _Launch
    matches: int = 0
    #: The match the stream is lent to ("" while idle).
    match_id: str = ""

    @property
    def alive(self) -> bool:
        """True while the process runs and its stream is open."""
        return self.process.returncode is None and not self.stream.closed.is_set()


@dataclass(eq=False)
class _Launch:
    """One bot process: started with all its seats, and ready once every one of its
    streams has completed the handshake. Seats are promised to matches while it starts."""

    spec: BotSpec
    slots: list[SeatSlot]
    task: asyncio.Task[None] | None = None
    #: Seats promised to acquirers (only while starting; then final).
    promised: int = 0
    #: The streams of the promised seats, once ready, for the acquirers to take.
    promised_bots: list[PooledBot] = field(default_factory=list)
    #: The deals (their seeds) this process has been dealt: it is not lent for them again.
    deals: set[int] = field(default_factory=set)
    #: When a match last let go of one of its streams (monotonic seconds).
    used_at: float = field(default_factory=time.monotonic)
    #: No longer wanted: stopped once no match holds it.
    retired: bool = False
    #: The pool stopped it (retired, idle, or to make room): its end is not a death.
    stopping: bool = False
    #: Seats of matches its streams have been lent to.
    served: int = 0

    @property
    def starting(self) -> bool:
        return self.task is not None and not self.task.done()


@dataclass
class BotPool:
    """Idle bot streams by bot (:func:`pool_key`); processes started on demand."""

    server: RefereeServer
    log_dir: Path
    startup_s: float = 10.0
    _idle: dict[Hashable, list[PooledBot]] = field(default_factory=dict)
    _all: list[PooledBot] = field(default_factory=list)
    #: The processes being started (ready ones are only in ``_all``).
    _launches: list[_Launch] = field(default_factory=list)
    #: The processes (launches) serving a seat of each match, lent or promised.
    _claims: dict[str, set[_Launch]] = field(default_factory=dict)
    _started: int = 0
    _discarding: set[asyncio.Task[None]] = field(default_factory=set)
    #: Each process serves one match; a replacement starts whenever one is lent.
    single_use: bool = False
    #: Before each process's number in its log's name: the pools of a tournament's
    #: worker processes share one log folder, and each counts its processes from 1.
    process_tag: str = ""
    #: What the pool keeps (a league's warm pool; a tournament's keeps every bot).
    bounds: Bounds = field(default_factory=Bounds)
    #: Processes lost, by bot name: they died, or a match ended their stream (a fault).
    #: The next match that seats the bot starts a fresh one.
    lost: dict[str, int] = field(default_factory=dict)
    #: Processes the pool stopped: ``"idle"``, ``"room"`` (bounds) or ``"retired"``.
    stopped: dict[str, int] = field(default_factory=dict)
    #: Seats lent: from a process that had served no match before (``fresh``), and from
    #: one that had (``warm``: the pool's reuse).
    seatings: dict[str, int] = field(default_factory=lambda: {"fresh": 0, "warm": 0})
    _sweeper: asyncio.Task[None] | None = None

    def serves(self, spec: BotSpec) -> bool:
        """The pool starts command bots; an external bot dials in for each seat itself."""
        return not spec.external

    async def acquire(
        self, spec: BotSpec, match_id: str = "", deal_seed: int | None = None
    ) -> PooledBot:
        """An idle, healthy stream of ``spec`` for one match, from a process that serves no
        other seat of match ``match_id`` and has never been dealt ``deal_seed``'s cards;
        starts a process when none is idle or starting with a seat to spare. Raises
        :class:`StartFailed` saying why not."""
        if self.single_use:
            spec = dataclasses.replace(spec, seats=1)
            bot = await self._acquire(spec, match_id, deal_seed)
            self._launch(spec)  # ready for a later match by the time it starts
            return bot
        return await self._acquire(spec, match_id, deal_seed)

    def _fits(self, launch: _Launch, claimed: set[_Launch], deal_seed: int | None) -> bool:
        return (
            launch not in claimed
            and not launch.retired
            and (deal_seed is None or deal_seed not in launch.deals)
        )

    async def _acquire(self, spec: BotSpec, match_id: str, deal_seed: int | None) -> PooledBot:
        claimed = self._claims.setdefault(match_id, set()) if match_id else set()
        key = pool_key(spec)
        # No await until the stream or seat is claimed: concurrent acquires see the claim.
        idle = self._idle.setdefault(key, [])
        for bot in list(idle):
            if not bot.alive:
                idle.remove(bot)
                self._discard_later(bot)
            elif self._fits(bot.launch, claimed, deal_seed):
                idle.remove(bot)
                return self._lend(bot, match_id, deal_seed)
        launch = next(
            (
                x
                for x in self._launches
                if pool_key(x.spec) == key
                and x.promised < spec.seats
                and self._fits(x, claimed, deal_seed)
            ),
            None,
        )
        if launch is None:
            self._make_room()
            launch = self._launch(spec)
        launch.promised += 1
        claimed.add(launch)
        if deal_seed is not None:
            launch.deals.add(deal_seed)
        assert launch.task is not None
        try:
            await asyncio.shield(launch.task)
        except BaseException:
            claimed.discard(launch)
            if match_id and not claimed:
                self._claims.pop(match_id, None)
            if launch.starting:
                launch.promised -= 1
            elif launch.promised_bots:  # ready after all: the seat goes back to the pool
                self._return(launch.promised_bots.pop())
            raise
        return self._lend(launch.promised_bots.pop(), match_id, deal_seed)

    def _lend(self, bot: PooledBot, match_id: str, deal_seed: int | None = None) -> PooledBot:
        self.seatings["warm" if bot.launch.served else "fresh"] += 1
        bot.launch.served += 1
        bot.matches += 1
        if bot.process.bounds is not None:
            bot.process.bounds.log.another_match()  # its log's cap is per match
        bot.match_id = match_id
        if deal_seed is not None:
            bot.launch.deals.add(deal_seed)
        if match_id:
            self._claims.setdefault(match_id, set()).add(bot.launch)
        return bot

    def release(self, bot: PooledBot) -> None:
        """The match is over: the stream may serve another one (if it is still healthy)."""
        bot.stream.on_fault = None
        claims = self._claims.get(bot.match_id)
        if claims is not None:
            claims.discard(bot.launch)
            if not claims:
                del self._claims[bot.match_id]
        bot.match_id = ""
        bot.launch.used_at = time.monotonic()
        if self.single_use or bot.launch.retired:
            bot.launch.stopping = True
            self._discard_later(bot)
        else:
            self._return(bot)
            if self.bounds.processes and self.processes() > self.bounds.processes:
                self._make_room(0)

    def _return(self, bot: PooledBot) -> None:
        if bot.alive:
            self._idle.setdefault(pool_key(bot.spec), []).append(bot)
        else:
            self._discard_later(bot)

    def _discard_later(self, bot: PooledBot) -> None:
        task = asyncio.ensure_future(self._discard(bot))
        self._discarding.add(task)
        task.add_done_callback(self._discarding.discard)

    # -- what the pool keeps -----------------------------------------------------------

    def _ready(self) -> dict[_Launch, list[PooledBot]]:
        """The started processes (by launch) and their streams, but those being stopped."""
        out: dict[_Launch, list[PooledBot]] = {}
        for bot in self._all:
            if not bot.launch.stopping:
                out.setdefault(bot.launch, []).append(bot)
        return out

    def processes(self) -> int:
        """Bot processes the pool holds now, started or starting."""
        return len(self._ready()) + len(self._launches)

    def held_now(self) -> list[HeldProcess]:
        """What each process the pool holds now is doing, and its memory (its cgroup's):
        for the pool's metrics (:meth:`referee.match.metrics.RefereeMetrics.watch_pool`)."""
        out = [HeldProcess(x.spec.name, "starting", 0) for x in list(self._launches)]
        for launch, bots in self._ready().items():
            state = "serving" if any(b.match_id for b in bots) else "idle"
            out.append(HeldProcess(launch.spec.name, state, memory_bytes(bots[0].process)))
        return out

    def memory_mb(self) -> float:
        """The memory of the processes the pool holds now (their cgroups'), in MiB."""
        return sum(memory_bytes(bots[0].process) for bots in self._ready().values()) / (1 << 20)

    def _make_room(self, room: int = 1) -> None:
        """Stop idle processes, least recently used first, until ``room`` more fit in
        :attr:`bounds` (processes serving a match stay, whatever the bounds)."""
        b = self.bounds
        if not (b.processes or b.memory_mb):
            return
        ready = self._ready()
        idle = sorted(
            (launch for launch, bots in ready.items() if not any(x.match_id for x in bots)),
            key=lambda launch: launch.used_at,
        )
        count = len(ready) + len(self._launches)
        used = {launch: memory_bytes(bots[0].process) for launch, bots in ready.items()}
        total = sum(used.values())
        # One more is expected to take what the others take on average.
        each = total / len(used) if used and room else 0
        while idle and (
            (b.processes and count + room > b.processes)
            or (b.memory_mb and total + room * each > b.memory_mb << 20)
        ):
            launch = idle.pop(0)
            count -= 1
            total -= used[launch]
            self._stop(launch, "room")

    def _stop(self, launch: _Launch, why: str) -> None:
        """Stop an idle process (``why``: idle, room, retired)."""
        launch.stopping = True
        self.stopped[why] = self.stopped.get(why, 0) + 1
        bots = [b for b in self._all if b.launch is launch]
        log.info(
            "bot_process_stopped",
            bot=launch.spec.name,
            why=why,
            matches=sum(b.matches for b in bots),
        )
        for bot in bots:
            with contextlib.suppress(ValueError):
                self._idle.get(pool_key(bot.spec), []).remove(bot)
        if bots:
            self._discard_later(bots[0])

    def retire(self, wanted: Callable[[BotSpec], bool]) -> int:
        """Stop every process whose bot is no longer ``wanted`` (at once when idle, else
        when its match lets go of it); how many were marked."""
        marked = 0
        for launch, bots in self._ready().items():
            if launch.retired or wanted(launch.spec):
                continue
            launch.retired = True
            marked += 1
            if not any(b.match_id for b in bots):
                self._stop(launch, "retired")
            else:
                self.stopped["retired"] = self.stopped.get("retired", 0) + 1
                launch.stopping = True
        for launch in self._launches:
            if not wanted(launch.spec):
                launch.retired = True  # its promised seats play; then it goes
        return marked

    def sweep(self) -> None:
        """Stop the processes idle for longer than ``bounds.idle_s``."""
        if not self.bounds.idle_s:
            return
        due = time.monotonic() - self.bounds.idle_s
        for launch, bots in self._ready().items():
            if launch.used_at < due and not any(b.match_id for b in bots):
                self._stop(launch, "idle")

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, self.bounds.idle_s / 4))
            self.sweep()

    def held(self) -> list[BotSpec]:
        """The bots with a process here now, started or starting (one entry per process)."""
        return [launch.spec for launch in self._ready()] + [x.spec for x in self._launches]

    # -- starting and ending -------------------------------------------------------------

    def _launch(self, spec: BotSpec) -> _Launch:
        """Open the seats of a new process of ``spec`` and start it in the background."""
        if self.bounds.idle_s and self._sweeper is None:
            self._sweeper = asyncio.ensure_future(self._sweep_loop())
        self._started += 1
        n = self._started
        launch = _Launch(spec, self.server.registry.open_seats("pool", n, spec.name, spec.seats))
        for slot in launch.slots:  # not seated yet: each MatchStart names seat and match
            slot.welcome = POOLED_WELCOME
        launch.task = asyncio.ensure_future(self._start(launch, n))
        launch.task.add_done_callback(functools.partial(_taken, spec.name))
        self._launches.append(launch)
        return launch

    async def _start(self, launch: _Launch, n: int) -> None:
        """Start the process and wait until every one of its streams is attached; on any
        failure stop it and close its seats, so that no late stream finds a seat."""
        spec, registry = launch.spec, self.server.registry
        log_path = self.log_dir / process_log_name(spec.name, f"{self.process_tag}{n}")
        extra = {"STICHELN_SEATS": str(spec.seats)} if spec.seats > 1 else {}
        process: BotProcess | None = None
        try:
            try:
                process = await start_bot(self.server, spec, launch.slots, log_path, extra)
            except (OSError, SandboxUnavailable) as exc:
                raise StartFailed(f"cannot start the bot: {exc}") from None
            whys = await asyncio.gather(
                *(await_handshake(slot, process, self.startup_s) for slot in launch.slots)
            )
            why = next((w for w in whys if w), "")
            if why and (fault := referee_short(why)) is not None:
                raise fault
            if why:
                if len(launch.slots) > 1:
                    attached = sum(s.stream is not None for s in launch.slots)
                    why += f" ({attached} of the {len(launch.slots)} streams it declares)"
                raise StartFailed(why)
        except BaseException:
            for slot in launch.slots:
                if slot.stream is not None:
                    slot.stream.end()
                registry.close_seat(slot)
            if process is not None:
                await process.stop()
            raise
        finally:
            self._launches.remove(launch)
        bots = []
        for slot in launch.slots:
            assert slot.stream is not None
            bots.append(PooledBot(spec, process, slot, slot.stream, launch))
        self._all.extend(bots)
        # The promised seats are taken by their acquirers; the rest wait in the pool.
        launch.promised_bots = bots[: launch.promised]
        self._idle.setdefault(pool_key(spec), []).extend(bots[launch.promised :])

    async def _discard(self, bot: PooledBot) -> None:
        bot.stream.end()
        self.server.registry.close_seat(bot.slot)
        with contextlib.suppress(ValueError):
            self._all.remove(bot)
        launch = bot.launch
        siblings = [b for b in self._all if b.launch is launch]
        if bot.process.returncode is None:
            if any(b.match_id for b in siblings):
                return  # its streams lent to other matches play on; the last one ends it
            if not launch.stopping and any(b.alive for b in siblings):
                return  # the process's other streams play on
        chosen, launch.stopping = launch.stopping, True
        for other in siblings:
            # Idle ones go now; lent ones when their match releases them.
            if not other.match_id:
                with contextlib.suppress(ValueError):
                    self._idle.get(pool_key(other.spec), []).remove(other)
                with contextlib.suppress(ValueError):
                    self._all.remove(other)
            other.stream.end()
            self.server.registry.close_seat(other.slot)
        if chosen and bot.process.returncode is None:
            # Its streams ended with status OK: it may exit by itself, as the contract says.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(bot.process.proc.wait()), EXIT_GRACE_S)
        await bot.process.stop()
        if not chosen:
            # It died, or its stream ended (its match cut it): the pool did not stop it.
            self.lost[bot.spec.name] = self.lost.get(bot.spec.name, 0) + 1
            log.warning(
                "bot_process_lost",
                bot=bot.spec.name,
                process=bot.process.describe_exit(),
                matches=sum(b.matches for b in [bot, *siblings]),
                replaced="by a fresh process for the next match that seats it",
            )

    async def close(self) -> None:
        """End every stream (status OK), give the processes :data:`EXIT_GRACE_S` to exit
        by themselves, as the bot contract promises, then stop the ones still running."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        # A start under way stops its own process when cancelled.
        tasks = [x.task for x in self._launches if x.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        bots, self._all = list(self._all), []
        self._idle.clear()
        self._claims.clear()
        for bot in bots:
            bot.stream.end()
            self.server.registry.close_seat(bot.slot)
        processes = {b.process for b in bots}
        exits = [asyncio.ensure_future(p.proc.wait()) for p in processes if p.returncode is None]
        if exits:
            await asyncio.wait(exits, timeout=EXIT_GRACE_S)
            for waiter in exits:
                waiter.cancel()
        await asyncio.gather(*(p.stop() for p in processes), return_exceptions=True)
        await asyncio.gather(*self._discarding, return_exceptions=True)

    @property
    def started(self) -> int:
        """How many processes the pool has started."""
        return self._started
