"""Tournament throughput: six random bots, tables of four, ``parallel`` 1, 2, 4 and 8.

Each run plays a fresh round robin (every 4-subset of the six bots is a table; by default
four matches per table, one whole seat rotation: 60 matches) as ``referee tournament``
does, on the embedded defaults (SQLite, local bot processes kept between matches by the
bot pool; referee worker processes as ``referee tournament`` chooses them: one per core
but one, so on two cores every match is played in this process), and measures:

- matches/s: matches finished per wall-clock second, bot start-up included;
- the referee's CPU per decision: the user+system CPU seconds of this process and of the
  referee worker processes it starts for parallel matches (engine, views, messages,
  records, metrics and storage; bot processes are not counted) divided by the decisions
  answered.

The bots are ``sample_bots/python/random_bot.py`` declared as ``sample_bots/random.toml``
declares it, with ``seats = 8``: one process per bot plays up to eight matches at once
(``--seats 1``: a process per seat and match, as for a bot that declares nothing).

After each tournament it measures, at the same setting, a bare grpc.aio ping-pong
server's CPU per round trip: ``parallel`` groups of four client processes at once, each
group served in turn, with messages of a decision's size. That is the gRPC floor of one
decision at that setting: no referee can spend less and still move the two messages.

Then the bot sandbox (``--sandbox-runs``, 0 to skip; ``--sandbox-only`` for nothing else):

- start-up per bot process, sandbox vs none: from spawning the random bot (through
  ``referee.jail.launch``, and bubblewrap with its own socket's gRPC server) to its ``Hello``
  handshake on the referee; the median of ``--starts`` starts one after another, and the
  median time to open and close a bot's socket server alone;
- duplicate mode's matches/s with and without the sandbox: four random bots, one table,
  two deals of four seatings each (every match starts its four processes afresh).

Each is measured three ways: no sandbox; bubblewrap alone (no cgroup per bot: the
resource limits that stand in for one, as on a host where none can be made); and the
whole jail (bubblewrap and a cgroup per bot, :mod:`referee.jail.cgroups`). The jail's
extra start-up cost per bot is the whole jail's median over bubblewrap alone. Last, the
honest seats' speed under a hostile one: a match of three random bots and
``tests/bots/hog_bot.py``, which at its first decision starts a fork bomb, four children
holding 200 MiB each and 64 spinning children, against the same match with a fourth
random bot instead; the figure is the honest seats' decisions per second of their own
think time (from request sent to answer received, as the referee measures it: the round
trip referee, bot, referee, so mostly how soon the scheduler runs a woken bot and the
woken referee beside the hog's spinners), with their median think time and the host's
load average; and their decisions per second of the match's wall time, from its first
decision to its last, the time spent waiting for the hog's own turns left out (the think
time starts once the referee's write of the request has returned: a referee held up by
the hog shortens it, the wall time counts it). The two matches of a run are played one after the other, so that a busy
host weighs on both alike; quote the median ratio of several runs.

Prints every run (with the share of CPU time the hypervisor stole meanwhile, see
``benchmarks/machine.py``) and the median of ``--runs`` runs per setting, then a warning
when a run had more than 5% stolen. The last line is exactly:
``matches_per_s_p1=<a> matches_per_s_p4=<b> scaling=<b/a> referee_cpu_us_per_decision=<c>``
(the CPU figure is the median over all runs at every setting).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from machine import Steal, loaded_warning

from referee.config.bots import bot_from_table
from referee.jail import cgroups
from referee.jail.sandbox import Sandbox
from referee.match.faults import FaultReason
from referee.match.metrics import RefereeMetrics
from referee.match.pool import await_handshake, start_bot
from referee.match.runner import Clock, MatchRunner
from referee.match.server import RefereeServer
from referee.results.store import Store
from referee.rules import preset
from referee.runtime import eventloop, logs
from referee.tournament.config import config_from_table
from referee.tournament.run import run_tournament

ROOT = Path(__file__).resolve().parent.parent

#: The sandbox part's settings: (name, sandbox mode, cgroups per bot).
JAILS = (("none", "none", False), ("bubblewrap", "bubblewrap", False), ("jail", "bubblewrap", True))


class _Bounds:
    """Bots started meanwhile get a cgroup each (``per_bot``) or none (the resource limits
    that stand in for one, as where no cgroup can be made)."""

    def __init__(self, per_bot: bool) -> None:
        self.per_bot = per_bot
        self.before: str | None = None

    def __enter__(self) -> None:
        self.before = os.environ.get(cgroups.ROOT_VARIABLE)
        if self.per_bot:
            os.environ.pop(cgroups.ROOT_VARIABLE, None)
        else:  # a folder that holds no cgroup file system
            os.environ[cgroups.ROOT_VARIABLE] = tempfile.gettempdir()

    def __exit__(self, *exc: object) -> None:
        if self.before is None:
            os.environ.pop(cgroups.ROOT_VARIABLE, None)
        else:
            os.environ[cgroups.ROOT_VARIABLE] = self.before


def one_run(
    parallel: int,
    seed: int,
    matches_per_table: int,
    seats: int = 8,
    workers: int | None = None,
    *,
    mode: str = "round_robin",
    bots: int = 6,
    sandbox: str = "bubblewrap",
) -> tuple[float, float, int]:
    """(matches/s, referee CPU µs per decision, matches) for one fresh tournament."""
    with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
        table = {
            "tournament": {
                "name": f"bench-p{parallel}",
                "seed": seed,
                "mode": mode,
                "table_size": 4,
                "matches_per_table": matches_per_table,
                "parallel": parallel,
                "out": tmp,
            },
            "clock": {"decision_ms": 5000, "startup_ms": 30000},
            "sandbox": {"mode": sandbox},
            "bots": [
                {
                    "name": f"random{i}",
                    "command": [sys.executable, "python/random_bot.py"],
                    "workdir": str(ROOT / "sample_bots"),
                    "seats": seats,
                }
                for i in range(bots)
            ],
        }
        config = config_from_table(table, base=Path(tmp), source=Path(tmp) / "bench.toml")
        cpu0, t0 = time.process_time(), time.perf_counter()
        outcome = eventloop.run(
            run_tournament(config, metrics=RefereeMetrics(), progress=False, workers=workers)
        )
        wall, cpu = time.perf_counter() - t0, outcome.referee_cpu_s - cpu0
        store = Store(config.database)
        try:
            decisions = sum(len(r.think_us) for r in store.results(config.name))
        finally:
            store.close()
        if outcome.finished != outcome.planned:
            raise SystemExit(f"only {outcome.finished} of {outcome.planned} matches finished")
        return outcome.finished / wall, cpu / max(1, decisions) * 1e6, outcome.finished


#: The serialized sizes (bytes) of a request and an answer of the random bots' matches,
#: on average: the ping-pong's message sizes.
REQUEST_BYTES, ANSWER_BYTES = 267, 8


@functools.cache
def _protocol_bench() -> ModuleType:
    """``benchmarks/protocol.py``, whose bare ping-pong this benchmark reuses."""
    spec = importlib.util.spec_from_file_location(
        "protocol_bench", Path(__file__).with_name("protocol.py")
    )
    assert spec is not None and spec.loader is not None
    protocol = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = protocol
    spec.loader.exec_module(protocol)
    return protocol


def grpc_floor_us(parallel: int, roundtrips: int = 1500) -> float:
    """CPU µs per round trip of a bare grpc.aio bidirectional ping-pong server (from
    ``benchmarks/protocol.py``, messages of a decision's size) serving ``parallel`` groups
    of four client processes at once, each group in turn, as ``parallel`` four-seat
    matches are served: what a decision costs the serving process in gRPC alone at that
    setting. ``roundtrips`` timed round trips per group, after a warm-up."""
    protocol = _protocol_bench()

    async def measure() -> float:
        server, pingpong, port = await protocol.start_pingpong()
        try:
            async with protocol.PingPongSession(
                pingpong, port, REQUEST_BYTES, ANSWER_BYTES, 4 * parallel, parallel
            ) as session:
                await session.burst(200)
                made, _, cpu = await session.burst(roundtrips)
            return float(cpu / made * 1e6)
        finally:
            await server.stop(0)

    return eventloop.run(measure())


def bot_start_ms(starts: int) -> dict[str, list[float]]:
    """Milliseconds from spawning the random bot to its completed handshake, per setting
    of :data:`JAILS`: ``starts`` starts of each, one after another, the settings taking
    turns (so that a change in the machine's load meets each alike)."""
    spec = bot_from_table(
        {"name": "random", "command": [sys.executable, "python/random_bot.py"]},
        base=ROOT / "sample_bots",
    )

    async def measure() -> dict[str, list[float]]:
        servers = {}
        for name, mode, _ in JAILS:
            servers[name] = RefereeServer(sandbox=Sandbox(mode))
            await servers[name].start("127.0.0.1", 0)
        times: dict[str, list[float]] = {name: [] for name, _, _ in JAILS}
        try:
            with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
                for n in range(starts + 1):
                    for name, _, per_bot in JAILS:
                        server = servers[name]
                        slot = server.registry.open_seat("bench", n, "random")
                        with _Bounds(per_bot):
                            t0 = time.perf_counter()
                            log = Path(tmp) / f"{name}-{n}.log"
                            process = await start_bot(server, spec, [slot], log)
                            why = await await_handshake(slot, process, 30.0)
                            elapsed = time.perf_counter() - t0
                        if why:
                            raise SystemExit(f"the bot did not start: {why}")
                        assert slot.stream is not None
                        slot.stream.end()
                        await process.stop()
                        server.registry.close_seat(slot)
                        if n:  # the first start warms the file cache
                            times[name].append(elapsed * 1000)
        finally:
            for server in servers.values():
                await server.stop(0)
        return times

    return eventloop.run(measure())


def socket_server_ms(count: int = 20) -> list[float]:
    """Milliseconds to open one bot's socket with its gRPC server and to close it again."""

    async def measure() -> list[float]:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        times = []
        try:
            for _ in range(count):
                t0 = time.perf_counter()
                sock = await server.open_bot_socket()
                await sock.close()
                times.append((time.perf_counter() - t0) * 1000)
        finally:
            await server.stop(0)
        return times

    return eventloop.run(measure())


def cgroup_ms(count: int = 20) -> list[float]:
    """Milliseconds to make one bot's cgroup with its limits and to remove it again."""
    from referee.jail.bots import Limits

    system = cgroups.system()
    if not isinstance(system, cgroups.Cgroups):
        return []

    async def measure() -> list[float]:
        times = []
        for _ in range(count):
            t0 = time.perf_counter()
            group = system.make(Limits())
            await group.close()
            times.append((time.perf_counter() - t0) * 1000)
        return times

    return eventloop.run(measure())


class _PlayClock:
    """When each decision of a match came (a match observer): the honest seats' decisions
    per second of the match's wall time, the fourth seat's own turns left out."""

    def __init__(self, fourth: str, decision_s: float) -> None:
        self.fourth, self.decision_s = fourth, decision_s
        self.stamps: list[float] = []
        self.fourth_s = 0.0
        self.honest = 0

    def decision(self, bot: str, phase: str, think_s: float) -> None:
        self.stamps.append(time.perf_counter())
        if bot == self.fourth:
            self.fourth_s += think_s
        else:
            self.honest += 1

    def fault(self, bot: str, reason: FaultReason) -> None:
        if bot == self.fourth and reason is FaultReason.TIMEOUT:
            self.fourth_s += self.decision_s  # the time the match waited for it

    def trick(self) -> None:
        pass

    def round(self) -> None:
        pass

    def rate(self) -> float:
        """Honest decisions per second of wall time, from the first decision to the last."""
        wall = self.stamps[-1] - self.stamps[0] - self.fourth_s
        return self.honest / wall if wall > 0 else float("nan")


def hog_match(hog: bool, seed: int) -> tuple[float, int, float, float]:
    """(decisions per second of think time, decisions, median think time in µs, decisions
    per second of wall time) of the three honest seats of one jailed match, the fourth
    seat a hog (``hog``) or another honest bot."""
    honest = {"command": [sys.executable, "python/random_bot.py"]}
    bots = [
        bot_from_table({"name": f"random{i}", **honest}, base=ROOT / "sample_bots")
        for i in range(3)
    ]
    if hog:
        fourth = {
            "name": "hog",
            "command": [sys.executable, "hog_bot.py"],
            "env": {"HOG": "forkbomb+memory+cpu", "HOG_AT": "decision", "HOLD_MB": "200"},
            "limits": {"memory_mb": 1024},
        }
        bots.append(bot_from_table(fourth, base=ROOT / "tests" / "bots"))
    else:
        bots.append(bot_from_table({"name": "random3", **honest}, base=ROOT / "sample_bots"))

    clock = _PlayClock(bots[3].name, 1.0)

    async def play() -> tuple[float, int, float, float]:
        server = RefereeServer(sandbox=Sandbox("bubblewrap"))
        await server.start("127.0.0.1", 0)
        try:
            with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
                runner = MatchRunner(
                    server,
                    bots,
                    preset("sticheln"),
                    seed=seed,
                    clock=Clock(decision_ms=1000, time_bank_ms=0, startup_ms=30_000),
                    # The hog is forfeited at its first timeout (its own spinners starve
                    # it); it runs on, with its children, until the match ends.
                    strike_limit=1,
                    out_dir=Path(tmp),
                    observer=clock,
                )
                result = await runner.run()
        finally:
            await server.stop(0)
        think = [t for s in result.seats[:3] for t in s.think_s]
        median_us = statistics.median(think) * 1e6
        return len(think) / sum(think), len(think), median_us, clock.rate()

    return eventloop.run(play())


def sandbox_bench(runs: int, starts: int) -> list[float]:
    """Print the sandbox's cost; return the CPU share stolen in each part."""
    med = statistics.median
    steals = []
    starts_ms: dict[str, list[float]] = {name: [] for name, _, _ in JAILS}
    duplicate: dict[str, list[float]] = {name: [] for name, _, _ in JAILS}
    hogged: dict[bool, list[float]] = {False: [], True: []}
    walled: dict[bool, list[float]] = {False: [], True: []}
    for run in range(runs):
        steal = Steal()
        times = bot_start_ms(starts)
        steals.append(steal.percent())
        for name, _, _ in JAILS:
            starts_ms[name].append(med(times[name]))
        print(
            f"sandbox run {run + 1}: bot start to Hello median "
            + ", ".join(f"{name} {med(times[name]):.1f} ms" for name, _, _ in JAILS)
            + f" (of {starts} each, taking turns), CPU stolen by the host {steals[-1]:.0f}%",
            flush=True,
        )
        for name, mode, per_bot in JAILS:
            steal = Steal()
            with _Bounds(per_bot):
                rate, _, n = one_run(1, run + 1, 8, mode="duplicate", bots=4, sandbox=mode)
            duplicate[name].append(rate)
            steals.append(steal.percent())
            print(
                f"sandbox run {run + 1} {name}: duplicate mode {n} matches {rate:.2f} "
                f"matches/s, CPU stolen by the host {steals[-1]:.0f}%",
                flush=True,
            )
        if isinstance(cgroups.system(), cgroups.Cgroups):
            for hog in (False, True):
                steal = Steal()
                speed, decisions, median_us, wall = hog_match(hog, run + 1)
                hogged[hog].append(speed)
                walled[hog].append(wall)
                steals.append(steal.percent())
                print(
                    f"sandbox run {run + 1} jail, {'a hog' if hog else 'no hog'} at the table: "
                    f"honest seats {speed:.0f} decisions/s of think time (of {decisions}; "
                    f"median think {median_us:.0f} µs), {wall:.0f} decisions/s of wall time, "
                    f"CPU stolen by the host {steals[-1]:.0f}%, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    sockets = socket_server_ms()
    groups = cgroup_ms()
    base, jail = med(starts_ms["bubblewrap"]), med(starts_ms["jail"])
    print(
        f"median bot start to Hello: none {med(starts_ms['none']):.1f} ms, bubblewrap alone "
        f"{base:.1f} ms (+{base - med(starts_ms['none']):.1f} ms per bot process; of which its "
        f"socket's gRPC server opened and closed: {med(sockets):.2f} ms), the whole jail "
        f"{jail:.1f} ms (+{jail - base:.1f} ms over bubblewrap alone; target < 50 ms; of which "
        f"its cgroup made and removed: {med(groups) if groups else float('nan'):.2f} ms)"
    )
    print(
        "median duplicate mode: "
        + ", ".join(f"{name} {med(duplicate[name]):.2f} matches/s" for name, _, _ in JAILS)
    )
    if hogged[True]:
        ratio = med(hogged[True]) / med(hogged[False])
        print(
            f"median honest seats beside a fork bomb, a memory hog and a CPU hog: "
            f"{med(hogged[True]):.0f} decisions/s of think time, {ratio:.0%} of the same match "
            f"without the hog ({med(hogged[False]):.0f}/s; target >= 90%); "
            f"{med(walled[True]):.0f} decisions/s of the match's wall time (the hog's own "
            f"turns left out), {med(walled[True]) / med(walled[False]):.0%} of the same "
            f"match without the hog ({med(walled[False]):.0f}/s)"
        )
    else:
        print(f"no hog match: {cgroups.describe()}")
    print(
        f"sandbox_start_extra_ms={base - med(starts_ms['none']):.1f} jail_start_extra_ms={jail - base:.1f}"
    )
    return steals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per setting (median)")
    parser.add_argument("--matches-per-table", type=int, default=4)
    parser.add_argument("--parallel", default="1,2,4,8", help="settings to measure")
    parser.add_argument(
        "--seats", type=int, default=8, help="the bots' declared seats (default 8, as random.toml)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="referee processes (default: as referee tournament)",
    )
    parser.add_argument(
        "--sandbox-runs", type=int, default=3, help="runs of the sandbox part (0: skip it)"
    )
    parser.add_argument("--starts", type=int, default=10, help="bot starts per sandbox run")
    parser.add_argument(
        "--sandbox-only", action="store_true", help="measure only the sandbox's cost"
    )
    args = parser.parse_args()
    logs.configure("warning")
    if args.sandbox_only or args.sandbox_runs:
        steals = sandbox_bench(args.sandbox_runs or 3, args.starts)
        if args.sandbox_only:
            warning = loaded_warning(steals)
            if warning:
                print(warning)
            return
    settings = [int(p) for p in args.parallel.split(",")]
    rates: dict[int, list[float]] = {p: [] for p in settings}
    cpus: dict[int, list[float]] = {p: [] for p in settings}
    floors: dict[int, list[float]] = {p: [] for p in settings}
    steals: list[float] = []
    for run in range(args.runs):
        for p in settings:  # interleaved, so machine noise hits every setting alike
            steal = Steal()
            rate, cpu_us, n = one_run(
                p,
                seed=run + 1,
                matches_per_table=args.matches_per_table,
                seats=args.seats,
                workers=args.workers,
            )
            floor = grpc_floor_us(p)
            rates[p].append(rate)
            cpus[p].append(cpu_us)
            floors[p].append(floor)
            steals.append(steal.percent())
            print(
                f"run {run + 1} parallel {p}: {n} matches, {rate:.2f} matches/s, referee "
                f"{cpu_us:.0f} µs CPU/decision (gRPC floor {floor:.0f} µs), CPU stolen by the "
                f"host {steals[-1]:.0f}%",
                flush=True,
            )
    med = statistics.median
    for p in settings:
        print(
            f"median parallel {p}: {med(rates[p]):.2f} matches/s, referee {med(cpus[p]):.0f} µs "
            f"CPU/decision, gRPC floor {med(floors[p]):.0f} µs"
        )
    a = med(rates[settings[0]])
    b = med(rates[4]) if 4 in rates else float("nan")
    c = med([x for p in settings for x in cpus[p]])
    print(
        f"all settings: referee {c:.0f} µs CPU/decision, gRPC floor "
        f"{med([x for p in settings for x in floors[p]]):.0f} µs (the floor: a bare grpc.aio "
        "ping-pong server serving as many groups of four clients at once, each in turn)"
    )
    warning = loaded_warning(steals)
    if warning:
        print(warning)
    print(
        f"matches_per_s_p1={a:.2f} matches_per_s_p4={b:.2f} scaling={b / a:.2f} referee_cpu_us_per_decision={c:.0f}"
    )


if __name__ == "__main__":
    main()
