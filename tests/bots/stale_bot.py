"""A bot that lets its first request time out (``STALE_WAIT_MS``, past the decision
limit), then sends its late answer to it again and again (``STALE_FLOOD_S`` seconds),
while it answers every later request with the lowest card. A late answer costs a bot no
strike; each one costs the referee a parse and a fault on the event loop all seats
share. It prints ``FLOOD sent N`` when it stops.
"""

from __future__ import annotations

import asyncio
import os
import time

import botlib

from sticheln.v1 import bot_pb2


async def flood(stream: botlib.Stream, stale: bytes) -> None:
    sent, start = 0, time.monotonic()
    try:
        while time.monotonic() - start < float(os.environ.get("STALE_FLOOD_S", "10")):
            for _ in range(100):
                await stream.write(stale)
            sent += 100
    except Exception as exc:  # the referee closed the stream
        print(f"FLOOD ended: {type(exc).__name__}", flush=True)
    print(f"FLOOD sent {sent}", flush=True)


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    answer = botlib.decision(request.request_id, botlib.lowest(request))
    if n == 1:
        await asyncio.sleep(int(os.environ.get("STALE_WAIT_MS", "1500")) / 1000)
        asyncio.get_running_loop().create_task(flood(stream, answer.SerializeToString()))
        return
    await stream.write(answer)


if __name__ == "__main__":
    botlib.run(decide, name="stale")
