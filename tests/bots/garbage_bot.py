"""A bot that sends garbage on some requests, following ``SCRIPT`` ("2:nokind,4:raw").

Per request number, one of:

- ``nokind``: a ``BotMessage`` with no kind set, and no answer;
- ``hello``: a second ``Hello``, and no answer;
- ``raw``: bytes that are not a ``BotMessage``, and no answer;
- ``late``: no answer; at the next request it first answers this one (with the highest
  card(s) of the newer request's hand), then the newer one;
- ``dup``: the answer, then a second answer to the same request (highest card);
- ``unknown``: an answer naming a request id never sent, then the real answer;
- ``close``: no answer; it closes its side of the stream (and exits when the referee
  ends the stream, after ``LINGER_MS``).

Every answer it means is the lowest card(s).
"""

import os
import time

import botlib

from sticheln.v1 import bot_pb2

SCRIPT = {
    int(n): what
    for n, what in (item.split(":") for item in os.environ.get("SCRIPT", "").split(",") if item)
}
late: list[int] = []


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    rid = request.request_id
    while late:
        await stream.write(botlib.decision(late.pop(), botlib.highest(request)))
    what = SCRIPT.get(n, "")
    if what == "nokind":
        await stream.write(bot_pb2.BotMessage())
    elif what == "hello":
        await stream.write(botlib.hello("garbage"))
    elif what == "raw":
        await stream.write(b"\xff\xff\xff\xff")
    elif what == "late":
        late.append(rid)
    elif what == "dup":
        await stream.write(botlib.decision(rid, botlib.lowest(request)))
        await stream.write(botlib.decision(rid, botlib.highest(request)))
    elif what == "close":
        await stream.call.done_writing()
    elif what == "unknown":
        await stream.write(botlib.decision(rid + 1_000_000, botlib.highest(request)))
        await stream.write(botlib.decision(rid, botlib.lowest(request)))
    else:
        await stream.write(botlib.decision(rid, botlib.lowest(request)))


botlib.run(decide, name="garbage")
time.sleep(int(os.environ.get("LINGER_MS", "0")) / 1000)
