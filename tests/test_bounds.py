"""Bounds per bot, not per process: a cgroup for each started bot, its output capped.

The limits' values are tested on their own (:func:`referee.jail.cgroups.settings`); every
other test plays a real match with real bot processes in the sandbox, one of them
``tests/bots/hog_bot.py`` (a fork bomb, a memory hog, a CPU hog, a log flood, a 2 GiB
``fallocate``), and checks that the hog is held while the other seats finish normally and
that nothing of it is left running. The last test forces the fallback (no cgroup can be
made) and checks the one line said at start and the resource limits that stand in.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bots.harness import (
    BOTS_DIR,
    READ_BOTS,
    assert_no_processes,
    bot,
    bot_commands,
    check_finished,
    collect_reports,
    new_marker,
    play_match,
    run,
    toml_text,
)
from machine import stretched

from referee.jail import cgroups, gvisor
from referee.jail.botlog import BotLog, truncation_line
from referee.jail.bots import Limits
from referee.jail.sandbox import Sandbox
from referee.match.runner import Clock, MatchResult
from referee.match.server import RefereeServer

# A hog spins on every core it can: the other tests are not run beside it. The honest
# seats' short clock is how a hog that escaped its bounds would show: the tests judge
# timing, on a machine no other work holds busy.
pytestmark = [pytest.mark.timeout(240), pytest.mark.serial, pytest.mark.quiet]

#: The clock of every match here: short, as in the rest of the suite.
CLOCK = Clock(decision_ms=300, time_bank_ms=0, startup_ms=15_000)
#: The CPU time an honest bot spends on each decision beside a CPU hog: a tenth of its
#: clock, in milliseconds (it answers in time with a tenth of one core of its own).
THINK_CPU_MS = 30
#: The sandbox tiers a hog is tried in: gvisor where runsc runs here (installed, a root
#: referee), and skipped with the reason otherwise. The bounds are the same cgroup, which
#: in the gVisor tier holds the application kernel (runsc) and the bot together.
TIERS = [
    "bubblewrap",
    pytest.param(
        "gvisor",
        marks=pytest.mark.skipif(bool(gvisor.missing()), reason=gvisor.missing() or "-"),
    ),
]


def _cgroups() -> cgroups.Cgroups:
    found = cgroups.system()
    if not isinstance(found, cgroups.Cgroups):
        pytest.skip(f"this host cannot make a cgroup per bot: {found}")
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark, within=10)


def _play(
    tmp_path: Path,
    marker: str,
    hog: str,
    limits: dict[str, Any],
    think_cpu_ms: int = 0,
    tier: str = "bubblewrap",
    **env: str,
) -> MatchResult:
    """A match of two honest bots (spending ``think_cpu_ms`` of CPU on each decision) and
    the hog (seat 2), every bot in sandbox ``tier``; the hog's reports are collected."""
    report = tmp_path / "report.txt"
    think = {"THINK_CPU_MS": str(think_cpu_ms)}
    honest = [bot("hog_bot.py", marker, name=f"honest{i}", env=think) for i in range(2)]
    hog_bot = bot(
        "hog_bot.py", marker, env={"HOG": hog, "HOG_REPORT": str(report), **env}, limits=limits
    )

    async def main() -> MatchResult:
        server = RefereeServer(sandbox=Sandbox(tier))
        await server.start("127.0.0.1", 0)
        try:
            return await play_match(
                [*honest, hog_bot], out_dir=tmp_path / "out", clock=CLOCK, server=server
            )
        finally:
            await server.stop(0.5)

    result = run(main())
    collect_reports(tmp_path / "out")
    return result


def _report(tmp_path: Path) -> list[str]:
    path = tmp_path / "report.txt"
    return path.read_text().splitlines() if path.exists() else []


def _honest_finished(result: MatchResult) -> None:
    check_finished(result)
    for seat in result.seats[:2]:
        assert not seat.faults, [f.detail for f in seat.faults]


