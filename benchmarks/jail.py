"""The two sandbox tiers side by side: bubblewrap (the host's kernel behind a filter) and
gVisor (``runsc``, an application kernel per bot; docs/security.md).

For each tier, ``--runs`` times (the tiers taking turns, so that a change in the
machine's load meets both alike):

- start: milliseconds from spawning the Python random sample bot (launcher, sandbox, its
  socket's gRPC server) to its ``Hello`` on the referee, the median of ``--starts``; and
  (as root) the CPU milliseconds a start and stop cost the machine, counted in a
  ``cpuacct`` group of the benchmark's (referee, launcher, sandbox and bot);
- memory: the bot's cgroup after its handshake (in the gVisor tier runsc's Sentry, gofer
  and stubs are in the same group), MiB;
- decisions/s of a match of three Python random sample bots, from its first decision to
  its last (bot start-up left out), and so the wall time of one decision; the same for
  the Node and C++ sample bots (random strategy);
- the same with three bots that spend about 1 ms of CPU on every decision
  (``benchmarks/bots/fast_bot.py`` with ``BENCH_THINK_LOOPS`` calibrated here: a fixed
  amount of work, since a CPU clock inside gVisor ticks coarsely);
- one system call's cost inside the tier (``getppid``, a loop of 20,000, the loop's own
  cost taken out by the same loop around a no-op).

Then, once, where the gVisor tier's cost per decision goes: the system calls one decision
costs each sample bot (Python, Node, C++), counted with ``strace -f -c`` around the bot
without a sandbox over a whole match; times the cost of one call inside gVisor, that is
the Sentry's share of a decision.

Prints every run with the share of CPU time the hypervisor stole meanwhile
(``benchmarks/machine.py``), the medians, and a last line
``bubblewrap_start_ms=<a> gvisor_start_ms=<b> bubblewrap_decisions_per_s=<c>
gvisor_decisions_per_s=<d>``. Needs a root referee and runsc for the gVisor tier.

    .venv/bin/python benchmarks/jail.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import RunGroup, Steal, loaded_warning

from referee import jail
from referee.config.bots import bot_from_table
from referee.jail import gvisor
from referee.jail.bots import BotSpec
from referee.jail.process import BotProcess
from referee.jail.sandbox import Sandbox
from referee.match.pool import await_handshake, start_bot
from referee.match.runner import Clock, MatchRunner
from referee.match.server import RefereeServer
from referee.rules import preset
from referee.runtime import eventloop, logs

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"

TIERS = ("bubblewrap", "gvisor")

#: One system call's cost, timed inside a sandbox: microseconds per getppid, less the
#: loop's own cost. Prints one number.
SYSCALL_PROGRAM = """
import os, time
def timed(call, n=20000):
    t = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - t) / n
nothing = lambda: None
print(round((min(timed(os.getppid) for _ in range(3)) - timed(nothing)) * 1e6, 2))
"""


#: The sample bots' commands, by language.
SAMPLE_COMMANDS = {
    "python": [sys.executable, "python/random_bot.py"],
    "node": ["node", "node/bot.js"],
    "cpp": ["cpp/build/sticheln-bot", "--strategy", "random"],
}


#: A seat that sends bits by CPU contention: in each slot it spins on every CPU (1) or
#: sleeps (0). argv: start time, slot seconds, bits.
SENDER = """
import os, sys, time
start, slot, bits = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
children = []
for _ in range(os.cpu_count() or 1):
    pid = os.fork()
    if pid == 0:
        for i, bit in enumerate(bits):
            end = start + (i + 1) * slot
            if bit == "1":
                while time.time() < end:
                    pass
            else:
                time.sleep(max(0.0, end - time.time()))
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""
#: The seat that receives them: how far it counts in each slot (less: the sender spun).
RECEIVER = """
import sys, time
start, slot, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
time.sleep(max(0.0, start - time.time()))
counts = []
for i in range(n):
    end = start + (i + 1) * slot
    count = 0
    while time.time() < end:
        count += 1
    counts.append(count)
print(" ".join(map(str, counts)))
"""


