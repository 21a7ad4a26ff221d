"""A league of hosted sample bots against the same league of dial-in bots, side by side in
one run, and two league workers against one.

Everything runs on 127.0.0.1, on a SQLite database in a temporary folder. Three
configurations of one league (``--bots`` entries, tables of 4, ``parallel`` 8, the
league's default clock), each measured for ``--seconds`` after ``--warmup``:

- ``dial-in``: the entries, each a process of the Python sample bot
  (``sample_bots/python/heuristic_bot.py``) dialing the league with its token and two
  streams; the league plays their matches itself (up to ``parallel`` at once);
- ``hosted, 1 worker`` and ``hosted, 2 workers``: the same bot submitted to every entry
  (``referee league submit sample_bots/python``, validated in the jail: the start check
  and the check-bot scenarios), ``[hosting] workers = 0``, and one or two ``referee league
  worker`` processes on the same database, in the tier ``--tier`` names (default: the
  strongest this machine has), playing 8 matches at once between them (``--parallel``, as
  the league plays 8 at once), from their warm pools: each hosted bot's jailed process
  serves match after match (docs/hosting.md).

The submissions are validated once, in a setup league (one after another, as the league
validates them: minutes); each hosted configuration then starts from a copy of that
database, with every entry ``playing``.

The CPU a match costs is counted three ways:

- **the machine's**: busy time of every CPU in ``/proc/stat`` over the window, per match
  played. Everything that ran is in it (gVisor's sandboxes too, which escape a
  process's accounting: they are not its waited-for children), and so is any other work
  on the machine: an upper bound, exact only on a quiet machine;
- **the league's own**: the league process (with the children it waited for), each
  worker process itself, and the bots: the dial-in bots' processes, or every process in
  the hosted bots' control groups (a bot's sandbox, runsc's Sentry and gofer included, is
  in its group for the bot's life; a warm bot lives through the window). Other work on the
  machine is not in it.

- **the run's own cgroup**: a ``cpuacct`` group (cgroup v1) the benchmark joins before it
  starts a configuration's processes, so that everything they start is counted in it
  (gVisor's sandboxes too) and nothing else on the machine (:class:`RunGroup`); the
  benchmark's own CPU is taken out. Exact whatever the load; absent on a cgroup-v2-only
  machine.

``--runs N`` measures every configuration N times after one setup (the restart only in
the first) and prints each run's ratios and their medians (``runs=<n>
median_hosted_to_dialin_group=<r> ...``). On a loaded machine give gVisor a longer
``--warmup``: its warm bots start slowly, and a window of few matches says little.

The target: a hosted match (1 worker) at no more than 2 times the CPU of a dial-in match,
printed as met or missed by both counts. Per configuration it also prints matches/s, the
peak resident set (``VmHWM``) of the league and of each worker process, the warm bots'
processes and their memory (their control groups': in the gVisor tier runsc's Sentry and
gofer with the bot) per bot, the machine's load average and the share of CPU time the host
stole (``machine.py``), and what a warm bot costs while no match runs (after the window,
the league stopped and the queue emptied: its sandbox's CPU per second). A window with
few matches charges that idle CPU to them; the target is also printed with it taken out.
Then, with 1 worker, its restart behaviour: one warm bot's
processes are killed (``SIGKILL`` to everything in its control group) in the middle of
the run, and the benchmark prints how many of the following matches faulted, for that
bot and for any other (none should), and how long until that bot finished a match again
from a fresh process.

    .venv/bin/python benchmarks/hosted_league.py --bots 16 --seconds 45 --warmup 10
    .venv/bin/python benchmarks/hosted_league.py --bots 16 --tier bubblewrap
    .venv/bin/python benchmarks/hosted_league.py --pin --bots 16   # a core per worker

``--pin`` gives each worker a core of its own (``taskset``: worker ``i`` and every
process it starts, its sandboxes included, run on CPU ``i``): one worker on one core
against two workers on two, the league process free to run anywhere.

The last line is ``dialin_matches_per_s=<a> hosted1_matches_per_s=<b>
hosted2_matches_per_s=<c> two_workers_ratio=<c/b> dialin_cpu_per_match=<d>
hosted_cpu_per_match=<e> dialin_machine_cpu_per_match=<d'>
hosted_machine_cpu_per_match=<e'> hosted_to_dialin=<e/d> hosted_to_dialin_machine=<e'/d'>
warm_bot_mb=<m> league_peak_mb=<f> worker_peak_mb=<g>``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from league import (  # benchmarks/league.py: the dial-in benchmark's helpers
    ADMIN_TOKEN,
    BenchError,
    _read_line,
    _register,
    _stop,
    _vm_mb,
)
from machine import Busy, RunGroup, Steal, loaded_warning

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_bots" / "python"
REFEREE = [sys.executable, "-m", "referee.cli"]
LEAGUE = "hosted-bench"
BOTS = 50
PARALLEL = 8
TABLE_SIZE = 4
VALIDATION_TIMEOUT_S = 3600.0
TARGET_TWO_WORKERS = 1.7
#: A hosted match at most this many times the CPU of a dial-in one (issue 40).
TARGET_HOSTED = 2.0
#: How long the warm bots' idle CPU is measured, seconds.
IDLE_S = 10.0
#: How long the restart measurement waits for the killed bot to play again.
RESTART_WAIT_S = 120.0
CGROUPS = Path("/sys/fs/cgroup")
#: Folders made outside the run's temporary folder (code folders must be traversable by
#: the bots' uids, which pytest-style private folders are not); removed at the end.
MADE: list[Path] = []


def _made(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    MADE.append(folder)
    return folder


def _cpu_s(pid: int, children: bool = True) -> float:
    """User+system CPU seconds of a live process, and of its children it has waited for
    (``children``), 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11 : 15 if children else 13]) / os.sysconf("SC_CLK_TCK")


