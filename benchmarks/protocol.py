"""Bot-protocol speed over loopback: decisions/s through the referee against a bare gRPC
ping-pong of the same message sizes.

Everything runs on 127.0.0.1. The referee (:class:`RefereeServer` and the
:class:`MatchRunner`\\ s) runs in this process, on one asyncio loop; every bot is its own
process, ``benchmarks/bots/fast_bot.py`` (grpc.aio and the generated stubs only; it
answers every request at once with the lowest legal choice), started by the runner as
any command bot is. The default 4-player rule set is played with a generous clock
(``decision_ms`` 5000, so no timeout can interfere) and a fixed seed sequence; any fault
makes the script fail.

Each run measures, and the script prints:

1. **decisions/s, one match at a time**: matches back to back. A match starts four new
   bot processes, which takes far longer than the play, so the play is timed apart from
   the start-up, through the runner's observer: ``MatchObserver.decision`` fires as each
   answer is accepted, and the play window runs from the first accepted answer to the
   last (``n - 1`` decisions in between; the window starts only once all four bots have
   completed their handshake and got ``MatchStart``, so no start-up is inside it, and it
   ends before ``MatchEnd`` and the teardown). The window holds everything the referee
   does per decision: building the view and the request, flushing events, the record
   line, the gRPC write, the bot's answer, the read and the check. The steady figure
   counts only rounds 2 to the last (from the first ``MatchObserver.round`` to the last),
   leaving out the bots' first, colder round. The start-up figure is the rest of
   ``MatchResult.duration_s``.
2. **round trips/s of a bare grpc.aio ping-pong** (the floor): a server in this process
   and ``benchmarks/bots/pingpong_client.py`` in another, one bidirectional stream; the
   server writes a message and awaits the answer, as the referee does. The ping-pong is
   timed in bursts between the matches of part 1: after each match, as many round trips
   as that match had decisions in its play window (after a few untimed ones), with the
   client processes kept connected through the run. The referee and its floor are so
   timed a fraction of a second apart, over the same stretch of the run, and a slow
   spell of a shared machine weighs on both alike (timed one after the other, a few
   seconds each, the ratio of one run could come out anywhere from 0.4 to 1.1 here). The messages are
   ``google.protobuf.BytesValue`` padded to the average serialized sizes of the
   referee's ``RefereeMessage`` requests and the bot's ``BotMessage`` decisions, which
   the bot measured in a warm-up match (``BENCH_SIZES``). For reference it also
   times the same ping-pong with 4 client processes served in turn, as a match's seats
   are: each client then sleeps between its turns, and waking it costs extra. Each run's
   line also gives the ratio against that floor.
3. **aggregate decisions/s, 8 matches at once** (``--concurrent``): 8 runners on the one
   server, 32 bot processes. The bots wait at a barrier (``BENCH_GO``) after
   start-up, so all matches play at the same time; the window runs from the moment the
   last match accepts its first answer to the moment the first match accepts its last,
   i.e. only while every match is playing, and counts every match's decisions in it.
4. **matches/s, whole matches** back to back: bot start-up, handshakes, the seeded deals,
   the play, the record and the teardown, with ``sample_bots/random.toml`` when it
   exists, else the fast bot.

The figures of every run are printed, with the share of CPU time the hypervisor stole
meanwhile (``benchmarks/machine.py``: a run with much of it measured a loaded machine,
whose slow wake-ups weigh more on the bare ping-pong than on the referee, pushing the
ratio towards 1), then their medians, then a warning when a run had more than 5% stolen;
the last line is exactly
``decisions_per_s=<n> pingpong_per_s=<m> ratio=<n/m> overhead_us=<1e6/n - 1e6/m>`` with
``n`` the median decisions/s of one match at a time (the play window) and ``m`` the median
ping-pong round trips/s (one client). ``overhead_us`` is what the referee path adds to a
bare round trip, per decision. "CPU" figures are this process's CPU time (all threads) per
decision or round trip. ``--profile FILE`` runs the one-match-at-a-time part under cProfile
too (slower; the figures of that part are then not comparable) and writes pstats.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# The referee package first: on import it applies the referee's gRPC settings
# (referee/runtime/grpcenv.py), which gRPC reads once when it is imported. They then hold for the
# referee and the bare ping-pong server in this process alike, so the floor is measured
# under the same gRPC configuration.
# isort: off
import referee  # noqa: F401
import grpc

# isort: on
import structlog
from google.protobuf.wrappers_pb2 import BytesValue
from machine import Steal, loaded_warning

from referee.config.bots import load_bot
from referee.jail.bots import BotSpec
from referee.jail.sandbox import Sandbox
from referee.match.runner import Clock, MatchResult, MatchRunner
from referee.match.server import RefereeServer
from referee.rules import preset
from referee.runtime import eventloop

HERE = Path(__file__).resolve().parent
BOTS = HERE / "bots"
FAST_BOT = BOTS / "fast_bot.py"
PINGPONG_CLIENT = BOTS / "pingpong_client.py"
RANDOM_BOT = HERE.parent / "sample_bots" / "random.toml"
PINGPONG_METHOD = "/bench.PingPong/Play"
CLOCK = Clock(decision_ms=5000, time_bank_ms=0, startup_ms=120_000)
PLAYERS = 4


class Timeline:
    """A match observer that notes when each answer is accepted and each round scored."""

    def __init__(self) -> None:
        self.decisions: list[float] = []
        self.cpu: list[float] = []
        self.rounds: list[float] = []
        self.faults: list[str] = []

    def decision(self, bot: str, phase: str, think_s: float) -> None:
        self.decisions.append(time.perf_counter())
        self.cpu.append(time.process_time())

    def fault(self, bot: str, reason: Any) -> None:
        self.faults.append(f"{bot}: {reason}")

    def trick(self) -> None:
        pass

    def round(self) -> None:
        self.rounds.append(time.perf_counter())

    def play_window(self) -> tuple[int, float]:
        """(decisions, seconds) from the first accepted answer to the last."""
        d = self.decisions
        return len(d) - 1, d[-1] - d[0]

    def play_cpu(self) -> float:
        """This process's CPU seconds (all threads) in the play window."""
        return self.cpu[-1] - self.cpu[0]

    def steady_window(self) -> tuple[int, float]:
        """(decisions, seconds) from the end of round 1 to the end of the last round."""
        start, end = self.rounds[0], self.rounds[-1]
        return sum(1 for t in self.decisions if start < t <= end), end - start


