"""A bot that thinks too long on some requests.

On the request numbers in ``SLOW`` (``"2,5"``) it answers after ``SLOW_MS`` with its
highest card(s), which the fallback never plays, so a late answer that were applied would
show in the record. Meanwhile it goes on reading, and answers every other request at once
with its lowest card(s): only the slow requests are late.

``SLOW_MS=next`` makes a slow answer late by any margin, with no stopwatch: it is sent
when the bot's next request comes (the referee asks again only once the slow request has
timed out), just before the answer to that one.
"""

import asyncio
import os

import botlib

from sticheln.v1 import bot_pb2

SLOW = botlib.numbers("SLOW")
UNTIL_NEXT = os.environ.get("SLOW_MS") == "next"
SLOW_MS = 0 if UNTIL_NEXT else int(os.environ.get("SLOW_MS", "0"))
thinking: set[asyncio.Task[None]] = set()
held: list[bot_pb2.DecisionRequest] = []


async def answer_late(stream: botlib.Stream, request: bot_pb2.DecisionRequest) -> None:
    await asyncio.sleep(SLOW_MS / 1000)
    await stream.write(botlib.decision(request.request_id, botlib.highest(request)))


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    while held:
        late = held.pop(0)
        await stream.write(botlib.decision(late.request_id, botlib.highest(late)))
    if n in SLOW and UNTIL_NEXT:
        held.append(request)
    elif n in SLOW:
        task = asyncio.ensure_future(answer_late(stream, request))
        thinking.add(task)
        task.add_done_callback(thinking.discard)
    else:
        await stream.write(botlib.decision(request.request_id, botlib.lowest(request)))


botlib.run(decide, name="slow")