def _own_groups(pid: int) -> dict[str, str]:
    """A process's control group per controller (``""``: cgroup v2's)."""
    out: dict[str, str] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            out[c.removeprefix("name=")] = path
    return out


def bot_groups(pid: int, controller: str) -> dict[str, Path]:
    """The control groups of the bots a referee process ``pid`` started, by name
    (``bot-N``), in the hierarchy of ``controller`` (``referee.jail.cgroups``: under the
    referee's subtree ``sticheln-referee-PID-…``, or beside it where the group has the
    CPU controller)."""
    own = _own_groups(pid)
    if controller in own:
        root = CGROUPS / controller
        if not root.exists():  # cpu and cpuacct share one mount, by either name
            found = [m for m in CGROUPS.glob(f"*{controller}*") if m.is_dir()]
            root = found[0] if found else root
        base = root / own[controller].lstrip("/")
    else:
        base = CGROUPS / own.get("", "/").lstrip("/")
    out: dict[str, Path] = {}
    for folder in base.glob(f"sticheln-referee-{pid}-*"):
        if "-bot-" in folder.name:
            out["bot-" + folder.name.rsplit("-bot-", 1)[1]] = folder
        else:
            out.update({g.name: g for g in folder.glob("bot-*")})
    return out


def bots_cpu_s(pid: int) -> float:
    """CPU seconds of the bots of ``pid`` alive now: every process in their groups (in the
    gVisor tier runsc's Sentry and gofer too), each with the children it waited for. (The
    referee makes no ``cpuacct`` group per bot; a warm bot lives through the window.)"""
    total = 0.0
    groups = bot_groups(pid, "memory") or bot_groups(pid, "pids")
    for folder in groups.values():
        with contextlib.suppress(OSError):
            for task in (folder / "cgroup.procs").read_text().split():
                total += _cpu_s(int(task))
    return total


def bots_memory_mb(pid: int) -> list[float]:
    """The memory each bot group of ``pid`` uses now, MB."""
    out = []
    for folder in bot_groups(pid, "memory").values():
        for name in ("memory.usage_in_bytes", "memory.current"):
            with contextlib.suppress(OSError, ValueError):
                out.append(int((folder / name).read_text()) / 1e6)
                break
    return out


