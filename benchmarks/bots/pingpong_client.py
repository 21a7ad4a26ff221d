"""The client side of the bare gRPC ping-pong in ``benchmarks/protocol.py``.

``pingpong_client.py ADDRESS PAYLOAD_BYTES``: opens one ``/bench.PingPong/Play``
bidirectional stream (grpc.aio, ``google.protobuf.BytesValue`` messages), sends a first
message, then answers every message from the server at once with a ``BytesValue`` of
``PAYLOAD_BYTES`` bytes (the benchmark picks the payload that gives the serialized size
it wants), until the server ends the stream.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import grpc
from google.protobuf.wrappers_pb2 import BytesValue

METHOD = "/bench.PingPong/Play"


async def main(address: str, payload: int) -> None:
    pong = BytesValue(value=b"\x01" * payload)
    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.stream_stream(
            METHOD,
            request_serializer=BytesValue.SerializeToString,
            response_deserializer=BytesValue.FromString,
        )()
        await call.write(pong)
        while True:
            msg = await call.read()
            if msg is grpc.aio.EOF:
                return
            await call.write(pong)


def _run(main: Any) -> None:
    """uvloop when installed, as the referee (referee/runtime/eventloop.py) and the sample bots do."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


if __name__ == "__main__":
    _run(main(sys.argv[1], int(sys.argv[2])))