def _entropy(p: float) -> float:
    import math

    return 0.0 if p <= 0 or p >= 1 else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


async def covert(tier: str, slot_s: float, bits: str) -> tuple[float, float]:
    """(bit error rate, capacity in bit/s) of a CPU-contention channel between two bots of
    one table in ``tier``: two sandboxes, each with a cgroup of its own, started as seats
    are; the receiver reads a bit as 1 in a slot where it counted less than the median."""
    sandbox = Sandbox(tier)
    start = time.time() + 4.0  # both started and settled
    programs = {
        "sender": (SENDER, [str(start), str(slot_s), bits]),
        "receiver": (RECEIVER, [str(start), str(slot_s), str(len(bits))]),
    }
    with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
        processes = []
        users = []
        try:
            for name, (program, argv) in programs.items():
                user = sandbox.lease_user()
                users.append(user)
                policy = sandbox.policy(SAMPLES, (), None, user.ids if user else None)
                spec = BotSpec(
                    name=name, command=(sys.executable, "-c", program, *argv), workdir=SAMPLES
                )
                log = Path(tmp) / f"{name}.log"
                processes.append(await jail.start(spec, "unix:/nowhere", "-", log, policy=policy))
            for process in processes:
                await process.proc.wait()
                await process.stop()
        finally:
            for user in users:
                if user is not None:
                    user.release()
        text = (Path(tmp) / "receiver.log").read_text()
    lines = [x for x in text.splitlines() if re.fullmatch(r"[\d ]+", x)]
    if not lines:
        raise SystemExit(f"the receiver said nothing in {tier}: {text[-300:]}")
    counts = [int(c) for c in lines[-1].split()]
    middle = statistics.median(counts)
    got = "".join("1" if c < middle else "0" for c in counts)
    errors = sum(a != b for a, b in zip(got, bits, strict=True)) / len(bits)
    return errors, (1 - _entropy(errors)) / slot_s


def _random(name: str, language: str = "python") -> BotSpec:
    return bot_from_table({"name": name, "command": SAMPLE_COMMANDS[language]}, base=SAMPLES)


def _loops_per_ms() -> int:
    """Steps of fast_bot's think loop that take 1 ms of CPU here (the best of five)."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "bots"))
    from fast_bot import think

    steps = 200_000
    best = min(_cpu(think, steps) for _ in range(5))
    return round(steps / (best * 1000))


def _cpu(work: Any, steps: int) -> float:
    t = time.process_time()
    work(steps)
    return time.process_time() - t


def _thinker(name: str, loops: int) -> BotSpec:
    table = {
        "name": name,
        "command": [sys.executable, "fast_bot.py"],
        "env": {"BENCH_THINK_LOOPS": str(loops)},
    }
    return bot_from_table(table, base=ROOT / "benchmarks" / "bots")


class _Stamps:
    """When each decision of a match came (a match observer)."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def decision(self, bot: str, phase: str, think_s: float) -> None:
        self.stamps.append(time.perf_counter())

    def fault(self, bot: str, reason: Any) -> None:
        pass

    def trick(self) -> None:
        pass

    def round(self) -> None:
        pass

    def rate(self) -> float:
        """Decisions per second from the first decision to the last."""
        wall = self.stamps[-1] - self.stamps[0]
        return (len(self.stamps) - 1) / wall if wall > 0 else float("nan")


def _memory_mib(process: BotProcess) -> float:
    """The bot's cgroup's memory use, MiB (NaN without a group)."""
    group = process.bounds.group if process.bounds else None
    for folder in group.folders if group else ():
        for name in ("memory.current", "memory.usage_in_bytes"):
            path = folder / name
            if path.exists():
                return int(path.read_text()) / (1 << 20)
    return float("nan")


