"""Hosted code in the league's database (SQLite or PostgreSQL): archives by hash, each
entry's submissions, and the queue of matches workers play.

Tables, in the league's :class:`~referee.results.store.Store` beside the match tables:

- ``league_archives``: every uploaded archive and every build's output, by the SHA-256 of
  its bytes (content-addressed: the same code uploaded twice is stored once). Every
  worker, on any machine, reads code from the one database it already uses and unpacks
  it into its own cache folder, by hash.
- ``league_submissions``: one row per submission of an entry: its number (1, 2, ...),
  archive hash, bot file, status (``validating``, ``playing``, ``refused``,
  ``retired``), the one-line refusal, the validation report, and the build's output hash.
- ``league_builds``: every successful build, keyed by the archive's hash and the bot
  file's path in it (the code and the bot file that says how to build it): the same code
  is never built twice, a resubmission of it or a rollback reuses the build's output.
- ``league_seat_code``: which submission (and which code, by hash) played each hosted
  seat of each match: the ratings of submissions are fitted from it.
- ``match_queue``: the matches of hosted bots waiting for a worker, and the lease of the
  worker playing one (:class:`MatchQueue`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from referee.results.store import PostgresStore, Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS league_archives (
    sha256 TEXT PRIMARY KEY,
    size {bigint} NOT NULL,
    data {blob} NOT NULL,
    stored_at {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS league_submissions (
    bot TEXT NOT NULL,
    number INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    format TEXT NOT NULL,
    bot_file TEXT NOT NULL,
    status TEXT NOT NULL,
    refusal TEXT NOT NULL DEFAULT '',
    report TEXT NOT NULL DEFAULT '',
    build_sha256 TEXT NOT NULL DEFAULT '',
    submitted_at {real} NOT NULL,
    decided_at {real},
    PRIMARY KEY (bot, number)
);
CREATE TABLE IF NOT EXISTS league_builds (
    sha256 TEXT NOT NULL,
    bot_file TEXT NOT NULL,
    build_sha256 TEXT NOT NULL,
    built_at {real} NOT NULL,
    PRIMARY KEY (sha256, bot_file)
);
CREATE TABLE IF NOT EXISTS league_seat_code (
    tournament TEXT NOT NULL,
    idx INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    submission INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (tournament, idx, seat)
);
CREATE TABLE IF NOT EXISTS match_queue (
    tournament TEXT NOT NULL,
    idx INTEGER NOT NULL,
    match_id TEXT NOT NULL,
    seating TEXT NOT NULL,
    code TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'queued',
    worker TEXT NOT NULL DEFAULT '',
    lease_until {real},
    attempts INTEGER NOT NULL DEFAULT 0,
    queued_at {real} NOT NULL,
    PRIMARY KEY (tournament, idx)
);
CREATE INDEX IF NOT EXISTS match_queue_by_status ON match_queue (tournament, status, idx);
"""

#: Statuses of a submission.
VALIDATING, PLAYING, REFUSED, RETIRED = "validating", "playing", "refused", "retired"
_COLUMNS = (
    "bot, number, sha256, format, bot_file, status, refusal, report, build_sha256, "
    "submitted_at, decided_at"
)


@dataclass(frozen=True)
class Submission:
    """One stored submission."""

    bot: str
    number: int
    sha256: str
    format: str
    bot_file: str
    status: str
    refusal: str
    report: str
    build_sha256: str
    submitted_at: float
    decided_at: float | None

    @property
    def code_sha256(self) -> str:
        """The archive a match unpacks: the build's output, or the upload itself."""
        return self.build_sha256 or self.sha256

    @property
    def code_format(self) -> str:
        return "tar.gz" if self.build_sha256 else self.format


