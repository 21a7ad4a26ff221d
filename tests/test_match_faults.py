"""Misbehaving bots in real matches: every fault is recorded with its reason, the match
completes, the other seats play on unaffected, and no bot process is left behind.

Each test runs a real referee server on loopback and real bot processes from
``tests/bots/``. The well-behaved seats run the lowest-card bot, whose choices equal the
referee's fallback, so the engine can check every decision in the record.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from bots.harness import (
    ROOMY,
    assert_no_processes,
    bot,
    check_decisions,
    check_finished,
    collect_reports,
    new_marker,
    play_match,
    read_capture,
    requests_in,
    run,
    run_match,
)

from referee.jail.bots import BotSpec
from referee.match.faults import FaultReason
from referee.match.record import ReplayError, replay
from referee.match.runner import Clock, MatchResult, MatchRunner
from referee.match.server import RefereeServer
from referee.rules import preset
from sticheln.v1 import bot_pb2

pytestmark = pytest.mark.timeout(120)

ONE_ROUND = preset("sticheln", rounds=1)


@pytest.fixture
def marker() -> Iterator[str]:
    """A marker for this test's bot command lines; no process may carry it afterwards."""
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


#: For the tests of the clock: the late bot's answers in time (given at once) have five
#: seconds, several times what a loaded machine holds a process back; its late answers
#: are late by any margin (``SLOW_MS=next``) or by seconds, and the honest seats are
#: untimed, so no test relies on an honest bot being fast.
LATE = Clock(decision_ms=5000, time_bank_ms=0, startup_ms=60_000)


def reasons(result: MatchResult, seat: int) -> list[FaultReason]:
    return [f.reason for f in result.seats[seat].faults]


def finished(result: MatchResult, marker: str, faulty: set[int]) -> list[dict[str, Any]]:
    """The common checks: completed, replayable, no process left, clean seats clean."""
    assert_no_processes(marker)
    lines = check_finished(result)
    for seat in result.seats:
        if seat.seat not in faulty:
            assert seat.faults == [], seat
            assert not seat.forfeited
    return lines


def request_ids(result: MatchResult, seat: int) -> list[int]:
    return [f.request_id for f in result.seats[seat].faults]


# -- 1. time -------------------------------------------------------------------------------


def test_a_bot_past_its_deadline_times_out_and_its_late_answer_is_dropped(
    tmp_path: Path, marker: str
) -> None:
    # Each late answer comes with the bot's next request: the match still runs then.
    slow = bot("slow_bot.py", marker, env={"SLOW": "3,6", "SLOW_MS": "next"})
    lowest = bot("lowest_bot.py", marker)
    result = run_match([lowest, slow, lowest], out_dir=tmp_path, clock=LATE, untimed=[0, 2])
    lines = finished(result, marker, faulty={1})

    faults = result.seats[1].faults
    timeouts = [f for f in faults if f.reason is FaultReason.TIMEOUT]
    stale = [f for f in faults if f.reason is FaultReason.STALE_REQUEST_ID]
    assert len(timeouts) == len(stale) == 2
    assert len(faults) == 4
    # Each late answer names a request that timed out, arrives after its timeout, and
    # costs no strike.
    assert [f.request_id for f in stale] == [f.request_id for f in timeouts]
    for late in stale:
        assert faults.index(late) > faults.index(
            next(f for f in timeouts if f.request_id == late.request_id)
        )
        assert late.strikes == sum(1 for f in faults[: faults.index(late)] if f in timeouts)
    assert faults[-1].strikes == 2
    assert not result.seats[1].forfeited
    # Its result counts the strikes (2), not the faults (4); its think times hold the two
    # timed-out decisions at their limit, with the answers it made in time.
    assert result.seats[1].strikes == 2
    limit = LATE.decision_ms / 1000
    answered = sum(
        1 for x in lines if x["type"] in ("pain", "play") and x["seat"] == 1 and not x["fallback"]
    )
    think = result.seats[1].think_s
    assert len(think) == answered + 2
    assert sum(1 for t in think if t >= limit) == 2
    # The slow seat's late answers (its highest card) were never applied: every decision
    # in the record is either the fallback for a timeout or its own lowest card.
    own = check_decisions(lines, lowest_seats=[0, 2])
    assert own and all(action == fallback for _, action, fallback in own)
    assert sum(1 for x in lines if x.get("seat") == 1 and x.get("fallback")) == 2