@dataclass
class Figures:
    name: str
    matches_per_s: float = 0.0
    league_peak_mb: float = 0.0
    worker_peak_mb: list[float] = field(default_factory=list)
    league_cpu: float = 0.0
    worker_cpu: list[float] = field(default_factory=list)
    bots_cpu: float = 0.0
    steal_percent: float = 0.0
    load: float = 0.0
    #: CPU seconds of every process of the league (league, workers and their bots, or
    #: the dial-in bots) per match played: what a match costs, whatever the load.
    cpu_per_match: float = 0.0
    #: Cores the whole machine kept busy in the window, and per match played: an upper
    #: bound where the accounting above misses processes (gVisor's sandboxes are not
    #: the waited-for children of the worker that starts them).
    machine_cores: float = 0.0
    machine_cpu_per_match: float = 0.0
    #: CPU seconds per match of everything the configuration started, by its own
    #: ``cpuacct`` group (:class:`RunGroup`): exact whatever else the machine runs.
    group_cpu_per_match: float = 0.0
    #: The workers' warm bot processes at the end of the window, and their memory.
    warm_bots: int = 0
    warm_bot_mb: float = 0.0
    #: A warm bot's CPU while no match runs, in cores.
    idle_cores_per_bot: float = 0.0
    #: What a match's live lines cost in the database: rows and KB per match (medians).
    live_rows: float = 0.0
    live_kb: float = 0.0

    def line(self) -> str:
        workers = ", ".join(
            f"{mb:.0f} MB peak, {cpu:.2f} cores"
            for mb, cpu in zip(self.worker_peak_mb, self.worker_cpu, strict=True)
        )
        bots = f"; bot processes {self.bots_cpu:.2f} cores" if self.bots_cpu else ""
        if self.warm_bots:
            bots += f" ({self.warm_bots} warm, {self.warm_bot_mb:.0f} MB each)"
        if self.idle_cores_per_bot:
            bots += f"; idle, {self.idle_cores_per_bot * 1000:.1f} ms of CPU a second per bot"
        if self.live_rows:
            bots += f"; live lines {self.live_rows:.0f} rows, {self.live_kb:.0f} KB a match"
        return (
            f"{self.name:18s} {self.matches_per_s:5.2f} matches/s; league {self.league_peak_mb:.0f}"
            f" MB peak, {self.league_cpu:.2f} cores"
            + (f"; workers: {workers}" if workers else "")
            + f"{bots}; {self.cpu_per_match:.2f} CPU s per match (2 cores to itself: "
            f"{2 / self.cpu_per_match if self.cpu_per_match else float('nan'):.1f} matches/s); "
            f"the machine {self.machine_cores:.2f} cores busy, "
            f"{self.machine_cpu_per_match:.3f} CPU s per match; "
            f"the run's own cgroup {self.group_cpu_per_match:.3f} CPU s per match; "
            f"load {self.load:.1f}, {self.steal_percent:.1f}% of the CPU stolen"
        )


def league_file(folder: Path, hosting: bool) -> Path:
    path = folder / "league.toml"
    lines = [
        "[league]",
        f'name = "{LEAGUE}"',
        "seed = 1",
        f"table_size = {TABLE_SIZE}",
        f"parallel = {PARALLEL}",
        f'out = "{folder / "out"}"',
        f'database = "{folder / "league.db"}"',
        'host = "127.0.0.1"',
        "port = 0",
        "shutdown_grace_s = 0",
    ]
    if hosting:
        code = _made("hosted-bench-code-")
        lines += [
            "[hosting]",
            "enabled = true",
            f'code_dir = "{code / "code"}"',
            "workers = 0",
            "submissions_per_day = 1000",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


class League:
    """A ``referee serve`` of a league file; stopped with SIGTERM."""

    def __init__(self, config: Path) -> None:
        self.log = config.parent / "serve.log"
        self.proc = subprocess.Popen(
            [*REFEREE, "serve", "--config", str(config), "--log-level", "warning"],
            stdout=subprocess.PIPE,
            stderr=self.log.open("ab"),
            env={**os.environ, "STICHELN_ADMIN_TOKEN": ADMIN_TOKEN},
            cwd=ROOT,
        )
        first = _read_line(self.proc, 180, "the league", self.log)
        self.address = first.rsplit(" ", 1)[1]

    def stop(self) -> None:
        _stop(self.proc, signal.SIGTERM, 60)


def finished(database: Path) -> int:
    con = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        row = con.execute(
            "SELECT COUNT(*) FROM matches WHERE tournament = ? AND status = 'finished'", (LEAGUE,)
        ).fetchone()
        return int(row[0])
    finally:
        con.close()


def latest(database: Path) -> dict[str, str]:
    """The status of each entry's latest submission."""
    con = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute(
            "SELECT bot, status FROM league_submissions s WHERE number = "
            "(SELECT MAX(number) FROM league_submissions WHERE bot = s.bot)"
        )
        return {bot: status for bot, status in rows.fetchall()}
    finally:
        con.close()


#: A submission refused in validation (a loaded machine can time a check-bot scenario
#: out) is submitted again, this many times at most.
RESUBMIT = 3


def setup_hosted(folder: Path) -> Path:
    """A database with ``BOTS`` entries whose submitted sample bot is playing."""
    config = league_file(folder, hosting=True)
    league = League(config)
    try:
        names = [f"h{i:02d}" for i in range(BOTS)]
        tokens = _register(league.address, names)

        def submit(name: str) -> None:
            done = subprocess.run(
                [*REFEREE, "league", "submit", str(SAMPLE), "--bot-file", "bot.toml",
                 "--address", league.address],
                capture_output=True, text=True, timeout=300, cwd=ROOT,
                env={**os.environ, "STICHELN_BOT_TOKEN": tokens[name]},
            )  # fmt: skip
            if done.returncode != 0:
                raise BenchError(f"submit {name}: {done.stderr.strip()}")

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(submit, names))
        start = time.monotonic()
        print(f"setup: {BOTS} submissions uploaded; validating them one at a time", flush=True)
        again = dict.fromkeys(names, 0)
        while True:
            seen = latest(folder / "league.db")
            for bot in [b for b, status in seen.items() if status == "refused"]:
                if again[bot] >= RESUBMIT:
                    raise BenchError(f"{bot} refused {RESUBMIT + 1} times: see {league.log}")
                again[bot] += 1
                print(f"setup: {bot} refused (a loaded machine?); submitted again", flush=True)
                submit(bot)
            if sum(status == "playing" for status in seen.values()) == BOTS:
                break
            if time.monotonic() - start > VALIDATION_TIMEOUT_S:
                raise BenchError(f"validation did not end in time: {seen}")
            time.sleep(2)
        print(f"setup: {BOTS} playing after {time.monotonic() - start:.0f} s", flush=True)
    finally:
        league.stop()
    snapshot = folder / "validated.db"
    shutil.copy(folder / "league.db", snapshot)
    return snapshot


