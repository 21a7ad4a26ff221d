"""Tournament persistence: SQLite (the embedded default, WAL mode).

Tables: ``tournaments`` (name, config fingerprint), ``matches`` (the schedule, with each
match's status: planned, running, finished), ``results`` (one row per seat of a finished
match), ``faults``. A match's results, faults and its ``finished`` status are written in
one transaction, so a tournament killed at any moment has every finished match complete
and every other one replayable from the start.
"""

from __future__ import annotations

import array
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.runner import MatchResult
from referee.tournament.schedule import ScheduledMatch

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tournaments (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    fingerprint_hash TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS matches (
    tournament TEXT NOT NULL,
    idx INTEGER NOT NULL,
    match_id TEXT NOT NULL,
    seating TEXT NOT NULL,
    seed TEXT NOT NULL,
    deal INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'planned',
    record_path TEXT,
    started_at REAL,
    finished_at REAL,
    duration_s REAL,
    decisions INTEGER,
    finish_order INTEGER,
    PRIMARY KEY (tournament, idx)
);
CREATE TABLE IF NOT EXISTS results (
    tournament TEXT NOT NULL,
    idx INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    total INTEGER NOT NULL,
    place INTEGER NOT NULL,
    forfeited INTEGER NOT NULL,
    positive_rounds INTEGER NOT NULL,
    faults INTEGER NOT NULL,
    think_us BLOB NOT NULL,
    PRIMARY KEY (tournament, idx, seat)
);
CREATE TABLE IF NOT EXISTS faults (
    tournament TEXT NOT NULL,
    idx INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL,
    round INTEGER NOT NULL,
    request_id INTEGER NOT NULL,
    strikes INTEGER NOT NULL,
    forfeited INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS faults_by_match ON faults (tournament, idx);
"""


class ResumeRefused(ValueError):
    """The database holds this tournament with a different configuration."""


@dataclass(frozen=True)
class StoredResult:
    """One seat of one finished match, as stored."""

    idx: int
    match_id: str
    seat: int
    bot: str
    total: int
    place: int
    forfeited: bool
    positive_rounds: int
    faults: int
    think_us: array.array[int]


class Store:
    """One SQLite database file (created on first use)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(_SCHEMA)
        self.db.execute(
            "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    # -- tournaments and schedule ---------------------------------------------------------

    def open_tournament(
        self, name: str, fingerprint: dict[str, Any], fingerprint_hash: str
    ) -> bool:
        """Register the tournament, or check a resume; True when it already existed.

        Raises :class:`ResumeRefused` naming what changed when the stored configuration
        differs from this one.
        """
        from referee.tournament.config import describe_changes

        row = self.db.execute(
            "SELECT fingerprint, fingerprint_hash FROM tournaments WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            self.db.execute(
                "INSERT INTO tournaments VALUES (?, ?, ?, ?)",
                (name, json.dumps(fingerprint, sort_keys=True), fingerprint_hash, time.time()),
            )
            return False
        if row[1] != fingerprint_hash:
            changes = describe_changes(json.loads(row[0]), fingerprint)
            raise ResumeRefused(
                f"tournament {name!r} in {self.path} was started with a different configuration "
                f"({'; '.join(changes) or 'details differ'}); restore it, or use a new tournament name or database"
            )
        return True

    def plan(self, tournament: str, schedule: Sequence[ScheduledMatch], match_id_of: Any) -> None:
        """Insert the schedule's matches that are not stored yet."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany(
                "INSERT OR IGNORE INTO matches (tournament, idx, match_id, seating, seed, deal) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        tournament,
                        m.index,
                        match_id_of(m),
                        json.dumps(m.seating),
                        str(m.seed),
                        m.deal,
                    )
                    for m in schedule
                ],
            )

    def reset_interrupted(self, tournament: str, indices: Iterable[int] | None = None) -> int:
        """Matches left ``running`` by a killed run go back to ``planned``; returns how many."""
        query = "UPDATE matches SET status = 'planned', started_at = NULL WHERE tournament = ? AND status = 'running'"
        cur = self.db.execute(query, (tournament,))
        return cur.rowcount

    def finished_indices(self, tournament: str) -> set[int]:
        """The schedule positions already finished."""
        rows = self.db.execute(
            "SELECT idx FROM matches WHERE tournament = ? AND status = 'finished'", (tournament,)
        )
        return {r[0] for r in rows}

    def mark_running(self, tournament: str, idx: int, record_path: Path) -> None:
        """A match has started."""
        self.db.execute(
            "UPDATE matches SET status = 'running', started_at = ?, record_path = ? WHERE tournament = ? AND idx = ?",
            (time.time(), str(record_path), tournament, idx),
        )

    def save_result(self, tournament: str, idx: int, result: MatchResult) -> None:
        """Store a finished match, all of it in one transaction."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(
                "DELETE FROM results WHERE tournament = ? AND idx = ?", (tournament, idx)
            )
            self.db.execute(
                "DELETE FROM faults WHERE tournament = ? AND idx = ?", (tournament, idx)
            )
            for s in result.seats:
                think = array.array("I", (min(int(t * 1e6), 0xFFFFFFFF) for t in s.think_s))
                self.db.execute(
                    "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        tournament,
                        idx,
                        s.seat,
                        s.bot,
                        s.total,
                        s.place,
                        int(s.forfeited),
                        s.positive_rounds,
                        len(s.faults),
                        think.tobytes(),
                    ),
                )
                self.db.executemany(
                    "INSERT INTO faults VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            tournament,
                            idx,
                            f.seat,
                            s.bot,
                            f.reason.value,
                            f.detail,
                            f.round_index,
                            f.request_id,
                            f.strikes,
                            int(f.forfeited),
                        )
                        for f in s.faults
                    ],
                )
            order = self.db.execute(
                "SELECT COALESCE(MAX(finish_order), 0) + 1 FROM matches WHERE tournament = ?",
                (tournament,),
            ).fetchone()[0]
            self.db.execute(
                "UPDATE matches SET status = 'finished', finished_at = ?, duration_s = ?, decisions = ?, "
                "record_path = ?, finish_order = ? WHERE tournament = ? AND idx = ?",
                (
                    time.time(),
                    result.duration_s,
                    result.decisions,
                    str(result.record_path),
                    order,
                    tournament,
                    idx,
                ),
            )

    # -- reading -----------------------------------------------------------------------------

    def results(self, tournament: str) -> list[StoredResult]:
        """Every stored seat result, in finishing order then seat."""
        rows = self.db.execute(
            "SELECT r.idx, m.match_id, r.seat, r.bot, r.total, r.place, r.forfeited, r.positive_rounds, r.faults, r.think_us "
            "FROM results r JOIN matches m ON m.tournament = r.tournament AND m.idx = r.idx "
            "WHERE r.tournament = ? AND m.status = 'finished' ORDER BY m.finish_order, r.seat",
            (tournament,),
        )
        out = []
        for idx, mid, seat, bot, total, place, forfeited, positive, faults, think in rows:
            arr = array.array("I")
            arr.frombytes(think)
            out.append(
                StoredResult(
                    idx, mid, seat, bot, total, place, bool(forfeited), positive, faults, arr
                )
            )
        return out

    def faults_by_reason(self, tournament: str) -> dict[str, dict[str, int]]:
        """Per bot, the number of faults of each reason."""
        out: dict[str, dict[str, int]] = {}
        rows = self.db.execute(
            "SELECT bot, reason, COUNT(*) FROM faults f JOIN matches m ON m.tournament = f.tournament AND m.idx = f.idx "
            "WHERE f.tournament = ? AND m.status = 'finished' GROUP BY bot, reason",
            (tournament,),
        )
        for bot, reason, count in rows:
            out.setdefault(bot, {})[reason] = count
        return out

    def match_rows(self, tournament: str) -> list[dict[str, Any]]:
        """Every scheduled match with its status, for progress and exports."""
        cur = self.db.execute(
            "SELECT idx, match_id, seating, seed, deal, status, record_path, duration_s, decisions FROM matches WHERE tournament = ? ORDER BY idx",
            (tournament,),
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur]
