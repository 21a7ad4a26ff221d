"""Two seats of one author passing bits through the referee's turn order
(``benchmarks/covert.py --channel turns``): the referee asks the seats in turn, so the
time from one seat's answer to its next request holds every other seat's think time.

- ``TURN_ROLE=send``: before its n-th card play it waits ``TURN_DELAY_MS`` when bit n of
  ``TURN_BITS`` is 1 (pain choices are asked of every seat at once: no turn to time);
- ``TURN_ROLE=recv``: prints ``GAPS`` at the end of its stream: for each of its card
  plays, the ms from its previous answer to that request.

Both play the lowest card.
"""

from __future__ import annotations

import asyncio
import os
import time

import botlib

from sticheln.v1 import bot_pb2

ROLE = os.environ.get("TURN_ROLE", "recv")
BITS = os.environ.get("TURN_BITS", "")
DELAY = int(os.environ.get("TURN_DELAY_MS", "150")) / 1000
gaps: list[float] = []
answered = [0.0]
plays = [0]


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    now = time.monotonic()
    play = request.kind == bot_pb2.DECISION_KIND_CARD_PLAY
    if play:
        plays[0] += 1
        gaps.append(now - answered[0])
    if ROLE == "send" and play and BITS and BITS[(plays[0] - 1) % len(BITS)] == "1":
        await asyncio.sleep(DELAY)
    await stream.write(botlib.decision(request.request_id, botlib.lowest(request)))
    answered[0] = time.monotonic()


def main() -> None:
    botlib.run(decide, name=f"turn-{ROLE}")
    if ROLE == "recv":
        print("GAPS " + " ".join(f"{g * 1000:.1f}" for g in gaps), flush=True)


if __name__ == "__main__":
    main()
