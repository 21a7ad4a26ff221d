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

A PostgreSQL store outlives its connection: a call that finds the connection gone (the
server restarted, a managed database failed over, an administrator ended the session)
reconnects and runs again, a few times with a pause between (:data:`RECONNECT_PAUSES_S`),
then raises :class:`StoreError`. Every call is written to be safe to run twice, even a
write whose commit went through but whose acknowledgement was lost (see :func:`_retried`).

A league serves its database alone: :meth:`Store.lock_league` takes a lock that a second
league of the same name on the same database is refused (:class:`LeagueTaken`). A
tournament takes none: its shards share a database on purpose.
"""

from __future__ import annotations

import array
import fcntl
import functools
import hashlib
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Concatenate, ParamSpec, Protocol, TypeVar

import structlog

if TYPE_CHECKING:
    from referee.match.runner import MatchResult

from referee.match.dealkey import DealKey
from referee.runtime.private import FILE_MODE, create_private, private_dir

log = structlog.get_logger("referee.store")

SCHEMA_VERSION = 1

#: A PostgreSQL store that lost its connection reconnects after each of these pauses in
#: turn (the first at once), about four seconds in all, before its call fails.
RECONNECT_PAUSES_S = (0.0, 0.25, 0.5, 1.0, 2.0)
#: How long one reconnection may take (libpq's smallest connect_timeout).
RECONNECT_TIMEOUT_S = 2

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


class LeagueTaken(StoreError):
    """Another process serves a league of the same name from the same database."""


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
    #: The strikes the seat's faults cost (not a late answer to a timed-out request).
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


def _first_line(exc: BaseException, secret: str | None = None) -> str:
    """The first line of ``exc``'s message (its type when it has none), without ``secret``."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line.replace(secret, "***") if secret else line


S = TypeVar("S", bound="Store")
P = ParamSpec("P")
R = TypeVar("R")


