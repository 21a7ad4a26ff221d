"""A warm pool's rules, with real bot processes on a real loopback server: a process is
never dealt one deal twice, the bounds stop idle processes (least recently used first,
never one serving a match), idle ones stop after their time, retired bots stop, and a
process that dies is counted and replaced."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from bots.harness import BOTS_DIR, assert_no_processes, new_marker, run

from referee.jail.bots import BotSpec
from referee.match.metrics import RefereeMetrics
from referee.match.pool import BotPool, Bounds, memory_bytes, pool_key
from referee.match.server import RefereeServer

pytestmark = pytest.mark.timeout(180)


def _spec(marker: str, name: str = "lowest", seats: int = 1, folder: Path = BOTS_DIR) -> BotSpec:
    return BotSpec(
        name=name,
        command=(sys.executable, "lowest_bot.py", f"--marker={marker}"),
        workdir=folder,
        seats=seats,
    )


async def _with_pool(
    tmp_path: Path, bounds: Bounds, test: Callable[[BotPool], Awaitable[None]]
) -> None:
    server = RefereeServer()
    await server.start("127.0.0.1", 0)
    pool = BotPool(server, tmp_path / "logs", startup_s=15, bounds=bounds)
    try:
        async with asyncio.timeout(120):
            await test(pool)
    finally:
        await pool.close()
        await server.stop(0.2)


async def _ended(bot: object) -> None:
    """Until the process of a lent or idle bot has ended (the pool stops it)."""
    process = bot.process  # type: ignore[attr-defined]
    await asyncio.wait_for(process.proc.wait(), 30)


def test_duplicate_seatings_of_one_deal_never_share_a_process(tmp_path: Path) -> None:
    marker = new_marker()
    spec = _spec(marker, seats=2)

    async def check(pool: BotPool) -> None:
        # The first seating of deal 7; the second seating runs beside it.
        a = await pool.acquire(spec, "deal7-rotation0", deal_seed=7)
        b = await pool.acquire(spec, "deal7-rotation1", deal_seed=7)
        assert b.process is not a.process, "a process with a free stream, but dealt 7 once"
        pool.release(a)
        pool.release(b)
        # A third seating of deal 7 later: both processes have seen it, so a third starts.
        c = await pool.acquire(spec, "deal7-rotation2", deal_seed=7)
        assert c.process not in (a.process, b.process)
        pool.release(c)
        # Another deal takes any warm process.
        d = await pool.acquire(spec, "deal8", deal_seed=8)
        assert d.process in (a.process, b.process, c.process)
        assert pool.started == 3
        pool.release(d)

    run(_with_pool(tmp_path, Bounds(), check))
    assert_no_processes(marker)


def test_a_new_folder_is_a_new_bot_for_the_pool(tmp_path: Path) -> None:
    # A league entry's new submission (its code in another folder) never gets the old
    # submission's processes, though its name is the same.
    marker = new_marker()
    copy = Path(tempfile.mkdtemp(prefix="pool-warm-", dir="/tmp"))  # the bots' uids read it
    copy.chmod(0o755)
    for name in ("lowest_bot.py", "botlib.py"):
        shutil.copy(BOTS_DIR / name, copy / name)
    old, new = _spec(marker), _spec(marker, folder=copy)
    assert pool_key(old) != pool_key(new)

    async def check(pool: BotPool) -> None:
        a = await pool.acquire(old, "m1")
        pool.release(a)
        b = await pool.acquire(new, "m2")
        assert b.process is not a.process
        pool.release(b)

    try:
        run(_with_pool(tmp_path, Bounds(), check))
    finally:
        shutil.rmtree(copy)
    assert_no_processes(marker)


def test_the_bounds_stop_the_least_recently_used_idle_process_never_a_lent_one(
    tmp_path: Path,
) -> None:
    marker = new_marker()
    x, y, z = (_spec(marker, name) for name in "xyz")

    async def check(pool: BotPool) -> None:
        a = await pool.acquire(x, "m1")
        pool.release(a)
        b = await pool.acquire(y, "m2")
        pool.release(b)
        assert pool.processes() == 2
        # A third bot: x, the least recently used, makes room.
        c = await pool.acquire(z, "m3")
        await _ended(a)
        assert b.process.returncode is None
        assert pool.processes() == 2 and pool.stopped == {"room": 1}
        # z lent, y idle: x again makes y go; then y again finds nothing idle to stop.
        d = await pool.acquire(x, "m4")
        await _ended(b)
        e = await pool.acquire(y, "m4")
        assert pool.processes() == 3, "lent processes stay, whatever the bounds"
        assert c.process.returncode is None
        pool.release(c)  # z idle now, and the pool one over its bound: z goes
        await _ended(c)
        assert d.process.returncode is None and e.process.returncode is None
        assert pool.processes() == 2 and pool.stopped == {"room": 3}
        pool.release(d)
        pool.release(e)
        assert pool.lost == {}, "stopped by the pool: none of them lost"

    run(_with_pool(tmp_path, Bounds(processes=2), check))
    assert_no_processes(marker)


def test_the_memory_bound_counts_what_the_processes_use(tmp_path: Path) -> None:
    marker = new_marker()
    x, y = _spec(marker, "x"), _spec(marker, "y")

    async def check(pool: BotPool) -> None:
        a = await pool.acquire(x, "m1")
        used = memory_bytes(a.process)
        assert 1 << 20 < used < 1 << 30, used  # a Python interpreter with gRPC
        assert pool.memory_mb() == pytest.approx(used / (1 << 20), rel=0.5)
        pool.release(a)
        # One MiB: no second process fits beside an idle one, which stops first.
        b = await pool.acquire(y, "m2")
        await _ended(a)
        assert pool.stopped == {"room": 1}
        pool.release(b)

    run(_with_pool(tmp_path, Bounds(memory_mb=1), check))
    assert_no_processes(marker)


def test_an_idle_process_stops_after_its_time_and_the_next_match_starts_one(
    tmp_path: Path,
) -> None:
    marker = new_marker()
    spec = _spec(marker)

    async def check(pool: BotPool) -> None:
        a = await pool.acquire(spec, "m1")
        await asyncio.sleep(0.5)  # lent: its idle time has not begun
        assert a.process.returncode is None
        pool.release(a)
        await _ended(a)
        assert pool.stopped == {"idle": 1} and pool.processes() == 0
        b = await pool.acquire(spec, "m2")
        assert b.process is not a.process and pool.started == 2
        pool.release(b)

    run(_with_pool(tmp_path, Bounds(idle_s=0.3), check))
    assert_no_processes(marker)


def test_retired_bots_stop_idle_at_once_and_lent_when_their_match_ends(tmp_path: Path) -> None:
    marker = new_marker()
    x, y = _spec(marker, "x", seats=2), _spec(marker, "y")

    async def check(pool: BotPool) -> None:
        lent = await pool.acquire(x, "m1")
        idle = await pool.acquire(y, "m1")
        pool.release(idle)
        assert pool.retire(lambda spec: spec.name == "keep") == 2
        await _ended(idle)
        # x plays its match on; its other stream is not lent meanwhile.
        assert lent.process.returncode is None and lent.alive
        other = await pool.acquire(x, "m2")
        assert other.process is not lent.process
        pool.release(lent)
        await _ended(lent)
        pool.release(other)
        assert pool.lost == {} and pool.stopped == {"retired": 2}

    run(_with_pool(tmp_path, Bounds(), check))
    assert_no_processes(marker)


def test_a_process_that_dies_is_counted_lost_and_replaced_and_the_metrics_say_so(
    tmp_path: Path,
) -> None:
    marker = new_marker()
    spec = _spec(marker)
    metrics = RefereeMetrics()

    def value(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    async def check(pool: BotPool) -> None:
        metrics.watch_pool(lambda: pool)
        assert value("sticheln_warm_bot_processes", state="idle") == 0
        a = await pool.acquire(spec, "m1")
        assert value("sticheln_warm_bot_processes", state="serving") == 1
        memory = value("sticheln_warm_bot_memory_bytes", bot="lowest")
        assert memory is not None and memory > 1 << 20, "a Python process holds over 1 MiB"
        pool.release(a)
        assert value("sticheln_warm_bot_processes", state="idle") == 1
        again = await pool.acquire(spec, "m2")
        assert again is a, "the warm process serves the next match"
        pool.release(a)
        os.killpg(a.process.proc.pid, signal.SIGKILL)
        await a.process.proc.wait()
        b = await pool.acquire(spec, "m3")
        assert b.process is not a.process and b.alive
        while not pool.lost:  # the dead one is discarded in the background
            await asyncio.sleep(0.02)
        assert pool.lost == {"lowest": 1} and pool.stopped == {}
        assert value("sticheln_warm_bot_restarts_total", bot="lowest") == 1
        assert value("sticheln_warm_bot_starts_total") == 2
        assert value("sticheln_warm_bot_seatings_total", process="fresh") == 2
        assert value("sticheln_warm_bot_seatings_total", process="warm") == 1
        assert value("sticheln_warm_bot_processes", state="serving") == 1
        assert value("sticheln_warm_bot_stops_total", why="idle") == 0
        pool.release(b)

    run(_with_pool(tmp_path, Bounds(), check))
    assert_no_processes(marker)
