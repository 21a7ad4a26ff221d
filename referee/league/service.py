"""The league: a long-lived referee that bots join over the network (``referee serve``).

One gRPC port serves the bot protocol (``sticheln.v1.Referee``), the ``sticheln.v1.League``
service, health checking and reflection. A bot opens up to ``Hello.max_concurrent_matches``
streams with its bot token; the league is the server's :class:`~referee.match.server.Lobby`: it
admits those streams, keeps the idle ones, and whenever ``table_size`` different bots
have an idle stream it starts a match (:mod:`referee.league.scheduler` chooses the table),
lending the streams to the match runner like the tournament's bot pool does. A stream
serves one match at a time; when the match ends it is idle again.

Matches and ratings are the tournament's: the league is one "tournament" in the
:class:`~referee.results.store.Store` whose matches are planned one at a time as they
start. A match is marked running when it starts and stored, all of it in one transaction,
when it ends. The database is the league file's: a SQLite file or a PostgreSQL server
(:func:`~referee.results.store.open_store`, bot entries included). As in a
tournament, each database call is one short statement made from the event loop, in
autocommit mode, so the web pages and any other process reading the database see every
write at once. On SIGTERM the league stops starting matches, gives the running ones
``shutdown_grace_s`` to finish, and stops the rest; they stay planned in the database and
are replayed from the start (same seating, same match id, a new deal: the seats saw part
of the old one) as soon as their bots are connected again after a restart.

One league serves a database under its name: the league holds the store's league lock
(:meth:`~referee.results.store.Store.lock_league`) for its lifetime, and a second one is
refused at start. When the database goes away (a PostgreSQL store reconnects by itself a
few times first), a store call that still fails is one logged line and the league goes
on serving: no new match starts, a finished match's result is kept in memory and stored
as soon as the database is back (tried again every :data:`STORE_RETRY_S`), and one still
unsaved when the league stops is replayed at the next start like an interrupted match.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import hashlib
import json
import math
import random
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import structlog

from referee.jail.bots import BotSpec
from referee.jail.process import BotProcess
from referee.jail.sandbox import Sandbox
from referee.league.archive import FORMATS as ARCHIVE_FORMATS
from referee.league.archive import ArchiveRefused
from referee.league.config import LeagueConfig
from referee.league.feed import MatchFeed, replay_feed
from referee.league.hosting import Hosting, Refusal, hosted_mode
from referee.league.registry import BotEntry, BotRegistry, RegistryError
from referee.league.scheduler import History, Marks, can_seat, choose_table
from referee.league.standings import fit_in_child
from referee.league.submissions import DONE as QUEUE_DONE
from referee.league.submissions import (
    REFUSED,
    RETIRED,
    MatchQueue,
    QueuedMatch,
    Submission,
    Submissions,
)
from referee.league.worker import load_record
from referee.match.dealkey import DealKey
from referee.match.metrics import RefereeMetrics
from referee.match.record import ReplayError, read_record
from referee.match.runner import MatchResult, MatchRunner
from referee.match.server import (
    SERVICE_NAME,
    Intake,
    RefereeServer,
    Refused,
    SeatSlot,
    SeatStream,
    TlsConfig,
)
from referee.results.ratings import LiveElo, MatchOutcome
from referee.results.store import StoredResult, StoreError, open_store, redact
from referee.runtime.private import create_private, private_dir
from referee.tournament.schedule import ScheduledMatch
from sticheln.v1 import bot_pb2, league_pb2

log = structlog.get_logger("referee.league")

LEAGUE_SERVICE = "sticheln.v1.League"
#: At most this many finished matches are kept in memory for ``RecentMatches``.
RECENT = 500
#: On shutdown, how long a stream waits at most for the answer to its last request.
LAST_ANSWER_S = 5.0
#: While the database is away, how often the league tries again to store what it could not.
STORE_RETRY_S = 5.0
#: A worker's lease on a queued match, renewed while it plays (a dead worker's match is
#: void once its lease has run out, and played again).
LEASE_S = 30.0
#: How often idle workers look at the queue, and the league at expired leases.
QUEUE_POLL_S = 1.0
#: Uploads the league takes at once (each held in memory until it is checked).
MAX_UPLOADS = 4


@dataclass(eq=False)
class _Stream:
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


class _Table:
    """The match runner's seat pool for one match: the streams the league chose for it."""

    def __init__(self, league: League, streams: dict[str, _Stream]) -> None:
        self.league = league
        self.streams = streams

    def serves(self, spec: BotSpec) -> bool:
        return spec.name in self.streams

    async def acquire(
        self, spec: BotSpec, match_id: str = "", deal_seed: int | None = None
    ) -> _Stream:
        return self.streams[spec.name]

    def release(self, bot: Any) -> None:
        self.league._release(bot)


@dataclass
class _Running:
    index: int
    match_id: str
    seating: tuple[str, ...]
    feed: MatchFeed
    task: asyncio.Task[None] | None = None
    #: A queued match of hosted bots, until a worker takes it.
    match: ScheduledMatch | None = None
    replayed: bool = False


@dataclass
class _Published:
    response: league_pb2.StandingsResponse = field(default_factory=league_pb2.StandingsResponse)


def match_id_of(league: str, index: int) -> str:
    """The id of the league's match number ``index``: ``<league>-<index>``."""
    return f"{league}-{index:06d}"


def _summary(
    index: int, match_id: str, rows: list[StoredResult], order: int, at: float
) -> league_pb2.MatchSummary:
    rows = sorted(rows, key=lambda r: r.seat)
    return league_pb2.MatchSummary(
        match_id=match_id,
        seating=[r.bot for r in rows],
        totals=[r.total for r in rows],
        places=[r.place for r in rows],
        forfeited_seats=[r.seat for r in rows if r.forfeited],
        finished_at=at,
        finish_order=order,
    )


def league_intake(max_seats_per_bot: int) -> Intake:
    """The league port's intake bounds: a bot may open ``max_seats_per_bot`` streams over
    one connection, all at once; the rest are the referee's defaults."""
    default = Intake()
    return dataclasses.replace(
        default,
        streams_per_connection=max(default.streams_per_connection, max_seats_per_bot + 8),
        handshaking_per_connection=max(default.handshaking_per_connection, max_seats_per_bot),
    )