class Submissions:
    """The archives and submissions of one league's database (the store stays the
    caller's to close)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.create_tables(_SCHEMA)

    def put_archive(self, sha256: str, data: bytes) -> None:
        """Keep ``data`` under its hash (once: the same bytes are stored once)."""
        self.store.execute(
            "INSERT INTO league_archives VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (sha256, len(data), data, time.time()),
        )

    def archive(self, sha256: str) -> bytes | None:
        """The archive stored under ``sha256``, if any."""
        row = self.store.execute(
            "SELECT data FROM league_archives WHERE sha256 = ?", (sha256,)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def put_build(self, sha256: str, bot_file: str, build_sha256: str) -> None:
        """The build of archive ``sha256`` with bot file ``bot_file`` left ``build_sha256``."""
        self.store.execute(
            "INSERT INTO league_builds VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (sha256, bot_file, build_sha256, time.time()),
        )

    def build_of(self, sha256: str, bot_file: str) -> str:
        """The output of an earlier build of the same code and bot file ("" when none, or
        when its output is no longer in the store)."""
        row = self.store.execute(
            "SELECT b.build_sha256 FROM league_builds b JOIN league_archives a "
            "ON a.sha256 = b.build_sha256 WHERE b.sha256 = ? AND b.bot_file = ?",
            (sha256, bot_file),
        ).fetchone()
        return "" if row is None else str(row[0])

    def add(self, bot: str, sha256: str, fmt: str, bot_file: str) -> Submission:
        """A new submission of ``bot`` (the next number), ``validating``."""
        now = time.time()
        for _ in range(5):
            number = 1 + int(
                self.store.execute(
                    "SELECT COALESCE(MAX(number), 0) FROM league_submissions WHERE bot = ?", (bot,)
                ).fetchone()[0]
            )
            cur = self.store.execute(
                f"INSERT INTO league_submissions ({_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, '', '', '', ?, NULL) ON CONFLICT DO NOTHING",
                (bot, number, sha256, fmt, bot_file, VALIDATING, now),
            )
            if cur.rowcount == 1:
                break
        found = self.get(bot, number)
        assert found is not None
        return found

    def get(self, bot: str, number: int) -> Submission | None:
        row = self.store.execute(
            f"SELECT {_COLUMNS} FROM league_submissions WHERE bot = ? AND number = ?",
            (bot, number),
        ).fetchone()
        return None if row is None else Submission(*row)

    def history(self, bot: str) -> list[Submission]:
        """``bot``'s submissions, newest first."""
        rows = self.store.execute(
            f"SELECT {_COLUMNS} FROM league_submissions WHERE bot = ? ORDER BY number DESC",
            (bot,),
        ).fetchall()
        return [Submission(*r) for r in rows]

    def latest_by_bot(self) -> dict[str, Submission]:
        """Every entry's latest submission."""
        rows = self.store.execute(
            f"SELECT {_COLUMNS} FROM league_submissions s WHERE number = "
            "(SELECT MAX(number) FROM league_submissions t WHERE t.bot = s.bot)"
        ).fetchall()
        return {r[0]: Submission(*r) for r in rows}

    def playing_by_bot(self) -> dict[str, Submission]:
        """The submission each hosted entry plays with."""
        rows = self.store.execute(
            f"SELECT {_COLUMNS} FROM league_submissions WHERE status = ?", (PLAYING,)
        ).fetchall()
        return {r[0]: Submission(*r) for r in rows}

    def validating(self) -> list[Submission]:
        """Submissions whose validation has not ended (a restart validates them again)."""
        rows = self.store.execute(
            f"SELECT {_COLUMNS} FROM league_submissions WHERE status = ? "
            "ORDER BY submitted_at, bot, number",
            (VALIDATING,),
        ).fetchall()
        return [Submission(*r) for r in rows]

    def count_since(self, bot: str, since: float) -> int:
        """``bot``'s submissions made after ``since`` (the daily quota)."""
        row = self.store.execute(
            "SELECT COUNT(*) FROM league_submissions WHERE bot = ? AND submitted_at > ?",
            (bot, since),
        ).fetchone()
        return int(row[0])

    def reactivate(self, bot: str, number: int) -> Submission:
        """Submission ``number`` of ``bot``, which passed validation once and was retired,
        is ``validating`` again (a rollback: its build is reused); ValueError in words when
        it cannot be."""
        found = self.get(bot, number)
        if found is None:
            raise LookupError(f"{bot!r} has no submission {number}")
        if found.status != RETIRED:
            why = {
                PLAYING: "it plays already",
                VALIDATING: "it is being validated",
                REFUSED: "it was refused; only a submission that passed validation plays again",
            }[found.status]
            raise ValueError(f"submission {number} of {bot!r} cannot be activated: {why}")
        self.store.execute(
            "UPDATE league_submissions SET status = ? WHERE bot = ? AND number = ? AND status = ?",
            (VALIDATING, bot, number, RETIRED),
        )
        again = self.get(bot, number)
        assert again is not None
        return again

    def refuse(self, s: Submission, refusal: str, report: str, build_sha256: str = "") -> None:
        """Validation failed: ``s`` is refused with a one-line reason and its report."""
        self.store.execute(
            "UPDATE league_submissions SET status = ?, refusal = ?, report = ?, "
            "build_sha256 = ?, decided_at = ? WHERE bot = ? AND number = ? AND status = ?",
            (REFUSED, refusal, report, build_sha256, time.time(), s.bot, s.number, VALIDATING),
        )

    def accept(self, s: Submission, report: str, build_sha256: str = "") -> None:
        """Validation passed: ``s`` plays from now on; the one that played is retired."""

        def swap() -> None:
            self.store.execute(
                "UPDATE league_submissions SET status = ? WHERE bot = ? AND status = ?",
                (RETIRED, s.bot, PLAYING),
            )
            self.store.execute(
                "UPDATE league_submissions SET status = ?, report = ?, build_sha256 = ?, "
                "decided_at = ? WHERE bot = ? AND number = ?",
                (PLAYING, report, build_sha256, time.time(), s.bot, s.number),
            )

        self.store.atomically(swap)


