"""Plumbing shared by the test bots: dial the referee, say Hello, answer requests.

Every test bot is a small script on top of :func:`run`. It uses only the generated stubs
and ``grpc.aio``. The stream is opened with an identity serializer, so a bot can also
write raw bytes that are not a ``BotMessage`` at all.

Environment (besides the referee's ``STICHELN_REFEREE``, ``STICHELN_TOKEN`` and, on a
TLS port, ``STICHELN_TLS_CA``):

- ``CAPTURE``: append every message received, base64 of its wire bytes, one per line;
- ``REPORT``: write the gRPC status the stream ended with (``CODE details``);
- ``SLEEP_MS``: think this long before every answer;
- ``STICHELN_SEATS``: open that many streams at once with the one token (default 1;
  ``OPEN_SEATS`` overrides it: a bot that opens fewer streams than it was asked to);
- ``MATCHES``: append ``<process> <match id>`` for every ``MatchStart`` any stream
  receives (``<process>`` is unique to the bot process).

A sandboxed bot can write nowhere the test can read, so it tells the test on stdout, which
the referee writes to the bot's log: ``@a PATH TEXT`` appends a line to the file PATH,
``@w PATH TEXT`` replaces it; ``harness.collect_reports`` writes those files.

Command-line arguments are ignored: tests put a marker there to find the process.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable

import grpc

from sticheln.v1 import bot_pb2, bot_pb2_grpc

PLAY = "/sticheln.v1.Referee/Play"
#: Tells this bot process from others (its pid may be the same in each one's sandbox).
PROCESS = uuid.uuid4().hex[:12]


def tell(path: str, text: str, replace: bool = False) -> None:
    """Append ``text`` as a line to the test's file ``path`` (or replace it), through the
    bot's log (see the module docstring)."""
    line = f"@{'w' if replace else 'a'} {path} {text}\n"
    # One write under a lock: print() writes the text and its newline apart, so two
    # threads' lines (a bot with several streams) could run into one.
    with _TELLING:
        sys.stdout.write(line)
        sys.stdout.flush()


_TELLING = threading.Lock()


assert bot_pb2_grpc.RefereeStub  # the method path above is the stub's


def _serialize(message: bot_pb2.BotMessage | bytes) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


def lowest(request: bot_pb2.DecisionRequest) -> list[int]:
    """The referee's fallback choice: the lowest card (plus the lowest of another suit)."""
    hand = sorted(request.view.hand)
    if request.count == 2:
        other = next((c for c in hand if c >> 4 != hand[0] >> 4), hand[1])
        return [hand[0], other]
    return hand[: request.count]


def highest(request: bot_pb2.DecisionRequest) -> list[int]:
    """The highest card (plus the highest of another suit): never the fallback's choice."""
    hand = sorted(request.view.hand, reverse=True)
    if request.count == 2:
        other = next((c for c in hand if c >> 4 != hand[0] >> 4), hand[1])
        return [hand[0], other]
    return hand[: request.count]


def decision(request_id: int, cards: list[int]) -> bot_pb2.BotMessage:
    """A ``Decision`` message."""
    return bot_pb2.BotMessage(decision=bot_pb2.Decision(request_id=request_id, cards=cards))


def hello(
    name: str, token: str | None = None, version: int = bot_pb2.PROTOCOL_VERSION_1
) -> bot_pb2.BotMessage:
    """A ``Hello`` with the seat's token (from the environment unless given)."""
    return bot_pb2.BotMessage(
        hello=bot_pb2.Hello(
            bot_name=name,
            bot_version="test",
            protocol_version=version,
            token=os.environ.get("STICHELN_TOKEN", "") if token is None else token,
            capabilities=[c for c in os.environ.get("CAPABILITIES", "").split(",") if c],
        )
    )


class Stream:
    """One ``Play`` stream: write messages (or raw bytes), read what the referee sends."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        play = channel.stream_stream(
            PLAY,
            request_serializer=_serialize,
            response_deserializer=bot_pb2.RefereeMessage.FromString,
        )
        self.call = play()
        self._writing = asyncio.Lock()
        self._capture = os.environ.get("CAPTURE", "")

    async def write(self, message: bot_pb2.BotMessage | bytes) -> None:
        async with self._writing:  # one write at a time, also from background tasks
            await self.call.write(message)

    async def read(self) -> bot_pb2.RefereeMessage | None:
        """The next message, or None at the end of the stream."""
        message = await self.call.read()
        if message is grpc.aio.EOF:
            return None
        if self._capture:
            tell(self._capture, base64.b64encode(message.SerializeToString()).decode())
        return message


Decide = Callable[[Stream, bot_pb2.DecisionRequest, int], Awaitable[None]]


async def answer_lowest(stream: Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    """The well-behaved answer: the lowest card(s), after ``SLEEP_MS``."""
    sleep_ms = int(os.environ.get("SLEEP_MS", "0"))
    if sleep_ms:
        await asyncio.sleep(sleep_ms / 1000)
    await stream.write(decision(request.request_id, lowest(request)))


def report(text: str) -> None:
    """Tell the test something (the status the stream ended with)."""
    path = os.environ.get("REPORT")
    if path:
        tell(path, text, replace=True)


def channel() -> grpc.aio.Channel:
    """A channel to the referee: TLS when ``STICHELN_TLS_CA`` names a certificate."""
    address = os.environ["STICHELN_REFEREE"]
    cert = os.environ.get("STICHELN_TLS_CA")
    if cert:
        with open(cert, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        return grpc.aio.secure_channel(address, credentials)
    return grpc.aio.insecure_channel(address)


async def serve(
    decide: Decide,
    name: str = "bot",
    first: bot_pb2.BotMessage | bytes | None = None,
) -> None:
    """Dial the referee, send ``first`` (a Hello by default), then call ``decide`` with
    every request and its number (1, 2, ...) until the stream ends."""
    async with channel() as dialled:
        stream = Stream(dialled)
        await stream.write(hello(name) if first is None else first)
        n = 0
        matches = os.environ.get("MATCHES")
        try:
            while (message := await stream.read()) is not None:
                if matches and message.HasField("match_start"):
                    tell(matches, f"{PROCESS} {message.match_start.match_id}")
                if message.HasField("request"):
                    n += 1
                    await decide(stream, message.request, n)
            report("OK")
        except grpc.aio.AioRpcError as exc:
            report(f"{exc.code().name} {exc.details()}")


def run(decide: Decide = answer_lowest, name: str = "bot", **kwargs: object) -> None:
    """Run :func:`serve` to the end of the stream (of each of ``STICHELN_SEATS`` streams)."""
    seats = int(os.environ.get("OPEN_SEATS") or os.environ.get("STICHELN_SEATS", "1"))

    async def streams() -> None:
        await asyncio.gather(*(serve(decide, name, **kwargs) for _ in range(seats)))  # type: ignore[arg-type]

    asyncio.run(streams())


def numbers(variable: str) -> set[int]:
    """Request numbers from a comma-separated environment variable (``"2,5"``)."""
    return {int(x) for x in os.environ.get(variable, "").split(",") if x.strip()}
