"""Hosted bots' own logs, kept for their owners (``referee league logs``, docs/hosting.md).

Whoever plays a ranked match of hosted bots (the league process or a ``referee league
worker`` on another machine) keeps each hosted entry's stderr of that match in the
league's database, table ``league_logs``: the end of it, at most ``[hosting] log_kb``,
per entry and match (an entry seated twice has its seats' logs one after the other). A
log older than ``log_retention_days`` is deleted. Only the entry's token (or the admin
token) reads them; the validation reports are in ``league_submissions`` already.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from referee.results.store import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS league_logs (
    tournament TEXT NOT NULL,
    match_id TEXT NOT NULL,
    bot TEXT NOT NULL,
    submission INTEGER NOT NULL,
    seats TEXT NOT NULL,
    text TEXT NOT NULL,
    truncated INTEGER NOT NULL,
    written_at {real} NOT NULL,
    PRIMARY KEY (tournament, match_id, bot)
);
CREATE INDEX IF NOT EXISTS league_logs_by_bot ON league_logs (tournament, bot, written_at);
CREATE TABLE IF NOT EXISTS league_log_policy (
    tournament TEXT PRIMARY KEY,
    cap_kb INTEGER NOT NULL,
    retention_days INTEGER NOT NULL
);
"""


@dataclass(frozen=True)
class MatchLog:
    """One hosted entry's stderr in one ranked match."""

    match_id: str
    bot: str
    submission: int
    seats: tuple[int, ...]
    text: str
    truncated: bool
    written_at: float


def read_span(path: Path, start: int, cap: int) -> tuple[str, bool]:
    """What ``path`` holds from byte ``start`` on, at most its last ``cap`` bytes (and
    whether the beginning was cut)."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, 2)
            begin = max(start, end - cap)
            f.seek(begin)
            data = f.read(end - begin)
    except OSError:
        return "", False
    return data.decode("utf-8", "replace"), begin > start


STARTUP_CAP = 4096


def _with_head(span: tuple[Path, int], head: int, cap: int) -> tuple[str, bool]:
    """A seat's part of a match, after its warm process's start-up output (the log's
    first ``head`` bytes, at most STARTUP_CAP of them) when the part begins later."""
    path, start = span
    text, cut = read_span(path, start, cap)
    if head <= 0 or start <= 0:
        return text, cut
    try:
        with open(path, "rb") as f:
            startup = f.read(min(head, start, STARTUP_CAP)).decode("utf-8", "replace")
    except OSError:
        return text, cut
    return f"--- its process's start-up ---\n{startup}--- this match ---\n{text}", cut


class BotLogs:
    """``league_logs`` of one league."""

    def __init__(self, store: Store, tournament: str, cap_kb: int, retention_days: int) -> None:
        self.store = store
        self.tournament = tournament
        self.cap = cap_kb << 10
        self.retention_s = retention_days * 86_400.0
        store.create_tables(_SCHEMA)

    def publish(self) -> None:
        """Write this league's cap and retention where its workers read them."""
        self.store.execute(
            "INSERT INTO league_log_policy VALUES (?, ?, ?) ON CONFLICT (tournament) DO UPDATE "
            "SET cap_kb = excluded.cap_kb, retention_days = excluded.retention_days",
            (self.tournament, self.cap >> 10, round(self.retention_s / 86_400)),
        )

    @classmethod
    def of_league(cls, store: Store, tournament: str) -> BotLogs:
        """The logs of a league as its process published their policy (a worker's view;
        the defaults of ``[hosting]`` where it has not)."""
        store.create_tables(_SCHEMA)
        row = store.execute(
            "SELECT cap_kb, retention_days FROM league_log_policy WHERE tournament = ?",
            (tournament,),
        ).fetchone()
        cap, days = (int(row[0]), int(row[1])) if row is not None else (64, 14)
        return cls(store, tournament, cap, days)

    def keep(
        self,
        match_id: str,
        seating: tuple[str, ...],
        submissions: Mapping[str, int],
        spans: Mapping[int, tuple[Path, int]],
        heads: Mapping[int, int] | None = None,
    ) -> None:
        """Keep each hosted entry's part of its seats' logs (``spans``: per seat, the log
        file and where the match's part begins) for match ``match_id``."""
        now = time.time()
        for bot, number in submissions.items():
            seats = tuple(i for i, b in enumerate(seating) if b == bot and i in spans)
            if not seats:
                continue
            parts = [_with_head(spans[i], (heads or {}).get(i, 0), self.cap) for i in seats]
            text = "".join(
                (f"--- seat {i} ---\n" if len(seats) > 1 else "") + t
                for i, (t, _) in zip(seats, parts, strict=True)
            )
            truncated = any(cut for _, cut in parts) or len(text.encode()) > self.cap
            if len(text.encode()) > self.cap:
                text = text.encode()[-self.cap :].decode("utf-8", "replace")
            self.store.execute(
                "INSERT INTO league_logs VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (tournament, match_id, bot) DO UPDATE SET text = excluded.text, "
                "truncated = excluded.truncated, written_at = excluded.written_at",
                (
                    self.tournament,
                    match_id,
                    bot,
                    number,
                    ",".join(map(str, seats)),
                    text,
                    int(truncated),
                    now,
                ),
            )

    def of(
        self, bot: str, match_id: str = "", submission: int = 0, limit: int = 50
    ) -> list[MatchLog]:
        """``bot``'s kept logs, newest first (one match's, one submission's)."""
        sql = (
            "SELECT match_id, bot, submission, seats, text, truncated, written_at FROM "
            "league_logs WHERE tournament = ? AND bot = ?"
        )
        params: list[object] = [self.tournament, bot]
        if match_id:
            sql += " AND match_id = ?"
            params.append(match_id)
        if submission:
            sql += " AND submission = ?"
            params.append(submission)
        sql += f" ORDER BY written_at DESC LIMIT {int(limit)}"
        rows = self.store.execute(sql, tuple(params)).fetchall()
        return [
            MatchLog(
                str(m),
                str(b),
                int(n),
                tuple(int(x) for x in str(seats).split(",") if x),
                str(text),
                bool(cut),
                float(at),
            )
            for m, b, n, seats, text, cut, at in rows
        ]

    def prune(self, now: float | None = None) -> int:
        """Delete the logs older than the retention period; how many."""
        at = (time.time() if now is None else now) - self.retention_s
        cur = self.store.execute(
            "DELETE FROM league_logs WHERE tournament = ? AND written_at < ?",
            (self.tournament, at),
        )
        return int(cur.rowcount or 0)
