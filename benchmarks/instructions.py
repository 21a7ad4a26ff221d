"""Instructions per decision: the referee's own work counted by valgrind instead of timed.

On a shared machine two timings of the same code can differ by more than most changes
to the referee would save (docs/performance.md, "Measuring on a shared machine"). The
number of instructions a process executes in user space does not depend on what the
neighbours do: ``valgrind --tool=callgrind`` counts them, and the count of one run repeats
to about half a per cent. This script compares versions of the referee by that count.

It runs this interpreter under callgrind (``--cache-sim=no``) in two roles:

- **referee**: a :class:`RefereeServer` and a :class:`MatchRunner` with the referee's
  metrics observer (:class:`RefereeMetrics`), playing four-player matches of the default
  rule set with fixed seeds against four ``benchmarks/bots/fast_bot.py`` processes (which
  answer at once; they are started by the runner and are not under valgrind);
- **ping-pong**: the bare grpc.aio ping-pong server of ``benchmarks/protocol.py``, four
  client processes served in turn, messages of a decision's size.

Each role runs twice, with ``n`` and ``3n`` matches (or round trips); the difference of
the two counts divided by the difference of the decisions (round trips) is the count per
decision (round trip), with the interpreter's start-up, the imports and the server's
start cancelled out. A match's own start-up (bot processes, handshakes, the record file)
stays in, spread over its decisions, as it is in the referee's CPU figure of
``benchmarks/tournament.py``.

What is not counted: the kernel's work (system calls, the loopback TCP stack, waking
processes), which is a large part of a round trip's CPU time, and the bots. So the count
ranks versions of the referee's own code; it does not give the CPU time the targets of
``benchmarks/protocol.py`` and ``benchmarks/tournament.py`` are stated in.

Prints each measurement, then the last line exactly:
``referee_instructions_per_decision=<n> pingpong_instructions_per_roundtrip=<m> ratio=<n/m>``
(medians over ``--repeats``). Needs valgrind (Debian package ``valgrind``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
COLLECTED = re.compile(r"Collected : (\d+)")
#: Serialized sizes of a request and an answer in the fast bots' matches, on average
#: (as ``benchmarks/protocol.py`` measures them).
REQUEST_BYTES, ANSWER_BYTES = 270, 11


def _referee(matches: int) -> int:
    """Play ``matches`` matches; returns the decisions answered."""
    # isort: off
    import referee  # noqa: F401  (the referee's gRPC settings before grpc is imported)
    import protocol

    # isort: on
    from referee.match.metrics import RefereeMetrics
    from referee.match.runner import MatchRunner
    from referee.match.server import RefereeServer
    from referee.rules import preset
    from referee.runtime import eventloop

    async def play() -> int:
        protocol._quiet_logs()
        metrics = RefereeMetrics()
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        decisions = 0
        try:
            with tempfile.TemporaryDirectory(prefix="sticheln-instructions-") as out:
                for i in range(matches):
                    runner = MatchRunner(
                        server,
                        [protocol.fast_bot()] * protocol.PLAYERS,
                        preset("sticheln"),
                        seed=7000 + i,
                        match_id=f"instructions-{i}",
                        clock=protocol.CLOCK,
                        out_dir=Path(out),
                        observer=metrics,
                    )
                    result = await runner.run()
                    faults = [f for s in result.seats for f in s.faults]
                    if faults or result.reason != "completed":
                        raise SystemExit(f"match {i} had faults or did not complete: {faults}")
                    decisions += result.decisions
        finally:
            await server.stop(0)
        return decisions

    return eventloop.run(play())


def _pingpong(roundtrips: int) -> int:
    """``roundtrips`` round trips of the bare ping-pong, four clients in turn."""
    # isort: off
    import referee  # noqa: F401
    import protocol

    # isort: on
    from referee.runtime import eventloop

    async def play() -> int:
        server, pingpong, port = await protocol.start_pingpong()
        try:
            async with protocol.PingPongSession(
                pingpong, port, REQUEST_BYTES, ANSWER_BYTES, protocol.PLAYERS
            ) as session:
                made, _, _ = await session.burst(roundtrips // protocol.PLAYERS)
        finally:
            await server.stop(0)
        return int(made)

    return eventloop.run(play())


def _count(role: str, amount: int) -> tuple[int, int]:
    """(instructions, decisions or round trips) of one run of ``role`` under callgrind."""
    with tempfile.TemporaryDirectory(prefix="sticheln-callgrind-") as tmp:
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--cache-sim=no",
                f"--callgrind-out-file={tmp}/callgrind.out",
                sys.executable,
                str(HERE),
                "--child",
                role,
                str(amount),
            ],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    found = COLLECTED.search(proc.stderr)
    done = re.search(r"^done (\d+)$", proc.stdout, re.MULTILINE)
    if proc.returncode != 0 or found is None or done is None:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"{role} run under valgrind failed (exit {proc.returncode}):\n{tail}")
    return int(found.group(1)), int(done.group(1))


def per_unit(role: str, small: int) -> float:
    """Instructions per decision (round trip) of ``role``: runs of ``small`` and
    ``3 * small`` matches (round trips), differenced."""
    i1, n1 = _count(role, small)
    i3, n3 = _count(role, 3 * small)
    if n3 <= n1:
        raise SystemExit(f"{role}: the longer run made no more decisions ({n1}, {n3})")
    return (i3 - i1) / (n3 - n1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=1, help="matches of the short run")
    parser.add_argument(
        "--roundtrips", type=int, default=800, help="ping-pong round trips of the short run"
    )
    parser.add_argument("--repeats", type=int, default=2, help="measurements to take the median of")
    parser.add_argument("--child", nargs=2, metavar=("ROLE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        role, n = args.child[0], int(args.child[1])
        print(f"done {_referee(n) if role == 'referee' else _pingpong(n)}", flush=True)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    referee: list[float] = []
    pingpong: list[float] = []
    for run in range(args.repeats):
        referee.append(per_unit("referee", args.matches))
        pingpong.append(per_unit("pingpong", args.roundtrips))
        print(
            f"run {run + 1}: referee {referee[-1]:,.0f} instructions per decision, bare ping-pong "
            f"(four clients in turn) {pingpong[-1]:,.0f} per round trip",
            flush=True,
        )
    n, m = statistics.median(referee), statistics.median(pingpong)
    print(
        f"referee_instructions_per_decision={n:.0f} pingpong_instructions_per_roundtrip={m:.0f} ratio={n / m:.2f}"
    )


if __name__ == "__main__":
    main()
