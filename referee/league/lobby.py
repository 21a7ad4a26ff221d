"""The league's lobby: the streams dial-in bots open with their bot tokens.

The league is the server's :class:`~referee.match.server.Lobby`: this room admits a bot's
streams (up to ``Hello.max_concurrent_matches`` and the league's ``max_seats_per_bot``),
keeps the idle ones and lends them to matches. A stream serves one match at a time; when
the match ends it is idle again (or ends, when its bot was revoked meanwhile).

Its interface to the rest of the league: :meth:`StreamLobby.idle` (the free streams of
each active bot), :meth:`StreamLobby.release` (a match is done with a stream),
:meth:`StreamLobby.connected`, :meth:`StreamLobby.revoked` and :meth:`StreamLobby.close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Container
from dataclasses import dataclass

import grpc
import structlog

from referee.jail.process import BotProcess
from referee.league.config import LeagueConfig
from referee.league.registry import BotEntry, BotRegistry
from referee.match.server import Intake, Refused, SeatSlot, SeatStream
from sticheln.v1 import bot_pb2

log = structlog.get_logger("referee.league")

#: On shutdown, how long a stream waits at most for the answer to its last request.
LAST_ANSWER_S = 5.0


def league_intake(max_seats_per_bot: int) -> Intake:
    """The league port's intake bounds: a bot may open ``max_seats_per_bot`` streams over
    one connection, all at once; the rest are the referee's defaults."""
    default = Intake()
    return dataclasses.replace(
        default,
        streams_per_connection=max(default.streams_per_connection, max_seats_per_bot + 8),
        handshaking_per_connection=max(default.handshaking_per_connection, max_seats_per_bot),
    )


@dataclass(eq=False)
class LeagueStream:
    """A connected stream of a bot entry; lent to at most one match at a time."""

    bot: str
    slot: SeatSlot
    stream: SeatStream
    busy: bool = False
    #: No process: a league bot runs wherever its owner runs it.
    process: BotProcess | None = None

    @property
    def alive(self) -> bool:
        return not self.stream.closed.is_set()


