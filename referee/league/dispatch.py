"""The league's dispatch: where a planned match is played, and what runs meanwhile.

A match with a dial-in bot is played here at once, on the streams the matchmaker chose
(lent to the match runner like the tournament's bot pool lends its bots). A match of
hosted bots only is queued in the database (``match_queue``) for a worker: one of this
process's ``[hosting] workers`` or a ``referee league-worker`` elsewhere sharing the
database. A worker holds a lease on the match while it plays; a match whose lease ran
out is void and played again (:meth:`Dispatch.expire_leases`), and one a worker of
another process finished is taken in from the database (its record too).

The hosted bots of the matches played here (this process's workers' and those with a
dial-in seat) come from the league's warm pool (:class:`~referee.match.pool.BotPool`,
``[hosting] warm_*``): a bot's jailed process serves match after match, and those of a
submission no longer wanted stop (:meth:`Dispatch.retire_warm`). A match a worker of
another process plays is watched live through the database (:mod:`referee.league.live`).

Its interface: :meth:`Dispatch.launch` (play or queue a planned match),
:meth:`Dispatch.played_here`, :meth:`Dispatch.running_count`, :meth:`Dispatch.seating`,
:meth:`Dispatch.live_feed`, and start/stop. A finished match goes to the publisher
(:meth:`~referee.league.publishing.Publisher.finished`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from referee.jail.bots import BotSpec
from referee.league import live
from referee.league.config import LeagueConfig
from referee.league.feed import MatchFeed
from referee.league.hosting import Hosting
from referee.league.lobby import LeagueStream, StreamLobby
from referee.league.logs import BotLogs
from referee.league.matchmaking import Deals, match_id_of
from referee.league.publishing import Publisher
from referee.league.submissions import DONE as QUEUE_DONE
from referee.league.submissions import (
    MatchQueue,
    QueuedMatch,
    SeatCode,
    SeatCodes,
    Submission,
    Submissions,
)
from referee.league.worker import (
    RETIRE_CHECK_S,
    hosted_source,
    hosted_spec,
    load_record,
    wanted_submissions,
)
from referee.match.metrics import RefereeMetrics
from referee.match.pool import BotPool, Bounds, PooledBot, default_idle_s
from referee.match.runner import MatchRunner
from referee.match.server import RefereeServer
from referee.results.store import Store, StoreError
from referee.runtime.private import create_private, private_dir
from referee.tournament.schedule import ScheduledMatch

log = structlog.get_logger("referee.league")

#: A worker's lease on a queued match, renewed while it plays (a dead worker's match is
#: void once its lease has run out, and played again).
LEASE_S = 30.0
#: How often idle workers look at the queue, and the league at expired leases.
QUEUE_POLL_S = 1.0


#: How often the logs past their retention are deleted, in seconds.
PRUNE_EVERY_S = 3600.0


class _Table:
    """The match runner's seat pool for one match: the streams the league chose for it,
    and its hosted bots from the league's warm pool."""

    def __init__(
        self,
        lobby: StreamLobby,
        streams: dict[str, LeagueStream],
        warm: BotPool | None = None,
    ) -> None:
        self.lobby = lobby
        self.streams = streams
        self.warm = warm

    def serves(self, spec: BotSpec) -> bool:
        return spec.name in self.streams or (self.warm is not None and not spec.external)

    async def acquire(
        self, spec: BotSpec, match_id: str = "", deal_seed: int | None = None
    ) -> LeagueStream | PooledBot:
        if spec.name in self.streams:
            return self.streams[spec.name]
        assert self.warm is not None
        return await self.warm.acquire(spec, match_id, deal_seed)

    def release(self, bot: Any) -> None:
        if isinstance(bot, PooledBot):
            assert self.warm is not None
            self.warm.release(bot)
        else:
            self.lobby.release(bot)


@dataclass
class RunningMatch:
    """A match started and not finished: played here, or queued for a worker."""

    index: int
    match_id: str
    seating: tuple[str, ...]
    feed: MatchFeed
    task: asyncio.Task[None] | None = None
    #: A queued match of hosted bots, until a worker takes it.
    match: ScheduledMatch | None = None
    replayed: bool = False


