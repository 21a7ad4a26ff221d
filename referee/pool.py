"""Bot processes kept between matches: one process serves one match at a time.

Starting a bot costs far more than a decision (an interpreter, its gRPC runtime). A
tournament therefore keeps each started bot process, with its one stream, and seats it
again in a later match once its match is over. A process never serves two matches at
once: it is either idle in the pool or lent to exactly one match. One that crashed,
disconnected or is still busy is never lent; a fresh one is started instead. Duplicate
mode does not use the pool, so that every replay starts the bots afresh.
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
    """A started bot process with its attached stream."""

    spec: BotSpec
    process: BotProcess
    slot: SeatSlot
    stream: SeatStream
    matches: int = 0

    @property
    def alive(self) -> bool:
        """True while the process runs and its stream is open."""
        return self.process.returncode is None and not self.stream.closed.is_set()


@dataclass
class BotPool:
    """Idle bot processes by bot name, started on demand."""

    server: RefereeServer
    log_dir: Path
    startup_s: float = 10.0
    _idle: dict[str, list[PooledBot]] = field(default_factory=dict)
    _all: list[PooledBot] = field(default_factory=list)
    _started: int = 0
    _discarding: set[asyncio.Task[None]] = field(default_factory=set)

    def serves(self, spec: BotSpec) -> bool:
        """The pool starts command bots; an external bot dials in for each seat itself."""
        return not spec.external

    async def acquire(self, spec: BotSpec) -> PooledBot:
        """An idle, healthy process of ``spec`` for one match; starts one when none is idle."""
        idle = self._idle.setdefault(spec.name, [])
        while idle:
            bot = idle.pop()
            if bot.alive:
                bot.matches += 1
                return bot
            await self._discard(bot)
        bot = await self._start(spec)
        bot.matches += 1
        return bot

    def release(self, bot: PooledBot) -> None:
        """The match is over: the process may serve another one (if it is still healthy)."""
        bot.stream.on_fault = None
        if bot.alive:
            self._idle.setdefault(bot.spec.name, []).append(bot)
        else:
            task = asyncio.ensure_future(self._discard(bot))
            self._discarding.add(task)
            task.add_done_callback(self._discarding.discard)

    async def _start(self, spec: BotSpec) -> PooledBot:
        self._started += 1
        n = self._started
        slot = self.server.registry.open_seat("pool", n, spec.name)
        log_path = self.log_dir / f"{log_name(spec.name)}-{n}.log"
        try:
            process = await BotProcess.start(spec, self.server.address, slot.token, log_path)
        except OSError as exc:
            self.server.registry.close_seat(slot)
            raise StartFailed(f"cannot start the bot: {exc}") from None
        why = await await_handshake(slot, process, self.startup_s)
        if why or slot.stream is None:
            self.server.registry.close_seat(slot)
            await process.stop()
            raise StartFailed(why)
        bot = PooledBot(spec, process, slot, slot.stream)
        self._all.append(bot)
        return bot

    async def _discard(self, bot: PooledBot) -> None:
        bot.stream.end()
        self.server.registry.close_seat(bot.slot)
        with contextlib.suppress(ValueError):
            self._all.remove(bot)
        await bot.process.stop()

    async def close(self) -> None:
        """End every stream (status OK) and stop every process."""
        bots, self._all = list(self._all), []
        self._idle.clear()
        for bot in bots:
            bot.stream.end()
            self.server.registry.close_seat(bot.slot)
        await asyncio.gather(*(b.process.stop() for b in bots), return_exceptions=True)

    @property
    def started(self) -> int:
        """How many processes the pool has started."""
        return self._started
