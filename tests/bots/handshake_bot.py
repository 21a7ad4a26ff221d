"""A bot that fails its handshake, as ``MODE`` says.

- ``silent``: opens the stream and sends nothing;
- ``never``: never connects at all;
- ``token``: sends a Hello with a wrong token;
- ``version``: sends a Hello with protocol version ``VERSION`` (default 2);
- ``nohello``: sends a ``Decision`` as its first message.

The status the stream ended with goes to ``REPORT`` (see botlib).
"""

import os
import time

import botlib

from sticheln.v1 import bot_pb2

MODE = os.environ.get("MODE", "silent")


async def never_called(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    raise AssertionError("a seat whose handshake failed got a request")


if MODE == "never":
    time.sleep(3600)
elif MODE == "silent":
    import asyncio

    import grpc

    async def silent() -> None:
        async with botlib.channel() as channel:
            stream = botlib.Stream(channel)
            try:
                while await stream.read() is not None:
                    pass
                botlib.report("OK")
            except grpc.aio.AioRpcError as exc:
                botlib.report(f"{exc.code().name} {exc.details()}")

    asyncio.run(silent())
elif MODE == "token":
    botlib.run(
        never_called, first=botlib.hello("bad-token", token="not-" + os.environ["STICHELN_TOKEN"])
    )
elif MODE == "version":
    botlib.run(
        never_called,
        first=botlib.hello("bad-version", version=int(os.environ.get("VERSION", "2"))),
    )
elif MODE == "nohello":
    botlib.run(never_called, first=botlib.decision(1, [17]))