def measure(
    name: str,
    database: Path,
    league: League,
    workers: list[subprocess.Popen[bytes]],
    bots: list[subprocess.Popen[bytes]],
    warmup: float,
    seconds: float,
    group: RunGroup | None = None,
) -> Figures:
    time.sleep(warmup)
    f = Figures(name)
    steal = Steal()
    busy = Busy()
    procs = [league.proc, *workers, *bots]

    def counted() -> list[float]:
        # The league with its waited-for children (its standings process); a worker by
        # itself, its bots by their groups; a dial-in bot by itself.
        own = [_cpu_s(league.proc.pid)] + [_cpu_s(p.pid, children=False) for p in procs[1:]]
        groups = [bots_cpu_s(w.pid) for w in workers]
        return own + groups

    def own() -> float | None:
        # Everything the configuration started, without the benchmark itself.
        used = group.usage() if group is not None else None
        return None if used is None else used - _cpu_s(os.getpid(), children=False)

    own0 = own()
    cpu0 = counted()
    n0, t0 = finished(database), time.monotonic()
    time.sleep(seconds)
    n1, t1 = finished(database), time.monotonic()
    cpu1 = counted()
    own1 = own()
    for p in procs:
        if p.poll() is not None:
            raise BenchError(f"{name}: a process exited during the window ({p.args})")
    used = [(b - a) / (t1 - t0) for a, b in zip(cpu0, cpu1, strict=True)]
    f.matches_per_s = (n1 - n0) / (t1 - t0)
    f.league_peak_mb = _vm_mb(league.proc.pid, "VmHWM")
    f.league_cpu = used[0]
    f.worker_peak_mb = [_vm_mb(w.pid, "VmHWM") for w in workers]
    f.worker_cpu = used[1 : 1 + len(workers)]
    f.bots_cpu = sum(used[1 + len(workers) :])
    f.machine_cores = busy.cores()
    memory = [mb for w in workers for mb in bots_memory_mb(w.pid)]
    f.warm_bots = len(memory)
    f.warm_bot_mb = sum(memory) / len(memory) if memory else 0.0
    if n1 > n0:
        f.cpu_per_match = sum(used) * (t1 - t0) / (n1 - n0)
        f.machine_cpu_per_match = f.machine_cores * (t1 - t0) / (n1 - n0)
        if own0 is not None and own1 is not None:
            f.group_cpu_per_match = (own1 - own0) / (n1 - n0)
    f.steal_percent = steal.percent()
    f.load = os.getloadavg()[0]
    return f


def quiet(database: Path) -> None:
    """No match left for the workers: the queued ones void, the leased ones over."""
    con = sqlite3.connect(database, timeout=30)
    try:
        con.execute("UPDATE match_queue SET status = 'void' WHERE status = 'queued'")
        con.commit()
        deadline = time.monotonic() + RESTART_WAIT_S
        while time.monotonic() < deadline:
            (leased,) = con.execute(
                "SELECT COUNT(*) FROM match_queue WHERE status = 'leased'"
            ).fetchone()
            if not leased:
                break
            time.sleep(0.5)
        else:
            print("note: a worker still plays: the idle figure below includes it", flush=True)
    finally:
        con.close()
    time.sleep(2)  # the last match's processes settle