def fast_bot(env: dict[str, str] | None = None) -> BotSpec:
    return BotSpec(
        name="fast", command=(sys.executable, str(FAST_BOT)), workdir=BOTS, env=env or {}
    )


def random_bot() -> BotSpec:
    """``sample_bots/random.toml``, run by this interpreter (whose environment has grpcio
    and the stubs) when its command names a bare ``python``/``python3``."""
    spec = load_bot(RANDOM_BOT)
    if spec.command and spec.command[0] in ("python", "python3"):
        spec = replace(spec, command=(sys.executable, *spec.command[1:]))
    return spec


def _check(result: MatchResult, timeline: Timeline) -> None:
    faults = [f for s in result.seats for f in s.faults] or timeline.faults
    if faults or result.reason != "completed":
        raise SystemExit(f"match {result.match_id} had faults or did not complete: {faults}")
    if result.decisions != len(timeline.decisions):
        raise SystemExit(
            f"match {result.match_id}: {result.decisions} decisions, observer saw {len(timeline.decisions)}"
        )


def _runner(
    server: RefereeServer, spec: BotSpec, out: Path, seed: int, match_id: str
) -> tuple[MatchRunner, Timeline]:
    timeline = Timeline()
    runner = MatchRunner(
        server,
        [spec] * PLAYERS,
        preset("sticheln"),
        seed=seed,
        match_id=match_id,
        clock=CLOCK,
        out_dir=out,
        observer=timeline,
    )
    return runner, timeline