def _no_groups_left(system: cgroups.Cgroups) -> None:
    for subtree in system.subtrees:
        assert not subtree.exists() or not [p for p in subtree.iterdir() if p.is_dir()]
        # A bot's group with the cpu controller sits beside the subtree.
        assert not list(subtree.parent.glob(f"{subtree.name}-bot-*"))


# -- the limits' values --------------------------------------------------------------------


def test_cgroup_v2_settings_bound_memory_without_swap_processes_and_cpu() -> None:
    written = {
        s.file: s.value for s in cgroups.settings(Limits(memory_mb=512, processes=64, cpus=0.5), 2)
    }
    assert written == {
        "memory.max": str(512 << 20),
        "memory.swap.max": "0",
        "memory.oom.group": "1",
        "pids.max": "64",
        "cpu.weight": "100",
        "cpu.max": "50000 100000",
    }


def test_no_quota_by_default_only_the_equal_weight() -> None:
    # A quota holds a busy bot back while cores fall idle; the weight alone keeps seats fair.
    assert Limits().cpus == 0
    v2 = {s.file: s.value for s in cgroups.settings(Limits(), 2)}
    assert (v2["cpu.max"], v2["cpu.weight"]) == ("max 100000", "100")
    v1 = {s.file: s.value for s in cgroups.settings(Limits(), 1)}
    assert (v1["cpu.cfs_quota_us"], v1["cpu.shares"]) == ("-1", "1024")


def test_cgroup_v1_settings_cover_memory_and_swap_and_set_the_limit_before_the_sum() -> None:
    settings = cgroups.settings(Limits(memory_mb=256, processes=32, cpus=2.0), 1)
    files = [s.file for s in settings]
    assert files.index("memory.limit_in_bytes") < files.index("memory.memsw.limit_in_bytes")
    written = {s.file: s.value for s in settings}
    assert written["memory.limit_in_bytes"] == written["memory.memsw.limit_in_bytes"]
    assert written["memory.limit_in_bytes"] == str(256 << 20)
    assert written["pids.max"] == "32"
    assert written["cpu.shares"] == "1024"
    assert (written["cpu.cfs_quota_us"], written["cpu.cfs_period_us"]) == ("200000", "100000")
    optional = {s.file for s in settings if not s.required}
    assert optional == {"memory.memsw.limit_in_bytes"}


def test_a_bots_cpu_group_sits_beside_the_referee_subtree_and_goes_with_the_bot() -> None:
    system = _cgroups()
    if "cpu" not in system.controllers:
        pytest.skip("this host's cgroups have no cpu controller")
    group = system.make(Limits(cpus=0.5))
    try:
        cpu = next(
            f
            for h, f in zip(system.hierarchies, group.folders, strict=True)
            if "cpu" in h.controllers
        )
        # Beside the referee's subtree: weighed on its own against the referee and the
        # host, not inside one share with the other bots.
        assert cpu.parent == system.subtrees[0].parent
        assert cpu.name.startswith(system.subtrees[0].name + "-bot-")
        quota = "cpu.max" if system.version == 2 else "cpu.cfs_quota_us"
        assert (cpu / quota).read_text().split()[0] == "50000"
    finally:
        run(group.close())
    assert not cpu.exists()
    _no_groups_left(system)


def test_another_referees_groups_under_the_same_process_number_are_not_in_the_way() -> None:
    # Referees in PID namespaces of their own (containers, each one's process 1) share the
    # host's cgroup file system: a group named for the process number alone was already
    # there, and the second referee's bots failed to start with "File exists".
    system = _cgroups()
    other = f"sticheln-referee-{os.getpid()}"
    theirs = [h.own / other for h in system.hierarchies]
    theirs += [h.own / f"{other}-bot-{n}" for h in system.hierarchies for n in range(1, 65)]
    theirs += [h.own / other / f"bot-{n}" for h in system.hierarchies for n in range(1, 65)]
    for folder in theirs:
        folder.mkdir(exist_ok=True)
    try:
        group = system.make(Limits())
        try:
            assert not set(group.folders) & set(theirs)
        finally:
            run(group.close())
    finally:
        for folder in reversed(theirs):
            folder.rmdir()


