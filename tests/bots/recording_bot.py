"""A well-behaved bot that records every message it receives (``CAPTURE``, base64 lines).

It plays a legal card picked deterministically from the request id, so the captures cover
varied play, not only the lowest cards (``PICK=lowest``: the lowest cards instead).
``CAPABILITIES`` (comma-separated) go into its Hello. ``ENVIRON``: append the process's
whole environment there (one JSON object per process, through its log: ``botlib.tell``),
to show what it inherited.
"""

import json
import os

import botlib

from sticheln.v1 import bot_pb2


def pick(request: bot_pb2.DecisionRequest) -> list[int]:
    if os.environ.get("PICK") == "lowest":
        return botlib.lowest(request)
    hand = sorted(request.view.hand)
    i = (request.request_id * 7919) % len(hand)
    if request.count == 1:
        return [hand[i]]
    rest = hand[i + 1 :] + hand[:i]
    other = next((c for c in rest if c >> 4 != hand[i] >> 4), rest[0])
    return [hand[i], other]


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    await stream.write(botlib.decision(request.request_id, pick(request)))


if os.environ.get("ENVIRON"):
    botlib.tell(os.environ["ENVIRON"], json.dumps(dict(os.environ)))
botlib.run(decide, name="recorder")