@dataclass
class Bursts:
    """Ping-pong round trips timed in bursts between matches: their sums."""

    n: int = 0
    seconds: float = 0.0
    cpu: float = 0.0

    def add(self, burst: tuple[int, float, float]) -> None:
        self.n += burst[0]
        self.seconds += burst[1]
        self.cpu += burst[2]

    @property
    def per_s(self) -> float:
        return self.n / self.seconds

    @property
    def cpu_us(self) -> float:
        return self.cpu / self.n * 1e6


@dataclass
class SingleFigures:
    play_per_s: float
    steady_per_s: float
    startup_s: float
    cpu_us: float
    decisions: int
    #: The ping-pong bursts timed after each match (one client; four clients in turn).
    pingpong: Bursts = field(default_factory=Bursts)
    pingpong4: Bursts = field(default_factory=Bursts)


async def single_matches(
    server: RefereeServer,
    out: Path,
    matches: int,
    seed0: int,
    spec: BotSpec,
    sessions: tuple[PingPongSession, PingPongSession] | None = None,
    profiler: cProfile.Profile | None = None,
) -> SingleFigures:
    """``matches`` matches one after another; decisions/s inside the play windows. With
    ``sessions`` (one client, four clients), each match is followed by a ping-pong burst
    of as many round trips as the match had decisions in its play window, on each, so
    that the referee and its floor are timed in alternation, a fraction of a second apart,
    and a slow spell of the machine falls on both alike."""
    play_n = steady_n = decisions = 0
    play_s = steady_s = startup_s = cpu_s = 0.0
    one, four = Bursts(), Bursts()
    for i in range(matches):
        runner, timeline = _runner(server, spec, out, seed0 + i, f"single-{seed0}-{i}")
        if profiler is not None:
            profiler.enable()
        result = await runner.run()
        if profiler is not None:
            profiler.disable()
        _check(result, timeline)
        n, s = timeline.play_window()
        play_n, play_s, cpu_s = play_n + n, play_s + s, cpu_s + timeline.play_cpu()
        if sessions is not None:
            one.add(await sessions[0].burst(n))
            four.add(await sessions[1].burst(n))
        n, s = timeline.steady_window()
        steady_n, steady_s = steady_n + n, steady_s + s
        startup_s += result.duration_s - (timeline.decisions[-1] - timeline.decisions[0])
        decisions += result.decisions
    return SingleFigures(
        play_n / play_s,
        steady_n / steady_s,
        startup_s / matches,
        cpu_s / play_n * 1e6,
        decisions,
        one,
        four,
    )


async def concurrent_matches(
    server: RefereeServer, out: Path, matches: int, seed0: int
) -> tuple[float, float]:
    """``matches`` matches at once, released together; (aggregate decisions/s while all
    play, decisions/s over the whole ragged span)."""
    gate = Path(tempfile.mkdtemp(prefix="gate-", dir=out))
    go, ready = gate / "go", gate / "ready"
    ready.mkdir()
    spec = fast_bot({"BENCH_GO": str(go), "BENCH_READY": str(ready)})
    pairs = [
        _runner(server, spec, out, seed0 + i, f"concurrent-{seed0}-{i}") for i in range(matches)
    ]
    tasks = [asyncio.ensure_future(r.run()) for r, _ in pairs]
    while len(os.listdir(ready)) < matches * PLAYERS:
        if any(t.done() for t in tasks):
            break  # a failed match: gather below raises or _check reports it
        await asyncio.sleep(0.01)
    go.touch()
    results = await asyncio.gather(*tasks)
    timelines = [t for _, t in pairs]
    for result, timeline in zip(results, timelines, strict=True):
        _check(result, timeline)
    start = max(t.decisions[0] for t in timelines)
    end = min(t.decisions[-1] for t in timelines)
    inside = sum(1 for t in timelines for d in t.decisions if start < d <= end)
    first = min(t.decisions[0] for t in timelines)
    last = max(t.decisions[-1] for t in timelines)
    total = sum(len(t.decisions) - 1 for t in timelines)
    return inside / (end - start), total / (last - first)


