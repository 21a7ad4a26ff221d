"""The tournament's bot pool: processes kept between matches, and bots that declare
``seats = N`` playing up to N matches at once from one process, never two seats of one
match."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from bots.harness import BOTS_DIR, assert_no_processes, collect_reports, new_marker, run
from test_tournament import marker_of

from referee.config.bots import bot_from_table
from referee.jail.bots import BotConfigError, BotSpec
from referee.jail.sandbox import Sandbox
from referee.match.dealkey import DealKey
from referee.match.pool import BotPool, StartFailed
from referee.match.server import RefereeServer
from referee.tournament.config import load_config
from referee.tournament.run import run_tournament
from referee.tournament.workers import default_workers
from sticheln.v1 import bot_pb2

pytestmark = pytest.mark.timeout(180)


def _league(tmp_path: Path, name: str, parallel: int, seats: int) -> Path:
    """Four deterministic bots at tables of three; every process notes its matches."""
    bots = ""
    for i, script in enumerate(["lowest_bot.py", "highest_bot.py"] * 2):
        bots += (
            f'[[bots]]\nname = "{script.split("_")[0]}{i}"\n'
            f'command = ["{sys.executable}", "{script}", "--marker={marker_of(tmp_path)}"]\n'
            f'workdir = "{BOTS_DIR}"\nseats = {seats}\n'
            f'env = {{ MATCHES = "{tmp_path / (name + ".matches")}" }}\n'
        )
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[tournament]\nname = "{name}"\nseed = 5\ntable_size = 3\nmatches_per_table = 3\n'
        f'parallel = {parallel}\nout = "out-{name}"\n'
        "[clock]\ndecision_ms = 10000\nstartup_ms = 60000\n" + bots
    )
    return path


def _rows(out: Path) -> list[list[str]]:
    lines = (out / "results.csv").read_text().splitlines()[1:]
    return sorted([c[1], *c[3:]] for c in (line.split(",") for line in lines))


def _seatings(tmp_path: Path, name: str) -> tuple[set[str], Counter[tuple[str, str]]]:
    """(the bot processes that played, how often each process was seated in each match)."""
    collect_reports(tmp_path)
    pairs = [
        tuple(line.split())
        for line in (tmp_path / f"{name}.matches").read_text().splitlines()
        if line.strip()
    ]
    return {p for p, _ in pairs}, Counter(pairs)  # type: ignore[misc]


@pytest.mark.parametrize("workers", [1, 2])
def test_bots_with_seats_play_parallel_matches_from_fewer_processes(
    tmp_path: Path, workers: int
) -> None:
    one = load_config(_league(tmp_path, "single", parallel=1, seats=1))
    many = load_config(_league(tmp_path, "multi", parallel=3, seats=3))
    key = DealKey.new()  # one deal key: the same deals in both tournaments
    a = asyncio.run(run_tournament(one, progress=False, workers=1, deal_key=key))
    b = asyncio.run(run_tournament(many, progress=False, workers=workers, deal_key=key))
    assert a.finished == b.finished == 12
    # The same deals and the same deterministic play: the same results.
    assert _rows(one.out) == _rows(many.out)
    single, _ = _seatings(tmp_path, "single")
    multi, seated = _seatings(tmp_path, "multi")
    assert len(single) == 4  # one process per bot, one match at a time
    # One process per bot and referee process: three streams each cover three matches.
    assert len(multi) <= 4 * workers
    # No process ever held two seats of one match.
    assert max(seated.values()) == 1
    assert len({m for _, m in seated}) == 12
    assert_no_processes(marker_of(tmp_path))


def _spec(marker: str, seats: int, tmp_path: Path) -> BotSpec:
    return BotSpec(
        name="lowest",
        command=(sys.executable, "lowest_bot.py", f"--marker={marker}"),
        workdir=BOTS_DIR,
        env={"MATCHES": str(tmp_path / "pool.matches")},
        seats=seats,
    )


async def _with_pool(tmp_path: Path, test) -> None:  # type: ignore[no-untyped-def]
    server = RefereeServer()
    await server.start("127.0.0.1", 0)
    pool = BotPool(server, tmp_path / "logs", startup_s=10)
    try:
        async with asyncio.timeout(60):
            await test(pool)
    finally:
        await pool.close()
        await server.stop(0.2)


def test_a_process_with_seats_lends_its_streams_to_different_matches_only(
    tmp_path: Path,
) -> None:
    marker = new_marker()
    spec = _spec(marker, 2, tmp_path)

    async def check(pool: BotPool) -> None:
        a = await pool.acquire(spec, "m1")
        b = await pool.acquire(spec, "m2")
        # Another match: the process's second stream.
        assert b.process is a.process and b.stream is not a.stream
        pool.release(b)
        # A second seat of match m1 is never the process that already plays in m1.
        c = await pool.acquire(spec, "m1")
        assert c.process is not a.process
        assert pool.started == 2
        # Released streams are lent again, no new process.
        pool.release(a)
        pool.release(c)
        d = await pool.acquire(spec, "m3")
        e = await pool.acquire(spec, "m3")
        assert {d.process, e.process} == {a.process, c.process}
        assert pool.started == 2

    run(_with_pool(tmp_path, check))
    assert_no_processes(marker)


def test_a_crashed_process_with_seats_is_replaced_and_none_is_left(tmp_path: Path) -> None:
    marker = new_marker()
    spec = _spec(marker, 3, tmp_path)

    async def check(pool: BotPool) -> None:
        a = await pool.acquire(spec, "m1")
        pool.release(a)
        os.killpg(a.process.proc.pid, signal.SIGKILL)
        await a.process.proc.wait()
        b = await pool.acquire(spec, "m2")
        assert b.process is not a.process
        assert b.process.returncode is None
        assert pool.started == 2

    run(_with_pool(tmp_path, check))
    assert_no_processes(marker)


def test_a_bot_that_never_connects_fails_every_seat_it_was_to_serve(tmp_path: Path) -> None:
    marker = new_marker()
    spec = BotSpec(
        name="mute",
        command=(sys.executable, "-c", "import time; time.sleep(30)", marker),
        workdir=tmp_path,
        seats=2,
    )

    async def check(pool: BotPool) -> None:
        pool.startup_s = 0.5
        first, second = await asyncio.gather(
            pool.acquire(spec, "m1"), pool.acquire(spec, "m2"), return_exceptions=True
        )
        assert isinstance(first, StartFailed) and isinstance(second, StartFailed)
        assert "no valid handshake within 0.5 s" in str(first)
        assert "(0 of the 2 streams it declares)" in str(first)
        # Both seats waited on the one process, which is stopped.
        assert pool.started == 1
        assert_no_processes(marker)

    run(_with_pool(tmp_path, check))


SECOND_DIES = """\
import os, sys
# The second process started exits before its handshake; the others play.
for name in ("first", "second", "later"):
    try:
        os.close(os.open(os.path.join(os.environ["STARTS"], name), os.O_CREAT | os.O_EXCL))
        break
    except FileExistsError:
        pass
