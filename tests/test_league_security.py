"""The league's doors: admin and bot tokens, declared seats, revocation, health,
reflection, and WatchMatch's hidden information and delay.

One real ``referee serve`` process for the module (on SQLite, then on PostgreSQL),
clients over 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from bots import harness
from bots.botlib import decision, lowest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from leaguekit import (
    ADMIN,
    LeagueDb,
    Serve,
    assert_nothing_hidden,
    fetched_record,
    oracle,
    serving,
    watched,
    write_config,
)

from sticheln.v1 import bot_pb2, bot_pb2_grpc, league_pb2, league_pb2_grpc

LEAGUE = "sec"
#: A deck that sets a card aside every round, secret pain picks: the most to hide.
RULES = {"preset": "sticheln", "deck": "french_2_14", "pain_visibility": "secret"}


@pytest.fixture(scope="module")
def league(module_league_db: tuple[Path, LeagueDb]) -> Iterator[Serve]:
    tmp, db = module_league_db
    config = write_config(
        tmp / "league.toml",
        {"name": LEAGUE, "table_size": 3, "parallel": 1, "shutdown_grace_s": 5, **db.table},
        RULES,
        {"decision_ms": 30000, "time_bank_ms": 0},
    )
    with serving(config, tmp / "serve.log") as s:
        yield s


def hello(token: str, name: str = "", seats: int = 1) -> bot_pb2.BotMessage:
    return bot_pb2.BotMessage(
        hello=bot_pb2.Hello(
            bot_name=name,
            bot_version="1",
            protocol_version=1,
            token=token,
            max_concurrent_matches=seats,
        )
    )


@dataclass
class Stream:
    channel: grpc.aio.Channel
    call: Any
    welcome: bot_pb2.RefereeMessage | None = None
    code: grpc.StatusCode | None = None
    details: str = ""


async def open_stream(address: str, message: bot_pb2.BotMessage) -> Stream:
    """Open a Play stream, send ``message``; the Welcome or the refusal."""
    channel = grpc.aio.insecure_channel(address)
    call = bot_pb2_grpc.RefereeStub(channel).Play()
    s = Stream(channel, call)
    try:
        await call.write(message)
        s.welcome = await asyncio.wait_for(call.read(), 10)
    except grpc.aio.AioRpcError as exc:
        s.code, s.details = exc.code(), exc.details() or ""
        await channel.close()
    return s


def refusal(address: str, message: bot_pb2.BotMessage) -> tuple[grpc.StatusCode | None, str]:
    async def go() -> tuple[grpc.StatusCode | None, str]:
        s = await open_stream(address, message)
        if s.code is None:
            await s.channel.close()
        return s.code, s.details

    return harness.run(go())


def admin_code(league: Serve, metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        league.league.RegisterBot(
            league_pb2.RegisterBotRequest(name="intruder", owner="x"),
            metadata=metadata,
            timeout=10,
        )
    return info.value.code()  # type: ignore[no-any-return, attr-defined]


def test_admin_calls_need_the_admin_token(league: Serve) -> None:
    token = league.register("door-bot")
    assert admin_code(league, ()) == grpc.StatusCode.UNAUTHENTICATED
    assert admin_code(league, (("authorization", "Bearer not-the-token"),)) == (
        grpc.StatusCode.UNAUTHENTICATED
    )
    assert admin_code(league, (("authorization", f"Bearer {token}"),)) == (
        grpc.StatusCode.PERMISSION_DENIED
    )
    names = [b.name for b in league.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots]
    assert "intruder" not in names and "door-bot" in names


def test_bot_streams_need_their_own_valid_token(league: Serve) -> None:
    alice = league.register("alice")
    league.register("bob")
    code, details = refusal(league.address, hello(""))
    assert code == grpc.StatusCode.UNAUTHENTICATED and "no token" in details
    code, _ = refusal(league.address, hello("stb_not-a-token"))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    code, details = refusal(league.address, hello(alice, name="bob"))
    assert code == grpc.StatusCode.PERMISSION_DENIED and "alice" in details
    # Her own name, or none, is let in.
    assert refusal(league.address, hello(alice, name="alice", seats=2)) == (None, "")
    assert refusal(league.address, hello(alice, seats=2)) == (None, "")


def test_a_stream_beyond_the_declared_seats_is_refused(league: Serve) -> None:
    token = league.register("two-seats")

    async def go() -> None:
        first = await open_stream(league.address, hello(token, "two-seats", seats=2))
        second = await open_stream(league.address, hello(token, "two-seats", seats=2))
        third = await open_stream(league.address, hello(token, "two-seats", seats=2))
        try:
            assert first.welcome is not None and second.welcome is not None
            assert third.code == grpc.StatusCode.RESOURCE_EXHAUSTED, third
            assert "2 stream(s) open" in third.details
        finally:
            await first.channel.close()
            await second.channel.close()
        # Once the league has seen them go, the seats are free again.
        async with asyncio.timeout(10):
            while (ok := await open_stream(league.address, hello(token, "two-seats"))).code:
                assert ok.code == grpc.StatusCode.RESOURCE_EXHAUSTED, ok
                await asyncio.sleep(0.02)
        await ok.channel.close()

    harness.run(go())


def test_a_revoked_token_is_refused_and_its_idle_stream_ends(league: Serve) -> None:
    token = league.register("revokee")

    async def go() -> None:
        s = await open_stream(league.address, hello(token, "revokee"))
        assert s.welcome is not None
        stub = league_pb2_grpc.LeagueStub(s.channel)
        reply = await stub.RevokeToken(
            league_pb2.RevokeTokenRequest(name="revokee"), metadata=ADMIN, timeout=10
        )
        assert not reply.bot.active
        # The idle stream is ended by the league, with status OK.
        assert await asyncio.wait_for(s.call.read(), 10) is grpc.aio.EOF
        assert await asyncio.wait_for(s.call.code(), 10) == grpc.StatusCode.OK
        await s.channel.close()

    harness.run(go())
    code, details = refusal(league.address, hello(token, "revokee"))
    assert code == grpc.StatusCode.UNAUTHENTICATED and "revoked" in details
    bots = league.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
    assert [b.active for b in bots if b.name == "revokee"] == [False]


def test_a_new_version_is_a_new_entry_with_its_own_token(league: Serve) -> None:
    league.register("versioned")
    reply = league.league.RegisterVersion(
        league_pb2.RegisterVersionRequest(previous_version="versioned"), metadata=ADMIN, timeout=10
    )
    assert (reply.bot.name, reply.bot.previous_version, reply.bot.version) == (
        "versioned@v2",
        "versioned",
        2,
    )
    assert refusal(league.address, hello(reply.token, "versioned@v2")) == (None, "")
    with pytest.raises(grpc.RpcError) as info:
        league.league.RegisterBot(
            league_pb2.RegisterBotRequest(name="versioned"), metadata=ADMIN, timeout=10
        )
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS  # type: ignore[attr-defined]
    with pytest.raises(grpc.RpcError) as info:
        league.league.RegisterBot(
            league_pb2.RegisterBotRequest(name="no spaces"), metadata=ADMIN, timeout=10
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]


def test_health_and_reflection_show_the_league_service(league: Serve) -> None:
    health = health_pb2_grpc.HealthStub(league.channel)
    for service in ("", "sticheln.v1.League", "sticheln.v1.Referee"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING, service
    reflection = reflection_pb2_grpc.ServerReflectionStub(league.channel)
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="sticheln.v1.League"),
    ]
    listed, described = list(reflection.ServerReflectionInfo(iter(requests), timeout=10))
    names = {s.name for s in listed.list_services_response.service}
    assert {"sticheln.v1.League", "sticheln.v1.Referee", "grpc.health.v1.Health"} <= names
    assert described.file_descriptor_response.file_descriptor_proto  # grpcurl can describe it


def test_unknown_match_is_not_found(league: Serve) -> None:
    with pytest.raises(grpc.RpcError) as info:
        league.league.GetMatchRecord(league_pb2.GetMatchRecordRequest(match_id="nope"), timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
    with pytest.raises(grpc.RpcError) as info:
        list(league.league.WatchMatch(league_pb2.WatchMatchRequest(match_id="nope"), timeout=10))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]


# -- WatchMatch: bots the test paces, watchers live and one round behind ----------------------


@dataclass
class Pace:
    """Bots answer requests of rounds up to :attr:`allowed` only."""

    allowed: int = -1
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set when a bot was asked something in round r (round r has been dealt).
    asked: dict[int, asyncio.Event] = field(default_factory=dict)

    def allow(self, r: int) -> None:
        self.allowed = r
        self.changed.set()
        self.changed = asyncio.Event()

    def reached(self, r: int) -> asyncio.Event:
        return self.asked.setdefault(r, asyncio.Event())


async def paced_bot(address: str, token: str, name: str, pace: Pace) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        call = bot_pb2_grpc.RefereeStub(channel).Play()
        await call.write(hello(token, name))
        while True:
            msg = await call.read()
            if msg is grpc.aio.EOF:
                return
            if msg.WhichOneof("kind") != "request":
                continue
            r = msg.request.view.round_index
            pace.reached(r).set()
            while r > pace.allowed:
                await pace.changed.wait()
            await call.write(decision(msg.request.request_id, lowest(msg.request)))


async def watch(
    stub: league_pb2_grpc.LeagueStub, match_id: str, delay: int, into: list[Any]
) -> None:
    stream: AsyncIterator[league_pb2.WatchMatchResponse] = stub.WatchMatch(
        league_pb2.WatchMatchRequest(match_id=match_id, delay_rounds=delay), timeout=120
    )
    async for msg in stream:
        into.append(msg)


def rounds(messages: list[league_pb2.WatchMatchResponse]) -> set[int]:
    return {m.event.round_index for m in messages if m.WhichOneof("kind") == "event"}


def scored(messages: list[league_pb2.WatchMatchResponse], r: int) -> bool:
    return any(
        m.WhichOneof("kind") == "event"
        and m.event.WhichOneof("kind") == "round_scored"
        and m.event.round_index == r
        for m in messages
    )


def dealt(messages: list[league_pb2.WatchMatchResponse], r: int) -> bool:
    return any(
        m.WhichOneof("kind") == "event"
        and m.event.WhichOneof("kind") == "round_dealt"
        and m.event.round_index == r
        for m in messages
    )


async def until(check: Any, timeout: float, what: str) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.02)
    assert check(), what


def test_watch_match_shows_no_hidden_information_and_honours_the_delay(
    league: Serve, tmp_path: Path
) -> None:
    tokens = {name: league.register(name) for name in ("paced-a", "paced-b", "paced-c")}

    async def go() -> tuple[str, list[Any], list[Any]]:
        pace = Pace()
        players = [
            asyncio.ensure_future(paced_bot(league.address, t, n, pace)) for n, t in tokens.items()
        ]
        live: list[Any] = []
        late: list[Any] = []
        try:
            async with grpc.aio.insecure_channel(league.address) as channel:
                stub = league_pb2_grpc.LeagueStub(channel)
                async with asyncio.timeout(30):
                    while not (
                        running := await stub.RecentMatches(
                            league_pb2.RecentMatchesRequest(), timeout=10
                        )
                    ).running:
                        await asyncio.sleep(0.02)
                match_id = running.running[0]
                watchers = [
                    asyncio.ensure_future(watch(stub, match_id, 0, live)),
                    asyncio.ensure_future(watch(stub, match_id, 1, late)),
                ]
                # Every bot waits at its first request: round 0 is dealt, not played.
                await asyncio.wait_for(pace.reached(0).wait(), 30)
                await until(lambda: dealt(live, 0), 30, "round 0 dealt, live")
                # The delayed watcher's own stream brings its header (at its own pace);
                # nothing of round 0 follows it while round 0 is not scored.
                await until(lambda: bool(late), 30, "the delayed watcher's header")
                assert [m.WhichOneof("kind") for m in late] == ["match"]
                assert rounds(live) == {0}
                # Round 0 played, round 1 dealt: the delayed watcher sees round 0 only.
                pace.allow(0)
                await asyncio.wait_for(pace.reached(1).wait(), 30)
                await until(lambda: scored(late, 0), 30, "round 0 scored, one round behind")
                await until(lambda: dealt(live, 1), 30, "round 1 dealt, live")
                assert rounds(late) == {0}
                # The rest of the match: both watchers get every message and the end.
                pace.allow(1_000)
                await asyncio.wait_for(asyncio.gather(*watchers), 60)
        finally:
            for p in players:
                p.cancel()
            await asyncio.gather(*players, return_exceptions=True)
        return match_id, live, late

    match_id, live, late = harness.run(go())
    lines = fetched_record(league.league, match_id, tmp_path)
    assert any(line["type"] == "round_start" and line["set_aside"] for line in lines)
    expected = oracle(lines)
    assert watched(live) == expected
    assert watched(late) == expected
    assert live[-1].end.reason == "completed" and live[-1].end.seed == int(lines[-1]["seed"])
    assert_nothing_hidden(live, lines)
    # Secret picks: empty when revealed, public once scored.
    revealed = [m.event.pain_revealed for m in live if m.event.HasField("pain_revealed")]
    assert revealed and all(not p.cards for r in revealed for p in r.pain)
