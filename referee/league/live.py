"""A worker's running match, watched live in the league: its record lines go through the
league's database (docs/hosting.md, "Watching a worker's match").

A worker elsewhere writes the record lines of the match it plays into ``league_live`` in
batches, one row per :data:`INTERVAL_S` or so (:class:`LiveWriter`), and only while it
holds the match's lease: the insert itself checks the lease, so a worker whose lease ran
out (its match void and queued again) cannot add a line to the next attempt. The league
reads the new rows of the matches its workers play about twice a second
(:class:`LiveReader`) into each match's :class:`~referee.league.feed.MatchFeed`, the feed
every spectator door reads through its public filter, as it does for a match it plays
itself. When the match is done the league tops the feed up from the stored record and
the worker deletes the rows.

The database is the one thing a worker already shares with the league, so this needs no
address, port or token between them, and a worker behind a firewall streams as well as
one beside the league. The rows hold whole record lines (hands included), as the record
in ``league_records`` does; they leave the database only through the public filter.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from typing import Any

import structlog

from referee.league.feed import MatchFeed
from referee.league.submissions import LEASED
from referee.results.store import Store, StoreError

log = structlog.get_logger("referee.live")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS league_live (
    tournament TEXT NOT NULL,
    idx INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    lines TEXT NOT NULL,
    PRIMARY KEY (tournament, idx, seq)
);
"""
#: How often a worker writes the lines of its running match (seconds).
INTERVAL_S = 0.5
#: How often the league reads them.
READ_S = 0.5


def create(store: Store) -> None:
    """Make the table (once per database; every worker and league calls it)."""
    store.create_tables(_SCHEMA)


def clear(store: Store, league: str, idx: int | None = None) -> None:
    """Delete the live rows of match ``idx`` (every match's when None)."""
    if idx is None:
        store.execute("DELETE FROM league_live WHERE tournament = ?", (league,))
    else:
        store.execute("DELETE FROM league_live WHERE tournament = ? AND idx = ?", (league, idx))


class LiveWriter:
    """A worker's side: the record lines of one match, written in batches while its lease
    holds. :meth:`append` is the match runner's ``on_record`` hook."""

    def __init__(
        self, store: Store, league: str, idx: int, worker: str, interval_s: float = INTERVAL_S
    ) -> None:
        self.store = store
        self.league = league
        self.idx = idx
        self.worker = worker
        self.interval_s = interval_s
        self._pending: list[str] = []
        self._seq = 0
        #: Rows and bytes written, for the cost stated in docs/hosting.md.
        self.rows = 0
        self.bytes = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Forget what an earlier attempt at the match left, and write every interval."""
        clear(self.store, self.league, self.idx)
        self._task = asyncio.ensure_future(self._loop())

    def append(self, line: dict[str, Any]) -> None:
        """One record line was written."""
        self._pending.append(json.dumps(line, separators=(",", ":")))

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            self.flush()

    def flush(self) -> None:
        """Write the lines not written yet, as one row (while the lease holds)."""
        if not self._pending:
            return
        text = "\n".join(self._pending)
        try:
            cur = self.store.execute(
                "INSERT INTO league_live (tournament, idx, seq, lines) "
                "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM match_queue "
                "WHERE tournament = ? AND idx = ? AND status = ? AND worker = ?)",
                (self.league, self.idx, self._seq, text,
                 self.league, self.idx, LEASED, self.worker),
            )  # fmt: skip
        except StoreError as exc:  # the match plays on; its watchers wait for the next row
            log.warning("live_not_written", idx=self.idx, error=str(exc))
            return
        self._pending.clear()
        if cur.rowcount == 1:
            self._seq += 1
            self.rows += 1
            self.bytes += len(text)

    async def stop(self) -> None:
        """The match is over: no more rows (the record says the rest)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class LiveReader:
    """The league's side: the new rows of the matches its workers play, into their feeds."""

    def __init__(self, store: Store, league: str) -> None:
        self.store = store
        self.league = league
        #: Per match being read: (its feed, the next row number).
        self._reading: dict[int, tuple[MatchFeed, int]] = {}

    def read(self, matches: Iterable[tuple[int, MatchFeed]]) -> int:
        """Append the rows written since the last read to each of ``matches`` (index and
        feed); a match not named any more is forgotten. How many lines were added."""
        wanted = dict(matches)
        for idx in list(self._reading):
            if idx not in wanted or self._reading[idx][0] is not wanted[idx]:
                del self._reading[idx]
        for idx, feed in wanted.items():
            self._reading.setdefault(idx, (feed, 0))
        if not self._reading:
            return 0
        where = " OR ".join("(idx = ? AND seq >= ?)" for _ in self._reading)
        params: list[Any] = [self.league]
        for idx, (_, seq) in self._reading.items():
            params += [idx, seq]
        rows = self.store.execute(
            f"SELECT idx, seq, lines FROM league_live WHERE tournament = ? AND ({where}) "
            "ORDER BY idx, seq",
            params,
        ).fetchall()
        added = 0
        for idx, seq, text in rows:
            feed, expected = self._reading[int(idx)]
            if int(seq) != expected or feed.over:
                continue  # a row missing in between is read at the next look
            for raw in str(text).split("\n"):
                feed.append(json.loads(raw))
                added += 1
            self._reading[int(idx)] = (feed, expected + 1)
        return added


def top_up(feed: MatchFeed, record: bytes) -> None:
    """A done match's feed completed from its stored record (the lines after those it
    holds), then finished; one that ends without its end line stays open (the caller
    interrupts it)."""
    if feed.over:
        return
    lines = [json.loads(raw) for raw in record.decode("utf-8").splitlines() if raw.strip()]
    for line in lines[len(feed.lines) :]:
        feed.append(line)
    if feed.lines and feed.lines[-1].get("type") == "end":
        feed.finish()