def test_the_end_lines_decisions_count_the_answers_in_time_and_replay_checks_them(
    tmp_path: Path, marker: str
) -> None:
    # A late answer (refused as stale) is no decision; an illegal answer in time is one,
    # refused. The end line's count is what the record's lines add up to, and replay
    # (so referee verify) catches a count that is not.
    slow = bot("slow_bot.py", marker, env={"SLOW": "3", "SLOW_MS": "next"})
    illegal = bot("illegal_bot.py", marker, env={"ILLEGAL_AT": "2"})
    lowest = bot("lowest_bot.py", marker)
    result = run_match([lowest, slow, illegal], out_dir=tmp_path, clock=LATE, untimed=[0, 2])
    lines = finished(result, marker, faulty={1, 2})
    assert reasons(result, 1) == [FaultReason.TIMEOUT, FaultReason.STALE_REQUEST_ID]
    assert reasons(result, 2) == [FaultReason.ILLEGAL_CARD_NOT_IN_HAND]
    applied = sum(1 for x in lines if x["type"] in ("pain", "play") and not x["fallback"])
    assert lines[-1]["decisions"] == result.decisions == applied + 1
    lines[-1]["decisions"] = applied + 2  # the stale answer counted as well
    result.record_path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(ReplayError) as refused:
        replay(result.record_path)
    assert str(refused.value) == (
        f"line {len(lines)}: decisions {applied + 2}; the record holds {applied} answers "
        "applied and 1 refused as illegal or malformed (a late answer is none)"
    )


def test_a_decision_a_little_over_is_drawn_from_the_time_bank(tmp_path: Path, marker: str) -> None:
    capture = tmp_path / "slow.capture"
    # Margins of seconds: on a loaded machine an ordinary answer may take a second, and
    # must neither time out nor draw on the bank; the slow answer is 2.5 s over its limit
    # and 7.5 s within the bank.
    clock = Clock(decision_ms=5000, time_bank_ms=10_000, startup_ms=60_000)
    slow = bot(
        "slow_bot.py",
        marker,
        env={"SLOW": "3", "SLOW_MS": "7500", "CAPTURE": str(capture)},
    )
    lowest = bot("lowest_bot.py", marker)
    result = run_match(
        [lowest, lowest, slow], ONE_ROUND, out_dir=tmp_path, clock=clock, untimed=[0, 1]
    )
    lines = finished(result, marker, faulty=set())

    assert result.seats[2].faults == []
    requests = requests_in(read_capture(capture))
    assert requests[0].time_bank_ms == requests[1].time_bank_ms == requests[2].time_bank_ms
    assert requests[0].time_bank_ms == 10_000
    # Request 3 took 2.5 s more than its 5 s (the referee counts from after its write,
    # which a loaded machine may delay past the bot's start of thinking by up to a
    # second): the bank shrank by that much.
    assert 0 < requests[3].time_bank_ms <= 8500
    assert all(r.time_bank_ms == requests[3].time_bank_ms for r in requests[3:])
    # The answer that ran over was accepted: it is the slow bot's highest card.
    own = [x for x in lines if x["type"] in ("pain", "play") and x["seat"] == 2]
    assert not any(x["fallback"] for x in own)
    assert own[2]["think_us"] > 6_500_000
    third = check_decisions(lines, lowest_seats=[0, 1])
    assert sum(1 for _, action, fallback in third if action != fallback) == 1


def test_a_decision_beyond_the_time_bank_times_out_and_empties_it(
    tmp_path: Path, marker: str
) -> None:
    capture = tmp_path / "slow.capture"
    clock = Clock(decision_ms=5000, time_bank_ms=2000, startup_ms=60_000)
    slow = bot(
        "slow_bot.py",
        marker,
        env={"SLOW": "2", "SLOW_MS": "next", "CAPTURE": str(capture)},
    )
    lowest = bot("lowest_bot.py", marker)
    result = run_match(
        [slow, lowest, lowest], ONE_ROUND, out_dir=tmp_path, clock=clock, untimed=[1, 2]
    )
    finished(result, marker, faulty={0})

    timeout = result.seats[0].faults[0]
    assert timeout.reason is FaultReason.TIMEOUT
    assert "within 7000 ms" in timeout.detail
    requests = requests_in(read_capture(capture))
    assert requests[1].time_bank_ms == 2000
    assert timeout.request_id == requests[1].request_id
    assert all(r.time_bank_ms == 0 for r in requests[2:])


