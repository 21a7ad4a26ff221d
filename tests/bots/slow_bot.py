"""A bot that thinks too long on some requests.

On the request numbers in ``SLOW`` (``"2,5"``) it answers after ``SLOW_MS`` with its
highest card(s), which the fallback never plays, so a late answer that were applied would
show in the record. Meanwhile it goes on reading, and answers every other request at once
with its lowest card(s): only the slow requests are late.
"""

import asyncio
import os

import botlib

from sticheln.v1 import bot_pb2

SLOW = botlib.numbers("SLOW")
SLOW_MS = int(os.environ.get("SLOW_MS", "0"))
thinking: set[asyncio.Task[None]] = set()


async def answer_late(stream: botlib.Stream, request: bot_pb2.DecisionRequest) -> None:
    await asyncio.sleep(SLOW_MS / 1000)
    await stream.write(botlib.decision(request.request_id, botlib.highest(request)))


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    if n in SLOW:
        task = asyncio.ensure_future(answer_late(stream, request))
        thinking.add(task)
        task.add_done_callback(thinking.discard)
    else:
        await stream.write(botlib.decision(request.request_id, botlib.lowest(request)))


botlib.run(decide, name="slow")
