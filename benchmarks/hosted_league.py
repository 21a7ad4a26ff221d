"""A league of 50 hosted sample bots against the same league of dial-in bots, and two
league workers against one.

Everything runs on 127.0.0.1, on a SQLite database in a temporary folder. Three
configurations of one league (50 entries, tables of 4, ``parallel`` 8, the league's
default clock), each measured for ``--seconds`` after ``--warmup``:

- ``dial-in``: 50 registered entries, each a process of the Python sample bot
  (``sample_bots/python/heuristic_bot.py``) dialing the league with its token and two
  streams; the league plays their matches itself (up to ``parallel`` at once);
- ``hosted, 1 worker`` and ``hosted, 2 workers``: 50 entries, each with the same sample
  bot submitted (``referee league submit sample_bots/python``, validated in the jail:
  the start check and the check-bot scenarios), ``[hosting] workers = 0``, and one or
  two ``referee league worker`` processes on the same database. A worker plays one match
  at a time, every seat a fresh jailed process of the bot.

The 50 submissions are validated once, in a setup league (one after another, as the
league validates them: minutes); each hosted configuration then starts from a copy of
that database, with every entry ``playing``.

Per configuration it prints matches/s (finished matches in the database over the
window), the peak resident set (``VmHWM``) of the league process and of each worker
process (its bots' processes not included: they come and go with each match), the CPU
each used in the window (a worker's with its bots': each match's processes are its
children), the CPU of every process per match played (a figure the machine's other work
disturbs less than matches/s; 2 divided by it is what the league would play with 2
cores to itself), the machine's load average, and the share of CPU time the host
stole (``machine.py``); then the ratios: hosted against dial-in, two workers against one
(the issue's target: at least 1.7 on a machine with the cores for it). On a machine with
2 cores that other work loads, two workers compete with each other, the league and that
work for the same cores, so the ratio there says how much a second worker gains on a
loaded 2-core machine, not how workers scale.

    .venv/bin/python benchmarks/hosted_league.py                 # 60 s each
    .venv/bin/python benchmarks/hosted_league.py --seconds 120 --warmup 20
    .venv/bin/python benchmarks/hosted_league.py --pin --bots 16   # a core per worker

``--pin`` gives each worker a core of its own (``taskset``: worker ``i`` and every
process it starts, its sandboxes included, run on CPU ``i``): one worker on one core
against two workers on two, the league process free to run anywhere. That is how the
ratio "two workers against one" reads on a machine with a core per worker; unpinned, on
2 cores, one worker's matches already spread over both (a seat's sandbox start is several
processes), and the second worker has little left to use.

The last line is ``dialin_matches_per_s=<a> hosted1_matches_per_s=<b>
hosted2_matches_per_s=<c> two_workers_ratio=<c/b> dialin_cpu_per_match=<d>
hosted_cpu_per_match=<e> hosted_machine_cpu_per_match=<e'> league_peak_mb=<f>
worker_peak_mb=<g>``. CPU per match is counted twice: over the league's processes and the
children they waited for (gVisor's sandboxes escape that count), and over the whole
machine (``/proc/stat``: everything that ran, others' work too), which bounds it above.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
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
from machine import Busy, Steal, loaded_warning

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_bots" / "python"
REFEREE = [sys.executable, "-m", "referee.cli"]
LEAGUE = "hosted-bench"
BOTS = 50
PARALLEL = 8
TABLE_SIZE = 4
VALIDATION_TIMEOUT_S = 3600.0
TARGET_TWO_WORKERS = 1.7
#: Folders made outside the run's temporary folder (code folders must be traversable by
#: the bots' uids, which pytest-style private folders are not); removed at the end.
MADE: list[Path] = []


def _made(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    MADE.append(folder)
    return folder


def _cpu_s(pid: int) -> float:
    """User+system CPU seconds of a live process and of its children it has waited for
    (a worker's jailed bots, each match's: they end with their match), 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


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

    def line(self) -> str:
        workers = ", ".join(
            f"{mb:.0f} MB peak, {cpu:.2f} cores"
            for mb, cpu in zip(self.worker_peak_mb, self.worker_cpu, strict=True)
        )
        bots = f"; bot processes {self.bots_cpu:.2f} cores" if self.bots_cpu else ""
        return (
            f"{self.name:18s} {self.matches_per_s:5.2f} matches/s; league {self.league_peak_mb:.0f}"
            f" MB peak, {self.league_cpu:.2f} cores"
            + (f"; workers: {workers}" if workers else "")
            + f"{bots}; {self.cpu_per_match:.2f} CPU s per match (2 cores to itself: "
            f"{2 / self.cpu_per_match if self.cpu_per_match else float('nan'):.1f} matches/s); "
            f"the machine {self.machine_cores:.2f} cores busy, "
            f"{self.machine_cpu_per_match:.2f} CPU s per match; "
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
        first = _read_line(self.proc, 60, "the league", self.log)
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


def statuses(database: Path) -> dict[str, int]:
    con = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute("SELECT status, COUNT(*) FROM league_submissions GROUP BY status")
        return {status: int(n) for status, n in rows.fetchall()}
    finally:
        con.close()


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
        while True:
            seen = statuses(folder / "league.db")
            if seen.get("refused"):
                raise BenchError(f"{seen['refused']} submission(s) refused: see {league.log}")
            if seen.get("playing", 0) == BOTS:
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
) -> Figures:
    time.sleep(warmup)
    f = Figures(name)
    steal = Steal()
    busy = Busy()
    procs = [league.proc, *workers, *bots]
    cpu0 = [_cpu_s(p.pid) for p in procs]
    n0, t0 = finished(database), time.monotonic()
    time.sleep(seconds)
    n1, t1 = finished(database), time.monotonic()
    cpu1 = [_cpu_s(p.pid) for p in procs]
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
    if n1 > n0:
        f.cpu_per_match = sum(used) * (t1 - t0) / (n1 - n0)
        f.machine_cpu_per_match = f.machine_cores * (t1 - t0) / (n1 - n0)
    f.steal_percent = steal.percent()
    f.load = os.getloadavg()[0]
    return f