def live_cost(logs: list[Path]) -> tuple[float, float]:
    """Median rows and KB of live lines a match cost, from the workers' ``match_played``
    log lines."""
    rows, kb = [], []
    for path in logs:
        for line in path.read_text(errors="replace").splitlines():
            if '"match_played"' in line:
                with contextlib.suppress(ValueError, KeyError):
                    event = json.loads(line)
                    rows.append(event["live_rows"])
                    kb.append(event["live_bytes"] / 1000)
    return (statistics.median(rows), statistics.median(kb)) if rows else (0.0, 0.0)


def bot_of_group(worker_out: Path, group: str) -> str:
    """The bot a worker's bot group belongs to: the worker's pool names its n-th process's
    log ``<bot>+<n>.log``, and its n-th cgroup ``bot-<n>`` (the worker starts no other
    jailed process)."""
    n = group.removeprefix("bot-")
    found = list((worker_out / "logs").glob(f"*+{n}.log"))
    if len(found) != 1:
        raise BenchError(f"no single log of process {n} in {worker_out / 'logs'}: {found}")
    return found[0].name.rsplit("+", 1)[0]


@dataclass
class Restart:
    bot: str = ""
    #: Matches that finished after the kill with the killed bot forfeited, and with any
    #: other bot forfeited.
    faulted: int = 0
    others_faulted: int = 0
    #: Seconds from the kill to the first match the bot finished unforfeited.
    back_s: float = float("nan")
    #: The faults that forfeited another bot's seat: (bot, reason) and how many.
    others: dict[tuple[str, str], int] = field(default_factory=dict)

    def line(self) -> str:
        why = ", ".join(f"{bot} {reason} x{n}" for (bot, reason), n in sorted(self.others.items()))
        return (
            f"restart: killed {self.bot}'s warm process; {self.faulted} match(es) forfeited by "
            f"it, {self.others_faulted} by any other bot{f' ({why})' if why else ''}; it "
            f"finished a match again from a fresh process {self.back_s:.1f} s after the kill"
        )


def lost_after(log: Path, offset: int) -> str:
    """The bot of the first ``bot_process_lost`` line a worker logged past ``offset``."""
    with log.open("rb") as f:
        f.seek(offset)
        for raw in f:
            with contextlib.suppress(ValueError):
                event = json.loads(raw)
                if event.get("event") == "bot_process_lost":
                    return str(event.get("bot", ""))
    return ""


def kill_one_bot(
    database: Path, worker: subprocess.Popen[bytes], worker_out: Path, worker_log: Path
) -> Restart:
    """Kill every process of one warm bot of ``worker`` and watch the matches after. The
    bot is the one whose process the worker then reports lost: a group's number and its
    process log's are given out in two orders when processes start side by side, so the
    logs' numbering is only a first guess."""
    groups = bot_groups(worker.pid, "memory") or bot_groups(worker.pid, "pids")
    alive = {
        g: pids
        for g, folder in sorted(groups.items(), key=lambda x: int(x[0].split("-")[1]))
        if (pids := (folder / "cgroup.procs").read_text().split())
    }
    if not alive:
        raise BenchError("the worker holds no warm bot to kill")
    group, pids = next(iter(alive.items()))
    r = Restart(bot_of_group(worker_out, group))
    logged = worker_log.stat().st_size
    killed_at = time.time()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    deadline = time.monotonic() + RESTART_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.5)
        con = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
        try:
            rows = con.execute(
                "SELECT m.idx, m.finished_at, r.bot, r.forfeited FROM matches m JOIN results r "
                "ON r.tournament = m.tournament AND r.idx = m.idx WHERE m.tournament = ? "
                "AND m.status = 'finished' AND m.finished_at > ? ORDER BY m.finished_at",  # the
                # matches running at the kill and after it
                (LEAGUE, killed_at),
            ).fetchall()
        finally:
            con.close()
        con = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
        try:
            later = {
                int(idx)
                for (idx,) in con.execute(
                    "SELECT idx FROM matches WHERE tournament = ? AND started_at > ?",
                    (LEAGUE, killed_at),
                ).fetchall()
            }
        finally:
            con.close()
        r.bot = lost_after(worker_log, logged) or r.bot
        r.faulted = len({idx for idx, _, bot, lost in rows if lost and bot == r.bot})
        others = {idx for idx, _, bot, lost in rows if lost and bot != r.bot}
        r.others_faulted = len(others)
        r.others = {}
        if others:
            con = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
            try:
                for bot, reason in con.execute(
                    "SELECT bot, reason FROM faults WHERE tournament = ? AND forfeited != 0 "
                    f"AND bot != ? AND idx IN ({','.join('?' * len(others))})",
                    (LEAGUE, r.bot, *sorted(others)),
                ):
                    r.others[(bot, reason)] = r.others.get((bot, reason), 0) + 1
            finally:
                con.close()
        # Back: a match of the bot begun after the kill (from a fresh process) finished.
        back = [at for idx, at, bot, lost in rows if bot == r.bot and not lost and idx in later]
        if back:
            r.back_s = back[0] - killed_at
            break
    return r


