"""Retention: nothing kept that nobody needs.

The archive and unpacked folder of a refused submission, and of a retired one (a later
submission of its entry plays instead), are removed once ``retention_days`` have passed
since it was refused or retired: the archive's row in ``league_archives`` (the upload's
and its build's output) and its folder in the code folder. The submission's record stays,
with its hashes and its report. An archive that anything still uses is kept whatever its
age: the code of a submission validating or playing, of one still within its retention,
or of a match waiting in the queue (the same code may be several submissions', by hash).

:meth:`Retention.sweep` removes what has expired and measures the store (the archives'
bytes in the database, the code folder's bytes on disk), for the
``sticheln_hosted_store_bytes`` metric.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from referee.league.season import frozen_hashes
from referee.league.submissions import PLAYING, REFUSED, RETIRED
from referee.results.store import Store

DAY_S = 86_400.0


@dataclass(frozen=True)
class Swept:
    """What a sweep removed, and the store's size after it."""

    archives: int
    folders: int
    database_bytes: int
    code_dir_bytes: int


def _disk_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


class Retention:
    """The sweep of one league's archives and code folder."""

    def __init__(self, store: Store, code_dir: Path, retention_days: float) -> None:
        self.store = store
        self.code_dir = code_dir
        self.retention_s = retention_days * DAY_S

    def expired(self, now: float | None = None) -> set[str]:
        """The hashes of archives only refused or retired submissions past their
        retention use."""
        cutoff = (time.time() if now is None else now) - self.retention_s
        rows = self.store.execute(
            "SELECT bot, number, sha256, build_sha256, status, decided_at "
            "FROM league_submissions ORDER BY bot, number"
        ).fetchall()
        # When each retired submission was retired: when a later one of its entry passed.
        passed: dict[str, list[tuple[int, float]]] = {}
        for bot, number, _, _, status, decided in rows:
            if status in (PLAYING, RETIRED) and decided is not None:
                passed.setdefault(bot, []).append((int(number), float(decided)))
        old: set[str] = set()
        keep: set[str] = set()
        for bot, number, sha, build_sha, status, decided in rows:
            hashes = {h for h in (sha, build_sha) if h}
            if status == REFUSED:
                ended = float(decided) if decided is not None else None
            elif status == RETIRED:
                later = [at for n, at in passed.get(bot, []) if n > int(number)]
                ended = min(later) if later else (float(decided) if decided else None)
            else:  # validating, playing: in use
                ended = None
            if status in (REFUSED, RETIRED) and ended is not None and ended <= cutoff:
                old |= hashes
            else:
                keep |= hashes
        for (code,) in self.store.execute(
            "SELECT code FROM match_queue WHERE status IN ('queued', 'leased')"
        ).fetchall():
            for seat in json.loads(code).values():
                keep.add(str(seat.get("sha256", "")))
        keep |= frozen_hashes(self.store)  # the code of a final still being played
        return old - keep

    def sweep(self, now: float | None = None) -> Swept:
        """Remove what has expired; the store's size after it."""
        gone = sorted(self.expired(now))
        archives = 0
        folders = 0
        for sha in gone:
            # The folder first: whoever sees the archive gone finds its folder gone too
            # (what is expired is read from the submissions, so a sweep cut between the
            # two finishes the row the next time).
            folder = self.code_dir / sha
            if folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
                folders += 1
            cur = self.store.execute("DELETE FROM league_archives WHERE sha256 = ?", (sha,))
            archives += max(0, cur.rowcount)
        row = self.store.execute("SELECT COALESCE(SUM(size), 0) FROM league_archives").fetchone()
        return Swept(archives, folders, int(row[0]), _disk_bytes(self.code_dir))
