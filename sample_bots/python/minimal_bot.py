"""A minimal complete Sticheln bot: it always plays its lowest card (docs/bot-protocol.md)."""

import asyncio
import hashlib
import os
import sys

import grpc

from sticheln.v1 import bot_pb2, bot_pb2_grpc


async def main() -> int:
    address = os.environ["STICHELN_REFEREE"]  # host:port, set by the referee
    token = os.environ["STICHELN_TOKEN"]  # this seat's token, set by the referee
    async with grpc.aio.insecure_channel(address) as channel:
        call = bot_pb2_grpc.RefereeStub(channel).Play()
        hello = bot_pb2.Hello(bot_name="minimal", bot_version="1", protocol_version=1, token=token)
        await call.write(bot_pb2.BotMessage(hello=hello))
        start = None
        try:
            async for message in call:
                kind = message.WhichOneof("kind")
                if kind == "match_start":
                    start = message.match_start
                elif kind == "request":
                    request = message.request
                    hand = sorted(request.view.hand)
                    cards = hand[:1]  # a card play, or the first pain card
                    if request.count == 2:  # a second pain card, of another suit if any
                        cards.append(next((c for c in hand if c >> 4 != hand[0] >> 4), hand[1]))
                    decision = bot_pb2.Decision(request_id=request.request_id, cards=cards)
                    await call.write(bot_pb2.BotMessage(decision=decision))
                elif kind == "match_end":
                    end = message.match_end
                    seed = end.seed.to_bytes(8, "big")
                    digest = hashlib.sha256(b"sticheln/seed/v1" + seed + end.seed_nonce).digest()
                    if end.seed_withheld:  # a later match plays this deal: nothing to check
                        print(f"minimal: seed withheld: {end.seed_withheld}", file=sys.stderr)
                    elif start is None or digest != start.seed_commitment:
                        print("minimal: the seed does not match its commitment", file=sys.stderr)
        except grpc.aio.AioRpcError as exc:  # refused, or the referee went away
            print(f"minimal: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 1
    return 0  # the referee ended the stream with status OK: no more matches


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