class League:
    """The league's state and its loop: admitted streams, scheduling, matches, standings."""

    def __init__(self, config: LeagueConfig, metrics: RefereeMetrics | None = None) -> None:
        self.config = config
        self.metrics = metrics or RefereeMetrics()
        self.store = open_store(config.database)
        try:
            self.store.lock_league(config.name)
            self.registry = BotRegistry(self.store)
            self.submissions = Submissions(self.store)
            self.queue = MatchQueue(self.store, config.name)
        except BaseException:
            self.store.close()
            raise
        # The bots this league starts are hosted ones: in the strongest tier the machine
        # has ([sandbox] mode = "gvisor" insists on gVisor).
        sandbox = Sandbox(hosted_mode(config.sandbox) if config.hosting.enabled else config.sandbox)
        #: Hosted code ([hosting] enabled), else None.
        self.hosting: Hosting | None = None
        if config.hosting.enabled:
            self.hosting = Hosting(
                config.hosting,
                self.submissions,
                sandbox,
                config.out / "validation",
                config.clock.startup_ms / 1000,
            )
            self.hosting.on_decided.append(self._hosted_decided)
        #: The playing submission of each hosted entry (from the database).
        self._playing: dict[str, Submission] = {}
        self._workers: list[asyncio.Task[None]] = []
        self._queue_wake = asyncio.Event()
        self._lease_timer: asyncio.Task[None] | None = None
        #: Matches of hosted bots waiting for a worker (read once a second).
        self.queued = 0
        self.servicer = LeagueServicer(self)
        self.server = RefereeServer(
            handshake_timeout=config.handshake_timeout_s,
            observer=self.metrics,
            lobby=self,
            services=[(LEAGUE_SERVICE, self.servicer.handler())],
            sandbox=sandbox,
            intake=league_intake(config.max_seats_per_bot),
        )
        #: Admitted streams by bot, handshake done or not (what max_concurrent_matches counts).
        self._admitted: dict[str, set[int]] = {}
        #: Streams that completed their handshake, by bot.
        self._open: dict[str, list[_Stream]] = {}
        self._by_slot: dict[int, _Stream] = {}
        self._running: dict[str, _Running] = {}
        self._replays: list[ScheduledMatch] = []
        #: Finished matches whose results the database did not take yet, oldest first.
        self._unsaved: list[tuple[ScheduledMatch, str, MatchResult]] = []
        self._store_retry: asyncio.TimerHandle | None = None
        self._history = History()
        self._elo = LiveElo()
        self._recent: collections.deque[league_pb2.MatchSummary] = collections.deque(maxlen=RECENT)
        self._finished = 0
        self._next_index = 0
        #: The deal number of the next match (a replayed match takes a new one too).
        self._next_deal = 0
        #: The league's secret deal key, from its database (made when the league was created).
        self.key: DealKey | None = None
        self._published = _Published()
        self._publishing: asyncio.Task[None] | None = None
        self._last_publish = -math.inf
        self._publish_timer: asyncio.TimerHandle | None = None
        self._wake = asyncio.Event()
        self._all_left = asyncio.Event()
        self._stopping = False
        self._scheduler: asyncio.Task[None] | None = None
        self._rng = random.Random(config.seed)
        #: The idle bots last said to be unable to fill a table ("" when not waiting).
        self._waiting_for = ""
        #: Why no match can start while none runs (the seating rules), or "".
        self.waiting = ""
        self._streams_seen = 0

    # -- start and stop ---------------------------------------------------------------------

    def fingerprint(self) -> dict[str, Any]:
        """What must not change while a league lives (its ratings compare like with like)."""
        c = self.config
        return {
            "league": True,
            "rules": c.rules.to_table(),
            "table_size": c.table_size,
            "strike_limit": c.strike_limit,
            "clock": {
                "decision_ms": c.clock.decision_ms,
                "time_bank_ms": c.clock.time_bank_ms,
                "startup_ms": c.clock.startup_ms,
            },
        }

    async def start(self) -> None:
        """Open the database (replays planned from an interrupted run), then serve."""
        c = self.config
        fingerprint = self.fingerprint()
        digest = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()
        self.store.open_tournament(c.name, fingerprint, digest)
        key = self.key = self.store.deal_key(c.name)
        interrupted = self.store.reset_interrupted(c.name)
        rows = self.store.match_rows(c.name)
        self._next_index = max((r["idx"] for r in rows), default=-1) + 1
        self._next_deal = max((r["deal"] for r in rows), default=-1) + 1
        for r in rows:
            if r["status"] == "planned":
                # A league plans a match when it starts it, so every planned match was
                # interrupted: its bots saw part of the deal, and it is replayed with a new
                # one (a deal number no match has used).
                seating = tuple(json.loads(r["seating"]))
                deal = self._take_deal()
                self.store.set_deal(c.name, r["idx"], deal, key.match_seed(deal))
                self._replays.append(
                    ScheduledMatch(r["idx"], tuple(sorted(seating)), seating, deal)
                )
        results = self.store.results(c.name, think=False)
        by_match: dict[int, list[StoredResult]] = {}
        for res in results:
            by_match.setdefault(res.idx, []).append(res)
        for order, (idx, seat_rows) in enumerate(by_match.items(), 1):
            seating = tuple(r.bot for r in sorted(seat_rows, key=lambda r: r.seat))
            self._history.add(seating)
            ordered = sorted(seat_rows, key=lambda r: r.seat)
            self._elo.update(
                MatchOutcome(
                    seating,
                    tuple(r.place for r in ordered),
                    forfeited=tuple(r.forfeited for r in ordered),
                )
            )
            self._recent.appendleft(_summary(idx, seat_rows[0].match_id, seat_rows, order, 0.0))
        self._finished = len(by_match)
        self.metrics.finished.set(self._finished)
        self.metrics.decision_limit.set(c.clock.decision_ms / 1000)
        for bot, value in self._elo.ratings().items():
            self.metrics.elo.labels(bot).set(value)
        if results:
            await self._publish()
        voided = self.queue.void_unfinished()
        self._playing = self.submissions.playing_by_bot()
        revalidating = self.hosting.resume() if self.hosting is not None else 0
        tls = TlsConfig(c.tls_cert, c.tls_key) if c.tls_cert and c.tls_key else None
        await self.server.start(c.host, c.port, tls)
        self._scheduler = asyncio.ensure_future(self._schedule_loop())
        if self.hosting is not None:
            self._workers = [
                asyncio.ensure_future(self._work(f"{c.name}-worker-{i}"))
                for i in range(c.hosting.workers)
            ]
            self._lease_timer = asyncio.ensure_future(self._expire_leases())
        log.info(
            "league_start",
            league=c.name,
            database=redact(c.database),
            deal_key_commitment=key.commitment(),
            address=self.server.address,
            finished=self._finished,
            replays=len(self._replays),
            replaying_interrupted=interrupted,
            bots=len(self.registry.entries()),
            hosting=c.hosting.enabled,
            hosted=len(self._playing),
            revalidating=revalidating,
            queue_voided=len(voided),
        )

    async def stop(self) -> None:
        """Stop: no new match; running ones get the grace period, the rest are replayed later."""
        self._stopping = True
        self._wake.set()
        for service in ("", SERVICE_NAME, LEAGUE_SERVICE):  # health checks see it go at once
            await self.server.set_serving(service, False)
        if self._scheduler is not None:
            await self._scheduler
        if self.hosting is not None:
            await self.hosting.stop()
        if self._lease_timer is not None:
            self._lease_timer.cancel()
        self._queue_wake.set()
        # A worker waits on its match without owning it: the match gets the grace period
        # below like every other.
        for worker in self._workers:
            worker.cancel()
        tasks = [r.task for r in self._running.values() if r.task is not None]
        if tasks:
            log.info("league_stopping", running=len(tasks), grace_s=self.config.shutdown_grace_s)
            _, pending = await asyncio.wait(tasks, timeout=self.config.shutdown_grace_s)
            # A match cancelled in the middle of a write leaves that stream unable to send
            # more; nothing more is sent on it: every stream ends below, with status OK.
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        if self._store_retry is not None:
            self._store_retry.cancel()
            self._store_retry = None
        interrupted: int | None = None
        if self._save_unsaved():
            try:
                interrupted = self.store.reset_interrupted(self.config.name)
            except StoreError as exc:
                log.error("store_failed", doing="reset the interrupted matches", error=str(exc))
        else:
            # They are "running" in the database: the next start replays them.
            log.error(
                "results_not_saved",
                matches=[match_id for _, match_id, _ in self._unsaved],
                replayed="at the next start",
            )
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
        if self._publish_timer is not None:
            self._publish_timer.cancel()
            self._publish_timer = None
        if self._publishing is not None:
            with contextlib.suppress(Exception):
                await self._publishing
        await self.server.stop(1.0)
        self.store.close()
        log.info("league_stopped", finished=self._finished, interrupted=interrupted)

    # -- the lobby: streams joining and leaving ----------------------------------------------

    def admit(self, hello: bot_pb2.Hello) -> SeatSlot:
        """Admit a stream with a bot token (the server's :class:`Lobby` hook)."""
        if self._stopping:
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
        s = _Stream(slot.bot_name, slot, slot.stream)
        self._by_slot[id(slot)] = s
        self._open.setdefault(s.bot, []).append(s)
        log.info("stream_joined", bot=s.bot, streams=len(self._open[s.bot]))
        self._wake.set()

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

    def _release(self, s: _Stream) -> None:
        """A match is over for ``s``: idle again (or ended when its bot was revoked)."""
        s.busy = False
        s.stream.on_fault = None
        entry = self.registry.get(s.bot)
        if entry is not None and not entry.active:
            s.stream.end()
        self._wake.set()

    def connected(self, bot: str) -> int:
        """Open streams of ``bot``."""
        return len(self._admitted.get(bot, ()))

    def revoked(self, entry: BotEntry) -> None:
        """End the idle streams of a revoked bot (busy ones end after their match)."""
        for s in self._open.get(entry.name, []):
            if not s.busy:
                s.stream.end()

    # -- scheduling ---------------------------------------------------------------------------

    def _idle(self) -> dict[str, list[_Stream]]:
        """The bots that may be seated now: those with an idle stream, and every hosted
        entry that plays (its processes are started per match; an empty list)."""
        idle: dict[str, list[_Stream]] = {}
        for bot, streams in self._open.items():
            entry = self.registry.get(bot)
            if entry is None or not entry.active or bot in self._playing:
                continue
            free = [s for s in streams if s.alive and not s.busy]
            if free:
                idle[bot] = free
        for bot in self._playing:
            entry = self.registry.get(bot)
            if entry is not None and entry.active:
                idle[bot] = []
        return idle

    def _hosted_decided(self, bot: str, seconds: float) -> None:
        """A submission was decided: the playing set may have changed."""
        try:
            self._playing = self.submissions.playing_by_bot()
        except StoreError as exc:
            log.error("store_failed", doing="read the playing submissions", error=str(exc))
        self.metrics.submissions.labels("playing" if bot in self._playing else "refused").inc()
        self.metrics.validation.observe(seconds)
        self._wake.set()

    async def _schedule_loop(self) -> None:
        while not self._stopping:
            self._start_matches()
            await self._wake.wait()
            self._wake.clear()

    def _start_matches(self) -> None:
        if not self._save_unsaved():
            return  # the database is away: no match starts before the finished ones are in
        size = self.config.table_size
        parallel = self.config.parallel
        while not self._stopping and self._played_here() < parallel:
            idle = self._idle()
            if len(self._running) - self._played_here() >= parallel:
                # As many matches of hosted bots wait for a worker (or play on one in
                # another process) as the league plays at once: no hosted bot is seated
                # until one of them ends, and the dial-in bots play on meanwhile.
                idle = {b: streams for b, streams in idle.items() if b not in self._playing}
            replay = next((m for m in self._replays if all(b in idle for b in m.seating)), None)
            if replay is not None:
                self._replays.remove(replay)
                self._launch(replay, idle, replayed=True)
                continue
            if len(idle) < size:
                return
            marks = self._marks(idle)
            if not can_seat(list(idle), size, marks):
                # Nothing to do until another bot connects or a stream is free again (the
                # loop waits for that). With nothing running nothing will free up: the
                # league is waiting for bots, and says why once.
                if not self._running:
                    self._waiting(idle)
                return
            self._waiting_for = self.waiting = ""
            seating = choose_table(list(idle), size, self._history, self._rng, marks)
            index = self._next_index
            self._next_index += 1
            m = ScheduledMatch(index, tuple(sorted(seating)), seating, self._take_deal())
            assert self.key is not None
            try:
                self.store.plan(
                    self.config.name,
                    [m],
                    lambda m: match_id_of(self.config.name, m.index),
                    self.key,
                )
            except StoreError as exc:
                # Its number is not used again: the plan may have been stored all the same
                # (a commit whose acknowledgement was lost); a next start replays it then.
                log.error("store_failed", doing=f"plan match {index}", error=str(exc))
                self._retry_store_later()
                return
            self._launch(m, idle, replayed=False)

    def _played_here(self) -> int:
        """Matches this process plays now (a queued match counts once a worker here
        takes it)."""
        return sum(1 for r in self._running.values() if r.match is None or r.task is not None)

    def _marks(self, idle: dict[str, list[_Stream]]) -> dict[str, Marks]:
        """Each idle bot's family and owner marks under the league's seating rules."""
        rules = self.config.seating
        out: dict[str, Marks] = {}
        for bot in idle:
            entry = self.registry.get(bot)
            family, owner = (entry.family, entry.owner) if entry is not None else (bot, "")
            out[bot] = rules.marks(bot, family, owner)
        return out

    def _waiting(self, idle: dict[str, list[_Stream]]) -> None:
        """Log, once per set of idle bots, why they cannot fill a table while no match
        runs."""
        names = ", ".join(sorted(idle))
        if names == self._waiting_for:
            return
        self._waiting_for = names
        rules = self.config.seating
        kept = [
            what
            for what, relaxed in (("family", rules.same_family), ("owner", rules.same_owner))
            if not relaxed
        ]
        self.waiting = (
            f"the idle bots cannot fill a table of {self.config.table_size} without two "
            f"of one {' or one '.join(kept)} ([seating] in the league file); matches start "
            "when more bots connect"
        )
        log.info(
            "league_waiting",
            idle=sorted(idle),
            table_size=self.config.table_size,
            why=self.waiting,
        )

    def _retry_store_later(self) -> None:
        """Wake the scheduler in :data:`STORE_RETRY_S` to try the database again."""
        if self._store_retry is None and not self._stopping:
            self._store_retry = asyncio.get_running_loop().call_later(
                STORE_RETRY_S, self._store_retry_due
            )

    def _store_retry_due(self) -> None:
        self._store_retry = None
        self._wake.set()

    def _take_deal(self) -> int:
        deal = self._next_deal
        self._next_deal += 1
        return deal

    def _launch(self, m: ScheduledMatch, idle: dict[str, list[_Stream]], replayed: bool) -> None:
        hosted = {bot: self._playing[bot] for bot in m.seating if bot in self._playing}
        streams = {bot: idle[bot].pop(0) for bot in m.seating if bot not in hosted}
        for s in streams.values():
            s.busy = True
        match_id = match_id_of(self.config.name, m.index)
        running = _Running(m.index, match_id, m.seating, MatchFeed(match_id))
        self._running[match_id] = running
        self.metrics.running.set(len(self._running))
        if hosted and not streams:
            # Only hosted bots: a worker plays it (this process's, or one elsewhere).
            running.match = m
            running.replayed = replayed
            code = {
                bot: {"bot": bot, "submission": s.number, "sha256": s.code_sha256,
                      "format": s.code_format, "bot_file": s.bot_file}
                for bot, s in hosted.items()
            }  # fmt: skip
            try:
                self.queue.put(m.index, match_id, m.seating, code)
            except StoreError as exc:
                log.error("store_failed", doing=f"queue {match_id}", error=str(exc))
                del self._running[match_id]
                self._replays.append(m)
                self._retry_store_later()
                return
            log.info("match_queued", match_id=match_id, seating=list(m.seating))
            self._queue_wake.set()
            return
        running.task = asyncio.ensure_future(self._play(m, running, streams, replayed, hosted))

    # -- workers: matches of hosted bots -----------------------------------------------------

    async def _work(self, worker: str) -> None:
        """One in-process worker: take queued matches and play them, one at a time."""
        while not self._stopping:
            try:
                taken = self.queue.take(worker, LEASE_S)
            except StoreError as exc:
                log.error("store_failed", doing="take a queued match", error=str(exc))
                taken = None
            if taken is None:
                self._queue_wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._queue_wake.wait(), QUEUE_POLL_S)
                continue
            running = self._running.get(taken.match_id)
            if running is None or running.match is None or running.task is not None:
                # Queued by an earlier run of the league: it is void, replayed anew.
                self.queue.done(taken.idx)
                continue
            renew = asyncio.ensure_future(self._renew(taken, worker))
            hosted = {bot: self._playing_as_queued(taken, bot) for bot in taken.seating}
            running.task = asyncio.ensure_future(
                self._play(running.match, running, {}, running.replayed, hosted)
            )
            log.info("match_taken", match_id=taken.match_id, worker=worker)
            try:
                await asyncio.wait([running.task])
            finally:
                renew.cancel()
            with contextlib.suppress(StoreError):
                self.queue.done(taken.idx)

    def _adopt_done(self) -> None:
        """Take in the queued matches a worker of another process played (or aborted)."""
        waiting = {r.index: r for r in self._running.values() if r.match and r.task is None}
        if not waiting:
            return
        for idx, status in self.queue.statuses(list(waiting)).items():
            if status != QUEUE_DONE:
                continue
            r = waiting[idx]
            assert r.match is not None
            del self._running[r.match_id]
            self.metrics.running.set(len(self._running))
            self._wake.set()
            row = self.store.execute(
                "SELECT status, record_path, duration_s FROM matches "
                "WHERE tournament = ? AND idx = ?",
                (self.config.name, idx),
            ).fetchone()
            if row is None or row[0] != "finished":
                r.feed.interrupt()
                log.warning("match_aborted", match_id=r.match_id, why="its worker aborted it")
                continue
            self._take_record(idx, r.match_id, Path(row[1]) if row[1] else None)
            seats = self.store.execute(
                "SELECT seat, bot, total, place, forfeited FROM results "
                "WHERE tournament = ? AND idx = ? ORDER BY seat",
                (self.config.name, idx),
            ).fetchall()
            r.feed.interrupt()
            self._finished_match(
                r.match,
                r.match_id,
                [int(x[3]) for x in seats],
                [bool(x[4]) for x in seats],
                [int(x[2]) for x in seats],
                float(row[2] or 0.0),
            )

    def _take_record(self, idx: int, match_id: str, path: Path | None) -> None:
        """A record a worker on another machine wrote is copied here from the database
        (``league_records``), so that GetMatchRecord and the web serve it as any other."""
        if path is not None and path.exists():
            return
        data = load_record(self.store, self.config.name, idx)
        if data is None:
            log.error("record_missing", match_id=match_id)
            return
        folder = private_dir(self.config.out / "matches")
        local = folder / f"{match_id}.jsonl"
        create_private(local)
        local.write_bytes(data)
        self.store.execute(
            "UPDATE matches SET record_path = ? WHERE tournament = ? AND idx = ?",
            (str(local), self.config.name, idx),
        )

    def _playing_as_queued(self, taken: QueuedMatch, bot: str) -> Submission:
        """The submission a queued match seats for ``bot`` (the one queued with it)."""
        code = taken.code[bot]
        found = self.submissions.get(bot, int(code["submission"]))
        assert found is not None
        return found

    async def _renew(self, taken: QueuedMatch, worker: str) -> None:
        while True:
            await asyncio.sleep(LEASE_S / 3)
            try:
                self.queue.renew(taken.idx, worker, LEASE_S)
            except StoreError as exc:
                log.error(
                    "store_failed", doing=f"renew the lease of {taken.match_id}", error=str(exc)
                )

    async def _expire_leases(self) -> None:
        """Matches whose worker died (its lease ran out) are void: played again."""
        while not self._stopping:
            await asyncio.sleep(QUEUE_POLL_S)
            try:
                voided = self.queue.expire()
                self.queued = self.queue.depth()
                self._adopt_done()
            except StoreError:
                continue
            self.metrics.queue_depth.set(self.queued)
            self.metrics.voids.inc(len(voided))
            for idx in voided:
                match_id = match_id_of(self.config.name, idx)
                running = self._running.pop(match_id, None)
                log.warning("match_void", match_id=match_id, why="its worker's lease expired")
                if running is not None and running.match is not None:
                    m = running.match
                    deal = self._take_deal()
                    assert self.key is not None
                    with contextlib.suppress(StoreError):
                        self.store.reset_interrupted(self.config.name, [idx])
                        self.store.set_deal(self.config.name, idx, deal, self.key.match_seed(deal))
                    self._replays.append(dataclasses.replace(m, deal=deal))
            if voided:
                self.metrics.running.set(len(self._running))
                self._wake.set()

    async def _play(
        self,
        m: ScheduledMatch,
        running: _Running,
        streams: dict[str, _Stream],
        replayed: bool,
        hosted: dict[str, Submission] | None = None,
    ) -> None:
        c = self.config
        assert self.key is not None
        specs = []
        for bot in m.seating:
            spec = BotSpec(name=bot)
            if hosted and bot in hosted and self.hosting is not None:
                try:
                    spec = self.hosting.spec(hosted[bot])
                except Exception as exc:  # its code cannot be unpacked here: the seat faults
                    log.error("hosted_code_failed", bot=bot, error=repr(exc))
                    spec = BotSpec(name=bot, command=("/nonexistent/hosted-code-missing",))
            specs.append(spec)
        runner = MatchRunner(
            self.server,
            specs,
            c.rules,
            seed=self.key.match_seed(m.deal),
            deal=m.deal,
            deal_key_commitment=self.key.commitment(),
            bot_seeds=self.key.bot_seeds(m.deal, len(m.seating)),
            match_id=running.match_id,
            clock=c.clock,
            strike_limit=c.strike_limit,
            out_dir=c.out,
            observer=self.metrics,
            pool=_Table(self, streams),
            on_record=running.feed.append,
        )
        try:
            self.store.mark_running(c.name, m.index, runner.record_path)
        except StoreError as exc:  # played all the same: its result says it all
            log.error("store_failed", doing=f"mark {running.match_id} running", error=str(exc))
        log.info(
            "match_started", match_id=running.match_id, seating=list(m.seating), replayed=replayed
        )
        try:
            result = await runner.run()
        except asyncio.CancelledError:
            running.feed.interrupt()
            log.warning("match_interrupted", match_id=running.match_id)
            raise
        except Exception as exc:
            running.feed.interrupt()
            log.error("match_failed", match_id=running.match_id, error=repr(exc))
            return
        finally:
            for s in streams.values():
                if s.busy:  # the runner did not get to lend it (a failure while seating)
                    self._release(s)
            self._running.pop(running.match_id, None)
            self.metrics.running.set(len(self._running))
            self._wake.set()
        if result.aborted:  # fewer than two streams were there: not a result to rate
            running.feed.interrupt()
            try:
                self.store.mark_aborted(c.name, m.index, result.record_path)
            except StoreError as exc:  # it stays planned or running: replayed at next start
                log.error("store_failed", doing=f"mark {running.match_id} aborted", error=str(exc))
            log.warning("match_aborted", match_id=running.match_id, why=result.reason)
            return
        running.feed.finish()
        self._unsaved.append((m, running.match_id, result))
        self._save_unsaved()

    def _save_unsaved(self) -> bool:
        """Store the finished matches not stored yet, oldest first, and count each one
        stored; False when the database refused one (it is kept, and tried again in
        :data:`STORE_RETRY_S`)."""
        while self._unsaved:
            m, match_id, result = self._unsaved[0]
            try:
                self.store.save_result(self.config.name, m.index, result)
            except StoreError as exc:
                log.error(
                    "result_not_saved",
                    match_id=match_id,
                    unsaved=len(self._unsaved),
                    error=str(exc),
                )
                self._retry_store_later()
                return False
            self._unsaved.pop(0)
            self._finished_match(
                m,
                match_id,
                list(result.places),
                [s.forfeited for s in result.seats],
                list(result.totals),
                result.duration_s,
            )
        return True

    def _finished_match(
        self,
        m: ScheduledMatch,
        match_id: str,
        places: list[int],
        forfeited: list[bool],
        totals: list[int],
        duration_s: float,
    ) -> None:
        """A stored match counts: history, ratings, metrics, recent matches, standings."""
        self._finished += 1
        self._history.add(m.seating)
        self._elo.update(
            MatchOutcome(m.seating, tuple(places), match_id, forfeited=tuple(forfeited))
        )
        for bot, value in self._elo.ratings().items():
            self.metrics.elo.labels(bot).set(value)
        self.metrics.matches.inc()
        self.metrics.finished.set(self._finished)
        self.metrics.match_duration.observe(duration_s)
        self._recent.appendleft(
            league_pb2.MatchSummary(
                match_id=match_id,
                seating=list(m.seating),
                totals=totals,
                places=places,
                forfeited_seats=[i for i, f in enumerate(forfeited) if f],
                finished_at=time.time(),
                finish_order=self._finished,
            )
        )
        log.info(
            "match_finished", match_id=match_id, places=places, duration_s=round(duration_s, 3)
        )
        self._request_publish()

    def _request_publish(self) -> None:
        """Publish fresh standings now, or once ``publish_interval_s`` has passed since the
        last publication (one fit at a time; a match finished while fitting asks again)."""
        if self._publishing is not None or self._publish_timer is not None or self._stopping:
            return
        wait = self._last_publish + self.config.publish_interval_s - time.monotonic()
        if wait <= 0:
            self._publishing = asyncio.ensure_future(self._publish())
        else:
            self._publish_timer = asyncio.get_running_loop().call_later(wait, self._publish_due)

    def _publish_due(self) -> None:
        self._publish_timer = None
        self._request_publish()

    async def _publish(self) -> None:
        """Fit the standings from the database and publish them. The fit runs in a
        process of its own (:mod:`referee.league.standings`): it needs every match played
        so far, and memory this process used for it, even for a moment, would mostly stay
        with it; the league's process stays the same size however long it runs."""
        try:
            response = await fit_in_child(
                self.config.database,
                self.config.name,
                self.config.bootstrap,
                self.config.min_matches,
            )
        except Exception as exc:
            log.error("standings_failed", error=repr(exc))
            return
        finally:
            self._publishing = None
            self._last_publish = time.monotonic()
        self._published.response = response
        self._history.set_uncertainty({s.bot: s.ci_high - s.ci_low for s in response.standings})
        if self._finished > response.matches:
            # Matches finished while fitting: publish again once the interval is over.
            self._request_publish()

    # -- what the League service reads -----------------------------------------------------

    def standings(self) -> league_pb2.StandingsResponse:
        """The published standings."""
        return self._published.response

    def recent(self, limit: int) -> league_pb2.RecentMatchesResponse:
        """The latest finished matches, newest first, and the running ones."""
        response = league_pb2.RecentMatchesResponse(running=sorted(self._running))
        for i, summary in enumerate(self._recent):
            if i >= limit:
                break
            response.matches.append(summary)
        return response

    def finished_count(self) -> int:
        """Matches finished in this league so far."""
        return self._finished

    def running_seating(self) -> dict[str, tuple[str, ...]]:
        """The running matches' seating, by match id."""
        return {match_id: r.seating for match_id, r in self._running.items()}

    def record_path(self, match_id: str) -> Path:
        """A finished match's record file; a running match is refused (its record holds
        the hands)."""
        if match_id in self._running:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"match {match_id!r} is still running; watch it with WatchMatch",
            )
        path = self._record_path(match_id)
        if path is None:
            raise Refused(
                grpc.StatusCode.NOT_FOUND, f"no finished match {match_id!r} in this league"
            )
        return path

    def record(self, match_id: str) -> tuple[league_pb2.MatchSummary, str]:
        """A finished match's summary and record text."""
        path = self.record_path(match_id)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise Refused(
                grpc.StatusCode.DATA_LOSS, f"the record of {match_id!r} cannot be read: {exc}"
            ) from None
        summary = next((s for s in self._recent if s.match_id == match_id), None)
        if summary is None:
            summary = league_pb2.MatchSummary(match_id=match_id)
            end = text.rstrip("\n").rsplit("\n", 1)[-1]
            header = json.loads(text.split("\n", 1)[0])
            summary.seating.extend(header.get("seating", []))
            with contextlib.suppress(ValueError):
                last = json.loads(end)
                summary.totals.extend(last.get("totals", []))
                summary.places.extend(last.get("places", []))
                summary.forfeited_seats.extend(last.get("forfeited", []))
        return summary, text

    def _record_path(self, match_id: str) -> Path | None:
        """The record of a finished match, from the database: the league keeps nothing
        per finished match in memory (it runs for weeks)."""
        _, _, number = match_id.rpartition("-")
        if not number.isdigit() or match_id != match_id_of(self.config.name, int(number)):
            return None
        try:
            return self.store.record_path(self.config.name, int(number))
        except StoreError as exc:
            raise Refused(grpc.StatusCode.UNAVAILABLE, str(exc)) from None

    def feed(self, match_id: str) -> MatchFeed:
        """The feed of a running match, or of a finished one replayed from its record."""
        running = self._running.get(match_id)
        if running is not None:
            return running.feed
        path = self._record_path(match_id)
        if path is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"no match {match_id!r} in this league")
        try:
            return replay_feed(match_id, list(read_record(path)))
        except (OSError, ReplayError) as exc:
            raise Refused(
                grpc.StatusCode.DATA_LOSS, f"the record of {match_id!r} cannot be read: {exc}"
            ) from None

    def bot_message(
        self, entry: BotEntry, latest: dict[str, Submission] | None = None
    ) -> league_pb2.Bot:
        """The ``Bot`` message of an entry (``latest``: every entry's latest submission,
        read once for a list)."""
        if latest is None:
            latest = self.submissions.latest_by_bot()
        sub = latest.get(entry.name)
        connected = self.connected(entry.name)
        msg = league_pb2.Bot(
            name=entry.name,
            owner=entry.owner,
            description=entry.description,
            previous_version=entry.previous,
            version=entry.version,
            active=entry.active,
            connected_streams=connected,
            registered_at=entry.registered_at,
            matches=self._history.matches.get(entry.name, 0),
            status="connected" if connected else "offline",
        )
        if sub is not None:
            playing = self._playing.get(entry.name)
            msg.hosted = True
            msg.submission = sub.number
            msg.sha256 = sub.sha256
            msg.status = sub.status if entry.active else RETIRED
            msg.refusal = sub.refusal if sub.status == REFUSED else ""
            msg.playing_submission = playing.number if playing is not None else 0
        return msg

    def submission_message(self, s: Submission) -> league_pb2.Submission:
        """The ``Submission`` message of a stored submission."""
        return league_pb2.Submission(
            bot=s.bot,
            number=s.number,
            sha256=s.sha256,
            status=s.status,
            refusal=s.refusal,
            report=s.report,
            submitted_at=s.submitted_at,
            decided_at=s.decided_at or 0.0,
            build_sha256=s.build_sha256,
            bot_file=s.bot_file,
        )