def run_hosted(
    folder: Path,
    snapshot: Path,
    count: int,
    warmup: float,
    seconds: float,
    pin: bool,
    tier: str,
    restart: list[Restart] | None,
) -> Figures:
    for suffix in ("", "-wal", "-shm"):
        (folder / f"league.db{suffix}").unlink(missing_ok=True)
    shutil.copy(snapshot, folder / "league.db")
    group = RunGroup(f"hosted{count}-{tier}")
    league = League(folder / "league.toml")
    workers: list[subprocess.Popen[bytes]] = []
    outs: list[Path] = []
    try:
        for i in range(count):
            where = _made(f"hosted-bench-worker{i}-")
            outs.append(where / "out")
            workers.append(
                subprocess.Popen(
                    [
                        *(["taskset", "-c", str(i % (os.cpu_count() or 1))] if pin else []),
                        *REFEREE,
                        "league",
                        "worker",
                        "--database",
                        str(folder / "league.db"),
                        "--league",
                        LEAGUE,
                        "--name",
                        f"w{i}",
                        "--code-dir",
                        str(where / "code"),
                        "--out",
                        str(where / "out"),
                        "--sandbox",
                        tier,
                        "--parallel",
                        str(PARALLEL // count),
                        "--log-level",
                        "info",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=(folder / f"worker{i}.log").open("wb"),
                    cwd=ROOT,
                )
            )
        label = f"hosted, {count} worker" + ("s" if count > 1 else "") + (" pinned" if pin else "")
        figures = measure(label, folder / "league.db", league, workers, [], warmup, seconds, group)
        figures.live_rows, figures.live_kb = live_cost(
            [folder / f"worker{i}.log" for i in range(count)]
        )
        if count == 1 and restart is not None:
            restart.append(
                kill_one_bot(folder / "league.db", workers[0], outs[0], folder / "worker0.log")
            )
        # The warm bots' CPU while no match runs (the league stopped, the worker polling
        # on): what a warm bot costs by just being there, which a slow window charges to
        # its few matches.
        league.stop()
        quiet(folder / "league.db")
        before, t0 = sum(bots_cpu_s(w.pid) for w in workers), time.monotonic()
        time.sleep(IDLE_S)
        after, t1 = sum(bots_cpu_s(w.pid) for w in workers), time.monotonic()
        held = sum(len(bots_memory_mb(w.pid)) for w in workers)
        figures.idle_cores_per_bot = (after - before) / (t1 - t0) / held if held else 0.0
        return figures
    finally:
        for w in workers:
            _stop(w, signal.SIGTERM, 60)
        league.stop()
        group.leave()


def run_dialin(folder: Path, warmup: float, seconds: float) -> Figures:
    config = league_file(folder, hosting=False)
    group = RunGroup(f"dialin-{folder.name}")
    league = League(config)
    bots: list[subprocess.Popen[bytes]] = []
    try:
        names = [f"d{i:02d}" for i in range(BOTS)]
        tokens = _register(league.address, names)
        for name in names:
            bots.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(SAMPLE / "heuristic_bot.py"),
                        "--referee",
                        league.address,
                        "--token",
                        tokens[name],
                        "--name",
                        name,
                        "--seats",
                        "2",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=(folder / "bots.log").open("ab"),
                    cwd=ROOT,
                )
            )
        return measure("dial-in", folder / "league.db", league, [], bots, warmup, seconds, group)
    finally:
        for b in bots:
            _stop(b, signal.SIGTERM, 10)
        league.stop()
        group.leave()


