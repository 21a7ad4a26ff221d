"""A league survives its database, and a second league on the same data is refused.

A league on PostgreSQL whose connections are ended (``pg_terminate_backend``, as a server
restart or a failover ends them) reconnects and goes on storing results, none lost and
none twice; while the database refuses connections it keeps serving and keeps the result
of a match that finished meanwhile, and stores it once the database is back. A second
``referee serve`` of the same league on the same database (SQLite or PostgreSQL) exits 2
with one line, and starts once the first has stopped.

Real ``referee serve`` processes, sample bot processes and the throwaway PostgreSQL
server (tests/postgres_server.py), all on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from leaguekit import (
    ADMIN_TOKEN,
    REFEREE,
    ROOT,
    LeagueDb,
    Serve,
    bots,
    finished,
    query,
    serving,
    wait_for,
    write_config,
)
from postgres_server import database_of, end_sessions, with_password

from sticheln.v1 import league_pb2

pytestmark = pytest.mark.timeout(300)

NAME = "pgr"
PASSWORD = "pw-never-in-the-log"
TRIO = ("ann", "ben", "cy")


def events(log: Path, name: str) -> list[dict[str, Any]]:
    """The league's JSON log lines of event ``name``."""
    out = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{") and f'"{name}"' in line:
            event = json.loads(line)
            if event.get("event") == name:
                out.append(event)
    return out


def assert_stored_once(url: str, log: Path) -> list[dict[str, Any]]:
    """Every match the league counted is stored, once: finish orders 1..n, each finished
    match with one row per seat, and as many as the league said it finished."""
    done = finished(url, NAME)
    assert [m["finish_order"] for m in done] == list(range(1, len(done) + 1))
    per_match = dict(
        query(url, "SELECT idx, COUNT(*) FROM results WHERE tournament = ? GROUP BY idx", (NAME,))
    )
    assert per_match == {m["idx"]: 3 for m in done}
    (stopped,) = events(log, "league_stopped")
    assert stopped["finished"] == len(done)
    return done


def league_file(tmp_path: Path, url: str) -> Path:
    return write_config(
        tmp_path / "league.toml",
        {"name": NAME, "table_size": 3, "parallel": 1, "database": url},
    )


@contextmanager
def playing(
    postgres_server: Any, url: str, tmp_path: Path, log: Path, think_ms: int = 0
) -> Iterator[tuple[Serve, psycopg.Connection]]:
    """A league on ``url`` logging to ``log``, its three bots playing and two matches
    finished; with a connection of the server's administrator (autocommit). With
    ``think_ms`` the first bot thinks that long per decision: matches that last long
    enough to be caught running."""
    with (
        serving(league_file(tmp_path, url), log) as serve,
        bots(serve.address, tmp_path) as b,
        psycopg.connect(postgres_server.url("postgres"), autocommit=True) as admin,
    ):
        for i, n in enumerate(TRIO):
            if think_ms and i == 0:
                b.start("slow", n, serve.register(n), think_ms=think_ms)
            else:
                b.start("random", n, serve.register(n))
        wait_for(lambda: len(finished(url, NAME)) >= 2, 120, "two finished matches")
        yield serve, admin


def test_a_league_goes_on_storing_results_after_its_connections_are_ended(
    postgres_server,
    postgres_url: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    url = with_password(postgres_url, PASSWORD)
    log = tmp_path / "serve.log"
    with playing(postgres_server, url, tmp_path, log) as (serve, admin):
        assert end_sessions(admin, url) >= 1  # the league's connection, at least
        before = len(finished(url, NAME))
        wait_for(lambda: len(finished(url, NAME)) >= before + 3, 120, "three more matches")
        assert events(log, "database_reconnected")  # reconnected, not served by luck
        # Bots registered after the reconnection are stored too.
        serve.register("dot")
        assert query(url, "SELECT name FROM league_bots WHERE name = 'dot'") == [("dot",)]
    assert_stored_once(url, log)
    reconnected = events(log, "database_reconnected")
    assert reconnected[0]["level"] == "warning"
    assert reconnected[0]["database"] == url.replace(PASSWORD, "***")
    # The server's words for a session it ended: as the connection was told, or as it
    # found the connection closed when next used.
    after = reconnected[0]["after"]
    assert "terminating connection" in after or "server closed the connection" in after, after
    assert PASSWORD not in log.read_text()


def test_a_result_finished_while_the_database_is_away_is_stored_when_it_is_back(
    postgres_server,
    postgres_url: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    url = with_password(postgres_url, PASSWORD)
    name = database_of(url)
    log = tmp_path / "serve.log"
    with playing(postgres_server, url, tmp_path, log, think_ms=20) as (serve, admin):
        # The database goes away while a match is running: its result cannot be stored
        # when it ends (a match running now started before, as a match cannot be
        # planned while the database is away).
        caught: list[str] = []
        for _ in range(20):
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            end_sessions(admin, url)
            caught = list(serve.recent(1).running)
            if caught:
                break
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            wait_for(lambda: serve.recent(1).running, 60, "a running match")
        assert caught, "no match was running when the database went away"
        try:
            wait_for(lambda: events(log, "result_not_saved"), 60, "a result not saved")
            # The league serves on while the database is away.
            assert serve.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        # Every result that could not be stored (the caught match's, or one that ended
        # just as the database went away) is stored once it is back.
        unsaved = {e["match_id"] for e in events(log, "result_not_saved")}
        wait_for(
            lambda: unsaved <= {m["match_id"] for m in finished(url, NAME)},
            60,
            f"{sorted(unsaved)} stored after the database came back",
        )
        count = len(finished(url, NAME))
        wait_for(lambda: len(finished(url, NAME)) >= count + 2, 120, "two more matches")
    assert_stored_once(url, log)
    (first, *_) = events(log, "result_not_saved")
    assert first["level"] == "error"
    error = first["error"]
    assert error.startswith(f"the database {url.replace(PASSWORD, '***')} is unreachable: ")
    assert "not currently accepting connections" in error and "\n" not in error
    assert PASSWORD not in log.read_text()


def second_serve(
    config: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*REFEREE, "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "STICHELN_ADMIN_TOKEN": ADMIN_TOKEN, **(env or {})},
        cwd=ROOT,
    )


def test_a_second_league_of_the_same_name_on_the_same_database_is_refused(
    tmp_path: Path, league_db: LeagueDb
) -> None:
    table = dict(league_db.table)
    target = str(league_db.target)
    if league_db.kind == "postgresql":
        target = table["database"] = with_password(target, PASSWORD)
    config = write_config(tmp_path / "league.toml", {"name": NAME, **table})
    other = write_config(tmp_path / "other.toml", {"name": "other", **table})
    with serving(config, tmp_path / "serve1.log") as serve:
        token = serve.register("ann")
        done = second_serve(config)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        shown = target.replace(PASSWORD, "***")
        assert lines == [
            f"referee serve: league {NAME!r} is already served from the database {shown} by "
            "another process (another referee serve); stop that one first, or give this "
            "league another name or database"
        ], done.stderr
        assert PASSWORD not in done.stderr + done.stdout and done.stdout == ""
        # Another league on the same database is its own business.
        with serving(other, tmp_path / "other.log"):
            pass
        # The first league serves on, its data untouched.
        listed = serve.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
        assert [b.name for b in listed] == ["ann"]
    # Stopped, it lets go: the next one starts, with the first one's bots.
    again = Serve(config, tmp_path / "serve2.log")
    try:
        listed = again.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
        assert [b.name for b in listed] == ["ann"] and token
    finally:
        assert again.stop() == 0, again.tail()