def test_the_first_decision_gets_the_startup_time(tmp_path: Path, marker: str) -> None:
    capture = tmp_path / "slow.capture"
    clock = Clock(decision_ms=5000, time_bank_ms=0, startup_ms=30_000)
    # The first request (the pain choice) may take the startup time on top of its limit:
    # 8 s is 3 s over the limit and 27 s within the sum.
    slow = bot("slow_bot.py", marker, env={"SLOW": "1", "SLOW_MS": "8000", "CAPTURE": str(capture)})
    lowest = bot("lowest_bot.py", marker)
    result = run_match(
        [lowest, slow, lowest], ONE_ROUND, out_dir=tmp_path, clock=clock, untimed=[0, 2]
    )
    finished(result, marker, faulty=set())

    requests = requests_in(read_capture(capture))
    assert requests[0].timeout_ms == 35_000
    assert {r.timeout_ms for r in requests[1:]} == {5000}


# -- 2. crash ------------------------------------------------------------------------------


def test_a_bot_that_kills_itself_is_a_crash_and_ranks_last(tmp_path: Path, marker: str) -> None:
    crash = bot("crash_bot.py", marker, env={"CRASH_AT": "6", "CHILD": "1"})
    lowest = bot("lowest_bot.py", marker)
    result = run_match([lowest, lowest, crash, lowest], out_dir=tmp_path, clock=ROOMY)
    lines = finished(result, marker, faulty={2})

    (fault,) = result.seats[2].faults
    assert fault.reason is FaultReason.CRASH
    assert "SIGKILL" in fault.detail
    assert fault.forfeited and result.seats[2].forfeited
    assert result.places[2] == 4
    assert lines[-1]["forfeited"] == [2]
    check_decisions(lines, lowest_seats=[0, 1, 3])
    own = [x for x in lines if x["type"] in ("pain", "play") and x["seat"] == 2]
    assert [x["fallback"] for x in own[:5]] == [False] * 5
    assert all(x["fallback"] for x in own[5:])


def test_a_bot_beyond_its_memory_limit_dies_and_the_match_completes(
    tmp_path: Path, marker: str
) -> None:
    hog = bot(
        "crash_bot.py",
        marker,
        env={"CRASH_AT": "4", "CRASH_HOW": "alloc", "ALLOC_MB": "4096"},
        limits={"memory_mb": 1500},
    )
    lowest = bot("lowest_bot.py", marker)
    result = run_match([hog, lowest, lowest], ONE_ROUND, out_dir=tmp_path)
    lines = finished(result, marker, faulty={0})

    (fault,) = result.seats[0].faults
    assert fault.reason is FaultReason.CRASH
    assert "exited with status 1" in fault.detail
    assert result.seats[0].forfeited
    assert result.places[0] == 3
    log = next((tmp_path / "logs").glob("*seat0*")).read_text()
    assert "MemoryError" in log
    check_decisions(lines, lowest_seats=[1, 2])


# -- 3. illegal answers --------------------------------------------------------------------