async def starts(tier: str, count: int) -> tuple[list[float], list[float], list[float]]:
    """(start-to-Hello ms, memory MiB, CPU ms of a start and stop) of ``count`` starts of
    the random bot in ``tier``, after one start that warms the file cache. The CPU is the
    whole machine's work for it (referee, launcher, sandbox, bot), counted in a
    ``cpuacct`` group (empty where none can be made: not root)."""
    server = RefereeServer(sandbox=Sandbox(tier))
    await server.start("127.0.0.1", 0)
    spec = _random("random")
    times: list[float] = []
    memory: list[float] = []
    cpu: list[float] = []
    group = RunGroup(f"jail-{tier}-{time.monotonic_ns()}")  # a lingering one stays apart
    try:
        with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
            for n in range(count + 1):
                slot = server.registry.open_seat("bench", n, "random")
                used = group.usage()
                t0 = time.perf_counter()
                process = await start_bot(server, spec, [slot], Path(tmp) / f"{n}.log")
                why = await await_handshake(slot, process, 60.0)
                elapsed = time.perf_counter() - t0
                if why:
                    raise SystemExit(f"the bot did not start in {tier}: {why}")
                await asyncio.sleep(0.2)  # its memory once settled
                mib = _memory_mib(process)
                assert slot.stream is not None
                slot.stream.end()
                await process.stop()
                server.registry.close_seat(slot)
                after = group.usage()
                if n:
                    times.append(elapsed * 1000)
                    memory.append(mib)
                    if used is not None and after is not None:
                        cpu.append((after - used) * 1000)
    finally:
        await server.stop(0)
        group.leave()
    return times, memory, cpu


async def match(tier: str, bots: list[BotSpec], seed: int) -> float:
    """Decisions per second of one match in ``tier``, from its first decision to its last."""
    stamps = _Stamps()
    server = RefereeServer(sandbox=Sandbox(tier))
    await server.start("127.0.0.1", 0)
    try:
        with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
            runner = MatchRunner(
                server,
                bots,
                preset("sticheln"),
                seed=seed,
                clock=Clock(decision_ms=5000, time_bank_ms=0, startup_ms=60_000),
                out_dir=Path(tmp),
                observer=stamps,
            )
            result = await runner.run()
    finally:
        await server.stop(0)
    if result.reason != "completed" or any(s.faults for s in result.seats):
        raise SystemExit(f"the {tier} match did not complete cleanly: {result.reason}")
    return stamps.rate()


async def syscall_us(tier: str) -> float:
    """One getppid's cost inside ``tier``, microseconds."""
    sandbox = Sandbox(tier)
    spec = BotSpec(
        name="syscalls", command=(sys.executable, "-c", SYSCALL_PROGRAM), workdir=SAMPLES
    )
    with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
        log = Path(tmp) / "syscalls.log"
        user = sandbox.lease_user()
        try:
            policy = sandbox.policy(SAMPLES, (), None, user.ids if user else None)
            process = await jail.start(spec, "unix:/nowhere", "-", log, policy=policy)
            await process.proc.wait()
            await process.stop()
        finally:
            if user is not None:
                user.release()
        text = log.read_text()
    numbers = re.findall(r"^-?[\d.]+$", text, re.MULTILINE)
    if not numbers:
        raise SystemExit(f"the system-call probe failed in {tier}: {text[-300:]}")
    return float(numbers[-1])


def syscalls_per_decision(bot: str, seed: int) -> tuple[float, list[tuple[str, float]]]:
    """(system calls per decision, the five most frequent per decision) of
    ``sample_bots/<bot>.toml``: the difference between two unsandboxed matches of three of
    it with different numbers of decisions (so that the start-up's calls cancel out),
    counted by ``strace -f -c``."""
    counts = [_strace_match(bot, seed, rules) for rules in ("sore-spot", "amigo")]
    (d1, c1), (d2, c2) = sorted(counts, key=lambda dc: dc[0])
    if d2 == d1:
        raise SystemExit("the two matches had as many decisions")
    per = {name: (c2.get(name, 0) - c1.get(name, 0)) / (d2 - d1) for name in {*c1, *c2}}
    top = sorted(per.items(), key=lambda kv: -kv[1])[:5]
    return sum(per.values()), [(name, round(n, 1)) for name, n in top]


