"""``referee league worker``: plays a league's queued matches of hosted bots, from its
database alone, on any machine that reaches it (docs/hosting.md).

A worker takes a queued match (:class:`~referee.league.submissions.MatchQueue`, ``FOR
UPDATE SKIP LOCKED`` on PostgreSQL; of the oldest, the one whose bots it holds warm) with
a lease it renews while it plays, unpacks each seat's code from the database into its own
code folder (by hash, once), seats each bot from its warm pool on a referee server of its
own, and writes the result, the match's record (``league_records``) and the end of its
lease back, all through the one database; while the match runs, its record lines go there
too, for the league's spectators (:mod:`referee.league.live`). The league process, which
keeps the schedule and the ratings, sees the match done and takes it in. A worker killed
mid-match stops renewing: its lease runs out, the league voids the match and plays it
again; a worker that finds its lease gone when its match ends (it was too slow to renew)
drops the result.

**Warm bots.** A hosted bot's jailed process serves many matches
(:class:`~referee.match.pool.BotPool`: its own sandbox, uid and cgroup for its whole life,
one match at a time per stream), so that a match costs its decisions, not four starts of
an interpreter in a sandbox. The worker keeps the processes it started within its
:class:`~referee.match.pool.Bounds` (processes, their memory, idle time), stops those of a
submission that is no longer the entry's playing one (looked at every
:data:`RETIRE_CHECK_S`), and a process that dies faults its own seat only; the bot's next
match starts a fresh one. Nothing passes between bots or seatings but what the bot keeps
in its own memory: each process is one submission's, in a sandbox of its own, and never
dealt one deal twice.

What a match is played by (rules, clock, strike limit) is the league's fingerprint in the
database; the deals come from the league's deal key there too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gzip
import json
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path

import structlog

from referee.jail.bots import BotSpec
from referee.jail.sandbox import Sandbox
from referee.league import live
from referee.league.config import HostingConfig
from referee.league.hosting import Hosting
from referee.league.logs import BotLogs
from referee.league.registry import BotRegistry
from referee.league.submissions import LEASED, QUEUED, MatchQueue, QueuedMatch, Submissions
from referee.match.metrics import RefereeMetrics
from referee.match.pool import BotPool, Bounds, pool_key
from referee.match.runner import Clock, MatchRunner
from referee.match.server import RefereeServer
from referee.results.store import Store, StoreError
from referee.rules.ruleset import from_table

log = structlog.get_logger("referee.worker")

_RECORDS = """
CREATE TABLE IF NOT EXISTS league_records (
    tournament TEXT NOT NULL,
    idx INTEGER NOT NULL,
    record {blob} NOT NULL,
    PRIMARY KEY (tournament, idx)
);
"""
#: How often an idle worker looks at the queue.
POLL_S = 1.0
#: How often a worker looks for the bots it holds whose submission no longer plays.
RETIRE_CHECK_S = 2.0
#: What a worker keeps warm by default (``referee league worker --max-bots ...``).
WARM = Bounds(processes=64, memory_mb=4096, idle_s=600.0)


def hosted_source(bot: str, number: int) -> str:
    """The source of submission ``number`` of entry ``bot`` as a warm pool knows it."""
    return f"submission {number} of {bot}"


def hosted_spec(spec: BotSpec, bot: str, number: int) -> BotSpec:
    """A playing submission's bot as a warm pool seats it: a bot of its own per
    submission (its source names it), even where two submissions hold the same code."""
    return dataclasses.replace(spec, source=hosted_source(bot, number))


def wanted_submissions(store: Store, league: str) -> set[tuple[str, int]]:
    """The submissions (entry, number) a warm pool keeps: every entry's playing one, but
    a revoked entry's, and those a queued or leased match still seats (a match queued
    before its submission was replaced plays with it). Read afresh from the database:
    the league's registry and submissions change in another process."""
    revoked = {
        str(name)
        for (name,) in store.execute("SELECT name FROM league_bots WHERE active = 0").fetchall()
    }
    wanted = {
        (bot, s.number)
        for bot, s in Submissions(store).playing_by_bot().items()
        if bot not in revoked
    }
    for (code,) in store.execute(
        "SELECT code FROM match_queue WHERE tournament = ? AND status IN (?, ?)",
        (league, QUEUED, LEASED),
    ).fetchall():
        wanted.update((bot, int(c["submission"])) for bot, c in json.loads(code).items())
    return wanted