def test_a_card_not_in_hand_is_struck_and_three_strikes_forfeit(
    tmp_path: Path, marker: str
) -> None:
    capture = tmp_path / "illegal.capture"
    illegal = bot("illegal_bot.py", marker, env={"CAPTURE": str(capture)})
    lowest = bot("lowest_bot.py", marker)
    result = run_match([lowest, illegal, lowest], out_dir=tmp_path, clock=ROOMY)
    lines = finished(result, marker, faulty={1})

    faults = result.seats[1].faults
    assert [f.reason for f in faults] == [FaultReason.ILLEGAL_CARD_NOT_IN_HAND] * 3
    assert "pain card" in faults[0].detail and "not in the hand" in faults[0].detail
    assert [f.strikes for f in faults] == [1, 2, 3]
    assert [f.forfeited for f in faults] == [False, False, True]
    assert result.seats[1].forfeited and result.places[1] == 3
    # After the third strike the seat is asked nothing more; it hears of every fault.
    messages = read_capture(capture)
    assert len(requests_in(messages)) == 3
    notices = [e.fault for m in messages for e in m.events if e.HasField("fault")]
    assert [(n.reason, n.strikes, n.forfeited, n.seat) for n in notices] == [
        (bot_pb2.FAULT_REASON_ILLEGAL_CARD_NOT_IN_HAND, s, s == 3, 1) for s in (1, 2, 3)
    ]
    assert messages[-1].match_end.forfeited_seats == [1]
    check_decisions(lines, lowest_seats=[0, 2])


def test_the_wrong_number_of_cards_is_struck_and_the_strike_limit_is_configurable(
    tmp_path: Path, marker: str
) -> None:
    illegal = bot("illegal_bot.py", marker, env={"ILLEGAL": "wrong_count", "ILLEGAL_AT": "1,5"})
    lowest = bot("lowest_bot.py", marker)
    result = run_match([illegal, lowest, lowest], out_dir=tmp_path, strike_limit=2, clock=ROOMY)
    lines = finished(result, marker, faulty={0})

    faults = result.seats[0].faults
    assert [f.reason for f in faults] == [FaultReason.ILLEGAL_WRONG_COUNT] * 2
    assert "2 pain cards; expected 1" in faults[0].detail
    assert "2 cards for a card play; expected 1" in faults[1].detail
    assert [f.forfeited for f in faults] == [False, True]
    assert lines[0]["strike_limit"] == 2
    # Its own answers and the fallbacks are all the lowest card: all seats alike.
    own = check_decisions(lines, lowest_seats=[1, 2])
    assert len(own) == 3 and all(action == fallback for _, action, fallback in own)


def test_a_strike_limit_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="strike_limit"):
        MatchRunner(
            RefereeServer(),
            [BotSpec("a", token="t1"), BotSpec("b", token="t2"), BotSpec("c", token="t3")],
            preset("sticheln"),
            strike_limit=0,
            out_dir=tmp_path,
        )


# -- 4. garbage and late answers ------------------------------------------------------------


def test_garbage_is_malformed_and_late_answers_are_stale_and_never_applied(
    tmp_path: Path, marker: str
) -> None:
    script = "2:nokind,3:hello,4:raw,5:late,7:dup,8:unknown"
    garbage = bot("garbage_bot.py", marker, env={"SCRIPT": script})
    lowest = bot("lowest_bot.py", marker)
    result = run_match(
        [lowest, lowest, garbage], out_dir=tmp_path, strike_limit=10, clock=LATE, untimed=[0, 1]
    )
    lines = finished(result, marker, faulty={2})

    faults = result.seats[2].faults
    assert [(f.reason, f.strikes) for f in faults] == [
        (FaultReason.MALFORMED_MESSAGE, 1),
        (FaultReason.MALFORMED_MESSAGE, 2),
        (FaultReason.MALFORMED_MESSAGE, 3),
        (FaultReason.TIMEOUT, 4),
        (FaultReason.STALE_REQUEST_ID, 4),
        (FaultReason.STALE_REQUEST_ID, 4),
        (FaultReason.UNKNOWN_REQUEST_ID, 5),
    ]
    assert "no kind" in faults[0].detail
    assert "Hello" in faults[1].detail
    assert "not a BotMessage" in faults[2].detail
    late, stale = faults[3], faults[4]
    assert stale.request_id == late.request_id
    assert faults[6].request_id > 1_000_000
    assert not result.seats[2].forfeited
    # Every answer the bot meant was its lowest card; the late, duplicate and unknown
    # answers carried its highest card, and none of them was applied.
    own = check_decisions(lines, lowest_seats=[0, 1])
    assert own and all(action == fallback for _, action, fallback in own)
    fallbacks = [x for x in lines if x["type"] in ("pain", "play") and x["seat"] == 2]
    assert [x["fallback"] for x in fallbacks[:8]] == [False, True, True, True, True] + [False] * 3


