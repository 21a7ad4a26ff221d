"""Tournament persistence: SQLite (the embedded default, WAL mode) or PostgreSQL.

:func:`open_store` chooses by the database target: a file path (or ``sqlite:///path``)
opens :class:`Store`, an SQLite file on this machine; a ``postgresql://`` URL opens
:class:`PostgresStore`, one database that the shards of a tournament running on many
machines share. Both hold the same tables and answer the same methods:

``tournaments`` (name, config fingerprint), ``deal_keys`` (each tournament's secret deal
key and its published commitment, :mod:`referee.match.dealkey`), ``matches`` (the schedule, with each match's
status: planned, running, finished, aborted), ``results`` (one row per seat of a finished match),
``faults``. A match's results, faults and its ``finished`` status are written in one
transaction, so a tournament (or a shard of one) killed at any moment has every finished
match complete and every other one replayable from the start. Shards write concurrently:
each plans, resets and plays only its own matches, and the finishing order is assigned
under a lock on the tournament's row.

Another module keeps a table of its own in the same database through
:meth:`Store.create_tables` and :meth:`Store.execute`, written once for both databases:
the league's bot entries (:mod:`referee.league.registry`).
"""

from __future__ import annotations

import array
import json
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from referee.match.runner import MatchResult

from referee.match.dealkey import DealKey
from referee.runtime.private import create_private, private_dir

SCHEMA_VERSION = 1

#: The schema, with the column types that differ between the two databases left open.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tournaments (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    fingerprint_hash TEXT NOT NULL,
    created_at {real} NOT NULL
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
    started_at {real},
    finished_at {real},
    duration_s {real},
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
    think_us {blob} NOT NULL,
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
    request_id {bigint} NOT NULL,
    strikes INTEGER NOT NULL,
    forfeited INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS faults_by_match ON faults (tournament, idx);
