"""Daily allowances of a hosted league: what an entry or an owner may use in 24 hours.

Each use is a row of ``league_usage`` in the league's database (SQLite or PostgreSQL), so
a restart forgets nothing: an upload attempt of an entry (counted as the upload starts,
whether it ends stored, refused or cut), and the seconds a build of an owner ran. An
allowance is a rolling window: a use counts for 24 hours from the moment it was made, and
a refusal says when enough of them will have run out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from referee.results.store import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS league_usage (
    kind TEXT NOT NULL,
    who TEXT NOT NULL,
    amount {real} NOT NULL,
    at {real} NOT NULL
);
CREATE INDEX IF NOT EXISTS league_usage_by_who ON league_usage (kind, who, at);
"""

#: An allowance's window, in seconds.
DAY_S = 86_400.0
#: Kinds of use.
UPLOAD, BUILD = "upload", "build_s"


def when(at: float) -> str:
    """A moment as a refusal names it: UTC, to the second."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


@dataclass(frozen=True)
class Allowance:
    """``limit`` of ``kind`` per rolling 24 hours, for each ``who``."""

    store: Store
    kind: str
    limit: float

    def __post_init__(self) -> None:
        self.store.create_tables(_SCHEMA)

    def used(self, who: str, now: float | None = None) -> float:
        """What ``who`` used in the last 24 hours."""
        now = time.time() if now is None else now
        row = self.store.execute(
            "SELECT COALESCE(SUM(amount), 0) FROM league_usage "
            "WHERE kind = ? AND who = ? AND at > ?",
            (self.kind, who, now - DAY_S),
        ).fetchone()
        return float(row[0])

    def left(self, who: str, now: float | None = None) -> float:
        """What ``who`` may still use now."""
        return max(0.0, self.limit - self.used(who, now))

    def charge(self, who: str, amount: float, now: float | None = None) -> None:
        """Count ``amount`` against ``who`` (and forget uses older than the window)."""
        now = time.time() if now is None else now
        self.store.execute(
            "INSERT INTO league_usage (kind, who, amount, at) VALUES (?, ?, ?, ?)",
            (self.kind, who, amount, now),
        )
        self.store.execute(
            "DELETE FROM league_usage WHERE kind = ? AND who = ? AND at <= ?",
            (self.kind, who, now - DAY_S),
        )

    def resets_at(self, who: str, needed: float, now: float | None = None) -> float:
        """When ``who`` will have ``needed`` left again (uses run out 24 h after they were
        made); ``now`` when it already has."""
        now = time.time() if now is None else now
        rows = self.store.execute(
            "SELECT amount, at FROM league_usage WHERE kind = ? AND who = ? AND at > ? ORDER BY at",
            (self.kind, who, now - DAY_S),
        ).fetchall()
        used = sum(float(a) for a, _ in rows)
        for amount, at in rows:
            if self.limit - used >= needed:
                break
            used -= float(amount)
            now = float(at) + DAY_S
        return now