def store_record(store: Store, league: str, idx: int, path: Path) -> None:
    """Keep a match's record in the database (gzip), for a league on another machine."""
    store.create_tables(_RECORDS)
    data = gzip.compress(path.read_bytes(), mtime=0)
    store.execute(
        "INSERT INTO league_records VALUES (?, ?, ?) ON CONFLICT (tournament, idx) "
        "DO UPDATE SET record = excluded.record",
        (league, idx, data),
    )


def load_record(store: Store, league: str, idx: int) -> bytes | None:
    """A record a worker kept in the database, if any."""
    store.create_tables(_RECORDS)
    row = store.execute(
        "SELECT record FROM league_records WHERE tournament = ? AND idx = ?", (league, idx)
    ).fetchone()
    return None if row is None else gzip.decompress(bytes(row[0]))


def leagues(store: Store) -> list[str]:
    """The leagues in a database (tournaments whose fingerprint says ``league``)."""
    rows = store.execute("SELECT name, fingerprint FROM tournaments ORDER BY name").fetchall()
    return [name for name, fp in rows if json.loads(fp).get("league")]


@dataclasses.dataclass
class Worker:
    """One worker process's loop."""

    store: Store
    league: str
    code_dir: Path
    out: Path
    name: str = ""
    lease_s: float = 30.0
    sandbox: Sandbox = dataclasses.field(default_factory=Sandbox)
    metrics: RefereeMetrics = dataclasses.field(default_factory=RefereeMetrics)
    played: int = 0
    #: What the worker keeps warm.
    bounds: Bounds = WARM
    #: How often the running match's record lines go to the database (0: not at all).
    live_interval_s: float = live.INTERVAL_S
    #: The warm pool, while :meth:`run` runs.
    pool: BotPool | None = None
    #: Matches played at once.
    parallel: int = 1

    def __post_init__(self) -> None:
        self.name = self.name or f"{socket.gethostname()}-{os.getpid()}"
        row = self.store.execute(
            "SELECT fingerprint FROM tournaments WHERE name = ?", (self.league,)
        ).fetchone()
        if row is None or not json.loads(row[0]).get("league"):
            raise StoreError(f"no league named {self.league!r} in the database")
        fp = json.loads(row[0])
        self.rules = from_table(fp["rules"])
        self.clock = Clock(**fp["clock"])
        self.strike_limit = int(fp["strike_limit"])
        key = self.store.stored_deal_key(self.league)
        if key is None:
            raise StoreError(f"league {self.league!r} has no deal key in the database")
        self.key = key
        self.queue = MatchQueue(self.store, self.league)
        self.submissions = Submissions(self.store)
        BotRegistry(self.store)  # its table, for the revocations read below
        self.logs = BotLogs.of_league(self.store, self.league)
        live.create(self.store)
        #: The submission each started bot is (entry, number), by its pool key.
        self._submission_of: dict[object, tuple[str, int]] = {}
        self._checked_at = -RETIRE_CHECK_S
        self.hosting = Hosting(
            HostingConfig(enabled=True, code_dir=self.code_dir),
            self.submissions,
            self.sandbox,
            self.out / "validation",
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Take and play queued matches, :attr:`parallel` at a time, until ``stop`` is set
        (the matches being played end first)."""
        server = RefereeServer(sandbox=self.sandbox, observer=self.metrics)
        await server.start("127.0.0.1", 0)
        self.pool = BotPool(
            server, self.out / "logs", self.clock.startup_ms / 1000, bounds=self.bounds
        )
        log.info(
            "worker_start",
            worker=self.name,
            league=self.league,
            parallel=self.parallel,
            warm=str(self.bounds),
        )
        try:
            await asyncio.gather(*(self._take_and_play(server, stop) for _ in range(self.parallel)))
        finally:
            await self.pool.close()
            await server.stop(1.0)
            log.info(
                "worker_stop",
                worker=self.name,
                played=self.played,
                bot_processes=self.pool.started,
                lost=sum(self.pool.lost.values()),
            )

    async def _take_and_play(self, server: RefereeServer, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.retire_unwanted()
            try:
                taken = self.queue.take(self.name, self.lease_s, self.warm())
            except StoreError as exc:
                log.error("store_failed", doing="take a queued match", error=str(exc))
                taken = None
            if taken is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), POLL_S)
                continue
            await self.play(server, taken)

    def warm(self) -> dict[str, int]:
        """The submission of each entry whose process this worker holds (for the queue)."""
        if self.pool is None:
            return {}
        held = (self._submission_of.get(pool_key(spec)) for spec in self.pool.held())
        return dict(h for h in held if h is not None)

    def retire_unwanted(self, now: float | None = None) -> int:
        """Stop the processes of submissions that no longer play (a later one replaced
        it, or the entry was revoked) and that no queued match seats; looked at every
        :data:`RETIRE_CHECK_S`."""
        at = time.monotonic() if now is None else now
        if self.pool is None or at - self._checked_at < RETIRE_CHECK_S:
            return 0
        self._checked_at = at
        try:
            wanted = wanted_submissions(self.store, self.league)
        except StoreError as exc:
            log.error("store_failed", doing="read the playing submissions", error=str(exc))
            return 0
        return self.pool.retire(lambda spec: self._submission_of.get(pool_key(spec)) in wanted)

    def _spec(self, bot: str, code: Mapping[str, object]) -> BotSpec:
        number = int(str(code["submission"]))
        sub = self.submissions.get(bot, number)
        try:
            assert sub is not None
            # At most `parallel` matches at a time: no process needs more streams.
            spec = hosted_spec(self.hosting.spec(sub), bot, number)
            spec = dataclasses.replace(spec, seats=min(spec.seats, self.parallel))
        except Exception as exc:  # its code cannot be had here: the seat faults
            log.error("hosted_code_failed", bot=bot, error=repr(exc))
            return BotSpec(name=bot, command=("/nonexistent/hosted-code-missing",))
        self._submission_of[pool_key(spec)] = (bot, number)
        return spec

    async def play(self, server: RefereeServer, taken: QueuedMatch) -> None:
        """Play one taken match and write it back (unless its lease was lost)."""
        row = self.store.execute(
            "SELECT deal, status FROM matches WHERE tournament = ? AND idx = ?",
            (self.league, taken.idx),
        ).fetchone()
        if row is None or row[1] == "finished":
            self.queue.done(taken.idx)
            return
        deal = int(row[0])
        specs = [self._spec(bot, taken.code[bot]) for bot in taken.seating]
        writer = live.LiveWriter(
            self.store, self.league, taken.idx, self.name, self.live_interval_s
        )
        runner = MatchRunner(
            server,
            specs,
            self.rules,
            seed=self.key.match_seed(deal),
            deal=deal,
            deal_key_commitment=self.key.commitment(),
            bot_seeds=self.key.bot_seeds(deal, len(specs)),
            match_id=taken.match_id,
            clock=self.clock,
            strike_limit=self.strike_limit,
            out_dir=self.out,
            observer=self.metrics,
            pool=self.pool,
            on_record=writer.append if self.live_interval_s > 0 else None,
            code=[
                (int(taken.code[b]["submission"]), str(taken.code[b].get("upload", "")))
                for b in taken.seating
            ],
        )
        self.store.mark_running(self.league, taken.idx, runner.record_path)
        log.info("match_taken", match_id=taken.match_id, worker=self.name)
        renew = asyncio.ensure_future(self._renew(taken))
        if self.live_interval_s > 0:
            writer.start()
        try:
            result = await runner.run()
        finally:
            renew.cancel()
            await writer.stop()
        if not self.queue.renew(taken.idx, self.name, self.lease_s):
            log.warning("lease_lost", match_id=taken.match_id, worker=self.name)
            return  # void already: the league plays it again
        if result.aborted:
            self.store.mark_aborted(self.league, taken.idx, result.record_path)
        else:
            store_record(self.store, self.league, taken.idx, result.record_path)
            self.store.save_result(self.league, taken.idx, result)
            self.logs.keep(
                taken.match_id,
                taken.seating,
                {b: int(taken.code[b]["submission"]) for b in taken.seating},
                runner.log_spans,
                runner.log_heads,
            )
            self.played += 1
        self.queue.done(taken.idx)
        with contextlib.suppress(StoreError):
            live.clear(self.store, self.league, taken.idx)
        log.info(
            "match_played",
            match_id=taken.match_id,
            worker=self.name,
            at=time.time(),
            live_rows=writer.rows,
            live_bytes=writer.bytes,
        )

    async def _renew(self, taken: QueuedMatch) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                if not self.queue.renew(taken.idx, self.name, self.lease_s):
                    log.warning("lease_lost", match_id=taken.match_id, worker=self.name)
            except StoreError as exc:
                log.error("store_failed", doing="renew a lease", error=str(exc))
