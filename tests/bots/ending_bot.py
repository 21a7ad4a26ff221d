"""A well-behaved bot that writes down how its streams end (``ENDINGS``, one line each,
through its log: ``botlib.tell``).

Lines, with the process (``botlib.PROCESS``) and a monotonic time in seconds:

- ``<pid> <t> end <match id>``: a stream read the ``MatchEnd`` of that match;
- ``<pid> <t> status <CODE>``: a stream ended with that gRPC status;
- ``<pid> <t> sigterm``: the process was sent SIGTERM (it then exits at once, 143);
- ``<pid> <t> exit``: every stream has ended and the process exits by itself.

It serves ``STICHELN_SEATS`` streams (default 1) and plays the lowest card(s).
"""

import asyncio
import os
import signal
import sys
import time

import botlib
import grpc

LOG = os.environ["ENDINGS"]


def note(text: str) -> None:
    botlib.tell(LOG, f"{botlib.PROCESS} {time.monotonic():.6f} {text}")


def on_sigterm(signum: int, frame: object) -> None:
    note("sigterm")
    os._exit(143)


async def stream() -> None:
    async with botlib.channel() as channel:
        s = botlib.Stream(channel)
        await s.write(botlib.hello("ending"))
        match_id = ""
        try:
            while (message := await s.read()) is not None:
                if message.HasField("match_start"):
                    match_id = message.match_start.match_id
                elif message.HasField("match_end"):
                    note(f"end {match_id}")
                elif message.HasField("request"):
                    await botlib.answer_lowest(s, message.request, 0)
            note("status OK")
        except grpc.aio.AioRpcError as exc:
            note(f"status {exc.code().name}")


async def main() -> None:
    seats = int(os.environ.get("STICHELN_SEATS", "1"))
    await asyncio.gather(*(stream() for _ in range(seats)))


signal.signal(signal.SIGTERM, on_sigterm)
asyncio.run(main())
note("exit")
sys.exit(0)