# -- which code played each seat ------------------------------------------------------------


@dataclass(frozen=True)
class SeatCode:
    """The code a hosted seat ran: its submission and the hash of the archive it ran."""

    submission: int
    sha256: str


class SeatCodes:
    """``league_seat_code``: the submission and code hash of every hosted seat of a
    league's matches, written when the match is seated (a replayed match's anew)."""

    def __init__(self, store: Store, tournament: str) -> None:
        self.store = store
        self.tournament = tournament
        store.create_tables(_SCHEMA)

    def put(self, idx: int, seating: tuple[str, ...], code: dict[str, SeatCode]) -> None:
        """The match ``idx`` seats ``code[bot]`` for each hosted bot of ``seating``."""

        def write() -> None:
            self.store.execute(
                "DELETE FROM league_seat_code WHERE tournament = ? AND idx = ?",
                (self.tournament, idx),
            )
            for seat, bot in enumerate(seating):
                c = code.get(bot)
                if c is not None:
                    self.store.execute(
                        "INSERT INTO league_seat_code VALUES (?, ?, ?, ?, ?, ?)",
                        (self.tournament, idx, seat, bot, c.submission, c.sha256),
                    )

        self.store.atomically(write)

    def of_match(self, idx: int) -> dict[int, SeatCode]:
        """The hosted seats of match ``idx``, by seat."""
        rows = self.store.execute(
            "SELECT seat, submission, sha256 FROM league_seat_code WHERE tournament = ? "
            "AND idx = ?",
            (self.tournament, idx),
        ).fetchall()
        return {int(seat): SeatCode(int(n), str(sha)) for seat, n, sha in rows}

    def all(self) -> dict[tuple[int, int], SeatCode]:
        """Every hosted seat of the league, by (match index, seat)."""
        rows = self.store.execute(
            "SELECT idx, seat, submission, sha256 FROM league_seat_code WHERE tournament = ?",
            (self.tournament,),
        ).fetchall()
        return {(int(i), int(seat)): SeatCode(int(n), str(sha)) for i, seat, n, sha in rows}