def _strace_match(bot: str, seed: int, rules: str) -> tuple[int, dict[str, int]]:
    """(decisions, system calls by name) of one unsandboxed match of three ``bot``."""
    with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
        counts = Path(tmp) / "counts"
        counts.mkdir()
        files = []
        for i in range(3):
            text = (SAMPLES / f"{bot}.toml").read_text()
            command = re.search(r"^command = (\[.*\])$", text, re.MULTILINE)
            assert command, bot
            wrapped = (
                f'["strace", "-f", "-c", "-o", "{counts}/{i}.txt", ' + command.group(1)[1:-1] + "]"
            )
            path = SAMPLES / f".bench-strace-{bot}-{i}.toml"
            path.write_text(f'name = "{bot}{i}"\ncommand = {wrapped}\n')
            files.append(path)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "referee.cli", "match", "--no-sandbox", "--seed", str(seed)]
                + ["--rules", rules]
                + [f"--bot={f}" for f in files]
                + ["--out", str(Path(tmp) / "out")],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        finally:
            for path in files:
                path.unlink()
        if done.returncode != 0:
            raise SystemExit(f"the strace match of {bot} failed: {done.stderr[-500:]}")
        (record,) = (Path(tmp) / "out" / "matches").glob("*.jsonl")
        decisions = sum(1 for line in record.read_text().splitlines() if '"think_us"' in line)
        calls: dict[str, int] = {}
        for path in counts.iterdir():
            for line in path.read_text().splitlines():
                fields = line.split()
                if len(fields) >= 5 and fields[3].isdigit() and fields[-1] != "total":
                    calls[fields[-1]] = calls.get(fields[-1], 0) + int(fields[3])
    return decisions, calls