def run_hosted(
    folder: Path, snapshot: Path, count: int, warmup: float, seconds: float, pin: bool
) -> Figures:
    for suffix in ("", "-wal", "-shm"):
        (folder / f"league.db{suffix}").unlink(missing_ok=True)
    shutil.copy(snapshot, folder / "league.db")
    league = League(folder / "league.toml")
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            where = _made(f"hosted-bench-worker{i}-")
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
                        "--log-level",
                        "warning",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=(folder / f"worker{i}.log").open("ab"),
                    cwd=ROOT,
                )
            )
        label = f"hosted, {count} worker" + ("s" if count > 1 else "") + (" pinned" if pin else "")
        return measure(label, folder / "league.db", league, workers, [], warmup, seconds)
    finally:
        for w in workers:
            _stop(w, signal.SIGTERM, 60)
        league.stop()


def run_dialin(folder: Path, warmup: float, seconds: float) -> Figures:
    config = league_file(folder, hosting=False)
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
        return measure("dial-in", folder / "league.db", league, [], bots, warmup, seconds)
    finally:
        for b in bots:
            _stop(b, signal.SIGTERM, 10)
        league.stop()


def main() -> int:
    global BOTS  # one setting, read by the helpers above
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured window")
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds before it")
    parser.add_argument("--bots", type=int, default=BOTS, help="entries in the league")
    parser.add_argument(
        "--pin", action="store_true", help="each worker on a core of its own (taskset)"
    )
    args = parser.parse_args()
    BOTS = args.bots
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}", flush=True)
    try:
        results = measure_all(args.warmup, args.seconds, args.pin)
    finally:
        for folder in MADE:
            shutil.rmtree(folder, ignore_errors=True)
    report(results)
    return 0


def measure_all(warmup: float, seconds: float, pin: bool) -> list[Figures]:
    """The three configurations, in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="hosted-bench-") as tmp:
        base = Path(tmp)
        (base / "dialin").mkdir()
        (base / "hosted").mkdir()
        snapshot = setup_hosted(base / "hosted")
        results = [run_dialin(base / "dialin", warmup, seconds)]
        print(results[-1].line(), flush=True)
        for count in (1, 2):
            results.append(run_hosted(base / "hosted", snapshot, count, warmup, seconds, pin))
            print(results[-1].line(), flush=True)
    return results


def report(results: list[Figures]) -> None:
    """The ratios, a warning for a loaded machine, and the last line."""
    dialin, one, two = results
    ratio = two.matches_per_s / one.matches_per_s if one.matches_per_s else float("nan")
    print(
        f"hosted (1 worker) / dial-in: {one.matches_per_s / dialin.matches_per_s:.2f}; "
        f"2 workers / 1 worker: {ratio:.2f} (target >= {TARGET_TWO_WORKERS} with the cores: "
        f"{'met' if ratio >= TARGET_TWO_WORKERS else 'missed'})"
    )
    warning = loaded_warning([r.steal_percent for r in results])
    if warning:
        print(warning)
    print(
        f"dialin_matches_per_s={dialin.matches_per_s:.3f} "
        f"hosted1_matches_per_s={one.matches_per_s:.3f} "
        f"hosted2_matches_per_s={two.matches_per_s:.3f} two_workers_ratio={ratio:.2f} "
        f"dialin_cpu_per_match={dialin.cpu_per_match:.3f} "
        f"hosted_cpu_per_match={one.cpu_per_match:.3f} "
        f"hosted_machine_cpu_per_match={one.machine_cpu_per_match:.3f} "
        f"league_peak_mb={max(r.league_peak_mb for r in results):.0f} "
        f"worker_peak_mb={max(two.worker_peak_mb + one.worker_peak_mb):.0f}"
    )


if __name__ == "__main__":
    sys.exit(main())
