"""The store outlives its PostgreSQL connection, and a league's lock keeps a second league
off its database.

A PostgreSQL store whose connection was ended (here by ``pg_terminate_backend`` from
another connection, as a server restart or a failover ends it) reconnects and runs the
call again; a statement's own error is not retried; a write whose commit went through but
whose acknowledgement was lost is not stored twice; a database that stays away is one
line without the password. The league lock: a PostgreSQL advisory lock taken again on
every new connection, an ``flock`` beside a SQLite file. Real PostgreSQL on loopback
(tests/postgres_server.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from postgres_server import database_of, end_sessions, with_password
from structlog.testing import capture_logs

from referee.match.dealkey import DealKey
from referee.match.faults import Fault, FaultReason
from referee.match.runner import MatchResult, SeatResult
from referee.results.store import LeagueTaken, PostgresStore, Store, StoreError, open_store
from referee.tournament.schedule import ScheduledMatch

pytestmark = pytest.mark.timeout(120)

PASSWORD = "pw-never-in-a-message"
NAME = "lg"


@contextmanager
def admin(postgres_server) -> Iterator[psycopg.Connection]:  # type: ignore[no-untyped-def]
    with psycopg.connect(postgres_server.url("postgres"), autocommit=True) as con:
        yield con


def pg_store(url: str) -> PostgresStore:
    store = open_store(with_password(url, PASSWORD))
    assert isinstance(store, PostgresStore)
    return store


def reconnects(logs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in logs if e["event"] == "database_reconnected"]


def finished_match(store: Store, idx: int, tmp_path: Path) -> MatchResult:
    """Plan match ``idx`` of tournament NAME and mark it running; its result, to save."""
    seating = ("ann", "ben", "cy")
    key = store.deal_key(NAME)
    store.plan(NAME, [ScheduledMatch(idx, seating, seating, idx)], lambda m: f"m{m.index}", key)
    record = tmp_path / f"{idx}.jsonl"
    store.mark_running(NAME, idx, record)
    seats = [
        SeatResult(
            s,
            bot,
            total=5 - s,
            place=s + 1,
            forfeited=False,
            positive_rounds=1,
            faults=[Fault(s, FaultReason.TIMEOUT, "late", 0, 7, 1, False)] if s == 2 else [],
            think_s=[0.001, 0.002],
        )
        for s, bot in enumerate(seating)
    ]
    return MatchResult(f"m{idx}", seats, record, idx, 1.0, 24)


def test_a_call_after_the_connection_was_ended_reconnects_and_succeeds(
    postgres_server, postgres_url: str
) -> None:  # type: ignore[no-untyped-def]
    store = pg_store(postgres_url)
    try:
        assert store.open_tournament(NAME, {"a": 1}, "h") is False
        with admin(postgres_server) as con:
            assert end_sessions(con, postgres_url) == 1
        with capture_logs() as logs:
            assert store.changes(NAME, {"a": 1}, "h") == ""
            assert store.open_tournament(NAME, {"a": 1}, "h") is True
        (event,) = reconnects(logs)
        assert event["log_level"] == "warning" and event["attempt"] == 1
        assert "terminating connection" in str(event["after"])
        assert event["database"] == with_password(postgres_url, PASSWORD).replace(PASSWORD, "***")
        assert PASSWORD not in repr(logs)
    finally:
        store.close()


def test_an_error_of_the_statement_is_not_retried(postgres_url: str) -> None:
    store = pg_store(postgres_url)
    try:
        with capture_logs() as logs, pytest.raises(psycopg.errors.UndefinedTable):
            store.execute("SELECT * FROM no_such_table")
        assert reconnects(logs) == []
        assert store.execute("SELECT 1").fetchone() == (1,)  # the connection is still good
    finally:
        store.close()


def test_a_result_whose_commit_was_not_acknowledged_is_stored_once(
    postgres_server, postgres_url: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    store = pg_store(postgres_url)
    try:
        store.open_tournament(NAME, {}, "h")
        store.save_result(NAME, 0, finished_match(store, 0, tmp_path))
        result = finished_match(store, 1, tmp_path)
        real = store._transaction
        commits = []

        @contextmanager
        def commit_then_lose_the_answer(tournament: str | None = None) -> Iterator[None]:
            with real(tournament):
                yield
            commits.append(tournament)
            if len(commits) == 1:
                # The commit went through; the connection ends before the caller hears so.
                with admin(postgres_server) as con:
                    end_sessions(con, postgres_url)
                store.db.execute("SELECT 1")  # raises: the connection is gone

        store._transaction = commit_then_lose_the_answer  # type: ignore[method-assign]
        with capture_logs() as logs:
            store.save_result(NAME, 1, result)
        assert len(reconnects(logs)) == 1 and len(commits) == 2  # run again, all of it
        rows = store.execute(
            "SELECT idx, COUNT(*) FROM results WHERE tournament = ? GROUP BY idx ORDER BY idx",
            (NAME,),
        ).fetchall()
        assert [tuple(r) for r in rows] == [(0, 3), (1, 3)]
        faults = store.execute(
            "SELECT idx, COUNT(*) FROM faults WHERE tournament = ? GROUP BY idx ORDER BY idx",
            (NAME,),
        ).fetchall()
        assert [tuple(r) for r in faults] == [(0, 1), (1, 1)]
        # The finish order is that of the first, committed, run: a reader that read up to
        # the first finished match reads the second once, and only once.
        assert [r["idx"] for r in store.match_rows(NAME)] == [0, 1]
        orders = store.execute(
            "SELECT idx, finish_order FROM matches WHERE tournament = ? ORDER BY idx", (NAME,)
        ).fetchall()
        assert [tuple(r) for r in orders] == [(0, 1), (1, 2)]
        newer, upto = store.results_since(NAME, 1)
        assert [r.idx for r in newer] == [1, 1, 1] and upto == 2
    finally:
        store.close()


def test_a_database_that_stays_away_is_one_line_without_the_password(
    postgres_server, postgres_url: str
) -> None:  # type: ignore[no-untyped-def]
    store = pg_store(postgres_url)
    store.reconnect_pauses_s = (0.0, 0.01, 0.01)
    name = database_of(postgres_url)
    try:
        store.open_tournament(NAME, {}, "h")
        with admin(postgres_server) as con:
            con.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            try:
                end_sessions(con, postgres_url)
                with capture_logs() as logs, pytest.raises(StoreError) as info:
                    store.match_rows(NAME)
                message = str(info.value)
                assert "\n" not in message and PASSWORD not in message
                assert message.startswith(
                    f"the database {with_password(postgres_url, PASSWORD).replace(PASSWORD, '***')} "
                    "is unreachable: "
                )
                assert "not currently accepting connections" in message
                assert "3 reconnection attempt(s)" in message
                # Away through a whole series: the next call tries once.
                with pytest.raises(StoreError, match=r"\(1 reconnection attempt\(s\)"):
                    store.match_rows(NAME)
                assert reconnects(logs) == []
            finally:
                con.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        with capture_logs() as logs:
            assert [r["idx"] for r in store.match_rows(NAME)] == []
        assert len(reconnects(logs)) == 1
    finally:
        store.close()


def test_a_league_lock_on_postgres_refuses_a_second_and_is_taken_again_on_reconnect(
    postgres_server, postgres_url: str
) -> None:  # type: ignore[no-untyped-def]
    first, second = pg_store(postgres_url), pg_store(postgres_url)
    try:
        first.lock_league(NAME)
        with pytest.raises(LeagueTaken) as info:
            second.lock_league(NAME)
        message = str(info.value)
        assert f"league {NAME!r} is already served from the database " in message
        assert "postgres:***@" in message and PASSWORD not in message
        second.lock_league("another-league")  # keyed on the name
        with admin(postgres_server) as con:
            end_sessions(con, postgres_url)
        first.match_rows(NAME)  # reconnects, and takes the lock again
        third = pg_store(postgres_url)
        try:
            with pytest.raises(LeagueTaken):
                third.lock_league(NAME)
            # The lock goes with the first's connection: ended, another process takes it,
            # and the first no longer writes.
            with admin(postgres_server) as con:
                con.execute(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND pid <> %s AND datname = %s",
                    (third.db.info.backend_pid, database_of(postgres_url)),
                )
            third.lock_league(NAME)
            first.reconnect_pauses_s = (0.0, 0.01)
            with pytest.raises(LeagueTaken, match=f"league {NAME!r} is already served"):
                first.set_deal(NAME, 0, 1, 1)
        finally:
            third.close()
    finally:
        first.close()
        second.close()


def test_a_league_lock_on_sqlite_refuses_a_second_until_the_first_is_closed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "league.db"
    first, second = Store(path), Store(path)
    try:
        first.lock_league(NAME)
        with pytest.raises(LeagueTaken) as info:
            second.lock_league(NAME)
        assert str(info.value).startswith(
            f"league {NAME!r} is already served from the database {path} "
        )
        second.lock_league("another-league")
        first.close()
        third = Store(path)
        try:
            third.lock_league(NAME)  # the first let go
        finally:
            third.close()
    finally:
        first.close()
        second.close()


def test_a_tournament_store_takes_no_lock(postgres_url: str, tmp_path: Path) -> None:
    # Shards of a tournament share a database: opening stores takes nothing a league's
    # lock would refuse, and a league locks only its own name.
    for target in (postgres_url, str(tmp_path / "t.db")):
        stores = [open_store(target) for _ in range(3)]
        try:
            for s in stores:
                s.open_tournament("t", {}, "h")
                assert s.deal_key("t") == stores[0].deal_key("t")
            stores[0].lock_league(NAME)
            stores[1].plan("t", [ScheduledMatch(0, ("a", "b"), ("a", "b"), 0)], str, DealKey.new())
        finally:
            for s in stores:
                s.close()


def test_a_bot_registration_whose_commit_was_not_acknowledged_keeps_its_token(
    postgres_server, postgres_url: str
) -> None:  # type: ignore[no-untyped-def]
    from referee.league.registry import BotRegistry, RegistryError, token_hash

    store = pg_store(postgres_url)
    try:
        registry = BotRegistry(store)
        real = store._execute
        inserts = []

        def insert_then_lose_the_answer(sql: str, params: Sequence[Any] = ()) -> Any:
            cur = real(sql, params)
            if sql.startswith("INSERT INTO league_bots"):
                inserts.append(cur.rowcount)
                if len(inserts) == 1:  # committed (autocommit); the answer is lost
                    with admin(postgres_server) as con:
                        end_sessions(con, postgres_url)
                    store.db.execute("SELECT 1")  # raises: the connection is gone
            return cur

        store._execute = insert_then_lose_the_answer  # type: ignore[method-assign]
        with capture_logs() as logs:
            entry, token = registry.register("ann", "tests", "")
        assert inserts == [1, 0] and len(reconnects(logs)) == 1  # run again: found its row
        assert entry.token_sha256 == token_hash(token)
        assert registry.by_token(token) == entry
        assert BotRegistry(store).by_token(token) == entry  # as stored
        # Another process's entry of that name is not taken for ours.
        store.execute("INSERT INTO league_bots VALUES ('bob', '', '', 'bob', '', 1, 'x', 1, 0)")
        with pytest.raises(RegistryError, match="already registered"):
            registry.register("bob", "tests", "")
    finally:
        store.close()
