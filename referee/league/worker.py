"""``referee league worker``: plays a league's queued matches of hosted bots, from its
database alone, on any machine that reaches it (docs/hosting.md).

A worker takes the oldest queued match (:class:`~referee.league.submissions.MatchQueue`,
``FOR UPDATE SKIP LOCKED`` on PostgreSQL) with a lease it renews while it plays, unpacks
each seat's code from the database into its own code folder (by hash, once), starts every
seat fresh in the jail on a referee server of its own, and writes the result, the
match's record (``league_records``) and the end of its lease back, all through the one
database. The league process, which keeps the schedule and the ratings, sees the match
done and takes it in. A worker killed mid-match stops renewing: its lease runs out, the
league voids the match and plays it again; a worker that finds its lease gone when its
match ends (it was too slow to renew) drops the result.

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
from pathlib import Path

import structlog

from referee.jail.bots import BotSpec
from referee.jail.sandbox import Sandbox
from referee.league.config import HostingConfig
from referee.league.hosting import Hosting
from referee.league.submissions import MatchQueue, QueuedMatch, Submissions
from referee.match.metrics import RefereeMetrics
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
        self.hosting = Hosting(
            HostingConfig(enabled=True, code_dir=self.code_dir),
            self.submissions,
            self.sandbox,
            self.out / "validation",
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Take and play queued matches until ``stop`` is set (the match being played
        ends first)."""
        server = RefereeServer(sandbox=self.sandbox, observer=self.metrics)
        await server.start("127.0.0.1", 0)
        log.info("worker_start", worker=self.name, league=self.league)
        try:
            while not stop.is_set():
                try:
                    taken = self.queue.take(self.name, self.lease_s)
                except StoreError as exc:
                    log.error("store_failed", doing="take a queued match", error=str(exc))
                    taken = None
                if taken is None:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), POLL_S)
                    continue
                await self.play(server, taken)
        finally:
            await server.stop(1.0)
            log.info("worker_stop", worker=self.name, played=self.played)

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
        specs: list[BotSpec] = []
        for bot in taken.seating:
            sub = self.submissions.get(bot, int(taken.code[bot]["submission"]))
            try:
                assert sub is not None
                specs.append(self.hosting.spec(sub))
            except Exception as exc:  # its code cannot be had here: the seat faults
                log.error("hosted_code_failed", bot=bot, error=repr(exc))
                specs.append(BotSpec(name=bot, command=("/nonexistent/hosted-code-missing",)))
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
        )
        self.store.mark_running(self.league, taken.idx, runner.record_path)
        log.info("match_taken", match_id=taken.match_id, worker=self.name)
        renew = asyncio.ensure_future(self._renew(taken))
        try:
            result = await runner.run()
        finally:
            renew.cancel()
        if not self.queue.renew(taken.idx, self.name, self.lease_s):
            log.warning("lease_lost", match_id=taken.match_id, worker=self.name)
            return  # void already: the league plays it again
        if result.aborted:
            self.store.mark_aborted(self.league, taken.idx, result.record_path)
        else:
            store_record(self.store, self.league, taken.idx, result.record_path)
            self.store.save_result(self.league, taken.idx, result)
            self.played += 1
        self.queue.done(taken.idx)
        log.info("match_played", match_id=taken.match_id, worker=self.name, at=time.time())

    async def _renew(self, taken: QueuedMatch) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                if not self.queue.renew(taken.idx, self.name, self.lease_s):
                    log.warning("lease_lost", match_id=taken.match_id, worker=self.name)
            except StoreError as exc:
                log.error("store_failed", doing="renew a lease", error=str(exc))