class Dispatch:
    """The running matches: played here on streams, or queued for workers."""

    def __init__(
        self,
        config: LeagueConfig,
        store: Store,
        metrics: RefereeMetrics,
        server: RefereeServer,
        deals: Deals,
        lobby: StreamLobby,
        publisher: Publisher,
        submissions: Submissions,
        queue: MatchQueue,
        hosting: Hosting | None,
        *,
        wake: Callable[[], None],
        replay: Callable[[ScheduledMatch, bool], None],
    ) -> None:
        self.config = config
        self.store = store
        self.metrics = metrics
        self.server = server
        self.deals = deals
        self.lobby = lobby
        self.publisher = publisher
        self.submissions = submissions
        self.queue = queue
        self.hosting = hosting
        #: Called when a match ended (a table may be free).
        self._wake = wake
        #: Called with a match to play again (True: with a new deal).
        self._replay = replay
        self.running: dict[str, RunningMatch] = {}
        self._workers: list[asyncio.Task[None]] = []
        self._queue_wake = asyncio.Event()
        self._lease_timer: asyncio.Task[None] | None = None
        self._stopping = False
        #: Matches of hosted bots waiting for a worker (read once a second).
        self.queued = 0
        #: Hosted bots' warm processes, for the matches played here (made at start).
        self.warm: BotPool | None = None
        metrics.watch_pool(lambda: self.warm)
        #: The record lines of the matches workers elsewhere play.
        self._live = live.LiveReader(store, config.name)
        self._live_timer: asyncio.Task[None] | None = None
        #: Which submission played each hosted seat (its ratings are fitted from it).
        self.seat_codes = SeatCodes(store, config.name)
        #: Hosted bots' stderr of their ranked matches, for their owners.
        self.bot_logs = BotLogs(
            store, config.name, config.hosting.log_kb, config.hosting.log_retention_days
        )
        self.bot_logs.publish()
        self._pruned_at = -math.inf

    # -- what the matchmaker and the pages ask -------------------------------------------

    def played_here(self) -> int:
        """Matches this process plays now (a queued match counts once a worker here
        takes it)."""
        return sum(1 for r in self.running.values() if r.match is None or r.task is not None)

    def running_count(self) -> int:
        """Matches started and not finished, here or on a worker."""
        return len(self.running)

    def seating(self) -> dict[str, tuple[str, ...]]:
        """The running matches' seating, by match id."""
        return {match_id: r.seating for match_id, r in self.running.items()}

    def live_feed(self, match_id: str) -> MatchFeed | None:
        """The feed of a running match, or None."""
        running = self.running.get(match_id)
        return running.feed if running is not None else None

    def keep_logs(
        self,
        match_id: str,
        seating: tuple[str, ...],
        hosted: dict[str, Submission],
        spans: dict[int, tuple[Path, int]],
        heads: dict[int, int] | None = None,
    ) -> None:
        """Keep the hosted seats' logs of a match for their owners (and, once an hour,
        delete those past their retention)."""
        try:
            self.bot_logs.keep(
                match_id, seating, {b: s.number for b, s in hosted.items()}, spans, heads
            )
            if time.monotonic() - self._pruned_at > PRUNE_EVERY_S:
                self._pruned_at = time.monotonic()
                self.bot_logs.prune()
        except StoreError as exc:
            log.error("store_failed", doing=f"keep {match_id}'s logs", error=str(exc))

    def _set_running(self) -> None:
        self.metrics.running.set(len(self.running))

    # -- start and stop --------------------------------------------------------------------

    def start(self) -> None:
        """Start this process's workers (a league hosting bots)."""
        if self.hosting is None:
            return
        c = self.config
        h = c.hosting
        live.create(self.store)
        live.clear(self.store, c.name)  # of matches voided at the start: no worker holds one
        self.warm = BotPool(
            self.server,
            c.out / "logs",
            c.clock.startup_ms / 1000,
            bounds=Bounds(
                h.warm_bots,
                h.warm_memory_mb,
                h.warm_idle_s or default_idle_s(self.server.sandbox.mode),
            ),
        )
        self._live_timer = asyncio.ensure_future(self._read_live())
        self._workers = [
            asyncio.ensure_future(self._work(f"{c.name}-worker-{i}"))
            for i in range(c.hosting.workers)
        ]
        self._lease_timer = asyncio.ensure_future(self.expire_leases())

    async def stop(self, grace_s: float) -> None:
        """Stop the workers; running matches get ``grace_s`` to finish, the rest are
        cancelled (replayed at the next start)."""
        self._stopping = True
        if self._lease_timer is not None:
            self._lease_timer.cancel()
        if self._live_timer is not None:
            self._live_timer.cancel()
        self._queue_wake.set()
        # A worker waits on its match without owning it: the match gets the grace period
        # below like every other.
        for worker in self._workers:
            worker.cancel()
        tasks = [r.task for r in self.running.values() if r.task is not None]
        if tasks:
            log.info("league_stopping", running=len(tasks), grace_s=grace_s)
            _, pending = await asyncio.wait(tasks, timeout=grace_s)
            # A match cancelled in the middle of a write leaves that stream unable to send
            # more; nothing more is sent on it: every stream ends below, with status OK.
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        if self.warm is not None:
            await self.warm.close()

    # -- launching ---------------------------------------------------------------------------

    def launch(
        self,
        m: ScheduledMatch,
        streams: dict[str, LeagueStream],
        hosted: dict[str, Submission],
        replayed: bool,
    ) -> bool:
        """Play ``m`` here (it seats a dial-in bot) or queue it for a worker; False when
        the database refused to queue it (the caller plays it again later)."""
        if hosted:
            try:
                self.seat_codes.put(
                    m.index,
                    m.seating,
                    {bot: SeatCode(s.number, s.sha256) for bot, s in hosted.items()},
                )
            except StoreError as exc:
                log.error("store_failed", doing=f"seat {m.index}'s code", error=str(exc))
                return False
        for s in streams.values():
            s.busy = True
        match_id = match_id_of(self.config.name, m.index)
        running = RunningMatch(m.index, match_id, m.seating, MatchFeed(match_id))
        self.running[match_id] = running
        self._set_running()
        if hosted and not streams:
            # Only hosted bots: a worker plays it (this process's, or one elsewhere).
            running.match = m
            running.replayed = replayed
            code = {
                bot: {"bot": bot, "submission": s.number, "sha256": s.code_sha256,
                      "format": s.code_format, "bot_file": s.bot_file, "upload": s.sha256}
                for bot, s in hosted.items()
            }  # fmt: skip
            try:
                self.queue.put(m.index, match_id, m.seating, code)
            except StoreError as exc:
                log.error("store_failed", doing=f"queue {match_id}", error=str(exc))
                del self.running[match_id]
                return False
            log.info("match_queued", match_id=match_id, seating=list(m.seating))
            self._queue_wake.set()
            return True
        running.task = asyncio.ensure_future(self._play(m, running, streams, replayed, hosted))
        return True

    def table(self, streams: dict[str, LeagueStream]) -> _Table:
        """A match's seats: ``streams`` (dial-in bots) and the warm pool (hosted ones)."""
        return _Table(self.lobby, streams, self.warm)

    def play_unrated(
        self,
        match_id: str,
        seating: tuple[str, ...],
        play: Callable[[MatchFeed], Awaitable[None]],
    ) -> None:
        """Play a match that is not one of the league's (a challenge) here: it is counted
        among the matches played here and watched as they are, and ``play`` does the rest."""
        running = RunningMatch(-1, match_id, seating, MatchFeed(match_id))
        self.running[match_id] = running
        self._set_running()

        async def run() -> None:
            try:
                await play(running.feed)
            finally:
                self.running.pop(match_id, None)
                self._set_running()
                self._wake()

        running.task = asyncio.ensure_future(run())

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
            running = self.running.get(taken.match_id)
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
        waiting = {r.index: r for r in self.running.values() if r.match and r.task is None}
        if not waiting:
            return
        name = self.config.name
        for idx, status in self.queue.statuses(list(waiting)).items():
            if status != QUEUE_DONE:
                continue
            r = waiting[idx]
            assert r.match is not None
            del self.running[r.match_id]
            self._set_running()
            self._wake()
            row = self.store.execute(
                "SELECT status, record_path, duration_s FROM matches "
                "WHERE tournament = ? AND idx = ?",
                (name, idx),
            ).fetchone()
            if row is None or row[0] != "finished":
                r.feed.interrupt()
                log.warning("match_aborted", match_id=r.match_id, why="its worker aborted it")
                continue
            record = self._take_record(idx, r.match_id, Path(row[1]) if row[1] else None)
            seats = self.store.execute(
                "SELECT seat, bot, total, place, forfeited FROM results "
                "WHERE tournament = ? AND idx = ? ORDER BY seat",
                (name, idx),
            ).fetchall()
            # Its watchers see it to the end: the lines the worker had not sent yet.
            with contextlib.suppress(OSError, ValueError):
                live.top_up(r.feed, record.read_bytes() if record is not None else b"")
            r.feed.interrupt()  # (nothing once topped up: the feed is over)
            self.publisher.counted(
                r.match,
                r.match_id,
                [int(x[3]) for x in seats],
                [bool(x[4]) for x in seats],
                [int(x[2]) for x in seats],
                float(row[2] or 0.0),
            )

    def _take_record(self, idx: int, match_id: str, path: Path | None) -> Path | None:
        """A record a worker on another machine wrote is copied here from the database
        (``league_records``), so that GetMatchRecord and the web serve it as any other;
        where it is (None: nowhere)."""
        if path is not None and path.exists():
            return path
        data = load_record(self.store, self.config.name, idx)
        if data is None:
            log.error("record_missing", match_id=match_id)
            return None
        folder = private_dir(self.config.out / "matches")
        local = folder / f"{match_id}.jsonl"
        create_private(local)
        local.write_bytes(data)
        self.store.execute(
            "UPDATE matches SET record_path = ? WHERE tournament = ? AND idx = ?",
            (str(local), self.config.name, idx),
        )
        return local

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

    def retire_warm(self) -> None:
        """Stop the warm processes of submissions no longer wanted (replaced, revoked, and
        seated by no queued match)."""
        if self.warm is None:
            return
        try:
            wanted = {
                hosted_source(b, n) for b, n in wanted_submissions(self.store, self.config.name)
            }
        except StoreError as exc:
            log.error("store_failed", doing="read the wanted submissions", error=str(exc))
            return
        self.warm.retire(lambda spec: spec.source in wanted)

    async def _read_live(self) -> None:
        """Every :data:`~referee.league.live.READ_S`: the record lines workers elsewhere
        wrote of the matches they play, into those matches' feeds."""
        while not self._stopping:
            await asyncio.sleep(live.READ_S)
            elsewhere = [
                (r.index, r.feed)
                for r in self.running.values()
                if r.match is not None and r.task is None
            ]
            try:
                self._live.read(elsewhere)
            except StoreError as exc:
                log.warning("store_failed", doing="read the workers' live lines", error=str(exc))

    async def expire_leases(self) -> None:
        """Matches whose worker died (its lease ran out) are void: played again. (And
        every :data:`~referee.league.worker.RETIRE_CHECK_S`: warm processes no match wants
        any more stop.)"""
        looks = 0
        while not self._stopping:
            await asyncio.sleep(QUEUE_POLL_S)
            looks += 1
            if looks % round(RETIRE_CHECK_S / QUEUE_POLL_S) == 0:
                self.retire_warm()
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
                running = self.running.pop(match_id, None)
                log.warning("match_void", match_id=match_id, why="its worker's lease expired")
                with contextlib.suppress(StoreError):
                    live.clear(self.store, self.config.name, idx)
                if running is not None:
                    running.feed.interrupt()
                if running is not None and running.match is not None:
                    self._replay(running.match, True)
            if voided:
                self._set_running()
                self._wake()

    # -- playing here ------------------------------------------------------------------------

    async def _play(
        self,
        m: ScheduledMatch,
        running: RunningMatch,
        streams: dict[str, LeagueStream],
        replayed: bool,
        hosted: dict[str, Submission] | None = None,
    ) -> None:
        c = self.config
        key = self.deals.known()
        specs = []
        for bot in m.seating:
            spec = BotSpec(name=bot)
            if hosted and bot in hosted and self.hosting is not None:
                try:
                    sub = hosted[bot]
                    spec = hosted_spec(await self.hosting.prepare(sub), bot, sub.number)
                except Exception as exc:  # its code cannot be unpacked here: the seat faults
                    log.error("hosted_code_failed", bot=bot, error=repr(exc))
                    spec = BotSpec(name=bot, command=("/nonexistent/hosted-code-missing",))
            specs.append(spec)
        runner = MatchRunner(
            self.server,
            specs,
            c.rules,
            seed=key.match_seed(m.deal),
            deal=m.deal,
            deal_key_commitment=key.commitment(),
            bot_seeds=key.bot_seeds(m.deal, len(m.seating)),
            match_id=running.match_id,
            clock=c.clock,
            strike_limit=c.strike_limit,
            out_dir=c.out,
            observer=self.metrics,
            pool=_Table(self.lobby, streams, self.warm),
            on_record=running.feed.append,
            code=[
                (hosted[bot].number, hosted[bot].sha256) if hosted and bot in hosted else None
                for bot in m.seating
            ],
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
                    self.lobby.release(s)
            self.running.pop(running.match_id, None)
            self._set_running()
            self._wake()
        if result.aborted:  # fewer than two streams were there: not a result to rate
            running.feed.interrupt()
            try:
                self.store.mark_aborted(c.name, m.index, result.record_path)
            except StoreError as exc:  # it stays planned or running: replayed at next start
                log.error("store_failed", doing=f"mark {running.match_id} aborted", error=str(exc))
            log.warning("match_aborted", match_id=running.match_id, why=result.reason)
            return
        running.feed.finish()
        if hosted:
            self.keep_logs(running.match_id, m.seating, hosted, runner.log_spans, runner.log_heads)
        self.publisher.finished(m, running.match_id, result)
