"""The queue of hosted matches (``match_queue``): workers on two connections never take
one match twice, a held row is skipped rather than waited for (PostgreSQL's ``FOR UPDATE
SKIP LOCKED``), a lease is renewed only by its worker, and an expired lease voids its
match. On SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from referee.league.submissions import DONE, LEASED, QUEUED, VOID, MatchQueue
from referee.results.store import PostgresStore, Store, open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    if request.param == "sqlite":
        return tmp_path / "league.db"
    return str(request.getfixturevalue("postgres_url"))


def status(store: Store, idx: int) -> str:
    row = store.execute(
        "SELECT status FROM match_queue WHERE tournament = 'l' AND idx = ?", (idx,)
    ).fetchone()
    return str(row[0])


def test_two_workers_take_different_matches_and_leases_expire(target: str | Path) -> None:
    a_store, b_store = open_store(target), open_store(target)
    try:
        a, b = MatchQueue(a_store, "l"), MatchQueue(b_store, "l")
        for idx in range(3):
            a.put(idx, f"l-{idx:06d}", ("x", "y", "z"), {"x": {"sha256": "0" * 64}})
        assert a.depth() == 3
        first = a.take("worker-a", 30.0)
        second = b.take("worker-b", 30.0)
        assert first is not None and second is not None
        assert (first.idx, second.idx) == (0, 1)
        assert first.seating == ("x", "y", "z") and first.code["x"]["sha256"] == "0" * 64
        assert first.attempts == 1
        assert a.renew(0, "worker-a", 30.0)
        assert not b.renew(0, "worker-b", 30.0), "only the lease's worker renews it"
        a.done(0)
        assert status(a_store, 0) == DONE
        # Worker b dies: its lease runs out, and its match is void (the league replays it).
        assert a.expire(now=10**12) == [1]
        assert status(a_store, 1) == VOID
        assert not b.renew(1, "worker-b", 30.0)
        assert a.void_unfinished() == [2]
        assert a.take("worker-a", 30.0) is None
        # Queued again (the replay), it is taken afresh.
        a.put(1, "l-000001", ("x", "y", "z"), {})
        again = b.take("worker-b", 30.0)
        assert again is not None and again.idx == 1 and again.attempts == 2
        assert status(b_store, 1) == LEASED
    finally:
        a_store.close()
        b_store.close()


def test_a_held_match_is_skipped_not_waited_for(postgres_url: str) -> None:
    store = open_store(postgres_url)
    assert isinstance(store, PostgresStore)
    try:
        queue = MatchQueue(store, "l")
        queue.put(0, "l-000000", ("x",), {})
        queue.put(1, "l-000001", ("x",), {})
        with psycopg.connect(postgres_url) as other:
            # Another worker in the middle of taking match 0: its row is locked.
            other.execute("SELECT idx FROM match_queue WHERE idx = 0 FOR UPDATE").fetchone()
            taken = queue.take("worker-b", 30.0)
            assert taken is not None and taken.idx == 1
            other.rollback()
        assert status(store, 0) == QUEUED
    finally:
        store.close()
