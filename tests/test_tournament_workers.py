"""Referee worker processes: the same results as one process, a dead worker's match played
again, and the connected-bots gauge."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from bots.harness import run
from prometheus_client import CollectorRegistry
from test_tournament import _has_marker, finished, league, marker_of, standings

from referee.match.dealkey import DealKey
from referee.match.metrics import RefereeMetrics
from referee.match.server import RefereeServer
from referee.tournament.config import load_config
from referee.tournament.run import run_tournament
from sticheln.v1 import bot_pb2


def _workers(marker: str) -> list[int]:
    return [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit()
        and _has_marker(p, marker)
        and b"referee.tournament.worker" in (p / "cmdline").read_bytes()
    ]


def _parent(pid: int) -> int:
    try:
        return int((Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split())[1])
    except (OSError, IndexError, ValueError):
        return 0


@pytest.mark.timeout(240)
def test_worker_processes_give_the_results_of_one_process(tmp_path: Path) -> None:
    one = load_config(league(tmp_path, "one", parallel=2))
    two = load_config(league(tmp_path, "two", parallel=2))
    registry = CollectorRegistry()
    key = DealKey.new()  # equal results need equal deals
    a = asyncio.run(run_tournament(one, progress=False, workers=1, deal_key=key))
    b = asyncio.run(
        run_tournament(
            two, metrics=RefereeMetrics(registry), progress=False, workers=2, deal_key=key
        )
    )
    assert a.finished == b.finished == 12
    assert standings(one.out) == standings(two.out)

    def rows(out: Path) -> list[list[str]]:
        lines = (out / "results.csv").read_text().splitlines()[1:]
        cells = [line.split(",") for line in lines]
        return [[c[1], *c[3:]] for c in cells]  # without the tournament name and match ids

    assert rows(one.out) == rows(two.out)
    # The workers' metric events reached this process's registry.
    assert registry.get_sample_value("sticheln_tricks_total") == 12 * 3 * 14
    assert registry.get_sample_value("sticheln_connected_bots") == 0
    assert b.referee_cpu_s > 0
    assert not _workers(str(tmp_path))


@pytest.mark.timeout(240)
def test_a_tournament_that_is_process_1_starts_its_workers_and_their_bots(
    tmp_path: Path,
) -> None:
    # A container's entry point is process 1; its workers and bots once took their parent
    # for init (gone) and exited before playing.
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a PID namespace of its own needs root and util-linux's unshare")
    path = league(tmp_path, "p", parallel=2)
    done = subprocess.run(
        [
            *("unshare", "--pid", "--fork", "--mount-proc", "--kill-child"),
            *(sys.executable, "-m", "referee.cli", "tournament", str(path), "--workers", "2"),
        ],
        capture_output=True,
        timeout=200,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert b"12/12 matches finished" in done.stdout, done.stdout.decode()[-2000:]


@pytest.mark.timeout(240)
def test_a_killed_worker_loses_only_its_match_which_is_played_again(tmp_path: Path) -> None:
    path = league(tmp_path, "w", parallel=2, matches_per_table=4)
    db = tmp_path / "out-w" / "tournament.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee.cli", "tournament", str(path), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + 120
    while not (db.exists() and finished(db) >= 2):
        assert proc.poll() is None, "the tournament ended before a worker could be killed"
        assert time.monotonic() < deadline, "no match finished in time"
        time.sleep(0.05)  # polling the database for a condition, not waiting out a race
    # The tournament's own children: a worker's fork that has not yet become a bot has
    # the worker's command line for a moment.
    victims = [pid for pid in _workers(str(tmp_path)) if _parent(pid) == proc.pid]
    assert len(victims) == 2
    os.kill(victims[0], signal.SIGKILL)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()
    assert b"16/16 matches finished" in out
    # The killed worker's match, when it had one at that moment, was played again (a
    # worker between two matches loses none); either way every match is stored once.
    if b"died" in err:
        assert b"match_replayed" in err
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        dupes = con.execute(
            "SELECT COUNT(*) FROM (SELECT idx, seat FROM results GROUP BY idx, seat HAVING COUNT(*) > 1)"
        ).fetchone()[0]
    assert rows == 16 * 3 and dupes == 0
    assert not [
        p
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _has_marker(p, marker_of(tmp_path))
    ]


def test_connected_bots_gauge_follows_streams() -> None:
    registry = CollectorRegistry()
    metrics = RefereeMetrics(registry)

    def connected() -> float | None:
        return registry.get_sample_value("sticheln_connected_bots")

    async def main() -> None:
        server = RefereeServer(observer=metrics)
        await server.start("127.0.0.1", 0)
        slot = server.registry.open_seat("m", 0, "bot", "seat-token")
        try:
            async with grpc.aio.insecure_channel(server.address) as channel:
                call = channel.stream_stream(
                    "/sticheln.v1.Referee/Play",
                    request_serializer=bot_pb2.BotMessage.SerializeToString,
                    response_deserializer=bot_pb2.RefereeMessage.FromString,
                )()
                hello = bot_pb2.Hello(protocol_version=1, token="seat-token", bot_name="bot")
                await call.write(bot_pb2.BotMessage(hello=hello))
                welcome = await call.read()
                assert welcome.WhichOneof("kind") == "welcome"
                await asyncio.wait_for(slot.attached.wait(), 10)
                assert connected() == 1
                await call.done_writing()
                assert slot.stream is not None
                await asyncio.wait_for(slot.stream.closed.wait(), 10)
                async with asyncio.timeout(10):
                    while connected() != 0:
                        await asyncio.sleep(0.01)  # the handler's finally runs after the close
        finally:
            await server.stop(0.2)

    run(main())
    assert connected() == 0