# -- the match queue ------------------------------------------------------------------------

#: Statuses of a queued match.
QUEUED, LEASED, DONE, VOID = "queued", "leased", "done", "void"
#: A worker that holds bots warm chooses among this many of the oldest queued matches ...
PREFER_WINDOW = 16
#: ... unless the oldest has waited this long (seconds): then it is next, whatever it seats.
PREFER_WAIT_S = 60.0


def _held(code: Mapping[str, Mapping[str, Any]], warm: Mapping[str, int]) -> int:
    """How many seats of a queued match (its code per bot) a worker holds warm."""
    return sum(1 for bot, c in code.items() if warm.get(bot) == int(c["submission"]))


@dataclass(frozen=True)
class QueuedMatch:
    """A match of hosted bots as a worker takes it."""

    tournament: str
    idx: int
    match_id: str
    seating: tuple[str, ...]
    #: Per bot: {"sha256": code archive, "format": ..., "bot_file": ...}.
    code: dict[str, dict[str, str]]
    attempts: int


class MatchQueue:
    """``match_queue``: matches of hosted bots that workers take and play.

    A worker takes the oldest queued match with a lease of ``lease_s`` seconds
    (:meth:`take`: ``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL, so that workers on
    many machines never take one match twice; one transaction holding SQLite's write lock
    on SQLite), renews it while it plays (:meth:`renew`), and marks it done when its result
    is stored (:meth:`done`). A worker that dies stops renewing: once its lease has expired
    the match is void (:meth:`expire`), and the league plays it again with a new deal.
    """

    def __init__(self, store: Store, tournament: str) -> None:
        self.store = store
        self.tournament = tournament
        store.create_tables(_SCHEMA)

    def put(self, idx: int, match_id: str, seating: tuple[str, ...], code: dict[str, Any]) -> None:
        """Queue a match (again: a voided one is queued afresh)."""
        self.store.execute(
            "INSERT INTO match_queue (tournament, idx, match_id, seating, code, status, "
            "worker, lease_until, attempts, queued_at) VALUES (?, ?, ?, ?, ?, ?, '', NULL, 0, ?) "
            "ON CONFLICT (tournament, idx) DO UPDATE SET status = excluded.status, "
            "code = excluded.code, worker = '', lease_until = NULL",
            (
                self.tournament,
                idx,
                match_id,
                json.dumps(list(seating)),
                json.dumps(code),
                QUEUED,
                time.time(),
            ),
        )

    def take(
        self, worker: str, lease_s: float, warm: Mapping[str, int] | None = None
    ) -> QueuedMatch | None:
        """The oldest queued match, leased to ``worker``; None when none waits.

        ``warm`` names the submission of each bot whose process the worker holds warm: of
        the :data:`PREFER_WINDOW` oldest queued matches it then takes the one with most of
        those seats (the oldest among equals), unless the oldest has waited
        :data:`PREFER_WAIT_S` already, which it then takes."""
        skip = " FOR UPDATE SKIP LOCKED" if isinstance(self.store, PostgresStore) else ""
        window = PREFER_WINDOW if warm else 1

        def lease() -> tuple[Any, ...] | None:
            rows = self.store.execute(
                "SELECT idx, match_id, seating, code, attempts, queued_at FROM match_queue "
                f"WHERE tournament = ? AND status = ? ORDER BY idx LIMIT {window}{skip}",
                (self.tournament, QUEUED),
            ).fetchall()
            if not rows:
                return None
            row = rows[0]
            if warm and float(row[5]) > time.time() - PREFER_WAIT_S:
                row = max(rows, key=lambda r: (_held(json.loads(r[3]), warm), -int(r[0])))
            self.store.execute(
                "UPDATE match_queue SET status = ?, worker = ?, lease_until = ?, "
                "attempts = attempts + 1 WHERE tournament = ? AND idx = ?",
                (LEASED, worker, time.time() + lease_s, self.tournament, row[0]),
            )
            return tuple(row)

        # Idle workers look once a second: a read first, which takes no lock (see expire).
        if not self.store.execute(
            "SELECT 1 FROM match_queue WHERE tournament = ? AND status = ?",
            (self.tournament, QUEUED),
        ).fetchone():
            return None
        row = self.store.atomically(lease)
        if row is None:
            return None
        idx, match_id, seating, code, attempts, _ = row
        return QueuedMatch(
            self.tournament,
            idx,
            match_id,
            tuple(json.loads(seating)),
            json.loads(code),
            attempts + 1,
        )

    def renew(self, idx: int, worker: str, lease_s: float) -> bool:
        """Extend ``worker``'s lease; False when it no longer holds it (expired, voided)."""
        cur = self.store.execute(
            "UPDATE match_queue SET lease_until = ? WHERE tournament = ? AND idx = ? "
            "AND status = ? AND worker = ?",
            (time.time() + lease_s, self.tournament, idx, LEASED, worker),
        )
        return bool(cur.rowcount == 1)

    def done(self, idx: int) -> None:
        """The match was played (its result stored) or aborted: out of the queue."""
        self.store.execute(
            "UPDATE match_queue SET status = ?, lease_until = NULL WHERE tournament = ? AND idx = ?",
            (DONE, self.tournament, idx),
        )

    def expire(self, now: float | None = None) -> list[int]:
        """Leases that ran out (their worker died): those matches are void; their indices."""
        at = time.time() if now is None else now

        def void() -> list[int]:
            rows = self.store.execute(
                "SELECT idx FROM match_queue WHERE tournament = ? AND status = ? AND lease_until < ?",
                (self.tournament, LEASED, at),
            ).fetchall()
            for (idx,) in rows:
                self.store.execute(
                    "UPDATE match_queue SET status = ?, worker = '' WHERE tournament = ? AND idx = ?",
                    (VOID, self.tournament, idx),
                )
            return [int(r[0]) for r in rows]

        # Looked at once a second: a read first, which takes no lock (on SQLite a write
        # waits for any other writer, such as an archive of hundreds of MiB being stored).
        if not self.store.execute(
            "SELECT 1 FROM match_queue WHERE tournament = ? AND status = ? AND lease_until < ?",
            (self.tournament, LEASED, at),
        ).fetchone():
            return []
        return self.store.atomically(void)

    def void_unfinished(self) -> list[int]:
        """At a league's start: every queued or leased match is void (it is replayed)."""

        def void() -> list[int]:
            rows = self.store.execute(
                "SELECT idx FROM match_queue WHERE tournament = ? AND status IN (?, ?)",
                (self.tournament, QUEUED, LEASED),
            ).fetchall()
            self.store.execute(
                "UPDATE match_queue SET status = ?, worker = '' WHERE tournament = ? "
                "AND status IN (?, ?)",
                (VOID, self.tournament, QUEUED, LEASED),
            )
            return [int(r[0]) for r in rows]

        return self.store.atomically(void)

    def statuses(self, indices: list[int]) -> dict[int, str]:
        """The queue status of each of ``indices`` (those queued at all)."""
        out: dict[int, str] = {}
        for at in range(0, len(indices), 500):
            chunk = indices[at : at + 500]
            marks = ", ".join("?" * len(chunk))
            rows = self.store.execute(
                f"SELECT idx, status FROM match_queue WHERE tournament = ? AND idx IN ({marks})",
                (self.tournament, *chunk),
            ).fetchall()
            out.update({int(i): str(st) for i, st in rows})
        return out

    def depth(self) -> int:
        """Matches waiting for a worker."""
        row = self.store.execute(
            "SELECT COUNT(*) FROM match_queue WHERE tournament = ? AND status = ?",
            (self.tournament, QUEUED),
        ).fetchone()
        return int(row[0])