CREATE INDEX IF NOT EXISTS matches_by_finish ON matches (tournament, finish_order);
CREATE TABLE IF NOT EXISTS deal_keys (
    tournament TEXT PRIMARY KEY,
    deal_key TEXT NOT NULL,
    commitment TEXT NOT NULL
);
"""

_MATCH_COLUMNS = (
    "idx, match_id, seating, seed, deal, status, record_path, started_at, finished_at, "
    "duration_s, decisions, finish_order"
)


class PlannedMatch(Protocol):
    """What the store keeps of a scheduled match (a tournament's ``ScheduledMatch``)."""

    @property
    def index(self) -> int: ...
    @property
    def seating(self) -> tuple[str, ...]: ...
    @property
    def deal(self) -> int: ...


class StoreError(Exception):
    """The database cannot be opened or used; the message is one line for the user."""


class ResumeRefused(ValueError):
    """The database holds this tournament with a different configuration."""


class DealKeyRefused(ResumeRefused):
    """A deal key was given that is not the one the tournament was created with."""


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
    #: The match's position in finishing order (1 is the first to finish); 0 where not
    #: known (a match read from its record alone).
    finish_order: int = 0


@dataclass(frozen=True)
class FinishedMatch:
    """Everything stored about one finished match: what ``referee merge`` copies."""

    match: dict[str, Any]
    results: list[tuple[Any, ...]]
    faults: list[tuple[Any, ...]]


def is_url(target: str | Path) -> bool:
    """True for a database URL (``scheme://…``), False for a file path."""
    return isinstance(target, str) and "://" in target


def redact(target: str | Path) -> str:
    """``target`` fit to print: a URL without its password."""
    text = str(target)
    if not is_url(text):
        return text
    parts = urllib.parse.urlsplit(text)
    if parts.password is None:
        return text
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def describe_changes(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """Human-readable differences between two fingerprints, e.g. ``rules.trump_rule``."""
    changes: list[str] = []
    for key in sorted(set(old) | set(new)):
        path = f"{prefix}{key}"
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            changes.extend(describe_changes(a, b, path + "."))
        elif a != b:
            if key == "bots" and isinstance(a, list) and isinstance(b, list):
                names_a = [x.get("name") for x in a]
                names_b = [x.get("name") for x in b]
                if names_a != names_b:
                    changes.append(f"bots: {names_a} -> {names_b}")
                else:
                    for x, y in zip(a, b, strict=True):
                        changes.extend(describe_changes(x, y, f"bots[{x.get('name')}]."))
            else:
                changes.append(f"{path}: {a!r} -> {b!r}")
    return changes


def open_store(target: str | Path) -> Store:
    """The store for ``target``: a SQLite file path, ``sqlite:///path`` or ``postgresql://…``.

    Raises :class:`StoreError` (one line) when the target is malformed or unreachable.
    """
    if not is_url(target):
        return Store(Path(target))
    text = str(target)
    scheme = text.split("://", 1)[0].lower()
    if scheme in ("postgresql", "postgres"):
        return PostgresStore(text)
    if scheme == "sqlite":
        path = urllib.parse.urlsplit(text).path
        if not path or path == "/":
            raise StoreError(f"database {text!r}: no file path; write sqlite:///path/to/file.db")
        return Store(Path(path))
    raise StoreError(
        f"database {redact(text)!r}: unsupported scheme {scheme!r}; allowed: a SQLite file "
        "path, sqlite:///path, or postgresql://user:password@host:port/dbname"
    )


class Store:
    """One SQLite database file (created on first use); the base of every store.

    The queries are written once, for SQLite (``?`` parameters); :class:`PostgresStore`
    overrides the connection, the transaction and the placeholder style.
    """

    #: Column types that differ between databases (see ``_SCHEMA``).
    _TYPES: ClassVar[dict[str, str]] = {"real": "REAL", "blob": "BLOB", "bigint": "INTEGER"}

    def __init__(self, path: Path) -> None:
        path = Path(path)
        try:
            # The file holds the deal key: readable by its owner only, and so are the WAL
            # and shared-memory files, which SQLite creates with the database file's mode.
            private_dir(path.parent, own=False)
            create_private(path)
            self.db: Any = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA.format(**self._TYPES))
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the SQLite database {path}: {exc}") from None
        self.path: Path | None = path
        self.where = str(path)
        self._init_meta()

    def _init_meta(self) -> None:
        self._execute(
            "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT DO NOTHING",
            (str(SCHEMA_VERSION),),
        )

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    # -- other modules' tables (the league's bot entries) ------------------------------------

    def create_tables(self, schema: str) -> None:
        """Create the tables and indexes of ``schema`` (``CREATE … IF NOT EXISTS``
        statements) that do not exist yet. ``{real}``, ``{blob}`` and ``{bigint}`` stand
        for the column types that differ between the databases."""
        try:
            self.db.executescript(schema.format(**self._TYPES))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot create the tables in {self.where}: {exc}") from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement with ``?`` parameters, committed at once (every store
        connection is in autocommit mode, so another process reads it at once); the
        cursor, for ``fetchone``, ``fetchall``, iteration and ``rowcount``."""
        return self._execute(sql, params)

    # -- the dialect: what PostgresStore overrides ------------------------------------------

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.db.execute(sql, params)

    def _executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)

    @contextmanager
    def _transaction(self, tournament: str | None = None) -> Iterator[None]:
        """One transaction; with ``tournament``, also the right to assign its finish order
        (SQLite: the database's write lock, taken at once)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- tournaments and schedule ---------------------------------------------------------

    def open_tournament(
        self, name: str, fingerprint: dict[str, Any], fingerprint_hash: str
    ) -> bool:
        """Register the tournament, or check a resume; True when it already existed.

        Safe when several shards open the same tournament at once. Raises
        :class:`ResumeRefused` naming what changed when the stored configuration differs.
        """
        cur = self._execute(
            "INSERT INTO tournaments VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (name, json.dumps(fingerprint, sort_keys=True), fingerprint_hash, time.time()),
        )
        if cur.rowcount == 1:
            return False
        changes = self.changes(name, fingerprint, fingerprint_hash)
        if changes:
            raise ResumeRefused(
                f"tournament {name!r} in {redact(self.where)} was started with a different configuration "
                f"({changes}); restore it, or use a new tournament name or database"
            )
        return True

    def changes(self, name: str, fingerprint: dict[str, Any], fingerprint_hash: str) -> str | None:
        """How the stored configuration of ``name`` differs from ``fingerprint``, as one
        line ("" when it does not); None when this database does not hold ``name``."""
        row = self._execute(
            "SELECT fingerprint, fingerprint_hash FROM tournaments WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            return None
        if row[1] == fingerprint_hash:
            return ""
        return "; ".join(describe_changes(json.loads(row[0]), fingerprint)) or "details differ"

    def deal_key(self, name: str, given: DealKey | None = None) -> DealKey:
        """The deal key of tournament ``name``: the stored one, else ``given`` (or a fresh
        one) stored now. When shards create the tournament at once, the first key stored
        wins and every shard gets it. Raises :class:`DealKeyRefused` when ``given`` is not
        the stored key."""
        candidate = given or DealKey.new()
        self._execute(
            "INSERT INTO deal_keys VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (name, candidate.hex(), candidate.commitment()),
        )
        stored = self.stored_deal_key(name)
        assert stored is not None
        if given is not None and stored != given:
            raise DealKeyRefused(
                f"tournament {name!r} in {redact(self.where)} has the deal key with commitment "
                f"{stored.commitment()}, not the given key (commitment {given.commitment()}); "
                "give every shard the same key"
            )
        return stored

    def stored_deal_key(self, name: str) -> DealKey | None:
        """The deal key stored for ``name``, or None."""
        row = self._execute(
            "SELECT deal_key FROM deal_keys WHERE tournament = ?", (name,)
        ).fetchone()
        return None if row is None else DealKey.from_hex(row[0])

    def plan(
        self,
        tournament: str,
        schedule: Sequence[PlannedMatch],
        match_id_of: Callable[[Any], str],
        key: DealKey,
    ) -> None:
        """Insert the schedule's matches that are not stored yet, each with the seed of
        its deal under ``key``."""
        with self._transaction():
            self._executemany(
                "INSERT INTO matches (tournament, idx, match_id, seating, seed, deal) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    (
                        tournament,
                        m.index,
                        match_id_of(m),
                        json.dumps(m.seating),
                        str(key.match_seed(m.deal)),
                        m.deal,
                    )
                    for m in schedule
                ],
            )

    def reset_interrupted(self, tournament: str, indices: Iterable[int] | None = None) -> int:
        """Matches left ``running`` by a killed run go back to ``planned``; returns how many.

        With ``indices`` (a shard's matches) only those: another shard's running matches
        are its own business.
        """
        query = (
            "UPDATE matches SET status = 'planned', started_at = NULL "
            "WHERE tournament = ? AND status = 'running'"
        )
        if indices is None:
            return int(self._execute(query, (tournament,)).rowcount)
        count = 0
        with self._transaction():
            for chunk in _chunks(sorted(set(indices)), 500):
                marks = ", ".join("?" * len(chunk))
                cur = self._execute(f"{query} AND idx IN ({marks})", (tournament, *chunk))
                count += cur.rowcount
        return count

    def set_deal(self, tournament: str, idx: int, deal: int, seed: int) -> None:
        """A planned match gets another deal (a league replays an interrupted match with a
        fresh deal: its seats saw part of the old one)."""
        self._execute(
            "UPDATE matches SET deal = ?, seed = ? "
            "WHERE tournament = ? AND idx = ? AND status = 'planned'",
            (deal, str(seed), tournament, idx),
        )

    def finished_indices(self, tournament: str) -> set[int]:
        """The schedule positions already finished."""
        rows = self._execute(
            "SELECT idx FROM matches WHERE tournament = ? AND status = 'finished'", (tournament,)
        )
        return {r[0] for r in rows}

    def finished_among(self, tournament: str, indices: Iterable[int]) -> set[int]:
        """Which of ``indices`` are finished (another shard's matches, say)."""
        found: set[int] = set()
        for chunk in _chunks(sorted(set(indices)), 500):
            marks = ", ".join("?" * len(chunk))
            rows = self._execute(
                f"SELECT idx FROM matches WHERE tournament = ? AND status = 'finished' "
                f"AND idx IN ({marks})",
                (tournament, *chunk),
            )
            found.update(r[0] for r in rows)
        return found

    def mark_running(self, tournament: str, idx: int, record_path: Path) -> None:
        """A match has started."""
        self._execute(
            "UPDATE matches SET status = 'running', started_at = ?, record_path = ? "
            "WHERE tournament = ? AND idx = ? AND status <> 'finished'",
            (time.time(), str(record_path), tournament, idx),
        )

    def record_path(self, tournament: str, idx: int) -> Path | None:
        """The record of finished match ``idx``, if it is finished."""
        row = self._execute(
            "SELECT record_path FROM matches "
            "WHERE tournament = ? AND idx = ? AND status = 'finished'",
            (tournament, idx),
        ).fetchone()
        return Path(row[0]) if row is not None and row[0] else None

    def mark_aborted(self, tournament: str, idx: int, record_path: Path) -> None:
        """A match was not played (fewer than two seats connected): no results, and it is
        played again when the tournament is run again."""
        self._execute(
            "UPDATE matches SET status = 'aborted', record_path = ? "
            "WHERE tournament = ? AND idx = ? AND status <> 'finished'",
            (str(record_path), tournament, idx),
        )

    def save_result(self, tournament: str, idx: int, result: MatchResult) -> None:
        """Store a finished match, all of it in one transaction."""
        results: list[tuple[Any, ...]] = []
        faults: list[tuple[Any, ...]] = []
        for s in result.seats:
            think = array.array("I", (min(int(t * 1e6), 0xFFFFFFFF) for t in s.think_s))
            results.append(
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
                )
            )
            faults.extend(
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
            )
        match = {
            "finished_at": time.time(),
            "duration_s": result.duration_s,
            "decisions": result.decisions,
            "record_path": str(result.record_path),
        }
        with self._transaction(tournament):
            self._write_finished(tournament, idx, match, results, faults)

    def _write_finished(
        self,
        tournament: str,
        idx: int,
        match: dict[str, Any],
        results: Sequence[tuple[Any, ...]],
        faults: Sequence[tuple[Any, ...]],
    ) -> None:
        """Inside a transaction holding the tournament's lock: one finished match."""
        self._execute("DELETE FROM results WHERE tournament = ? AND idx = ?", (tournament, idx))
        self._execute("DELETE FROM faults WHERE tournament = ? AND idx = ?", (tournament, idx))
        self._executemany("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", results)
        if faults:
            self._executemany("INSERT INTO faults VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", faults)
        order = self._execute(
            "SELECT COALESCE(MAX(finish_order), 0) + 1 FROM matches WHERE tournament = ?",
            (tournament,),
        ).fetchone()[0]
        self._execute(
            "UPDATE matches SET status = 'finished', finished_at = ?, duration_s = ?, "
            "decisions = ?, record_path = ?, finish_order = ? WHERE tournament = ? AND idx = ?",
            (
                match["finished_at"],
                match["duration_s"],
                match["decisions"],
                match["record_path"],
                order,
                tournament,
                idx,
            ),
        )

    # -- merging shards ----------------------------------------------------------------------

    def finished_matches(self, tournament: str) -> Iterator[FinishedMatch]:
        """Every finished match with its results and faults, in schedule order."""
        finished = "SELECT idx FROM matches WHERE tournament = ? AND status = 'finished'"
        cur = self._execute(
            f"SELECT {_MATCH_COLUMNS} FROM matches "
            "WHERE tournament = ? AND status = 'finished' ORDER BY idx",
            (tournament,),
        )
        cols = [d[0] for d in cur.description]
        matches = [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
        rows: dict[str, dict[int, list[tuple[Any, ...]]]] = {"results": {}, "faults": {}}
        for table, order in (("results", "idx, seat"), ("faults", "idx")):
            for row in self._execute(
                f"SELECT * FROM {table} WHERE tournament = ? AND idx IN ({finished}) ORDER BY {order}",
                (tournament, tournament),
            ).fetchall():
                rows[table].setdefault(row[1], []).append(tuple(row))
        for m in matches:
            yield FinishedMatch(
                m, rows["results"].get(m["idx"], []), rows["faults"].get(m["idx"], [])
            )

    def import_finished(self, tournament: str, found: FinishedMatch) -> bool:
        """Store a finished match copied from another database (a shard's); False when this
        one already holds it finished (it is never stored twice)."""
        m = found.match
        with self._transaction(tournament):
            row = self._execute(
                "SELECT status FROM matches WHERE tournament = ? AND idx = ?",
                (tournament, m["idx"]),
            ).fetchone()
            if row is not None and row[0] == "finished":
                return False
            if row is None:
                self._execute(
                    "INSERT INTO matches (tournament, idx, match_id, seating, seed, deal) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (tournament, m["idx"], m["match_id"], m["seating"], m["seed"], m["deal"]),
                )
            results = [(tournament, *r[1:]) for r in found.results]
            faults = [(tournament, *f[1:]) for f in found.faults]
            self._write_finished(tournament, m["idx"], m, results, faults)
        return True

    # -- reading -----------------------------------------------------------------------------

    def results(self, tournament: str, think: bool = True) -> list[StoredResult]:
        """Every stored seat result, in finishing order then seat; with ``think`` False
        without the think times (every ``think_us`` empty), which are most of the size."""
        return self.results_since(tournament, 0, think)[0]

    def results_since(
        self, tournament: str, after: int, think: bool = True, limit: int | None = None
    ) -> tuple[list[StoredResult], int]:
        """The seat results of the matches that finished after the ``after``-th (in
        finishing order then seat; with ``limit``, of the first ``limit`` of them), and the
        finishing position of the last of them (``after`` when none did): what a reader
        that keeps the results already read needs to read next."""
        matches = "m.finish_order > ?"
        params: tuple[Any, ...] = (after,)
        if limit is not None:
            matches += (
                " AND m.finish_order <= (SELECT MAX(finish_order) FROM (SELECT finish_order "
                "FROM matches WHERE tournament = ? AND status = 'finished' AND finish_order > ? "
                "ORDER BY finish_order LIMIT ?) AS next_matches)"
            )
            params += (tournament, after, limit)
        out = self._read_results(tournament, matches, params, think)
        return out, max([after, *(r.finish_order for r in out)])

    def results_before(self, tournament: str, before: int, limit: int) -> list[StoredResult]:
        """The seat results, without think times, of the latest ``limit`` matches that
        finished before the ``before``-th, in finishing order then seat: a page of the
        finished matches, newest last."""
        matches = (
            "m.finish_order < ? AND m.finish_order >= (SELECT MIN(finish_order) FROM "
            "(SELECT finish_order FROM matches WHERE tournament = ? AND status = 'finished' "
            "AND finish_order < ? ORDER BY finish_order DESC LIMIT ?) AS page_matches)"
        )
        return self._read_results(tournament, matches, (before, tournament, before, limit), False)

    def _read_results(
        self, tournament: str, matches: str, params: Sequence[Any], think: bool
    ) -> list[StoredResult]:
        """The seat results of the finished matches of ``tournament`` that the condition
        ``matches`` on ``m`` (the matches table; its parameters ``params``) picks, in
        finishing order then seat."""
        rows = self._execute(
            "SELECT r.idx, m.match_id, r.seat, r.bot, r.total, r.place, r.forfeited, "
            f"r.positive_rounds, r.faults, {'r.think_us' if think else 'NULL'}, m.finish_order "
            "FROM results r JOIN matches m ON m.tournament = r.tournament AND m.idx = r.idx "
            f"WHERE r.tournament = ? AND m.status = 'finished' AND {matches} "
            "ORDER BY m.finish_order, r.idx, r.seat",
            (tournament, *params),
        )
        out = []
        none: array.array[int] = array.array("I")
        names: dict[str, str] = {}
        for idx, mid, seat, bot, total, place, forfeited, positive, faults, times, order in rows:
            arr = none
            if think:
                arr = array.array("I")
                arr.frombytes(bytes(times))
            bot = names.setdefault(bot, bot)  # one string per bot, not per row
            out.append(
                StoredResult(
                    idx, mid, seat, bot, total, place, bool(forfeited), positive, faults, arr, order
                )
            )
        return out

    def faults_by_reason(self, tournament: str) -> dict[str, dict[str, int]]:
        """Per bot, the number of faults of each reason."""
        out: dict[str, dict[str, int]] = {}
        rows = self._execute(
            "SELECT bot, reason, COUNT(*) FROM faults f JOIN matches m "
            "ON m.tournament = f.tournament AND m.idx = f.idx "
            "WHERE f.tournament = ? AND m.status = 'finished' GROUP BY bot, reason",
            (tournament,),
        )
        for bot, reason, count in rows:
            out.setdefault(bot, {})[reason] = int(count)
        return out

    def match_rows(self, tournament: str) -> list[dict[str, Any]]:
        """Every scheduled match with its status, for progress and exports."""
        cur = self._execute(
            "SELECT idx, match_id, seating, seed, deal, status, record_path, duration_s, decisions "
            "FROM matches WHERE tournament = ? ORDER BY idx",
            (tournament,),
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


class PostgresStore(Store):
    """A PostgreSQL database (psycopg 3) shared by the shards of a tournament."""

    _TYPES: ClassVar[dict[str, str]] = {
        "real": "DOUBLE PRECISION",
        "blob": "BYTEA",
        "bigint": "BIGINT",
    }

    def __init__(self, url: str) -> None:
        import psycopg

        self.where = url
        self.path = None
        try:
            self.db = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except (psycopg.Error, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"cannot connect to the database {redact(url)}: {first}") from None
        try:
            self.create_tables(_SCHEMA)
        except StoreError:
            self.db.close()
            raise
        self._init_meta()

    def create_tables(self, schema: str) -> None:
        import psycopg

        try:
            with self.db.transaction():
                # Processes creating the tables at the same moment take turns.
                self.db.execute("SELECT pg_advisory_xact_lock(5734287)")
                for statement in schema.format(**self._TYPES).split(";"):
                    if statement.strip():
                        self.db.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(f"cannot create the tables in {redact(self.where)}: {exc}") from None

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.db.execute(sql.replace("?", "%s"), params)

    def _executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.db.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), list(rows))

    @contextmanager
    def _transaction(self, tournament: str | None = None) -> Iterator[None]:
        with self.db.transaction():
            if tournament is not None:
                # Shards finishing matches at once take turns assigning the finish order.
                self._execute("SELECT 1 FROM tournaments WHERE name = ? FOR UPDATE", (tournament,))
            yield


def _chunks(items: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