@pytest.mark.parametrize("linger_ms", ["0", "3000"], ids=["then-exits", "stays-alive"])
def test_a_bot_that_closes_its_stream_is_a_disconnect_and_forfeits(
    tmp_path: Path, marker: str, linger_ms: str
) -> None:
    # Whether the process then exits normally or lives on, it did not crash.
    closer = bot("garbage_bot.py", marker, env={"SCRIPT": "3:close", "LINGER_MS": linger_ms})
    lowest = bot("lowest_bot.py", marker)
    result = run_match([lowest, closer, lowest], ONE_ROUND, out_dir=tmp_path)
    lines = finished(result, marker, faulty={1})
    (fault,) = result.seats[1].faults
    assert fault.reason is FaultReason.DISCONNECT
    assert "closed its stream" in fault.detail
    assert fault.forfeited and result.places[1] == 3
    check_decisions(lines, lowest_seats=[0, 2])


# -- 5.-7. handshakes ----------------------------------------------------------------------


def test_bots_that_never_complete_the_handshake_forfeit_and_the_match_completes(
    tmp_path: Path, marker: str
) -> None:
    # The honest seats' start (a Python interpreter loading gRPC) takes a few seconds on a
    # loaded machine: 30 s is ten times that, and what the test waits for the others.
    clock = Clock(decision_ms=10_000, time_bank_ms=0, startup_ms=30_000)
    silent = bot("handshake_bot.py", marker, env={"MODE": "silent"})
    absent = bot("handshake_bot.py", marker, env={"MODE": "never"})
    lowest = bot("lowest_bot.py", marker)
    result = run_match([lowest, silent, lowest, absent], out_dir=tmp_path, clock=clock)
    lines = finished(result, marker, faulty={1, 3})

    for seat in (1, 3):
        (fault,) = result.seats[seat].faults
        assert fault.reason is FaultReason.HANDSHAKE_FAILED
        assert fault.forfeited
    # The silent stream meets the server's own limit for a Hello first.
    assert "no Hello within 10 s of opening the stream" in result.seats[1].faults[0].detail
    assert "no valid handshake within 30 s" in result.seats[3].faults[0].detail
    # Forfeited seats rank below the others.
    assert min(result.places[1], result.places[3]) > max(result.places[0], result.places[2])
    assert lines[-1]["forfeited"] == [1, 3]
    check_decisions(lines, lowest_seats=[0, 2])
    assert all(
        x["fallback"] for x in lines if x["type"] in ("pain", "play") and x["seat"] in (1, 3)
    )


def test_a_bot_command_that_cannot_start_fails_its_handshake_at_once(
    tmp_path: Path, marker: str
) -> None:
    missing = bot("no_such_bot.py", marker)
    lowest = bot("lowest_bot.py", marker)
    # A startup window longer than this test's timeout: a referee that waited it out
    # instead of noticing the exit would fail the test by its timeout, not by a stopwatch.
    clock = Clock(decision_ms=10_000, time_bank_ms=0, startup_ms=600_000)
    result = run_match([missing, lowest, lowest], ONE_ROUND, out_dir=tmp_path, clock=clock)
    finished(result, marker, faulty={0})
    (fault,) = result.seats[0].faults
    assert fault.reason is FaultReason.HANDSHAKE_FAILED
    assert "exited with status" in fault.detail


@pytest.mark.parametrize(
    ("mode", "code", "words"),
    [
        ("token", "UNAUTHENTICATED", ["token is not valid", "STICHELN_TOKEN", "Hello.token"]),
        (
            "version",
            "FAILED_PRECONDITION",
            ["protocol version 2 is not supported", "version 1", "Hello.protocol_version = 1"],
        ),
    ],
)
def test_a_refused_hello_tells_the_bot_why_and_fails_the_seat(
    tmp_path: Path, marker: str, mode: str, code: str, words: list[str]
) -> None:
    report = tmp_path / "report.txt"
    refused = bot("handshake_bot.py", marker, env={"MODE": mode, "REPORT": str(report)})
    lowest = bot("lowest_bot.py", marker)
    result = run_match([lowest, lowest, refused], ONE_ROUND, out_dir=tmp_path)
    lines = finished(result, marker, faulty={2})

    collect_reports(tmp_path)
    seen = report.read_text().strip()
    assert seen.split()[0] == code
    for word in words:
        assert word in seen
    (fault,) = result.seats[2].faults
    assert fault.reason is FaultReason.HANDSHAKE_FAILED
    if mode == "version":
        assert "protocol version 2 is not supported" in fault.detail
    assert result.seats[2].forfeited
    check_decisions(lines, lowest_seats=[0, 1])