def test_the_referee_takes_the_shortest_time_slice_for_itself_and_the_bots_it_starts() -> None:
    def slice_ns() -> int | None:
        with open("/proc/thread-self/sched", encoding="ascii") as f:
            for line in f:
                if line.startswith("se.slice"):
                    return int(line.split(":")[1])
        return None

    def in_a_thread() -> None:  # a thread of its own: the test runner's keeps its slice
        if slice_ns() is None or not cgroups.shorten_own_slice():
            seen.append(None)
            return
        child = subprocess.run(
            ["sh", "-c", "grep se.slice /proc/self/sched"], capture_output=True, text=True
        )
        seen.extend([slice_ns(), int(child.stdout.split(":")[1])])

    seen: list[int | None] = []
    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    if seen == [None]:
        pytest.skip("this kernel has no time slice per task (Linux 6.12 and later)")
    assert seen == [cgroups.REFEREE_SLICE_NS, cgroups.REFEREE_SLICE_NS]


def test_an_unknown_cgroup_version_is_refused() -> None:
    with pytest.raises(ValueError, match="version 3"):
        cgroups.settings(Limits(), 3)


def test_the_default_limits_let_a_runtime_start_and_stop_a_fork_bomb() -> None:
    limits = Limits()
    assert 64 <= limits.processes <= 1024  # a JVM's threads fit; 300 children do not
    assert limits.log_mb <= 16
    assert limits.cpus == 0  # no quota: see test_no_quota_by_default_only_the_equal_weight


async def _through_log(log: BotLog, data: bytes) -> None:
    """Write ``data`` into ``log``'s pipe and wait until the referee's side has read it."""

    def write_all() -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(log.write_end, view) :]

    seen = log.written + log.dropped + len(data)
    await asyncio.to_thread(write_all)  # a bot's write may wait for the referee to read
    async with asyncio.timeout(10):
        while log.written + log.dropped < seen:
            await asyncio.sleep(0.001)  # polling the reader's count, within a deadline


