"""A legal bot that ignores ``MatchStart.bot_seed``: a random card from the operating
system's random source, so two matches on the same cards and seed differ."""

import random

import botlib

from sticheln.v1 import bot_pb2

_random = random.SystemRandom()


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    if request.count == 2:
        cards = botlib.lowest(request)  # a legal pair; the plays are what differ
    else:
        cards = [_random.choice(list(request.view.hand))]
    await stream.write(botlib.decision(request.request_id, cards))


botlib.run(decide, name="unseeded")
