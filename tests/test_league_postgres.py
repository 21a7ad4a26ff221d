"""A league on PostgreSQL: the database URL from the environment (``database_env``), a
restart on the same database keeps every bot entry, token, result and the deal key, other
processes read the league's writes while it runs, and the password is never shown.

Real ``referee serve`` processes, sample bot processes and the throwaway PostgreSQL
server (tests/postgres_server.py), all on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from leaguekit import (
    ADMIN_TOKEN,
    REFEREE,
    ROOT,
    bots,
    finished,
    query,
    serving,
    wait_for,
    write_config,
)
from postgres_server import with_password

from referee.league.standings import compute_standings, fit_in_child
from referee.match.dealkey import DealKey
from referee.results.store import open_store
from sticheln.v1 import bot_pb2, bot_pb2_grpc, league_pb2

pytestmark = pytest.mark.timeout(300)

NAME = "pgl"
PASSWORD = "s3cret-pw-never-shown"
ENV_KEY = "LEAGUE_DATABASE_URL"


def refused(address: str, token: str) -> tuple[grpc.StatusCode, str]:
    """The status a Play stream opened with ``token`` ends with."""
    hello = bot_pb2.BotMessage(
        hello=bot_pb2.Hello(bot_version="1", protocol_version=1, token=token)
    )
    with grpc.insecure_channel(address) as channel:
        call = bot_pb2_grpc.RefereeStub(channel).Play(iter([hello]), timeout=10)
        with pytest.raises(grpc.RpcError) as info:
            next(call)
    return info.value.code(), info.value.details()  # type: ignore[attr-defined]


def listed(serve: object) -> list[tuple[str, int, bool, str, float]]:
    bots_ = serve.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots  # type: ignore[attr-defined]
    return [(b.name, b.version, b.active, b.previous_version, b.registered_at) for b in bots_]


def league_start(log: Path) -> dict[str, object]:
    for line in log.read_text().splitlines():
        if line.startswith("{") and '"league_start"' in line:
            event: dict[str, object] = json.loads(line)
            return event
    raise AssertionError(f"no league_start line in {log}")


def test_a_league_on_postgres_restarts_with_its_bots_tokens_results_and_deal_key(
    tmp_path: Path, postgres_url: str
) -> None:
    url = with_password(postgres_url, PASSWORD)
    env = {ENV_KEY: url}
    config = write_config(
        tmp_path / "league.toml",
        {"name": NAME, "table_size": 3, "parallel": 1, "database_env": ENV_KEY},
    )
    trio = ("ann", "ben", "cy")
    with (
        serving(config, tmp_path / "serve1.log", env=env) as serve,
        bots(serve.address, tmp_path) as b,
    ):
        tokens = {n: serve.register(n) for n in (*trio, "dot")}
        serve.league.RevokeToken(
            league_pb2.RevokeTokenRequest(name="dot"),
            metadata=(("authorization", f"Bearer {ADMIN_TOKEN}"),),
            timeout=10,
        )
        # Another connection sees each registration as soon as the call returns.
        stored = query(url, "SELECT name, active FROM league_bots ORDER BY registered_at")
        assert stored == [("ann", 1), ("ben", 1), ("cy", 1), ("dot", 0)]
        for n in trio:
            b.start("random", n, tokens[n])
        wait_for(lambda: len(finished(url, NAME)) >= 3, 120, "three finished matches")
        # A second process fits the standings from the database while the league writes.
        low = len(finished(url, NAME))
        child = subprocess.run(
            [sys.executable, "-m", "referee.league.standings", "-", NAME, "20", "0"],
            input=f"{url}\n".encode(),
            capture_output=True,
            timeout=60,
            cwd=ROOT,
        )
        high = len(finished(url, NAME))
        assert child.returncode == 0, child.stderr
        assert low <= league_pb2.StandingsResponse.FromString(child.stdout).matches <= high
        before_bots = listed(serve)
    before = finished(url, NAME)
    ((key_hex,),) = query(url, "SELECT deal_key FROM deal_keys WHERE tournament = ?", (NAME,))
    key = DealKey.from_hex(key_hex)

    with (
        serving(config, tmp_path / "serve2.log", env=env) as serve,
        bots(serve.address, tmp_path) as b,
    ):
        assert listed(serve) == before_bots
        # The standings are published from the stored results before any new match.
        assert serve.standings().matches == len(before)
        code, details = refused(serve.address, tokens["dot"])
        assert code == grpc.StatusCode.UNAUTHENTICATED and "revoked" in details
        code, _ = refused(serve.address, "stb_not-a-token")
        assert code == grpc.StatusCode.UNAUTHENTICATED
        for n in trio:  # the tokens issued before the restart open seats
            b.start("random", n, tokens[n])
        wait_for(lambda: len(finished(url, NAME)) >= len(before) + 2, 120, "more matches")
    after = finished(url, NAME)
    kept = {m["match_id"]: m for m in after}
    for m in before:  # nothing lost, nothing played again
        assert kept[m["match_id"]] == m
    assert [m["finish_order"] for m in after] == list(range(1, len(after) + 1))
    ((key_after,),) = query(url, "SELECT deal_key FROM deal_keys WHERE tournament = ?", (NAME,))
    assert key_after == key_hex
    deals = dict(query(url, "SELECT match_id, deal FROM matches WHERE tournament = ?", (NAME,)))
    assert all(m["seed"] == key.match_seed(deals[m["match_id"]]) for m in after)

    for log in ("serve1.log", "serve2.log"):
        start = league_start(tmp_path / log)
        assert start["deal_key_commitment"] == key.commitment()
        assert start["database"] == url.replace(PASSWORD, "***")
        text = (tmp_path / log).read_text()
        assert PASSWORD not in text and key_hex not in text.lower()

    # The standings fitted by a child process from the URL equal those of the stored results.
    store = open_store(url)
    try:
        want = compute_standings(store.results(NAME, think=False), 20)
    finally:
        store.close()
    got = asyncio.run(fit_in_child(url, NAME, 20))
    assert got.matches == want.matches == len(after)
    assert list(got.standings) == list(want.standings)


def test_serve_with_an_unreachable_postgres_is_one_line_without_the_password(
    tmp_path: Path,
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://referee:{PASSWORD}@127.0.0.1:{port}/league"
    config = write_config(tmp_path / "league.toml", {"name": NAME, "database": url})
    done = subprocess.run(
        [*REFEREE, "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "STICHELN_ADMIN_TOKEN": ADMIN_TOKEN},
        cwd=ROOT,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot connect to the database" in lines[0], done.stderr
    assert PASSWORD not in done.stderr + done.stdout and "referee:***@" in lines[0]