# -- streams, seats and matches -------------------------------------------------------------


class Client:
    """An in-process bot on one stream, driven by the test."""

    def __init__(self, address: str, token: str) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.call: Any = None
        self.token = token

    async def open(self) -> bot_pb2.RefereeMessage:
        play = self.channel.stream_stream(
            "/sticheln.v1.Referee/Play",
            request_serializer=bot_pb2.BotMessage.SerializeToString,
            response_deserializer=bot_pb2.RefereeMessage.FromString,
        )
        self.call = play()
        await self.call.write(
            bot_pb2.BotMessage(
                hello=bot_pb2.Hello(bot_name="inproc", protocol_version=1, token=self.token)
            )
        )
        message: bot_pb2.RefereeMessage = await self.call.read()
        return message

    async def send(self, request_id: int, cards: list[int]) -> None:
        await self.call.write(
            bot_pb2.BotMessage(decision=bot_pb2.Decision(request_id=request_id, cards=cards))
        )

    async def close(self) -> None:
        await self.channel.close()


async def wait_until(condition: Any, timeout: float = 60.0) -> None:
    """Poll a condition of the in-process runner until it holds (bounded)."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def lowest_of(request: bot_pb2.DecisionRequest) -> list[int]:
    return sorted(request.view.hand)[: request.count]


def test_a_stream_cannot_answer_for_another_seat_nor_open_it_twice(
    tmp_path: Path, marker: str
) -> None:
    async def scenario() -> tuple[MatchResult, dict[str, Any]]:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        specs = [
            bot("lowest_bot.py", marker),
            BotSpec("alice", token="token-alice-" + marker),
            BotSpec("bob", token="token-bob-" + marker),
        ]
        # A long decision limit: Bob holds one answer until Alice has tried to give it.
        clock = Clock(decision_ms=30_000, time_bank_ms=0, startup_ms=60_000)
        runner = MatchRunner(
            server, specs, ONE_ROUND, seed=11, clock=clock, strike_limit=10, out_dir=tmp_path
        )
        alice = Client(server.address, specs[1].token)
        bob = Client(server.address, specs[2].token)
        seen: dict[str, Any] = {"bob": []}
        bob_waits = asyncio.Event()
        alice_tried = asyncio.Event()

        async def answer_lowest(client: Client, name: str) -> None:
            while (msg := await client.call.read()) is not grpc.aio.EOF:
                if msg.HasField("request"):
                    if name == "bob":
                        seen["bob"].append(msg.request)
                        if len(seen["bob"]) == 3:
                            bob_waits.set()
                            await alice_tried.wait()
                    await client.send(msg.request.request_id, lowest_of(msg.request))

        async def impersonate() -> None:
            # From Alice's stream, answer Bob's pending request and his first (older than
            # Alice's latest) with his highest card: neither may count for Bob.
            await bob_waits.wait()
            pending = seen["bob"][2]
            await alice.send(pending.request_id, [max(pending.view.hand)])
            await alice.send(seen["bob"][0].request_id, [max(pending.view.hand)])
            await wait_until(lambda: len(runner.seats[1].faults) == 2)
            alice_tried.set()

        async def clients() -> None:
            assert (await alice.open()).HasField("welcome")
            # A second stream with Alice's token is refused while hers is attached.
            twin = Client(server.address, specs[1].token)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await twin.open()
            seen["twin"] = (refused.value.code(), refused.value.details())
            await twin.close()
            assert (await bob.open()).HasField("welcome")
            await asyncio.gather(
                answer_lowest(alice, "alice"), answer_lowest(bob, "bob"), impersonate()
            )

        try:
            playing = asyncio.ensure_future(clients())
            result = await runner.run()
            async with asyncio.timeout(10):
                await playing
            # The match is over: its tokens open nothing any more.
            late = Client(server.address, specs[2].token)
            with pytest.raises(grpc.aio.AioRpcError) as gone:
                await late.open()
            seen["late"] = gone.value.code()
            await late.close()
        finally:
            await alice.close()
            await bob.close()
            await server.stop(0.5)
        return result, seen

    result, seen = run(scenario())
    lines = finished(result, marker, faulty={1})
    code, details = seen["twin"]
    assert code is grpc.StatusCode.ALREADY_EXISTS
    assert "one stream per seat" in details
    assert seen["late"] is grpc.StatusCode.UNAUTHENTICATED
    # Both answers Alice sent for Bob name requests never sent to her: unknown, a strike each.
    faults = result.seats[1].faults
    assert [f.reason for f in faults] == [FaultReason.UNKNOWN_REQUEST_ID] * 2
    assert [f.request_id for f in faults] == [seen["bob"][2].request_id, seen["bob"][0].request_id]
    assert [f.strikes for f in faults] == [1, 2]
    # Bob played his own lowest cards; nothing Alice sent was applied for him.
    assert check_decisions(lines, lowest_seats=[0, 1, 2]) == []


def test_faults_of_a_seat_reach_only_that_seat(tmp_path: Path, marker: str) -> None:
    watch = tmp_path / "watch.capture"
    illegal = bot("illegal_bot.py", marker, env={"ILLEGAL_AT": "2"})
    watcher = bot("lowest_bot.py", marker, env={"CAPTURE": str(watch)})
    lowest = bot("lowest_bot.py", marker)
    result = run(play_match([illegal, watcher, lowest], ONE_ROUND, out_dir=tmp_path, seed=3))
    finished(result, marker, faulty={0})
    assert reasons(result, 0) == [FaultReason.ILLEGAL_CARD_NOT_IN_HAND]
    assert not any(e.HasField("fault") for m in read_capture(watch) for e in m.events)


def test_a_stream_that_attaches_after_its_handshake_failed_ends_with_the_match(
    tmp_path: Path,
) -> None:
    async def play_lowest(client: Client) -> None:
        # In-process seats connect at once on a quiet machine; a loaded one may hold the
        # test's process back for a second: the startup time is ten times that.
        assert (await client.open()).HasField("welcome")
        while (msg := await client.call.read()) is not grpc.aio.EOF:
            if msg.HasField("request"):
                await asyncio.sleep(0.005)
                await client.send(msg.request.request_id, lowest_of(msg.request))

    async def scenario() -> tuple[MatchResult, list[Any]]:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        specs = [BotSpec(name, token=f"token-{name}-{new_marker()}") for name in "abc"]
        clock = Clock(decision_ms=10_000, time_bank_ms=0, startup_ms=10_000)
        runner = MatchRunner(server, specs, ONE_ROUND, clock=clock, out_dir=tmp_path)
        clients = [Client(server.address, spec.token) for spec in specs]
        seen: list[Any] = []

        async def attach_late(late: Client) -> None:
            await wait_until(lambda: runner.seats[1].faults)
            seen.append(await late.open())
            while (msg := await late.call.read()) is not grpc.aio.EOF:
                seen.append(msg)
            seen.append(await late.call.code())

        try:
            playing = asyncio.gather(
                play_lowest(clients[0]), attach_late(clients[1]), play_lowest(clients[2])
            )
            result = await runner.run()
            # The late stream ends when the match does, not only when the server stops.
            async with asyncio.timeout(30):
                await playing
        finally:
            for client in clients:
                await client.close()
            await server.stop(0.5)
        return result, seen

    result, seen = run(scenario())
    lines = check_finished(result)
    assert reasons(result, 0) == reasons(result, 2) == []
    assert reasons(result, 1) == [FaultReason.HANDSHAKE_FAILED]
    assert seen[0].HasField("welcome")
    assert not any(m.HasField("request") for m in seen[1:-1])
    assert seen[-1] is grpc.StatusCode.OK
    check_decisions(lines, lowest_seats=[0, 2])
