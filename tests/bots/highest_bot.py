"""A well-behaved, deterministic bot: always the highest card(s)."""

import botlib


async def answer_highest(
    stream: botlib.Stream, request: botlib.bot_pb2.DecisionRequest, n: int
) -> None:
    await stream.write(botlib.decision(request.request_id, botlib.highest(request)))


botlib.run(answer_highest, name="highest")