async def whole_matches(
    server: RefereeServer, out: Path, matches: int, seed0: int, spec: BotSpec
) -> float:
    """Matches/s, whole matches back to back."""
    start = time.perf_counter()
    for i in range(matches):
        seeded = replace(spec, env={**spec.env, "RANDOM_BOT_SEED": str(seed0 + i)})
        runner, timeline = _runner(server, seeded, out, seed0 + i, f"whole-{seed0}-{i}")
        _check(await runner.run(), timeline)
    return matches / (time.perf_counter() - start)


async def message_sizes(server: RefereeServer, out: Path) -> tuple[float, float]:
    """Average serialized sizes of (request RefereeMessage, Decision BotMessage) in a
    match, as the bots measure them; the match doubles as a warm-up."""
    sizes = out / "sizes.txt"
    await single_matches(server, out, 1, 999_000, fast_bot({"BENCH_SIZES": str(sizes)}))
    count = req = dec = 0
    for line in sizes.read_text().splitlines():
        n, r, d = map(int, line.split())
        count, req, dec = count + n, req + r, dec + d
    return req / count, dec / count


def _payload(size: int) -> int:
    """The ``BytesValue`` payload length whose serialized size is ``size`` (or just under)."""
    for n in range(max(0, size - 1), -1, -1):
        if BytesValue(value=b"\x01" * n).ByteSize() <= size:
            return n
    return 0