def main() -> int:
    global BOTS  # one setting, read by the helpers above
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured window")
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds before it")
    parser.add_argument("--bots", type=int, default=BOTS, help="entries in the league")
    parser.add_argument(
        "--pin", action="store_true", help="each worker on a core of its own (taskset)"
    )
    parser.add_argument(
        "--tier",
        choices=("strongest", "gvisor", "bubblewrap"),
        default="strongest",
        help="the jail tier the workers play hosted bots in (default: the strongest here)",
    )
    parser.add_argument(
        "--workers", type=int, choices=(1, 2), default=2, help="hosted runs up to this many"
    )
    parser.add_argument(
        "--also",
        choices=("gvisor", "bubblewrap"),
        default=None,
        help="one more hosted run (1 worker) in this tier, against the same dial-in run",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="measure every configuration this many times (after one setup) and print "
        "the medians of their ratios",
    )
    args = parser.parse_args()
    BOTS = args.bots
    print(
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}; hosted tier {args.tier}",
        flush=True,
    )
    restart: list[Restart] = []
    try:
        every = measure_all(
            args.warmup, args.seconds, args.pin, args.tier, args.workers, restart, args.also,
            args.runs,
        )  # fmt: skip
    finally:
        for folder in MADE:
            shutil.rmtree(folder, ignore_errors=True)
    if len(every) > 1:
        medians(every, args.also)
    results = every[0]
    also = results.pop() if args.also else None
    report(results, restart)
    if also is not None:
        counted = _ratio(also.cpu_per_match, results[0].cpu_per_match)
        machine = _ratio(also.machine_cpu_per_match, results[0].machine_cpu_per_match)
        print(
            f"{args.also}: hosted (1 worker) / dial-in, CPU per match: {counted:.2f} by the "
            f"league's own count, {machine:.2f} by the machine's; "
            f"hosted_to_dialin_{args.also}={counted:.2f} "
            f"hosted_to_dialin_machine_{args.also}={machine:.2f}"
        )
    return 0


def measure_all(
    warmup: float,
    seconds: float,
    pin: bool,
    tier: str,
    workers: int,
    restart: list[Restart],
    also: str | None = None,
    runs: int = 1,
) -> list[list[Figures]]:
    """The configurations, in a temporary folder: ``runs`` times each, one run's
    configurations one after another (dial-in first), from one setup. The restart is
    measured in the first run only."""
    out: list[list[Figures]] = []
    with tempfile.TemporaryDirectory(prefix="hosted-bench-") as tmp:
        base = Path(tmp)
        (base / "hosted").mkdir()
        snapshot = setup_hosted(base / "hosted")
        for run in range(runs):
            if runs > 1:
                print(f"run {run + 1} of {runs}", flush=True)
            (base / f"dialin{run}").mkdir()
            results = [run_dialin(base / f"dialin{run}", warmup, seconds)]
            print(results[-1].line(), flush=True)
            for count in range(1, workers + 1):
                results.append(
                    run_hosted(
                        base / "hosted", snapshot, count, warmup, seconds, pin, tier,
                        restart if run == 0 else None,
                    )
                )  # fmt: skip
                print(results[-1].line(), flush=True)
                if count == 1 and restart and run == 0:
                    print(restart[0].line(), flush=True)
            if also:
                more: list[Restart] = []
                results.append(
                    run_hosted(
                        base / "hosted", snapshot, 1, warmup, seconds, pin, also,
                        more if run == 0 else None,
                    )
                )  # fmt: skip
                results[-1].name = f"hosted, {also}"
                print(results[-1].line(), flush=True)
                if more:
                    print(more[0].line(), flush=True)
            out.append(results)
    return out