def _retried(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A store call that a PostgreSQL store runs again, all of it, on a new connection
    when its connection was lost (:meth:`PostgresStore._retrying`; SQLite runs it once).

    Each such call is safe to run twice, also when the first run's commit went through
    and only its acknowledgement was lost: inserts keyed by their primary key are
    ``ON CONFLICT DO NOTHING`` (tournaments, deal keys, planned matches, meta), updates set
    values rather than add to them, a finished match is written only when it is not
    finished yet (:meth:`Store.save_result`, :meth:`Store.import_finished`: its results
    cannot be stored twice, and its finish order is not assigned twice), and reads read.
    What such a call returns then tells what the second run found: a tournament that
    "already existed", no interrupted match left to reset. Statements given to
    :meth:`Store.execute` are the caller's to make safe (the league's bot registry finds
    its own row again).
    """

    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._retrying(lambda: method(self, *args, **kwargs))

    return call


def league_lock_key(name: str) -> int:
    """The PostgreSQL advisory lock key (a signed 64-bit number) of league ``name``."""
    digest = hashlib.sha256(f"sticheln-league:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _advisory_lock(db: Any, key: int) -> bool:
    """Take PostgreSQL's session-level advisory lock ``key`` on connection ``db``; False
    when another session holds it."""
    row = db.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
    return bool(row and row[0])


def _taken(name: str, where: str | Path) -> str:
    return (
        f"league {name!r} is already served from the database {redact(where)} by another "
        "process (another referee serve); stop that one first, or give this league "
        "another name or database"
    )


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
        self._lock_fd: int | None = None
        self._init_meta()

    def _init_meta(self) -> None:
        self._execute(
            "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT DO NOTHING",
            (str(SCHEMA_VERSION),),
        )

    def close(self) -> None:
        """Close the connection (and give up the league's lock, if taken)."""
        self.db.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def lock_league(self, name: str) -> None:
        """Take the right to serve league ``name`` from this database, held until
        :meth:`close` (or the process ends); :class:`LeagueTaken` when another process
        holds it.

        SQLite: an exclusive ``flock`` on ``FILE.NAME.lock`` beside the database file. Not
        on the database file itself: opening and closing another descriptor of that file
        would drop SQLite's own POSIX locks (see :func:`create_private`). The lock file is
        left in place when the league stops; only the lock on it matters.
        """
        assert self.path is not None
        lock = self.path.with_name(f"{self.path.name}.{name}.lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        except OSError as exc:
            raise StoreError(f"cannot open the league's lock file {lock}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LeagueTaken(_taken(name, self.where)) from None
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"cannot lock the league's lock file {lock}: {exc}") from None
        self._lock_fd = fd

    def _retrying(self, call: Callable[[], R]) -> R:
        """Run one store call (a PostgreSQL store reconnects and runs it again)."""
        return call()

    # -- other modules' tables (the league's bot entries) ------------------------------------

    @_retried
    def create_tables(self, schema: str) -> None:
        """Create the tables and indexes of ``schema`` (``CREATE … IF NOT EXISTS``
        statements) that do not exist yet. ``{real}``, ``{blob}`` and ``{bigint}`` stand
        for the column types that differ between the databases."""
        try:
            self.db.executescript(schema.format(**self._TYPES))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot create the tables in {self.where}: {exc}") from None

    @_retried
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement with ``?`` parameters, committed at once (every store
        connection is in autocommit mode, so another process reads it at once); the
        cursor, for ``fetchone``, ``fetchall``, iteration and ``rowcount``."""
        return self._execute(sql, params)

    def atomically(self, fn: Callable[[], R]) -> R:
        """Run ``fn`` (statements made through :meth:`execute`) in one transaction; a
        PostgreSQL store whose connection is lost runs all of it again on a new one, then
        raises :class:`StoreError`. ``fn`` must be safe to run twice, as every store call."""

        def once() -> R:
            with self._transaction():
                return fn()

        return self._retrying(once)

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

    @_retried
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

    @_retried
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

    @_retried
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

    @_retried
    def stored_deal_key(self, name: str) -> DealKey | None:
        """The deal key stored for ``name``, or None."""
        row = self._execute(
            "SELECT deal_key FROM deal_keys WHERE tournament = ?", (name,)
        ).fetchone()
        return None if row is None else DealKey.from_hex(row[0])

    @_retried
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

    @_retried
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

    @_retried
    def set_deal(self, tournament: str, idx: int, deal: int, seed: int) -> None:
        """A planned match gets another deal (a league replays an interrupted match with a
        fresh deal: its seats saw part of the old one)."""
        self._execute(
            "UPDATE matches SET deal = ?, seed = ? "
            "WHERE tournament = ? AND idx = ? AND status = 'planned'",
            (deal, str(seed), tournament, idx),
        )

    @_retried
    def finished_indices(self, tournament: str) -> set[int]:
        """The schedule positions already finished."""
        rows = self._execute(
            "SELECT idx FROM matches WHERE tournament = ? AND status = 'finished'", (tournament,)
        )
        return {r[0] for r in rows}

    @_retried
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

    @_retried
    def mark_running(self, tournament: str, idx: int, record_path: Path) -> None:
        """A match has started."""
        self._execute(
            "UPDATE matches SET status = 'running', started_at = ?, record_path = ? "
            "WHERE tournament = ? AND idx = ? AND status <> 'finished'",
            (time.time(), str(record_path), tournament, idx),
        )

    @_retried
    def record_path(self, tournament: str, idx: int) -> Path | None:
        """The record of finished match ``idx``, if it is finished."""
        row = self._execute(
            "SELECT record_path FROM matches "
            "WHERE tournament = ? AND idx = ? AND status = 'finished'",
            (tournament, idx),
        ).fetchone()
        return Path(row[0]) if row is not None and row[0] else None

    @_retried
    def mark_aborted(self, tournament: str, idx: int, record_path: Path) -> None:
        """A match was not played (fewer than two seats connected): no results, and it is
        played again when the tournament is run again."""
        self._execute(
            "UPDATE matches SET status = 'aborted', record_path = ? "
            "WHERE tournament = ? AND idx = ? AND status <> 'finished'",
            (str(record_path), tournament, idx),
        )

    @_retried
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
                    s.strikes,
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
            # Run again after a commit whose acknowledgement was lost, this finds the match
            # finished and writes nothing: no result twice, no second finish order.
            if self._status(tournament, idx) == "finished":
                return
            self._write_finished(tournament, idx, match, results, faults)

    def _status(self, tournament: str, idx: int) -> str | None:
        row = self._execute(
            "SELECT status FROM matches WHERE tournament = ? AND idx = ?", (tournament, idx)
        ).fetchone()
        return None if row is None else str(row[0])

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
        return iter(self._finished_matches(tournament))

    @_retried
    def _finished_matches(self, tournament: str) -> list[FinishedMatch]:
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
        return [
            FinishedMatch(m, rows["results"].get(m["idx"], []), rows["faults"].get(m["idx"], []))
            for m in matches
        ]

    @_retried
    def import_finished(self, tournament: str, found: FinishedMatch) -> bool:
        """Store a finished match copied from another database (a shard's); False when this
        one already holds it finished (it is never stored twice)."""
        m = found.match
        with self._transaction(tournament):
            status = self._status(tournament, m["idx"])
            if status == "finished":
                return False
            if status is None:
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

    @_retried
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

    @_retried
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

    @_retried
    def faults_by_reason(
        self, tournament: str, upto: int | None = None
    ) -> dict[str, dict[str, int]]:
        """Per bot, the number of faults of each reason (with ``upto``, in the matches
        that finished up to the ``upto``-th only)."""
        out: dict[str, dict[str, int]] = {}
        upto_sql, params = (
            ("", (tournament,))
            if upto is None
            else (
                " AND m.finish_order <= ?",
                (tournament, upto),
            )
        )
        rows = self._execute(
            "SELECT bot, reason, COUNT(*) FROM faults f JOIN matches m "
            "ON m.tournament = f.tournament AND m.idx = f.idx "
            f"WHERE f.tournament = ? AND m.status = 'finished'{upto_sql} GROUP BY bot, reason",
            params,
        )
        for bot, reason, count in rows:
            out.setdefault(bot, {})[reason] = int(count)
        return out

    @_retried
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
    """A PostgreSQL database (psycopg 3) shared by the shards of a tournament.

    One connection, opened again when it is lost (:meth:`_retrying`).
    """

    _TYPES: ClassVar[dict[str, str]] = {
        "real": "DOUBLE PRECISION",
        "blob": "BYTEA",
        "bigint": "BIGINT",
    }

    def __init__(self, url: str) -> None:
        import psycopg

        self.where = url
        self.path = None
        self._lock_fd = None
        #: The pauses before each reconnection (tests make them shorter).
        self.reconnect_pauses_s: tuple[float, ...] = RECONNECT_PAUSES_S
        #: The league whose advisory lock this connection holds, and the lock's key.
        self._league: tuple[str, int] | None = None
        #: How deep in store calls we are: only the outermost one reconnects and reruns.
        self._depth = 0
        #: The last call ran out of reconnections: the next ones try once each.
        self._away = False
        try:
            self.db = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except (psycopg.Error, ValueError) as exc:
            raise StoreError(
                f"cannot connect to the database {redact(url)}: {self._why(exc)}"
            ) from None
        try:
            self.create_tables(_SCHEMA)
        except StoreError:
            self.db.close()
            raise
        self._init_meta()

    @_retried
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
            if self._lost():
                raise  # reconnected and run again
            raise StoreError(f"cannot create the tables in {redact(self.where)}: {exc}") from None

    def lock_league(self, name: str) -> None:
        """Take the right to serve league ``name`` from this database, held until
        :meth:`close`; :class:`LeagueTaken` when another process holds it.

        PostgreSQL: a session-level advisory lock keyed on the name
        (:func:`league_lock_key`), held by this store's connection and taken again by each
        new connection after one is lost. A connection that cannot take it again does
        not serve: the call fails, and so do the next ones while another process holds it.
        """
        key = league_lock_key(name)
        if not _advisory_lock(self.db, key):
            raise LeagueTaken(_taken(name, self.where))
        self._league = (name, key)

    # -- a lost connection --------------------------------------------------------------------

    def _why(self, exc: BaseException) -> str:
        """``exc`` in one line, without the URL's password."""
        password = urllib.parse.urlsplit(self.where).password
        return _first_line(exc, password)

    def _lost(self) -> bool:
        """True when the connection is gone (not when a statement failed on it)."""
        return bool(self.db.closed or self.db.broken)

    def _reconnect(self) -> None:
        """A new connection in place of the lost one, holding the league's lock again."""
        import psycopg

        self.db.close()
        db = psycopg.connect(self.where, autocommit=True, connect_timeout=RECONNECT_TIMEOUT_S)
        if self._league is not None:
            name, key = self._league
            if not _advisory_lock(db, key):
                db.close()
                raise LeagueTaken(_taken(name, self.where))
        self.db = db

    def _retrying(self, call: Callable[[], R]) -> R:
        """Run one store call; when the connection is found gone, reconnect and run the
        whole call again, after each pause of :attr:`reconnect_pauses_s` in turn, then
        raise :class:`StoreError` (one line). An error of a statement on a live
        connection (a constraint, say) is raised at once. A call inside another store
        call is run again by the outermost one.

        Every pause blocks the caller (the league's event loop: its store calls are
        synchronous), so a database that stayed away through a whole series gets one
        attempt per call afterwards, until it is back.
        """
        import psycopg

        if self._depth:
            return call()
        self._depth += 1
        try:
            if not self._lost():
                try:
                    return call()
                except psycopg.OperationalError as exc:
                    if not self._lost():
                        raise
                    why = self._why(exc)
            else:
                why = "the connection was lost before"
            started = time.monotonic()
            pauses = self.reconnect_pauses_s[:1] if self._away else self.reconnect_pauses_s
            failure: Exception | None = None
            for attempt, pause in enumerate(pauses, 1):
                time.sleep(pause)
                try:
                    self._reconnect()
                except (psycopg.Error, LeagueTaken) as exc:
                    failure, why = exc, self._why(exc)
                    continue
                self._away = False
                log.warning(
                    "database_reconnected", database=redact(self.where), attempt=attempt, after=why
                )
                try:
                    return call()
                except psycopg.OperationalError as exc:
                    if not self._lost():
                        raise
                    failure, why = exc, self._why(exc)
            self._away = True
            if isinstance(failure, LeagueTaken):
                raise failure
            spent = time.monotonic() - started
            raise StoreError(
                f"the database {redact(self.where)} is unreachable: {why} ({len(pauses)} "
                f"reconnection attempt(s) in {spent:.1f} s; the next call tries again)"
            )
        finally:
            self._depth -= 1

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