class PingPong:
    """The server side of the ping-pong: each client's stream waits here while the
    benchmark writes pings on it and awaits the pongs (from its own task, as the match
    runner writes on a seat's stream)."""

    def __init__(self) -> None:
        self.streams: list[grpc.aio.ServicerContext[Any, Any]] = []
        self.changed = asyncio.Event()
        self.done = asyncio.Event()

    async def play(self, requests: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.read()
        self.streams.append(context)
        self.changed.set()
        await self.done.wait()


async def start_pingpong() -> tuple[grpc.aio.Server, PingPong, int]:
    pingpong = PingPong()
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    service, method = PINGPONG_METHOD.strip("/").split("/")
    handler = grpc.method_handlers_generic_handler(
        service,
        {
            method: grpc.stream_stream_rpc_method_handler(
                pingpong.play,
                request_deserializer=BytesValue.FromString,
                response_serializer=BytesValue.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, pingpong, port


class PingPongSession:
    """``clients`` ping-pong client processes, one stream each, kept connected so that
    bursts of round trips can be timed between other measurements. The clients are
    served in turn (one client: the plain two-process ping-pong); with ``groups`` > 1
    they are split into that many equal groups, each served in turn by its own task and
    all groups at once, as that many matches at once are."""

    def __init__(
        self,
        pingpong: PingPong,
        port: int,
        ping_size: int,
        pong_size: int,
        clients: int = 1,
        groups: int = 1,
    ) -> None:
        if groups < 1 or clients % groups:
            raise ValueError(f"{clients} clients do not split into {groups} equal groups")
        self.pingpong = pingpong
        self.port = port
        self.ping = BytesValue(value=b"\x01" * _payload(ping_size))
        self.pong_payload = _payload(pong_size)
        self.clients = clients
        self.groups = groups
        self.procs: list[asyncio.subprocess.Process] = []
        self.streams: list[grpc.aio.ServicerContext[Any, Any]] = []

    async def __aenter__(self) -> PingPongSession:
        pingpong = self.pingpong
        pingpong.streams.clear()
        pingpong.done.clear()
        self.procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                str(PINGPONG_CLIENT),
                f"127.0.0.1:{self.port}",
                str(self.pong_payload),
                stdin=asyncio.subprocess.DEVNULL,
            )
            for _ in range(self.clients)
        ]
        async with asyncio.timeout(60):
            while len(pingpong.streams) < self.clients:
                pingpong.changed.clear()
                await pingpong.changed.wait()
        self.streams = list(pingpong.streams)
        await self._roundtrips(100)  # warm-up
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.pingpong.done.set()
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()

    async def _roundtrips(self, n: int) -> int:
        """``n`` round trips per group; returns how many were made in all."""
        ping, size = self.ping, self.clients // self.groups

        async def serve(streams: list[grpc.aio.ServicerContext[Any, Any]]) -> None:
            for i in range(n):
                stream = streams[i % size]
                await stream.write(ping)
                await stream.read()

        if self.groups == 1:
            await serve(self.streams)
        else:
            await asyncio.gather(
                *(serve(self.streams[g * size : (g + 1) * size]) for g in range(self.groups))
            )
        return n * self.groups

    async def burst(self, roundtrips: int) -> tuple[int, float, float]:
        """(round trips, seconds, this process's CPU seconds) of ``roundtrips`` timed round
        trips per group, after a few untimed ones (a client may have slept since the last
        burst, as a match's bots do before the play window opens)."""
        await self._roundtrips(2 * self.clients // self.groups)
        start, cpu = time.perf_counter(), time.process_time()
        made = await self._roundtrips(roundtrips)
        return made, time.perf_counter() - start, time.process_time() - cpu


async def pingpong_run(
    pingpong: PingPong,
    port: int,
    ping_size: int,
    pong_size: int,
    roundtrips: int,
    clients: int = 1,
) -> tuple[float, float]:
    """(round trips/s, this process's CPU s per round trip) over ``clients`` fresh client
    processes, one stream each, served in turn (1: the plain two-process ping-pong)."""
    async with PingPongSession(pingpong, port, ping_size, pong_size, clients) as session:
        await session.burst(max(100, roundtrips // 10))
        n, elapsed, cpu = await session.burst(roundtrips)
    return n / elapsed, cpu / n


def _quiet_logs() -> None:
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        cache_logger_on_first_use=True,
    )


async def bench(args: argparse.Namespace) -> None:
    _quiet_logs()
    out = Path(tempfile.mkdtemp(prefix="sticheln-protocol-bench-"))
    # The bots are the benchmark's own and trusted: they run without the sandbox and dial
    # 127.0.0.1 over TCP, so this measures the protocol; the sandbox's cost (a bot's start,
    # its Unix socket) is benchmarks/tournament.py --sandbox-only's. The sizes bot also
    # writes its figures to a file here, which a sandboxed bot could not.
    server = RefereeServer(sandbox=Sandbox("none"))
    await server.start("127.0.0.1", 0)
    pp_server, pingpong, pp_port = await start_pingpong()
    pp_server4, pingpong4, pp_port4 = await start_pingpong()
    fast = fast_bot()
    whole_spec, whole_name = (random_bot(), "random") if RANDOM_BOT.exists() else (fast, "fast")
    profiler = cProfile.Profile() if args.profile else None
    try:
        req_size, dec_size = await message_sizes(server, out)
        ping, pong = round(req_size), round(dec_size)
        print(
            f"messages: RefereeMessage request {req_size:.1f} B, BotMessage decision {dec_size:.1f} B "
            f"on average; ping-pong with {ping} B / {pong} B"
        )
        print(
            f"whole matches with the {whole_name} bot"
            + ("" if whole_name == "random" else f" ({RANDOM_BOT} does not exist)")
        )
        singles: list[SingleFigures] = []
        pings: list[float] = []
        ping_cpu: list[float] = []
        pings4: list[float] = []
        ratios: list[float] = []
        concurrent: list[float] = []
        ragged: list[float] = []
        wholes: list[float] = []
        steals: list[float] = []
        for run in range(args.runs):
            seed0 = (run + 1) * 1000
            steal = Steal()
            # Each match is followed by ping-pong bursts of its size (single_matches), and
            # the other parts follow in turn, so that machine noise hits every figure alike.
            async with (
                PingPongSession(pingpong, pp_port, ping, pong) as one,
                PingPongSession(pingpong4, pp_port4, ping, pong, PLAYERS) as four,
            ):
                single = await single_matches(
                    server, out, args.matches, seed0, fast, (one, four), profiler
                )
            singles.append(single)
            rate, cpu = single.pingpong.per_s, single.pingpong.cpu_us
            rate4 = single.pingpong4.per_s
            pings.append(rate)
            ping_cpu.append(cpu)
            pings4.append(rate4)
            ratios.append(single.play_per_s / rate)
            line = (
                f"run {run + 1}: 1 match {single.play_per_s:,.0f} decisions/s "
                f"({1e6 / single.play_per_s:.0f} µs, referee CPU {single.cpu_us:.0f} µs; "
                f"steady {single.steady_per_s:,.0f}/s; start-up+teardown "
                f"{single.startup_s:.2f} s/match) | ping-pong {rate:,.0f}/s "
                f"({1e6 / rate:.0f} µs, server CPU {cpu:.0f} µs; "
                f"{PLAYERS} clients in turn {rate4:,.0f}/s, server CPU "
                f"{single.pingpong4.cpu_us:.0f} µs) | ratio {ratios[-1]:.2f} "
                f"(against {PLAYERS} clients in turn {single.play_per_s / rate4:.2f})"
            )
            if args.concurrent:
                agg, rag = await concurrent_matches(server, out, args.concurrent, seed0 + 500)
                concurrent.append(agg)
                ragged.append(rag)
                line += f" | {args.concurrent} at once {agg:,.0f} decisions/s (span {rag:,.0f}/s)"
            if args.whole:
                wholes.append(await whole_matches(server, out, args.whole, seed0 + 800, whole_spec))
                line += f" | {wholes[-1]:.2f} matches/s"
            steals.append(steal.percent())
            line += f" | CPU stolen by the host {steals[-1]:.0f}%"
            print(line, flush=True)
        med = statistics.median
        n = med(s.play_per_s for s in singles)
        m = med(pings)
        print(
            f"median: 1 match {n:,.0f} decisions/s ({1e6 / n:.0f} µs, referee CPU "
            f"{med(s.cpu_us for s in singles):.0f} µs; steady "
            f"{med(s.steady_per_s for s in singles):,.0f}/s; start-up+teardown "
            f"{med(s.startup_s for s in singles):.2f} s/match) | ping-pong {m:,.0f}/s "
            f"({1e6 / m:.0f} µs, server CPU {med(ping_cpu):.0f} µs; {PLAYERS} clients in turn "
            f"{med(pings4):,.0f}/s, {1e6 / med(pings4):.0f} µs) | ratio of each run's pair: "
            f"median {med(ratios):.2f}"
            + (
                f" | {args.concurrent} at once {med(concurrent):,.0f} decisions/s "
                f"(span {med(ragged):,.0f}/s)"
                if args.concurrent
                else ""
            )
            + (f" | {med(wholes):.2f} matches/s ({whole_name} bots)" if args.whole else "")
        )
        warning = loaded_warning(steals)
        if warning:
            print(warning)
        if profiler is not None:
            profiler.dump_stats(args.profile)
            print(f"profile of the one-match part written to {args.profile}")
        print(
            f"decisions_per_s={n:.0f} pingpong_per_s={m:.0f} ratio={n / m:.2f} "
            f"overhead_us={1e6 / n - 1e6 / m:.1f}"
        )
    finally:
        await pp_server.stop(1)
        await pp_server4.stop(1)
        await server.stop(1)
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs to take the median of")
    parser.add_argument(
        "--matches", type=int, default=8, help="matches per run, one at a time (default 8)"
    )
    parser.add_argument(
        "--concurrent", type=int, default=8, help="matches at once (default 8; 0 = skip)"
    )
    parser.add_argument(
        "--whole", type=int, default=4, help="whole matches per run for matches/s (0 = skip)"
    )
    parser.add_argument("--profile", metavar="FILE", help="cProfile the one-match part to FILE")
    eventloop.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