class StreamLobby:
    """Admitted streams by bot (the server's :class:`~referee.match.server.Lobby`)."""

    def __init__(
        self, config: LeagueConfig, registry: BotRegistry, wake: Callable[[], None]
    ) -> None:
        self.config = config
        self.registry = registry
        #: Called when a stream may have become free (the scheduler looks again).
        self._wake = wake
        #: No stream is admitted any more (the league is stopping).
        self.closing = False
        #: Admitted streams by bot, handshake done or not (what max_concurrent_matches counts).
        self._admitted: dict[str, set[int]] = {}
        #: Streams that completed their handshake, by bot.
        self._open: dict[str, list[LeagueStream]] = {}
        self._by_slot: dict[int, LeagueStream] = {}
        self._all_left = asyncio.Event()
        self._streams_seen = 0

    # -- the server's Lobby hooks ----------------------------------------------------------

    def admit(self, hello: bot_pb2.Hello) -> SeatSlot:
        """Admit a stream with a bot token (the server's :class:`Lobby` hook)."""
        if self.closing:
            raise Refused(
                grpc.StatusCode.UNAVAILABLE, "the league is shutting down; try again later"
            )
        if not hello.token:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                "no token: send the bot token the league issued (STICHELN_TOKEN) in Hello.token",
            )
        entry = self.registry.by_token(hello.token)
        if entry is None:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                "the token is not valid: send the bot token the league issued in Hello.token",
            )
        if not entry.active:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                f"the token of bot {entry.name!r} was revoked; ask the league's administrator for a new version",
            )
        if hello.bot_name and hello.bot_name not in (entry.name, entry.family):
            raise Refused(
                grpc.StatusCode.PERMISSION_DENIED,
                f"this token belongs to bot {entry.name!r}; it cannot play as {hello.bot_name!r} "
                f"(send Hello.bot_name {entry.name!r} or leave it empty)",
            )
        declared = max(1, hello.max_concurrent_matches)
        limit = min(declared, self.config.max_seats_per_bot)
        streams = self._admitted.setdefault(entry.name, set())
        if len(streams) >= limit:
            why = (
                f"Hello.max_concurrent_matches = {declared}"
                if limit == declared
                else f"the league's max_seats_per_bot = {limit}"
            )
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"bot {entry.name!r} already has {len(streams)} stream(s) open, as many as {why} allows",
            )
        self._streams_seen += 1
        slot = SeatSlot(
            "lobby",
            self._streams_seen,
            entry.name,
            "",
            welcome=f"joined league {self.config.name} as {entry.name}; matches start when "
            f"{self.config.table_size} bots are connected",
        )
        streams.add(id(slot))
        return slot

    def joined(self, slot: SeatSlot) -> None:
        """An admitted stream completed its handshake: it is idle now."""
        if slot.stream is None or id(slot) not in self._admitted.get(slot.bot_name, ()):
            return
        s = LeagueStream(slot.bot_name, slot, slot.stream)
        self._by_slot[id(slot)] = s
        self._open.setdefault(s.bot, []).append(s)
        log.info("stream_joined", bot=s.bot, streams=len(self._open[s.bot]))
        self._wake()

    def left(self, slot: SeatSlot) -> None:
        """An admitted stream ended (a running match forfeits the seat by itself)."""
        self._admitted.get(slot.bot_name, set()).discard(id(slot))
        s = self._by_slot.pop(id(slot), None)
        if not self._by_slot:
            self._all_left.set()
        if s is None:
            return
        streams = self._open.get(s.bot, [])
        with contextlib.suppress(ValueError):
            streams.remove(s)
        log.info("stream_left", bot=s.bot, streams=len(streams), busy=s.busy)

    # -- what the rest of the league asks --------------------------------------------------

    def idle(self, hosted: Container[str]) -> dict[str, list[LeagueStream]]:
        """The free streams of each active dial-in bot (a ``hosted`` entry plays its
        uploaded code, never a stream)."""
        idle: dict[str, list[LeagueStream]] = {}
        for bot, streams in self._open.items():
            entry = self.registry.get(bot)
            if entry is None or not entry.active or bot in hosted:
                continue
            free = [s for s in streams if s.alive and not s.busy]
            if free:
                idle[bot] = free
        return idle

    def release(self, s: LeagueStream) -> None:
        """A match is over for ``s``: idle again (or ended when its bot was revoked)."""
        s.busy = False
        s.stream.on_fault = None
        entry = self.registry.get(s.bot)
        if entry is not None and not entry.active:
            s.stream.end()
        self._wake()

    def connected(self, bot: str) -> int:
        """Open streams of ``bot``."""
        return len(self._admitted.get(bot, ()))

    def revoked(self, entry: BotEntry) -> None:
        """End the idle streams of a revoked bot (busy ones end after their match)."""
        for s in self._open.get(entry.name, []):
            if not s.busy:
                s.stream.end()

    async def close(self) -> None:
        """End every stream with status OK, once its last answer is in (or that request's
        time is up), and wait (5 s at most) until all have left."""
        # The bots of a stopped match may be answering its last request: each stream ends
        # once its answer is in (or that request's time is up). A bot writing as its stream
        # ends would see INTERNAL instead of the status OK that tells it the league is done.
        open_streams = [s for streams in self._open.values() for s in streams]
        await asyncio.gather(*(s.stream.answered(LAST_ANSWER_S) for s in open_streams))
        for s in open_streams:
            s.stream.end()
        # Every stream ends with status OK before the server goes (a server stopping with
        # calls still open resets them, and their bots see INTERNAL).
        deadline = time.monotonic() + 5.0
        while self._by_slot and time.monotonic() < deadline:
            self._all_left.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_left.wait(), deadline - time.monotonic())
