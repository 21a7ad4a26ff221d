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
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.bots import BotProcess, BotSpec, log_name
from referee.server import RefereeServer, SeatSlot, SeatStream


async def await_handshake(slot: SeatSlot, process: BotProcess | None, timeout_s: float) -> str:
    """Wait until ``slot``'s stream completes its handshake, ``process`` exits, or the
    start-up time is up. Returns "" when the stream is attached, otherwise why not."""
    waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(slot.attached.wait())]
    if process is not None:
        waiters.append(asyncio.ensure_future(process.proc.wait()))
    _, pending = await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    for waiter in pending:
        waiter.cancel()
    if slot.attached.is_set() and slot.stream is not None:
        return ""
    why = slot.handshake_error or f"no valid handshake within {timeout_s:g} s"
    if process is not None and process.returncode is not None:
        why += f"; the bot process {process.describe_exit()}"
    return why


class StartFailed(Exception):
    """A bot could not be started or did not complete its handshake; the text says why."""


@dataclass(eq=False)
class PooledBot:
    """One stream of a started bot process (a process with ``seats = N`` has N)."""

    spec: BotSpec
    process: BotProcess
    slot: SeatSlot
    stream: SeatStream
    matches: int = 0
    #: The match the stream is lent to ("" while idle).
    match_id: str = ""

    @property
    def alive(self) -> bool:
        """True while the process runs and its stream is open."""
        return self.process.returncode is None and not self.stream.closed.is_set()


@dataclass(eq=False)
class _Launch:
    """A bot process being started, with the seats its streams will claim."""

    spec: BotSpec
    slots: list[SeatSlot]
    task: asyncio.Task[BotProcess]


@dataclass
class BotPool:
    """Idle bot streams by bot name; processes started on demand."""

    server: RefereeServer
    log_dir: Path
    startup_s: float = 10.0
    _idle: dict[str, list[PooledBot]] = field(default_factory=dict)
    _all: list[PooledBot] = field(default_factory=list)
    #: Seats of started processes whose streams no match has claimed yet, by bot name.
    _unclaimed: dict[str, list[tuple[_Launch, SeatSlot]]] = field(default_factory=dict)
    _launches: list[_Launch] = field(default_factory=list)
    _started: int = 0
    _discarding: set[asyncio.Task[None]] = field(default_factory=set)

    def serves(self, spec: BotSpec) -> bool:
        """The pool starts command bots; an external bot dials in for each seat itself."""
        return not spec.external

    async def acquire(self, spec: BotSpec, match_id: str = "") -> PooledBot:
        """An idle, healthy stream of ``spec`` for one match (``match_id``: none of the
        match's other seats is served by the same process); starts a process when none is
        idle or about to be."""
        busy = {b.process for b in self._all if match_id and b.match_id == match_id}
        idle = self._idle.setdefault(spec.name, [])
        for bot in list(idle):
            if not bot.alive:
                idle.remove(bot)
                await self._discard(bot)
            elif bot.process not in busy:
                idle.remove(bot)
                return self._lend(bot, match_id)
        unclaimed = self._unclaimed.setdefault(spec.name, [])
        for launch, slot in unclaimed:
            task = launch.task
            if not task.done() or task.cancelled() or task.exception() or task.result() not in busy:
                unclaimed.remove((launch, slot))
                break
        else:
            launch = self._launch(spec)
            slot = launch.slots[0]
            unclaimed.extend((launch, s) for s in launch.slots[1:])
        return self._lend(await self._attach(launch, slot), match_id)

    def _lend(self, bot: PooledBot, match_id: str) -> PooledBot:
        bot.matches += 1
        bot.match_id = match_id
        return bot

    def release(self, bot: PooledBot) -> None:
        """The match is over: the stream may serve another one (if it is still healthy)."""
        bot.stream.on_fault = None
        bot.match_id = ""
        if bot.alive:
            self._idle.setdefault(bot.spec.name, []).append(bot)
        else:
            task = asyncio.ensure_future(self._discard(bot))
            self._discarding.add(task)
            task.add_done_callback(self._discarding.discard)

    def _launch(self, spec: BotSpec) -> _Launch:
        """Open the seats of a new process of ``spec`` and start it (in the background, so
        that other seats can claim its streams meanwhile)."""
        self._started += 1
        n = self._started
        registry = self.server.registry
        slots = registry.open_seats("pool", n, spec.name, spec.seats)
        log_path = self.log_dir / f"{log_name(spec.name)}-{n}.log"
        extra = {"STICHELN_SEATS": str(spec.seats)} if spec.seats > 1 else {}
        task = asyncio.ensure_future(
            BotProcess.start(spec, self.server.address, slots[0].token, log_path, extra)
        )
        launch = _Launch(spec, slots, task)
        self._launches.append(launch)
        return launch

    async def _attach(self, launch: _Launch, slot: SeatSlot) -> PooledBot:
        """Wait for ``slot``'s stream of ``launch``'s process to complete its handshake."""
        try:
            process = await asyncio.shield(launch.task)
        except OSError as exc:
            self._drop_launch(launch)
            raise StartFailed(f"cannot start the bot: {exc}") from None
        why = await await_handshake(slot, process, self.startup_s)
        if why or slot.stream is None:
            self.server.registry.close_seat(slot)
            if not self._uses(process):
                self._drop_launch(launch)
                await process.stop()
            raise StartFailed(why)
        bot = PooledBot(launch.spec, process, slot, slot.stream)
        self._all.append(bot)
        return bot

    def _uses(self, process: BotProcess) -> bool:
        """Whether a stream of ``process`` is in the pool or still to be claimed."""
        return any(b.process is process for b in self._all) or any(
            launch.task.done() and not launch.task.exception() and launch.task.result() is process
            for pending in self._unclaimed.values()
            for launch, _ in pending
        )

    def _drop_launch(self, launch: _Launch) -> None:
        """Forget ``launch``'s unclaimed seats (its process failed or is stopped)."""
        pending = self._unclaimed.get(launch.spec.name, [])
        for entry in [e for e in pending if e[0] is launch]:
            pending.remove(entry)
            self.server.registry.close_seat(entry[1])
        with contextlib.suppress(ValueError):
            self._launches.remove(launch)

    async def _discard(self, bot: PooledBot) -> None:
        bot.stream.end()
        self.server.registry.close_seat(bot.slot)
        with contextlib.suppress(ValueError):
            self._all.remove(bot)
        if bot.process.returncode is not None or not self._uses(bot.process):
            # The process's other streams (if any) go with it.
            for launch in [x for x in self._launches if x.slots and bot.slot in x.slots]:
                self._drop_launch(launch)
            await bot.process.stop()

    async def close(self) -> None:
        """End every stream (status OK) and stop every process."""
        bots, self._all = list(self._all), []
        self._idle.clear()
        for bot in bots:
            bot.stream.end()
            self.server.registry.close_seat(bot.slot)
        for pending in self._unclaimed.values():
            for _, slot in pending:
                if slot.stream is not None:
                    slot.stream.end()
                self.server.registry.close_seat(slot)
        self._unclaimed.clear()
        launches, self._launches = self._launches, []
        # A start under way is let finish (a few milliseconds), so that its process is stopped too.
        await asyncio.gather(*(x.task for x in launches), return_exceptions=True)
        processes = {b.process for b in bots}
        for launch in launches:
            if not launch.task.cancelled() and launch.task.exception() is None:
                processes.add(launch.task.result())
        await asyncio.gather(*(p.stop() for p in processes), return_exceptions=True)

    @property
    def started(self) -> int:
        """How many processes the pool has started."""
        return self._started