if name == "second":
    sys.exit(3)
os.execv(sys.executable, [sys.executable, "lowest_bot.py", *sys.argv[1:]])
"""


def test_a_started_ahead_process_that_dies_is_replaced_without_a_trace(tmp_path: Path) -> None:
    # compare's single-use pool starts a replacement whenever it lends a process. When
    # that replacement dies before its handshake and no match has asked for it yet, its
    # failure is the pool's to take: no "Task exception was never retrieved" on stderr.
    marker = new_marker()
    (tmp_path / "starts").mkdir()
    (tmp_path / "second_dies.py").write_text(SECOND_DIES)
    spec = BotSpec(
        name="lowest",
        command=(sys.executable, str(tmp_path / "second_dies.py"), f"--marker={marker}"),
        workdir=BOTS_DIR,
        env={"STARTS": str(tmp_path / "starts"), "MATCHES": str(tmp_path / "pool.matches")},
    )
    unretrieved: list[dict[str, object]] = []

    async def check(pool: BotPool) -> None:
        first = await pool.acquire(spec, "m1")
        assert pool.started == 2  # the replacement, started ahead
        while pool._launches:  # until its start has failed
            await asyncio.sleep(0.02)  # polling the pool's state, not waiting out a race
        assert (tmp_path / "starts" / "second").exists()
        gc.collect()  # a task's unretrieved exception is reported when it is collected
        pool.release(first)
        # The next match gets a fresh process in the dead one's place.
        second = await pool.acquire(spec, "m2")
        assert second.process.returncode is None and second.process is not first.process
        pool.release(second)

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        before = loop.get_exception_handler()
        loop.set_exception_handler(lambda _, context: unretrieved.append(context))
        server = RefereeServer(sandbox=Sandbox("none"))  # the bot writes to tmp_path
        await server.start("127.0.0.1", 0)
        pool = BotPool(server, tmp_path / "logs", startup_s=10, single_use=True)
        try:
            async with asyncio.timeout(60):
                await check(pool)
        finally:
            await pool.close()
            await server.stop(0.2)
            gc.collect()
            loop.set_exception_handler(before)

    run(scenario())
    assert not [c for c in unretrieved if isinstance(c.get("exception"), StartFailed)], unretrieved
    assert_no_processes(marker)


def test_a_bot_opening_fewer_streams_than_its_seats_is_stopped_whole(tmp_path: Path) -> None:
    marker = new_marker()
    spec = replace(_spec(marker, 3, tmp_path), env={"OPEN_SEATS": "2"})

    async def check(pool: BotPool) -> None:
        # Two streams open well within it, even on a machine at a load average of 20, where
        # a Python interpreter loading gRPC takes seconds; the test waits it out.
        pool.startup_s = 30.0
        with pytest.raises(StartFailed) as failed:
            await pool.acquire(spec, "m1")
        assert "(2 of the 3 streams it declares)" in str(failed.value)
        # No stream of it is lent later, and the process is gone, so no late stream can
        # be refused and take its siblings down with it.
        assert_no_processes(marker)
        assert not pool._idle.get("lowest")

    run(_with_pool(tmp_path, check))


def test_seats_of_one_match_acquired_at_once_come_from_different_processes(
    tmp_path: Path,
) -> None:
    marker = new_marker()
    spec = _spec(marker, 2, tmp_path)

    async def check(pool: BotPool) -> None:
        # As the match runner does: every seat at once, while the process is starting.
        bots = await asyncio.gather(*(pool.acquire(spec, "m1") for _ in range(4)))
        assert len({b.process for b in bots}) == 4
        assert len({b.stream for b in bots}) == 4
        # Each of the four processes has a second stream, for other matches only.
        more = await asyncio.gather(*(pool.acquire(spec, "m2") for _ in range(4)))
        assert pool.started == 4
        assert {b.process for b in more} == {b.process for b in bots}
        assert len({b.process for b in more}) == 4

    run(_with_pool(tmp_path, check))
    assert_no_processes(marker)


def test_a_closed_idle_stream_does_not_upset_concurrent_acquires(tmp_path: Path) -> None:
    marker = new_marker()
    spec = _spec(marker, 2, tmp_path)

    async def check(pool: BotPool) -> None:
        a = await pool.acquire(spec, "m1")
        b = await pool.acquire(spec, "m2")
        assert a.process is b.process
        pool.release(a)
        pool.release(b)
        # One stream ends while its process (and its other stream) lives on.
        a.stream.end()
        await a.stream.closed.wait()
        c, d = await asyncio.gather(pool.acquire(spec, "m3"), pool.acquire(spec, "m4"))
        assert b in (c, d)
        assert a not in (c, d)
        assert all(x.alive for x in (c, d))

    run(_with_pool(tmp_path, check))
    assert_no_processes(marker)


def test_a_process_that_crashes_while_lent_is_never_lent_again(tmp_path: Path) -> None:
    marker = new_marker()
    spec = _spec(marker, 3, tmp_path)

    async def check(pool: BotPool) -> None:
        a = await pool.acquire(spec, "m1")
        os.killpg(a.process.proc.pid, signal.SIGKILL)
        await a.process.proc.wait()
        await a.stream.closed.wait()
        # Its two idle streams are dead too: a new match gets a fresh process.
        b = await pool.acquire(spec, "m2")
        assert b.process is not a.process and b.alive
        assert pool.started == 2
        pool.release(a)

    run(_with_pool(tmp_path, check))
    assert_no_processes(marker)


def test_one_token_opened_for_two_seats_admits_two_streams_then_refuses() -> None:
    async def main() -> None:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        slots = server.registry.open_seats("pool", 1, "bot", 2)
        token = slots[0].token
        assert all(s.token == token for s in slots)
        hello = bot_pb2.BotMessage(
            hello=bot_pb2.Hello(
                bot_name="bot", protocol_version=bot_pb2.PROTOCOL_VERSION_1, token=token
            )
        )
        try:
            async with grpc.aio.insecure_channel(server.address) as channel:
                calls = []
                for _ in range(3):
                    call = channel.stream_stream(
                        "/sticheln.v1.Referee/Play",
                        request_serializer=bot_pb2.BotMessage.SerializeToString,
                        response_deserializer=bot_pb2.RefereeMessage.FromString,
                    )()
                    calls.append(call)
                for call in calls[:2]:
                    await call.write(hello)
                    assert (await call.read()).HasField("welcome")
                await calls[2].write(hello)
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await calls[2].read()
                assert refused.value.code() is grpc.StatusCode.ALREADY_EXISTS
                # A stream speaking another protocol version is refused for that, and
                # leaves nothing on the seats the other streams hold.
                old = channel.stream_stream(
                    "/sticheln.v1.Referee/Play",
                    request_serializer=bot_pb2.BotMessage.SerializeToString,
                    response_deserializer=bot_pb2.RefereeMessage.FromString,
                )()
                await old.write(
                    bot_pb2.BotMessage(hello=bot_pb2.Hello(protocol_version=0, token=token))
                )
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await old.read()
                assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION
                assert [s.handshake_error for s in slots] == ["", ""]
                assert [s.stream is not None for s in slots] == [True, True]
                # A closed seat is forgotten; the token opens the other one only.
                server.registry.close_seat(slots[0])
                assert server.registry.find(token) is slots[1]
                server.registry.close_seat(slots[1])
                assert server.registry.find(token) is None
                for s in slots:
                    assert s.stream is not None
                    s.stream.end()
        finally:
            await server.stop(0.2)

    run(main())


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"seats": 0}, "seats = 0 is not allowed; allowed: a whole number from 1 to 64"),
        ({"seats": "4"}, "seats = '4' is not allowed; allowed: a whole number from 1 to 64"),
        ({"seats": 65}, "seats = 65 is not allowed"),
        ({"seats": 2, "command": [], "token": "t"}, "'seats' is for a bot the referee starts"),
    ],
)
def test_bad_seats_give_one_line(table: dict[str, object], words: str) -> None:
    data = {"name": "b", "command": ["python3", "b.py"], **table}
    with pytest.raises(BotConfigError) as error:
        bot_from_table(data, source="b.toml")
    assert words in str(error.value)
    assert "\n" not in str(error.value)
    assert str(error.value).startswith("b.toml: ")


def test_seats_are_read_from_a_bot_file() -> None:
    spec = bot_from_table({"name": "b", "command": "python3 b.py", "seats": 8})
    assert spec.seats == 8
    assert bot_from_table({"name": "b", "command": "python3 b.py"}).seats == 1


@pytest.mark.parametrize(
    ("parallel", "cores", "expected"),
    [(4, 2, 1), (1, 8, 1), (4, 8, 4), (8, 8, 7), (3, 1, 1)],
)
def test_default_referee_processes_leave_a_core_to_the_bots(
    parallel: int, cores: int, expected: int
) -> None:
    assert default_workers(parallel, cores) == expected
