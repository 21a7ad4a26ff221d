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

It also measures a bare grpc.aio ping-pong server's CPU per round trip (the gRPC floor
of one decision: no referee can spend less and still move the two messages).

Prints every run (with the share of CPU time the hypervisor stole meanwhile, see
``benchmarks/machine.py``) and the median of ``--runs`` runs per setting. The last line is exactly:
``matches_per_s_p1=<a> matches_per_s_p4=<b> scaling=<b/a> referee_cpu_us_per_decision=<c>``
(the CPU figure is the median over all runs at every setting).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from machine import Steal

from referee import eventloop, logs
from referee.metrics import RefereeMetrics
from referee.tournament.config import config_from_table
from referee.tournament.run import run_tournament
from referee.tournament.storage import Store

ROOT = Path(__file__).resolve().parent.parent


def one_run(
    parallel: int, seed: int, matches_per_table: int, seats: int = 8, workers: int | None = None
) -> tuple[float, float, int]:
    """(matches/s, referee CPU µs per decision, matches) for one fresh tournament."""
    with tempfile.TemporaryDirectory(prefix="sticheln-bench-") as tmp:
        table = {
            "tournament": {
                "name": f"bench-p{parallel}",
                "seed": seed,
                "table_size": 4,
                "matches_per_table": matches_per_table,
                "parallel": parallel,
                "out": tmp,
            },
            "clock": {"decision_ms": 5000, "startup_ms": 30000},
            "bots": [
                {
                    "name": f"random{i}",
                    "command": [sys.executable, "python/random_bot.py"],
                    "workdir": str(ROOT / "sample_bots"),
                    "seats": seats,
                }
                for i in range(6)
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


def grpc_floor_us(runs: int) -> tuple[float, float]:
    """Median CPU µs per round trip of a bare grpc.aio bidirectional ping-pong server (from
    ``benchmarks/protocol.py``, messages of a decision's size): what one decision costs
    the serving process in gRPC alone; with one client, and with four clients served in
    turn, as a match's four seats are."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "protocol_bench", Path(__file__).with_name("protocol.py")
    )
    assert spec is not None and spec.loader is not None
    protocol = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = protocol
    spec.loader.exec_module(protocol)

    async def measure() -> tuple[list[float], list[float]]:
        server, pingpong, port = await protocol.start_pingpong()
        one: list[float] = []
        four: list[float] = []
        try:
            for _ in range(runs):
                one.append((await protocol.pingpong_run(pingpong, port, 267, 8, 5000))[1] * 1e6)
                four.append(
                    (await protocol.pingpong_run(pingpong, port, 267, 8, 5000, clients=4))[1] * 1e6
                )
            return one, four
        finally:
            await server.stop(0)

    one, four = eventloop.run(measure())
    return statistics.median(one), statistics.median(four)


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
    args = parser.parse_args()
    logs.configure("warning")
    settings = [int(p) for p in args.parallel.split(",")]
    rates: dict[int, list[float]] = {p: [] for p in settings}
    cpus: list[float] = []
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
            rates[p].append(rate)
            cpus.append(cpu_us)
            print(
                f"run {run + 1} parallel {p}: {n} matches, {rate:.2f} matches/s, referee "
                f"{cpu_us:.0f} µs CPU/decision, CPU stolen by the host {steal.percent():.0f}%",
                flush=True,
            )
    for p in settings:
        print(f"median parallel {p}: {statistics.median(rates[p]):.2f} matches/s")
    a = statistics.median(rates[settings[0]])
    b = statistics.median(rates[4]) if 4 in rates else float("nan")
    c = statistics.median(cpus)
    floor, floor4 = grpc_floor_us(args.runs)
    print(
        f"bare grpc.aio ping-pong server: {floor:.0f} µs CPU per round trip with one client, "
        f"{floor4:.0f} µs with four clients in turn (the gRPC floor of one decision in the "
        "serving process)"
    )
    print(
        f"matches_per_s_p1={a:.2f} matches_per_s_p4={b:.2f} scaling={b / a:.2f} referee_cpu_us_per_decision={c:.0f}"
    )


if __name__ == "__main__":
    main()
