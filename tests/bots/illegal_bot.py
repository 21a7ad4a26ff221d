"""A bot that answers illegally on the request numbers in ``ILLEGAL_AT`` (default: all).

``ILLEGAL=not_in_hand``: one of its cards is a card of the deck that it does not hold.
``ILLEGAL=wrong_count``: one card more than the request's ``count``.
Its legal answers are the lowest card(s).
"""

import os

import botlib

from sticheln.v1 import bot_pb2

HOW = os.environ.get("ILLEGAL", "not_in_hand")
AT = botlib.numbers("ILLEGAL_AT")


def not_held(request: bot_pb2.DecisionRequest) -> int:
    """The lowest card of the deck's suits that is not in the hand."""
    hand = set(request.view.hand)
    for suit in range(1, request.view.players + 1):
        for rank in range(15):
            code = suit << 4 | rank
            if code not in hand:
                return code
    raise AssertionError("holds every card")


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    cards = botlib.lowest(request)
    if not AT or n in AT:
        if HOW == "wrong_count":
            cards = sorted(request.view.hand)[: request.count + 1]
        else:
            cards[0] = not_held(request)
    await stream.write(botlib.decision(request.request_id, cards))


botlib.run(decide, name="illegal")