def test_a_log_is_capped_per_match_and_keeps_its_tail_when_the_writer_ends(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        log = BotLog(tmp_path / "bot.log", 1 << 20)
        writer = os.dup(log.write_end)
        log.start()  # the referee's copy of the write end is closed; the bot keeps its own
        log.write_end = writer
        log.another_match()
        await _through_log(log, b"a" * (1 << 20) + b"b" * 10)
        log.another_match()  # a pooled bot lent to its next match: as much again
        await _through_log(log, b"c" * 5)
        os.write(writer, b"the end\n")
        os.close(writer)  # the bot ended: what it wrote last is read before the log closes
        await log.finish()

    run(scenario())
    text = (tmp_path / "bot.log").read_bytes()
    line = truncation_line(1 << 20)
    assert text == b"a" * (1 << 20) + line + b"ccccc" + b"the end\n"


# -- real matches --------------------------------------------------------------------------


@pytest.mark.parametrize("tier", TIERS)
def test_a_fork_bomb_is_held_at_pids_max(tmp_path: Path, marker: str, tier: str) -> None:
    system = _cgroups()
    result = _play(tmp_path, marker, "forkbomb", {"processes": 48}, FORKS="400", tier=tier)
    _honest_finished(result)
    forked = [int(x.split()[1]) for x in _report(tmp_path) if x.startswith("forked ")]
    assert forked and forked[0] < 48, _report(tmp_path)
    _no_groups_left(system)


@pytest.mark.parametrize("tier", TIERS)
def test_a_memory_hog_is_killed_alone(tmp_path: Path, marker: str, tier: str) -> None:
    system = _cgroups()
    result = _play(
        tmp_path, marker, "memory", {"memory_mb": 512}, CHILDREN="4", HOLD_MB="300", tier=tier
    )
    _honest_finished(result)
    held = [x for x in _report(tmp_path) if x.startswith("held ")]
    assert len(held) <= 1, held  # four children of a 512 MiB bot cannot hold 300 MiB each
    hog = result.seats[2]
    assert any("killed: memory limit 512 MiB" in f.detail for f in hog.faults), [
        f.detail for f in hog.faults
    ]
    _no_groups_left(system)


def test_a_cpu_hog_cannot_make_an_honest_opponent_time_out(tmp_path: Path, marker: str) -> None:
    _cgroups()
    # The honest bots need CPU for every decision (a search), the hog's 200 spinners take
    # both of the machine's cores if they can. The hog's group weighs as one process, on its
    # own beside the referee and each honest bot's group (not in one share with them).
    result = _play(
        tmp_path, marker, "cpu", {"processes": 512, "cpus": 2.0}, THINK_CPU_MS, SPINNERS="200"
    )
    _honest_finished(result)  # (the hog's spinners take the hog's own time: it may not)


@pytest.mark.parametrize("tier", TIERS)
def test_a_log_flood_is_cut_at_the_cap_with_one_line(
    tmp_path: Path, marker: str, tier: str
) -> None:
    result = _play(tmp_path, marker, "flood", {"log_mb": 1}, FLOOD_MB="300", tier=tier)
    _honest_finished(result)
    log = next((tmp_path / "out" / "logs").glob("*hog*.log"))
    text = log.read_bytes()
    line = truncation_line(1 << 20)
    assert text.count(line) == 1
    # The referee's own first line (what the bot may read), then the bot's output cut at
    # the cap, the line, nothing after it.
    said, _, written = text.partition(b"\n")
    assert said.startswith(b"referee: reads "), said
    assert len(written) == (1 << 20) + len(line)
    assert text.endswith(line)


@pytest.mark.parametrize("tier", TIERS)
def test_fallocate_cannot_reserve_2_gib_on_stdout_or_in_tmp(
    tmp_path: Path, marker: str, tier: str
) -> None:
    result = _play(tmp_path, marker, "fallocate", {}, tier=tier)
    _honest_finished(result)
    said = dict(x.split(": ", 1) for x in _report(tmp_path) if x.startswith("fallocate"))
    assert said["fallocate stdout"].startswith("refused"), said
    assert said["fallocate tmp"] == "refused (No space left on device)", said
    log = next((tmp_path / "out" / "logs").glob("*hog*.log"))
    assert log.stat().st_blocks * 512 < 1 << 20


def _bot_files(
    tmp_path: Path, marker: str, bots: list[tuple[str, str, dict[str, str]]]
) -> list[Path]:
    files = []
    for name, script, env in bots:
        table: dict[str, Any] = {
            "name": name,
            "command": [sys.executable, script, f"--marker={marker}"],
            "workdir": str(BOTS_DIR),
            "env": env,
            "limits": {"processes": 32},
        }
        files.append(tmp_path / f"{name}.toml")
        files[-1].write_text(toml_text(table))
    return files


def test_a_killed_referee_leaves_no_cgroup_and_no_process(tmp_path: Path) -> None:
    system = _cgroups()
    marker = new_marker()
    slow = {"SLEEP_MS": "100"}
    files = _bot_files(
        tmp_path,
        marker,
        [
            ("ann", "lowest_bot.py", slow),
            ("ben", "lowest_bot.py", slow),
            ("bomb", "hog_bot.py", {"HOG": "forkbomb", "FORKS": "400", **slow}),
        ],
    )
    referee = subprocess.Popen(
        [sys.executable, "-m", "referee.cli", "match"]
        + [x for f in files for x in ("--bot", str(f))]
        + list(READ_BOTS)
        # All three in the match at once (the start check would start each alone first).
        + ["--no-preflight"]
        + ["--decision-ms", "3000", "--startup-ms", "15000", "--out", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Each of the three by its process id and script: the bomb's forks alone may
        # number three, and a seat may end before the last one shows.
        seen: dict[int, str] = {}
        deadline = time.monotonic() + stretched(60)
        while time.monotonic() < deadline and (
            list(seen.values()).count("lowest_bot.py") < 2 or "hog_bot.py" not in seen.values()
        ):
            for pid, argv in bot_commands(marker).items():
                script = argv[1] if len(argv) > 1 else ""  # python SCRIPT --marker=...
                if pid not in seen and script in ("lowest_bot.py", "hog_bot.py"):
                    seen[pid] = script
            time.sleep(0.02)  # polling /proc until the bots run, within a deadline
        started = sorted(seen.values())
        assert started.count("lowest_bot.py") == 2 and "hog_bot.py" in started, started
        subtrees = [
            s
            for h in system.hierarchies
            for s in h.own.glob(f"sticheln-referee-{referee.pid}-*")
            if "-bot-" not in s.name and not s.name.endswith("-self")
        ]
        assert len(subtrees) == len(system.hierarchies), subtrees
        assert all(s.is_dir() for s in subtrees)
    finally:
        referee.kill()
        referee.wait()
    assert_no_processes(marker, within=10)
    deadline = time.monotonic() + 10

    def left() -> list[Path]:  # the subtrees and the bots' cpu groups beside them
        return [g for s in subtrees for g in (s, *s.parent.glob(f"{s.name}-bot-*")) if g.exists()]

    while time.monotonic() < deadline and left():
        time.sleep(0.02)  # the watchdog is removing them
    assert not left()


def test_without_a_cgroup_the_referee_says_so_once_and_rlimits_hold(tmp_path: Path) -> None:
    marker = new_marker()
    report = tmp_path / "report.txt"
    files = []
    for name, script, env, limits in (
        ("ann", "lowest_bot.py", {}, {}),
        ("ben", "lowest_bot.py", {}, {}),
        ("bomb", "hog_bot.py", {"HOG": "forkbomb", "FORKS": "400", "HOG_REPORT": str(report)}, {}),
    ):
        table: dict[str, Any] = {
            "name": name,
            "command": [sys.executable, script, f"--marker={marker}"],
            "workdir": str(BOTS_DIR),
            "env": env,
            "limits": {"processes": 32, **limits},
        }
        files.append(tmp_path / f"{name}.toml")
        files[-1].write_text(toml_text(table))
    sandbox = Sandbox()
    # As root each bot runs as a uid leased for it alone, which runs nothing before it.
    before = 0 if sandbox.as_root else cgroups.user_tasks(os.getuid())
    # A folder with no cgroup file system in it: no group can be made.
    env = {**os.environ, cgroups.ROOT_VARIABLE: str(tmp_path)}
    try:
        played = subprocess.run(
            [sys.executable, "-m", "referee.cli", "match"]
            + [x for f in files for x in ("--bot", str(f))]
            + list(READ_BOTS)
            # The bomb goes off as the bot starts: it is to be held in the match, not
            # refused by the start check.
            + ["--no-preflight"]
            + ["--decision-ms", "300", "--startup-ms", "15000", "--out", str(tmp_path / "out")],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
            check=False,
        )
    finally:
        assert_no_processes(marker, within=10)
    said = [x for x in played.stderr.splitlines() if x.startswith("bounds:")]
    assert len(said) == 1 and said[0].startswith("bounds: no cgroup per bot"), played.stderr
    collect_reports(tmp_path / "out")
    forked = [int(x.split()[1]) for x in report.read_text().splitlines() if x.startswith("forked")]
    # RLIMIT_NPROC holds the bot's user at what it ran already plus the bot's allowance
    # (with a little room for the honest bots started beside it under the same user).
    assert forked and forked[0] <= 32 + before + 16, (forked, before)
    if "a uid of its own" in sandbox.describe():
        # RLIMIT_NPROC counts per user: with a uid per bot, the bomb's is not the others'.
        assert played.returncode == 0, played.stderr
        table = [line.split() for line in played.stdout.splitlines()[2:5]]
        assert {row[2] for row in table if row[4] == "0"} >= {"ann", "ben"}, played.stdout