# -- the gRPC service ----------------------------------------------------------------------

_REGISTRY_CODES = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "exists": grpc.StatusCode.ALREADY_EXISTS,
    "not_found": grpc.StatusCode.NOT_FOUND,
}

Context = grpc.aio.ServicerContext[Any, Any]


def _mapped(
    fn: Callable[[Any, Context], Awaitable[Any]],
) -> Callable[[Any, Context], Awaitable[Any]]:
    """Domain errors to gRPC status codes, in one place."""

    async def call(request: Any, context: Context) -> Any:
        try:
            return await fn(request, context)
        except Refused as exc:
            await context.abort(exc.code, exc.message)
        except RegistryError as exc:
            await context.abort(_REGISTRY_CODES[exc.kind], str(exc))
        except StoreError as exc:  # the database is away: the call may work again later
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))

    return call


class LeagueServicer:
    """``sticheln.v1.League``: thin; the league holds the state."""

    def __init__(self, league: League) -> None:
        self.league = league
        #: The entries with an upload under way.
        self._uploading: set[str] = set()
        #: When each entry's uploads were refused at once (for the daily quota).
        self._refused_uploads: dict[str, list[float]] = {}
        #: Every entry's latest submission as last read (ListBots while the database is away).
        self._latest: dict[str, Any] = {}

    def _admin(self, context: Context) -> None:
        """Refuse unless the call carries the admin token."""
        metadata = {k.lower(): v for k, v in (context.invocation_metadata() or ())}
        auth = metadata.get("authorization", "")
        if isinstance(auth, bytes):
            auth = auth.decode("utf-8", "replace")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                "an admin call needs the league's admin token as metadata 'authorization: Bearer <token>'",
            )
        token = auth[7:].strip()
        admin = self.league.config.admin_token
        if secrets.compare_digest(token.encode(), admin.encode()):
            return
        if self.league.registry.by_token(token) is not None:
            raise Refused(
                grpc.StatusCode.PERMISSION_DENIED,
                "a bot token cannot make admin calls; use the league's admin token",
            )
        raise Refused(grpc.StatusCode.UNAUTHENTICATED, "the admin token is not valid")

    async def RegisterBot(
        self, request: league_pb2.RegisterBotRequest, context: Context
    ) -> league_pb2.RegisterBotResponse:
        self._admin(context)
        entry, token = self.league.registry.register(
            request.name, request.owner, request.description
        )
        log.info("bot_registered", bot=entry.name, owner=entry.owner)
        return league_pb2.RegisterBotResponse(bot=self.league.bot_message(entry), token=token)

    async def RegisterVersion(
        self, request: league_pb2.RegisterVersionRequest, context: Context
    ) -> league_pb2.RegisterBotResponse:
        self._admin(context)
        entry, token = self.league.registry.register_version(
            request.previous_version, request.name, request.description
        )
        log.info("bot_version_registered", bot=entry.name, previous=entry.previous)
        return league_pb2.RegisterBotResponse(bot=self.league.bot_message(entry), token=token)

    async def RevokeToken(
        self, request: league_pb2.RevokeTokenRequest, context: Context
    ) -> league_pb2.RevokeTokenResponse:
        self._admin(context)
        entry = self.league.registry.revoke(request.name)
        self.league.revoked(entry)
        log.info("bot_revoked", bot=entry.name)
        return league_pb2.RevokeTokenResponse(bot=self.league.bot_message(entry))

    async def ListBots(
        self, request: league_pb2.ListBotsRequest, context: Context
    ) -> league_pb2.ListBotsResponse:
        try:
            latest = self._latest = self.league.submissions.latest_by_bot()
        except StoreError:
            # The league serves on while its database is away: submissions as last read.
            latest = self._latest
        return league_pb2.ListBotsResponse(
            bots=[self.league.bot_message(e, latest) for e in self.league.registry.entries()]
        )

    def _bearer(self, context: Context) -> str:
        metadata = {k.lower(): v for k, v in (context.invocation_metadata() or ())}
        auth = metadata.get("authorization", "")
        if isinstance(auth, bytes):
            auth = auth.decode("utf-8", "replace")
        return str(auth[7:]).strip() if auth.startswith("Bearer ") else ""

    def _entry_of_token(self, context: Context, what: str) -> BotEntry:
        """The active entry whose bot token the call carries; UNAUTHENTICATED otherwise."""
        token = self._bearer(context)
        if not token:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                f"{what} needs the entry's bot token as metadata 'authorization: Bearer "
                "<token>' (STICHELN_BOT_TOKEN for referee league submit)",
            )
        entry = self.league.registry.by_token(token)
        if entry is None:
            raise Refused(grpc.StatusCode.UNAUTHENTICATED, "the bot token is not valid")
        if not entry.active:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                f"the token of bot {entry.name!r} was revoked; ask the league's administrator "
                "for a new version",
            )
        return entry

    async def Submit(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], context: Context
    ) -> league_pb2.SubmitResponse:
        try:
            return await self._submit(requests, context)
        except TimeoutError:
            hosting = self.league.hosting
            assert hosting is not None
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"the upload took more than this league's upload_timeout_s = "
                f"{hosting.config.upload_timeout_s:g} s; nothing was stored (submit again)",
            )
        except Refused as exc:
            await context.abort(exc.code, exc.message)
        except StoreError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        raise AssertionError("unreachable")  # abort raises

    async def _header(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], entry: BotEntry, hosting: Hosting
    ) -> league_pb2.SubmitHeader:
        """An upload's header, checked against the league's limits and the quota."""
        league = self.league
        limits = hosting.config
        first = await anext(aiter(requests), None)
        if first is None or first.WhichOneof("part") != "header":
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT, "a Submit stream begins with its SubmitHeader"
            )
        h = first.header
        if h.bot and h.bot != entry.name:
            raise Refused(
                grpc.StatusCode.PERMISSION_DENIED,
                f"this token belongs to bot {entry.name!r}, not {h.bot!r}",
            )
        if h.format not in ARCHIVE_FORMATS:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"format {h.format!r} is not allowed; allowed: {', '.join(ARCHIVE_FORMATS)}",
            )
        most = limits.max_archive_mb << 20
        if h.size > most:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the archive is {h.size} bytes, more than this league's max_archive_mb = "
                f"{limits.max_archive_mb}",
            )
        if not h.bot_file:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "SubmitHeader.bot_file is empty")
        since = time.time() - 86_400
        # Uploads refused at once count too (kept here, not stored): each costs the
        # league its unpacking.
        refused = self._refused_uploads.setdefault(entry.name, [])
        refused[:] = [t for t in refused if t > since]
        made = league.submissions.count_since(entry.name, since) + len(refused)
        if made >= limits.submissions_per_day:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"bot {entry.name!r} made {made} submissions in the last 24 hours, this league's "
                f"submissions_per_day; try again later",
            )
        return h

    async def _chunks(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], h: league_pb2.SubmitHeader
    ) -> bytearray:
        """The archive's bytes, no more than the header declared."""
        data = bytearray()
        async for msg in requests:
            if msg.WhichOneof("part") != "chunk":
                raise Refused(
                    grpc.StatusCode.INVALID_ARGUMENT, "only chunks follow the SubmitHeader"
                )
            data.extend(msg.chunk)
            if len(data) > h.size:
                raise Refused(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"the stream sent more than the {h.size} bytes its header declared",
                )
        return data

    async def _submit(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], context: Context
    ) -> league_pb2.SubmitResponse:
        league = self.league
        hosting = league.hosting
        if hosting is None:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this league hosts no bots ([hosting] enabled = false); connect your bot instead",
            )
        entry = self._entry_of_token(context, "a submission")
        # An upload is held in memory until it is checked: one at a time per entry, and
        # a few in all, each within upload_timeout_s.
        if entry.name in self._uploading:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"an upload of bot {entry.name!r} is under way; one at a time",
            )
        if len(self._uploading) >= MAX_UPLOADS:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the league takes {MAX_UPLOADS} uploads at once; try again shortly",
            )
        self._uploading.add(entry.name)
        try:
            async with asyncio.timeout(hosting.config.upload_timeout_s):
                h, data = await self._receive(requests, entry, hosting)
            return await self._store_upload(entry, hosting, h, data)
        finally:
            self._uploading.discard(entry.name)

    async def _receive(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], entry: BotEntry, hosting: Hosting
    ) -> tuple[league_pb2.SubmitHeader, bytearray]:
        """The header and the archive of an upload, checked as they arrive."""
        h = await self._header(requests, entry, hosting)
        return h, await self._chunks(requests, h)

    async def _store_upload(
        self,
        entry: BotEntry,
        hosting: Hosting,
        h: league_pb2.SubmitHeader,
        data: bytearray,
    ) -> league_pb2.SubmitResponse:
        league = self.league
        if len(data) != h.size:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the stream ended after {len(data)} of the {h.size} bytes its header "
                "declared; nothing was stored (submit again)",
            )
        digest = hashlib.sha256(data).hexdigest()
        if h.sha256 and h.sha256.lower() != digest:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the archive's SHA-256 is {digest}, not the {h.sha256} its header declared",
            )
        try:
            bot_file = await asyncio.to_thread(
                hosting.precheck, digest, h.format, bytes(data), h.bot_file, entry.name
            )
        except (ArchiveRefused, Refusal) as exc:
            self._refused_uploads.setdefault(entry.name, []).append(time.time())
            log.warning("submission_refused", bot=entry.name, sha256=digest, why=str(exc))
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"refused: {exc}") from None
        league.submissions.put_archive(digest, bytes(data))
        sub = league.submissions.add(entry.name, digest, h.format, bot_file)
        log.info("submission", bot=entry.name, submission=sub.number, sha256=digest, size=h.size)
        hosting.validate_later(sub)
        return league_pb2.SubmitResponse(submission=league.submission_message(sub))

    async def SubmissionStatus(
        self, request: league_pb2.SubmissionStatusRequest, context: Context
    ) -> league_pb2.SubmissionStatusResponse:
        token = self._bearer(context)
        admin = self.league.config.admin_token
        if not (token and secrets.compare_digest(token.encode(), admin.encode())):
            entry = self.league.registry.by_token(token) if token else None
            if entry is None or entry.name != request.name:
                raise Refused(
                    grpc.StatusCode.PERMISSION_DENIED
                    if entry is not None
                    else grpc.StatusCode.UNAUTHENTICATED,
                    f"the submissions of {request.name!r} are read with its bot token or the "
                    "admin token ('authorization: Bearer <token>')",
                )
        if self.league.registry.get(request.name) is None:
            raise RegistryError(f"no bot named {request.name!r} is registered", "not_found")
        history = self.league.submissions.history(request.name)
        return league_pb2.SubmissionStatusResponse(
            submissions=[self.league.submission_message(s) for s in history]
        )

    async def Standings(
        self, request: league_pb2.StandingsRequest, context: Context
    ) -> league_pb2.StandingsResponse:
        return self.league.standings()

    async def RecentMatches(
        self, request: league_pb2.RecentMatchesRequest, context: Context
    ) -> league_pb2.RecentMatchesResponse:
        limit = request.limit or 20
        return self.league.recent(min(limit, RECENT))

    async def GetMatchRecord(
        self, request: league_pb2.GetMatchRecordRequest, context: Context
    ) -> league_pb2.GetMatchRecordResponse:
        summary, text = self.league.record(request.match_id)
        return league_pb2.GetMatchRecordResponse(summary=summary, record_jsonl=text)

    async def WatchMatch(self, request: league_pb2.WatchMatchRequest, context: Context) -> None:
        try:
            feed = self.league.feed(request.match_id)
        except Refused as exc:
            await context.abort(exc.code, exc.message)
            return
        # The league's delay holds for every spectator door; a watcher may ask for more.
        delay = max(request.delay_rounds, self.league.config.web_delay_rounds)
        messages: AsyncIterator[league_pb2.WatchMatchResponse] = feed.watch(delay)
        async for msg in messages:
            await context.write(msg)

    def handler(self) -> grpc.GenericRpcHandler[Any, Any]:
        """The generic handler registering every method on the server."""
        unary: dict[str, tuple[Callable[[Any, Context], Awaitable[Any]], Any]] = {
            "RegisterBot": (self.RegisterBot, league_pb2.RegisterBotRequest),
            "RegisterVersion": (self.RegisterVersion, league_pb2.RegisterVersionRequest),
            "RevokeToken": (self.RevokeToken, league_pb2.RevokeTokenRequest),
            "ListBots": (self.ListBots, league_pb2.ListBotsRequest),
            "Standings": (self.Standings, league_pb2.StandingsRequest),
            "RecentMatches": (self.RecentMatches, league_pb2.RecentMatchesRequest),
            "GetMatchRecord": (self.GetMatchRecord, league_pb2.GetMatchRecordRequest),
            "SubmissionStatus": (self.SubmissionStatus, league_pb2.SubmissionStatusRequest),
        }
        methods: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
            name: grpc.unary_unary_rpc_method_handler(
                _mapped(fn),
                request_deserializer=message.FromString,
                response_serializer=lambda m: m.SerializeToString(),
            )
            for name, (fn, message) in unary.items()
        }
        methods["Submit"] = grpc.stream_unary_rpc_method_handler(
            self.Submit,
            request_deserializer=league_pb2.SubmitRequest.FromString,
            response_serializer=lambda m: m.SerializeToString(),
        )
        methods["WatchMatch"] = grpc.unary_stream_rpc_method_handler(
            self.WatchMatch,
            request_deserializer=league_pb2.WatchMatchRequest.FromString,
            response_serializer=lambda m: m.SerializeToString(),
        )
        return grpc.method_handlers_generic_handler(LEAGUE_SERVICE, methods)