def medians(every: list[list[Figures]], also: str | None) -> None:
    """Per run, hosted (1 worker) / dial-in CPU per match by each count, then the medians
    over the runs; the last line ``runs=<n> median_hosted_to_dialin_group=<r> ...``."""
    counts: dict[str, Callable[[Figures], float]] = {
        "group": lambda f: f.group_cpu_per_match,
        "own": lambda f: f.cpu_per_match,
        "machine": lambda f: f.machine_cpu_per_match,
    }
    columns = [(1, "hosted")] + ([(len(every[0]) - 1, f"hosted_{also}")] if also else [])
    found: dict[str, list[float]] = {}
    for i, results in enumerate(every, 1):
        dialin = results[0]
        parts = [
            f"dial-in {dialin.group_cpu_per_match:.3f} / {dialin.cpu_per_match:.3f} / "
            f"{dialin.machine_cpu_per_match:.3f} s"
        ]
        for index, name in columns:
            f = results[index]
            ratios = {k: _ratio(get(f), get(dialin)) for k, get in counts.items()}
            for k, r in ratios.items():
                found.setdefault(f"{name}_to_dialin_{k}", []).append(r)
            parts.append(
                f"{f.name} {f.group_cpu_per_match:.3f} / {f.cpu_per_match:.3f} / "
                f"{f.machine_cpu_per_match:.3f} s ({ratios['group']:.2f}x by its cgroup, "
                f"{ratios['own']:.2f}x by the league's count, {ratios['machine']:.2f}x by "
                "the machine's)"
            )
        steal = max(r.steal_percent for r in results)
        load = max(r.load for r in results)
        print(
            f"run {i}: CPU per match (the run's cgroup / the league's own count / the "
            f"machine's): " + "; ".join(parts) + f"; load {load:.0f}, {steal:.1f}% stolen"
        )

    def median(xs: list[float]) -> float:
        xs = [x for x in xs if x == x]
        return statistics.median(xs) if xs else float("nan")

    print(
        f"runs={len(every)} "
        + " ".join(f"median_{k}={median(v):.2f}" for k, v in found.items())
        + f" target<={TARGET_HOSTED:g}"
    )


def _ratio(a: float, b: float) -> float:
    """a / b, NaN where either is not measured (a window without a match)."""
    return a / b if a and b else float("nan")


def report(results: list[Figures], restart: list[Restart]) -> None:
    """The ratios, a warning for a loaded machine, and the last line."""
    dialin, one = results[0], results[1]
    two = results[2] if len(results) > 2 else None
    ratio = _ratio(two.matches_per_s, one.matches_per_s) if two else float("nan")
    counted = _ratio(one.cpu_per_match, dialin.cpu_per_match)
    machine = _ratio(one.machine_cpu_per_match, dialin.machine_cpu_per_match)

    def verdict(x: float) -> str:
        if x != x:  # NaN
            return "not measured: no hosted match finished in the window"
        return "met" if x <= TARGET_HOSTED else "missed"

    # The warm bots' idle CPU taken out: what a match costs on a machine busy with them.
    idle = one.idle_cores_per_bot * one.warm_bots / one.matches_per_s if one.matches_per_s else 0
    net = _ratio(one.cpu_per_match - idle, dialin.cpu_per_match)
    print(
        f"hosted (1 worker) / dial-in, CPU per match less the warm bots' idle CPU "
        f"({idle:.3f} s a match at this rate): {net:.2f} ({verdict(net)})"
    )
    print(
        f"hosted (1 worker) / dial-in, CPU per match: {counted:.2f} by the league's own count "
        f"({verdict(counted)}), {machine:.2f} by the machine's (/proc/stat: {verdict(machine)}); "
        f"target <= {TARGET_HOSTED:g}"
    )
    if two:
        print(
            f"2 workers / 1 worker: {ratio:.2f} (target >= {TARGET_TWO_WORKERS} with the cores: "
            f"{'met' if ratio >= TARGET_TWO_WORKERS else 'missed'})"
        )
    warning = loaded_warning([r.steal_percent for r in results])
    if warning:
        print(warning)
    workers = [mb for r in results for mb in r.worker_peak_mb]
    print(
        f"dialin_matches_per_s={dialin.matches_per_s:.3f} "
        f"hosted1_matches_per_s={one.matches_per_s:.3f} "
        f"hosted2_matches_per_s={two.matches_per_s if two else float('nan'):.3f} "
        f"two_workers_ratio={ratio:.2f} "
        f"dialin_cpu_per_match={dialin.cpu_per_match:.3f} "
        f"hosted_cpu_per_match={one.cpu_per_match:.3f} "
        f"dialin_machine_cpu_per_match={dialin.machine_cpu_per_match:.3f} "
        f"hosted_machine_cpu_per_match={one.machine_cpu_per_match:.3f} "
        f"hosted_to_dialin={counted:.2f} hosted_to_dialin_machine={machine:.2f} "
        f"hosted_to_dialin_less_idle={net:.2f} "
        f"warm_bot_mb={one.warm_bot_mb:.0f} "
        f"league_peak_mb={max(r.league_peak_mb for r in results):.0f} "
        f"worker_peak_mb={max(workers):.0f}"
        + (f" restart_back_s={restart[0].back_s:.1f}" if restart else "")
    )


if __name__ == "__main__":
    sys.exit(main())
