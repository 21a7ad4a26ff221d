"""A minimal bot for benchmarks: answers every request at once with the lowest legal choice.

It uses only the generated stubs (``sticheln.v1.bot_pb2`` and ``bot_pb2_grpc``) and
grpc.aio, so what a benchmark measures with it is the protocol, not a bot's thinking. A
card play is the lowest card of the hand (any card may be played in Sticheln); a pain
choice is the lowest card, plus for two pain cards the lowest card of another suit (the
two lowest cards when the hand holds a single suit) -- the referee's own fallback.

Benchmark hooks, all optional, through the environment:

(The referee passes a started bot no ``STICHELN_*`` variable of its bot file's ``env``,
so the benchmark's own settings for bots it has the referee start are named ``BENCH_*``.)
- ``BENCH_READY`` (a folder) and ``BENCH_GO`` (a file): once imported,
  the bot creates a file named after its pid in the folder, then waits for the go file
  before dialing the referee, so that many matches can start playing at the same moment.
- ``BENCH_THINK_LOOPS`` (a number): every decision first runs a pure-Python loop of that
  many steps (a bot that thinks for a fixed amount of work, whatever its clocks say:
  ``benchmarks/jail.py`` sets it to about 1 ms of this machine's CPU).
- ``BENCH_SLEEP_MS`` (a number): in a league (``STICHELN_BOTS``), every decision first
  waits that many milliseconds without using the CPU (a league whose matches take a
  while: ``benchmarks/league_tab.py``).
- ``BENCH_SIZES`` (a file): at ``MatchEnd`` the bot appends one line
  ``<requests> <request bytes> <decision bytes>``: the serialized sizes of the
  ``RefereeMessage`` requests it got and of the ``BotMessage`` decisions it sent.

In a league (``referee serve``) the bot sends ``STICHELN_BOT_NAME`` (default "fast") in
its Hello and opens ``STICHELN_SEATS`` streams at once (default 1), each declaring that
many seats. ``STICHELN_BOTS`` (``name:token,name:token,...``) instead makes one process
serve several registered bots, ``STICHELN_SEATS`` streams each (each stream on its own
channel, as separate bots would be). ``STICHELN_BENCH_LATENCY`` (a file prefix): on exit
each stream writes ``<prefix>.<pid>.<n>``, the microseconds from each answer it sent to
the next request it received (native-endian unsigned 32-bit integers), the referee's
turnaround as the bot sees it. With ``STICHELN_BENCH_WINDOW=1`` these samples are taken
only between a SIGUSR1 and the next SIGUSR2, so that a benchmark can leave out the
start-up and the shutdown.
"""

from __future__ import annotations

import array
import asyncio
import os
import signal
import time
from typing import Any

import grpc

from sticheln.v1 import bot_pb2, bot_pb2_grpc

#: Whether latency samples are being taken (see STICHELN_BENCH_WINDOW).
recording = True
#: Steps of work before every decision (BENCH_THINK_LOOPS).
THINK_LOOPS = int(os.environ.get("BENCH_THINK_LOOPS", "0"))
#: Milliseconds each decision waits first (BENCH_SLEEP_MS).
SLEEP_S = float(os.environ.get("BENCH_SLEEP_MS", "0")) / 1000


def think(loops: int) -> int:
    """A fixed amount of CPU work."""
    total = 0
    for i in range(loops):
        total += i
    return total


def choose(request: bot_pb2.DecisionRequest) -> list[int]:
    """The lowest ``count`` cards of distinct suits where possible."""
    if THINK_LOOPS:
        think(THINK_LOOPS)
    hand = sorted(request.view.hand)
    count = request.count
    if count <= 1:
        return hand[:1]
    picked = [hand[0]]
    suits = {hand[0] >> 4}
    for c in hand[1:]:
        if len(picked) == count:
            break
        if c >> 4 not in suits:
            picked.append(c)
            suits.add(c >> 4)
    for c in hand:
        if len(picked) == count:
            break
        if c not in picked:
            picked.append(c)
    return picked


async def play(
    address: str,
    token: str,
    sizes: str | None,
    name: str = "fast",
    seats: int = 1,
    latency: array.array[int] | None = None,
) -> None:
    requests = request_bytes = decision_bytes = 0
    clock = time.perf_counter
    answered = 0.0
    async with grpc.aio.insecure_channel(address) as channel:
        call = bot_pb2_grpc.RefereeStub(channel).Play()
        await call.write(
            bot_pb2.BotMessage(
                hello=bot_pb2.Hello(
                    bot_name=name, protocol_version=1, token=token, max_concurrent_matches=seats
                )
            )
        )
        while True:
            msg = await call.read()
            if msg is grpc.aio.EOF:
                return
            kind = msg.WhichOneof("kind")
            if kind == "request":
                if latency is not None and answered and recording:
                    latency.append(min(int((clock() - answered) * 1e6), 0xFFFFFFFF))
                req = msg.request
                if SLEEP_S:
                    await asyncio.sleep(SLEEP_S)
                answer = bot_pb2.BotMessage(
                    decision=bot_pb2.Decision(request_id=req.request_id, cards=choose(req))
                )
                await call.write(answer)
                answered = clock()
                if sizes:
                    requests += 1
                    request_bytes += msg.ByteSize()
                    decision_bytes += answer.ByteSize()
            elif kind == "match_end":
                answered = 0.0  # the next request is another match's first
                if not sizes:
                    continue
                with open(sizes, "a", encoding="utf-8") as f:
                    f.write(f"{requests} {request_bytes} {decision_bytes}\n")


def _run(main: Any) -> None:
    """uvloop when installed, as the referee (referee/runtime/eventloop.py) and the sample bots do."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def main() -> None:
    go = os.environ.get("BENCH_GO")
    if go:
        ready = os.environ["BENCH_READY"]
        open(os.path.join(ready, str(os.getpid())), "w").close()
        while not os.path.exists(go):
            time.sleep(0.005)
    if os.environ.get("STICHELN_BENCH_WINDOW"):
        global recording
        recording = False

        def window(signum: int, frame: Any) -> None:
            global recording
            recording = signum == signal.SIGUSR1

        signal.signal(signal.SIGUSR1, window)
        signal.signal(signal.SIGUSR2, window)
    seats = int(os.environ.get("STICHELN_SEATS", "1"))
    if os.environ.get("STICHELN_BOTS"):
        bots = [tuple(b.split(":", 1)) for b in os.environ["STICHELN_BOTS"].split(",")]
    else:
        bots = [(os.environ.get("STICHELN_BOT_NAME", "fast"), os.environ["STICHELN_TOKEN"])]
    streams_of = [bot for bot in bots for _ in range(seats)]
    prefix = os.environ.get("STICHELN_BENCH_LATENCY")
    samples = [array.array("I") if prefix else None for _ in streams_of]

    async def streams() -> None:
        await asyncio.gather(
            *(
                play(
                    os.environ["STICHELN_REFEREE"],
                    token,
                    os.environ.get("BENCH_SIZES"),
                    name,
                    seats,
                    sample,
                )
                for (name, token), sample in zip(streams_of, samples, strict=True)
            ),
            return_exceptions=len(streams_of) > 1,
        )

    try:
        _run(streams())
    finally:
        if prefix:
            for n, sample in enumerate(samples):
                assert sample is not None
                with open(f"{prefix}.{os.getpid()}.{n}", "wb") as f:
                    sample.tofile(f)


if __name__ == "__main__":
    main()
