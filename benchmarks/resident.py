"""What closing the page-cache channel costs: a bot's start and a Python decision, in each
tier, as before and as now, in the same run (docs/security.md, docs/performance.md).

Four ways to start the Python random sample bot, taking turns (``--runs`` rounds):

- ``before``: the sandbox as it was, all of ``/usr`` and the referee's whole interpreter
  readable, nothing kept resident;
- ``binds``: the bot reads its runtime only (:mod:`referee.jail.runtime`), each of its
  files and folders bound on its own (about a hundred mounts; ``STICHELN_JAIL_TREES=0``);
- ``runtime``: the same, its members gathered into prepared trees, a mount per folder
  (:mod:`referee.jail.trees`), as every run does now;
- ``held``: the runtime, and everything the bot may read kept resident
  (:mod:`referee.jail.resident`), as a duplicate tournament and a comparison run. The
  first start of a process pays for holding the runtime once: printed apart.

For each: ``--starts`` starts (spawn to ``Hello``), one start of each way in turn, so
that a loaded machine's swings fall on every way alike: the median, and the median ratio
of each start to the "before" start of its round, and the CPU time a start took (the
referee's, and bubblewrap's or runsc's and the bot's, counted once they end: what the
load does not stretch); and the decisions per second of one
match of three such bots (first decision to last). Prints every round with the load
average and the CPU time the hypervisor stole, then the medians::

    .venv/bin/python benchmarks/resident.py [--runs 3] [--starts 5] [--tier bubblewrap]
        [--no-matches]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from jail import _random, match  # noqa: E402
from machine import Steal  # noqa: E402

from referee.jail import gvisor, resident, runtime, trees  # noqa: E402
from referee.jail.sandbox import Sandbox, bot_path  # noqa: E402
from referee.match import pool  # noqa: E402
from referee.match.pool import await_handshake, start_bot  # noqa: E402
from referee.match.server import RefereeServer  # noqa: E402
from referee.runtime import eventloop, logs  # noqa: E402

WAYS = ("before", "binds", "runtime", "held")
_reads, _line = pool.bot_reads, pool.reads_line


def _use(way: str) -> None:
    before = way == "before"  # policy(runtime=None): all of /usr, as before
    pool.bot_reads = (lambda spec: None) if before else _reads  # type: ignore[assignment,return-value]
    pool.reads_line = (lambda reads, held: "reads all of /usr") if before else _line  # type: ignore[assignment]
    os.environ[resident.VARIABLE] = "1" if way == "held" else "0"
    os.environ[trees.VARIABLE] = "0" if way == "binds" else ""


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended (bwrap or runsc, and
    what they ran)."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def paired_starts(
    tier: str, count: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Start-to-Hello ms of the random bot in ``tier``, ``count`` rounds of one start each
    way in turn (the order turned round each round), on one server: each round's starts
    see the same load, whatever the machine does meanwhile. One start each way first, not
    counted (it warms the page cache and makes what a process makes once)."""
    server = RefereeServer(sandbox=Sandbox(tier))
    await server.start("127.0.0.1", 0)
    spec = _random("random")
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    cpu: dict[str, list[float]] = {way: [] for way in WAYS}
    try:
        with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
            for n in range(count + 1):
                for way in WAYS if n % 2 == 0 else reversed(WAYS):
                    _use(way)
                    slot = server.registry.open_seat("bench", n, "random")
                    c0 = _cpu()
                    t0 = time.perf_counter()
                    process = await start_bot(server, spec, [slot], Path(tmp) / f"{way}{n}.log")
                    why = await await_handshake(slot, process, 120.0)
                    elapsed = time.perf_counter() - t0
                    if why:
                        raise SystemExit(f"the bot did not start in {tier} ({way}): {why}")
                    assert slot.stream is not None
                    slot.stream.end()
                    await process.stop()
                    server.registry.close_seat(slot)
                    if n:
                        times[way].append(elapsed * 1000)
                        cpu[way].append((_cpu() - c0) * 1000)
    finally:
        await server.stop(0)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(prog="python benchmarks/resident.py", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--tier", action="append", choices=("bubblewrap", "gvisor"))
    parser.add_argument(
        "--no-matches", action="store_true", help="starts only (no match per way and run)"
    )
    args = parser.parse_args()
    logs.configure("warning")
    tiers = args.tier or ["bubblewrap", "gvisor"]
    if "gvisor" in tiers and (why := gvisor.missing()):
        print(f"gvisor skipped: {why}")
        tiers.remove("gvisor")
    began = time.perf_counter()
    reads = runtime.read_set("python3", ["python3"], REPO, bot_path())
    listed = time.perf_counter() - began
    began = time.perf_counter()
    report = resident.hold_once(reads.binds, reads.hidden)
    print(
        f"runtime python3: {reads.describe()}, listed in {listed * 1000:.0f} ms; held "
        f"(once per process) in {(time.perf_counter() - began) * 1000:.0f} ms: {report.describe()}",
        flush=True,
    )
    figures: dict[tuple[str, str], dict[str, list[float]]] = {}
    for run in range(args.runs):
        for tier in tiers:
            steal = Steal()
            load = os.getloadavg()[0]
            paired, cpu = eventloop.run(paired_starts(tier, args.starts))
            base = paired["before"]
            for way in WAYS:
                row: dict[str, Any] = figures.setdefault((tier, way), {})
                row.setdefault("start_ms", []).extend(paired[way])
                # Each start against the "before" start of its own round.
                ratios = [a / b for a, b in zip(paired[way], base, strict=True)]
                row.setdefault("ratio", []).extend(ratios)
                row.setdefault("cpu_ms", []).extend(cpu[way])
                print(
                    f"run {run + 1} {tier:10} {way:8}: start {statistics.median(paired[way]):.0f}"
                    f" ms (x{statistics.median(ratios):.2f} of before, paired), CPU "
                    f"{statistics.median(cpu[way]):.0f} ms; load {load:.1f},"
                    f" stolen {steal.percent():.1f}%",
                    flush=True,
                )
            if args.no_matches:
                continue
            for way in WAYS if run % 2 == 0 else reversed(WAYS):
                _use(way)
                steal = Steal()
                load = os.getloadavg()[0]
                rate = eventloop.run(match(tier, [_random(f"r{i}") for i in range(3)], run))
                figures[(tier, way)].setdefault("decision_ms", []).append(1000 / rate)
                print(
                    f"run {run + 1} {tier:10} {way:8}: {rate:.0f} decisions/s "
                    f"({1000 / rate:.2f} ms each); load {load:.1f}, stolen {steal.percent():.1f}%",
                    flush=True,
                )
    print(f"medians of {args.runs} runs x {args.starts} paired starts:")
    for (tier, way), row in figures.items():
        start = statistics.median(row["start_ms"])
        ratio = statistics.median(row["ratio"])
        decision = (
            f", decision {statistics.median(row['decision_ms']):.2f} ms"
            if row.get("decision_ms")
            else ""
        )
        used = statistics.median(row["cpu_ms"])
        print(
            f"  {tier:10} {way:8}: start {start:.0f} ms (x{ratio:.2f} of before), "
            f"CPU {used:.0f} ms{decision}"
        )
    print(f"held: {resident.resident_bytes() / (1 << 20):.1f} MiB of file pages locked")


if __name__ == "__main__":
    main()