def covert_bench(runs: int) -> None:
    """Print the CPU-contention channel's error rate and capacity per tier and slot."""
    import random

    for slot_ms in (100, 25):
        for tier in TIERS:
            found = []
            for run in range(runs):
                bits = "".join(random.choice("01") for _ in range(64))
                steal = Steal()
                errors, capacity = eventloop.run(covert(tier, slot_ms / 1000, bits))
                found.append(capacity)
                print(
                    f"covert channel, {tier}, {slot_ms} ms slots, run {run + 1}: "
                    f"{errors:.0%} wrong bits of 64, {capacity:.1f} bit/s; load "
                    f"{os.getloadavg()[0]:.1f}, stolen {steal.percent():.1f}%",
                    flush=True,
                )
            print(f"  median {statistics.median(found):.1f} bit/s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python benchmarks/jail.py", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--no-strace", action="store_true", help="skip the system-call count")
    parser.add_argument(
        "--covert-only",
        action="store_true",
        help="measure only the CPU-contention channel between two seats, in both tiers",
    )
    args = parser.parse_args()
    logs.configure("warning")
    missing = gvisor.missing()
    if missing:
        raise SystemExit(f"the gVisor tier cannot run here: {missing}")
    if args.covert_only:
        covert_bench(args.runs)
        return
    figures: dict[str, dict[str, list[float]]] = {t: {} for t in TIERS}
    stolen: list[float] = []
    loads: list[float] = []

    def keep(tier: str, key: str, value: float) -> None:
        figures[tier].setdefault(key, []).append(value)

    loops = _loops_per_ms()
    print(f"1 ms of think: {loops} steps of fast_bot's loop", flush=True)
    for run in range(args.runs):
        for tier in TIERS if run % 2 == 0 else reversed(TIERS):
            steal = Steal()
            load = os.getloadavg()[0]
            loads.append(load)
            times, memory, cpu = eventloop.run(starts(tier, args.starts))
            rate = eventloop.run(match(tier, [_random(f"r{i}") for i in range(3)], run))
            for language in ("node", "cpp"):
                bots = [_random(f"{language}{i}", language) for i in range(3)]
                other = eventloop.run(match(tier, bots, run))
                keep(tier, f"{language}_decision_ms", 1000 / other)
            thinkers = [_thinker(f"t{i}", loops) for i in range(3)]
            rate1 = eventloop.run(match(tier, thinkers, run))
            call = eventloop.run(syscall_us(tier))
            share = steal.percent()
            stolen.append(share)
            row = {
                "start_ms": statistics.median(times),
                "start_cpu_ms": statistics.median(cpu) if cpu else float("nan"),
                "memory_mib": statistics.median(memory),
                "decisions_per_s": rate,
                "decision_ms": 1000 / rate,
                "think1_decisions_per_s": rate1,
                "think1_decision_ms": 1000 / rate1,
                "syscall_us": call,
            }
            for key, value in row.items():
                keep(tier, key, value)
            print(
                f"run {run + 1} {tier:10}: start {row['start_ms']:.0f} ms "
                f"({row['start_cpu_ms']:.0f} ms of CPU with its stop), memory "
                f"{row['memory_mib']:.0f} MiB, random bots {rate:.0f} decisions/s "
                f"({1000 / rate:.2f} ms each), 1 ms bots {rate1:.0f}/s ({1000 / rate1:.2f} ms "
                f"each), getppid {call:.2f} us; Node {figures[tier]['node_decision_ms'][-1]:.2f} "
                f"ms, C++ {figures[tier]['cpp_decision_ms'][-1]:.2f} ms a decision; load "
                f"{load:.1f}, stolen {share:.1f}%",
                flush=True,
            )
    med = {t: {k: statistics.median(v) for k, v in figures[t].items()} for t in TIERS}
    print(
        f"medians of {args.runs} runs (load average {min(loads):.1f}-{max(loads):.1f} at their "
        f"starts, stolen {min(stolen):.1f}-{max(stolen):.1f}%):"
    )
    for tier in TIERS:
        m = med[tier]
        print(
            f"  {tier:10}: start {m['start_ms']:.0f} ms ({m['start_cpu_ms']:.0f} ms of CPU with "
            f"its stop), memory {m['memory_mib']:.0f} MiB, "
            f"random bots {m['decisions_per_s']:.0f} decisions/s ({m['decision_ms']:.2f} ms "
            f"each), 1 ms bots {m['think1_decisions_per_s']:.0f}/s "
            f"({m['think1_decision_ms']:.2f} ms each), getppid {m['syscall_us']:.2f} us, Node "
            f"{m['node_decision_ms']:.2f} ms, C++ {m['cpp_decision_ms']:.2f} ms a decision"
        )
    extra = med["gvisor"]["decision_ms"] - med["bubblewrap"]["decision_ms"]
    calls = extra * 1000 / (med["gvisor"]["syscall_us"] - med["bubblewrap"]["syscall_us"])
    print(
        f"gvisor's extra time per decision: {extra:.2f} ms, the cost of {calls:.0f} system "
        "calls at the getppid difference (bot and referee together: the referee's own calls "
        "are the host's)"
    )
    if not args.no_strace and shutil.which("strace"):
        call_us = med["gvisor"]["syscall_us"] - med["bubblewrap"]["syscall_us"]
        for bot in ("random", "node", "cpp"):  # the bot files' own strategies
            per, top = syscalls_per_decision(bot, 1)
            print(
                f"  {bot}: {per:.0f} system calls per decision (most: "
                f"{', '.join(f'{n} {c}' for n, c in top)}); at {call_us:.1f} us more each in "
                f"gVisor: {per * call_us / 1000:.2f} ms per decision",
                flush=True,
            )
    warning = loaded_warning(stolen)
    if warning:
        print(warning)
    b, g = med["bubblewrap"], med["gvisor"]
    print(
        f"bubblewrap_start_ms={b['start_ms']:.0f} gvisor_start_ms={g['start_ms']:.0f} "
        f"bubblewrap_start_cpu_ms={b['start_cpu_ms']:.0f} "
        f"gvisor_start_cpu_ms={g['start_cpu_ms']:.0f} "
        f"bubblewrap_decisions_per_s={b['decisions_per_s']:.0f} "
        f"gvisor_decisions_per_s={g['decisions_per_s']:.0f}"
    )


if __name__ == "__main__":
    main()
