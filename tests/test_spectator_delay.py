"""A league's ``web_delay_rounds`` holds at every spectator door: gRPC ``WatchMatch`` (a
watcher asking for no delay at all) and the web's live stream, on a real ``referee
serve`` over 127.0.0.1 with bots the test paces round by round.

The bots wait at the first request of each round until the test lets them play it, and
the test does so only once both doors have had the previous round's scores. Each message
is stamped, as it arrives, with the latest round the bots were let play: an event of
round r may arrive only once round r + delay has been dealt, which needs the rounds up to
r + delay - 1 played, so never while the bots are still held before that.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from bots import harness
from leaguekit import fetched_record, oracle, watched
from test_league_security import Pace, paced_bot
from webkit import web_league

from referee.league.feed import MatchFeed
from referee.rules import preset
from sticheln.v1 import league_pb2, league_pb2_grpc

DELAY = 1
RULES = {"preset": "sticheln", "deck": "french_2_14"}


def phase(pace: Pace) -> int:
    """The latest round the bots may play (-1: not even the first)."""
    return pace.allowed


async def watch_grpc(
    stub: league_pb2_grpc.LeagueStub, match_id: str, pace: Pace, into: list[Any]
) -> None:
    """WatchMatch asking for no delay; each message with the phase it arrived in."""
    stream = stub.WatchMatch(league_pb2.WatchMatchRequest(match_id=match_id), timeout=120)
    async for msg in stream:
        into.append((msg, phase(pace)))


async def watch_web(url: str, pace: Pace, into: list[Any]) -> None:
    """The web's live stream of the match; each event with the phase it arrived in."""
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as reply:
        assert reply.status == 200, await reply.text()
        async for raw in reply.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: close"):
                return
            if line.startswith("data: "):
                into.append((json.loads(line[6:]), phase(pace)))


def early(stamped: list[tuple[int | None, int]], last_round: int) -> list[tuple[int, int]]:
    """The (round, phase) of every event that arrived before the rounds that let it out
    were played: round r's events need round r + DELAY dealt (the last rounds' events,
    the match over)."""
    return [(r, at) for r, at in stamped if r is not None and at < min(r + DELAY - 1, last_round)]


def scored(by_grpc: list[Any], by_web: list[Any], r: int) -> bool:
    """Both doors have had round ``r``'s scores."""
    return any(
        m.WhichOneof("kind") == "event"
        and m.event.WhichOneof("kind") == "round_scored"
        and m.event.round_index == r
        for m, _ in by_grpc
    ) and any(e["type"] == "scored" and e["round"] == r for e, _ in by_web)


def test_web_delay_rounds_holds_for_watch_match_and_the_web_live_stream(tmp_path: Path) -> None:
    league = {"name": "delayed", "table_size": 3, "parallel": 1, "web_delay_rounds": DELAY}
    clock = {"decision_ms": 30000, "time_bank_ms": 0}
    with web_league(tmp_path, league, RULES, clock) as (serve, url):
        tokens = {n: serve.register(n) for n in ("paced-a", "paced-b", "paced-c")}

        async def go() -> tuple[str, list[Any], list[Any]]:
            pace = Pace()
            players = [
                asyncio.ensure_future(paced_bot(serve.address, t, n, pace))
                for n, t in tokens.items()
            ]
            by_grpc: list[Any] = []
            by_web: list[Any] = []
            try:
                async with grpc.aio.insecure_channel(serve.address) as channel:
                    stub = league_pb2_grpc.LeagueStub(channel)
                    async with asyncio.timeout(30):
                        while not (
                            running := await stub.RecentMatches(
                                league_pb2.RecentMatchesRequest(), timeout=10
                            )
                        ).running:
                            await asyncio.sleep(0.02)
                    match_id = running.running[0]
                    # Every bot waits at its first request: round 0 is dealt, nothing played.
                    await asyncio.wait_for(pace.reached(0).wait(), 30)
                    watchers = [
                        asyncio.ensure_future(watch_grpc(stub, match_id, pace, by_grpc)),
                        asyncio.ensure_future(
                            watch_web(f"{url}/api/matches/{match_id}/live", pace, by_web)
                        ),
                    ]
                    async with asyncio.timeout(30):
                        while not (by_grpc and by_web):
                            await asyncio.sleep(0.02)
                    # Both doors are open and round 0 has been dealt: the header only.
                    assert [m.WhichOneof("kind") for m, _ in by_grpc] == ["match"]
                    assert [e["type"] for e, _ in by_web] == ["match"]
                    # Round by round: round r is played only once both doors have had
                    # round r - 1's scores, so a door that let anything out early (round
                    # r's deal, say, while the bots wait) is seen to do so.
                    r = 0
                    while not all(w.done() for w in watchers):
                        pace.allow(r)
                        async with asyncio.timeout(60):
                            while not (
                                scored(by_grpc, by_web, r) or all(w.done() for w in watchers)
                            ):
                                await asyncio.sleep(0.02)
                        r += 1
                    await asyncio.wait_for(asyncio.gather(*watchers), 60)
            finally:
                for p in players:
                    p.cancel()
                await asyncio.gather(*players, return_exceptions=True)
            return match_id, by_grpc, by_web

        match_id, by_grpc, by_web = harness.run(go())
        lines = fetched_record(serve.league, match_id, tmp_path)
    last_round = max(x["round"] for x in lines if x["type"] == "round_start")
    assert last_round >= 2
    # Everything public arrives, in order, at both doors.
    assert watched([m for m, _ in by_grpc]) == oracle(lines)
    assert [e["type"] for e, _ in by_web][-1] == "end"
    assert len(by_web) == len(by_grpc)
    grpc_stamps = [
        (m.event.round_index if m.WhichOneof("kind") == "event" else None, at) for m, at in by_grpc
    ]
    web_stamps = [(e.get("round"), at) for e, at in by_web]
    assert early(grpc_stamps, last_round) == []
    assert early(web_stamps, last_round) == []
    # Round 0's events came only once round 0 had been played.
    assert min(at for r, at in grpc_stamps if r == 0) >= DELAY - 1 >= 0


def test_a_watcher_takes_the_lines_that_came_while_it_was_sending() -> None:
    """Lines appended while WatchMatch was writing its last batch are sent without
    waiting for another line (a line that wakes no one is not lost)."""
    header = {
        "type": "header",
        "match_id": "m-1",
        "rules": preset("sticheln").to_table(),
        "seating": ["a", "b", "c"],
        "commitment": "00" * 32,
    }

    async def go() -> list[str]:
        feed = MatchFeed("m-1")
        feed.append(header)
        got: list[str] = []
        stream = feed.watch(0)
        async with asyncio.timeout(5):
            async for msg in stream:
                got.append(msg.WhichOneof("kind"))
                if len(got) == 1:
                    # While the header is being sent, the round is dealt and the match
                    # ends: no later line comes to wake the watcher.
                    feed.append({"type": "round_start", "round": 0, "dealer": 1})
                    feed.append(
                        {
                            "type": "end",
                            "round": 0,
                            "totals": [0, 0, 0],
                            "places": [1, 1, 1],
                            "reason": "stopped",
                        }
                    )
        return got

    assert asyncio.run(go()) == ["match", "event", "end"]
