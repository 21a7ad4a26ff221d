"""A bot that floods the referee, as ``MODE`` says.

- ``big``: at its first request it sends one message of ``BIG_BYTES`` bytes (default
  32 KiB, over the referee's 16 KiB limit), then waits for the stream to end;
- ``stale``: it answers its first request, then sends that answer again ``STALE`` times
  (default 2000): every copy is a stale answer; at each later request it sends bytes that
  are not a ``BotMessage``, and after the third (its strike limit) ``AFTER`` more
  (default 1000) and as many answers naming an id never sent, as a forfeited seat.

The status the stream ended with goes to ``REPORT`` (see botlib).
"""

import os

import botlib

from sticheln.v1 import bot_pb2

MODE = os.environ.get("MODE", "big")


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    if MODE == "big":
        if n == 1:
            size = int(os.environ.get("BIG_BYTES", str(32 << 10)))
            # A valid BotMessage: field 2 (decision), length-delimited, filled with padding
            # in an unknown field of the Decision.
            body = b"\x0a" + _varint(size) + b"\x00" * size
            await stream.write(b"\x12" + _varint(len(body)) + body)
        return
    if n == 1:
        answer = botlib.decision(request.request_id, botlib.lowest(request))
        await stream.write(answer)
        for _ in range(int(os.environ.get("STALE", "2000"))):
            await stream.write(answer)
        return
    await stream.write(b"\xff\xff\xff\xff")
    if n == 4:  # the third strike: the seat is forfeited, and the bot goes on
        for _ in range(int(os.environ.get("AFTER", "1000"))):
            await stream.write(b"\xff\xff\xff\xff")
            await stream.write(botlib.decision(request.request_id + 7, [request.view.hand[0]]))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


botlib.run(decide, name="flood")
