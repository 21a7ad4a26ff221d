"""The referee's gRPC server: health, reflection, TLS and the handshake's refusals."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tracemalloc
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from bots.harness import (
    assert_no_processes,
    bot,
    check_decisions,
    check_finished,
    new_marker,
    play_match,
    run,
)
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from referee.jail.sandbox import Sandbox
from referee.match.faults import FaultReason
from referee.match.server import RefereeServer, SeatStream, TlsConfig
from referee.rules import preset
from sticheln.v1 import bot_pb2

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


def with_server(test: Callable[[RefereeServer], Coroutine[Any, Any, None]], **kwargs: Any) -> None:
    """Run ``test`` against a fresh server on a free loopback port."""

    async def main() -> None:
        server = RefereeServer(**kwargs)
        await server.start("127.0.0.1", 0)
        assert server.port > 0
        try:
            async with asyncio.timeout(30):
                await test(server)
        finally:
            await server.stop(0.2)

    run(main())


def test_health_answers_serving_for_the_server_and_the_referee_service() -> None:
    async def check(server: RefereeServer) -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            for service in ("", "sticheln.v1.Referee"):
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=service))
                assert reply.status == health_pb2.HealthCheckResponse.SERVING

    with_server(check)


def test_reflection_lists_and_describes_the_referee_service() -> None:
    async def check(server: RefereeServer) -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)

            async def ask() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
                yield reflection_pb2.ServerReflectionRequest(list_services="")
                yield reflection_pb2.ServerReflectionRequest(
                    file_containing_symbol="sticheln.v1.Referee"
                )

            replies = [r async for r in stub.ServerReflectionInfo(ask())]
        names = {s.name for s in replies[0].list_services_response.service}
        assert {"sticheln.v1.Referee", "grpc.health.v1.Health"} <= names
        files = replies[1].file_descriptor_response.file_descriptor_proto
        assert files and any(b"sticheln/v1/bot.proto" in f for f in files)

    with_server(check)


async def _open(server: RefereeServer, first: bot_pb2.BotMessage | bytes | None) -> Any:
    """Open a Play stream, send ``first`` (raw bytes are sent as they are), read once."""
    async with grpc.aio.insecure_channel(server.address) as channel:
        play = channel.stream_stream(
            "/sticheln.v1.Referee/Play",
            request_serializer=lambda m: m if isinstance(m, bytes) else m.SerializeToString(),
            response_deserializer=bot_pb2.RefereeMessage.FromString,
        )
        call = play()
        if first is not None:
            await call.write(first)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call.read()
        return refused.value


@pytest.mark.parametrize(
    ("first", "code", "words"),
    [
        (
            bot_pb2.BotMessage(decision=bot_pb2.Decision(request_id=1)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "must be a Hello",
        ),
        (b"\xff\xff\xff", grpc.StatusCode.INVALID_ARGUMENT, "must be a Hello"),
        (
            bot_pb2.BotMessage(hello=bot_pb2.Hello(protocol_version=1)),
            grpc.StatusCode.UNAUTHENTICATED,
            "no token",
        ),
        (
            bot_pb2.BotMessage(hello=bot_pb2.Hello(protocol_version=1, token="made-up")),
            grpc.StatusCode.UNAUTHENTICATED,
            "the token is not valid",
        ),
        (None, grpc.StatusCode.DEADLINE_EXCEEDED, "no Hello within 0.3 s"),
    ],
    ids=["decision-first", "garbage-first", "no-token", "wrong-token", "silence"],
)
def test_a_stream_without_a_valid_hello_is_refused_with_a_reason(
    first: bot_pb2.BotMessage | bytes | None, code: grpc.StatusCode, words: str
) -> None:
    async def check(server: RefereeServer) -> None:
        error = await _open(server, first)
        assert error.code() is code
        assert words in error.details()

    with_server(check, handshake_timeout=0.3)


def test_a_wrong_protocol_version_is_refused_naming_the_supported_one() -> None:
    async def check(server: RefereeServer) -> None:
        server.registry.open_seat("m1", 0, "bot", token="seat-token")
        error = await _open(
            server,
            bot_pb2.BotMessage(hello=bot_pb2.Hello(protocol_version=0, token="seat-token")),
        )
        assert error.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert "protocol version 0 is not supported" in error.details()
        assert "version 1" in error.details()

    with_server(check)


def _self_signed(folder: Path) -> TlsConfig:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return TlsConfig(cert_file=cert, key_file=key)


def test_bots_play_a_match_over_tls(tmp_path: Path, marker: str) -> None:
    """Unsandboxed bots dial the TCP port, trusting the certificate the referee names in
    ``STICHELN_TLS_CA`` (sandboxed ones reach their own socket, with no TLS to set up)."""
    tls = _self_signed(tmp_path)

    async def main() -> None:
        server = RefereeServer(sandbox=Sandbox("none"))
        await server.start("127.0.0.1", 0, tls)
        try:
            # A plaintext client gets nowhere on the TLS port.
            async with grpc.aio.insecure_channel(server.address) as channel:
                with pytest.raises(grpc.aio.AioRpcError):
                    await health_pb2_grpc.HealthStub(channel).Check(
                        health_pb2.HealthCheckRequest(), timeout=2
                    )
            lowest = bot("lowest_bot.py", marker)
            result = await play_match(
                [lowest, lowest, lowest],
                preset("sticheln", rounds=1),
                out_dir=tmp_path,
                server=server,
            )
        finally:
            await server.stop(0.2)
        assert all(s.faults == [] for s in result.seats)
        check_decisions(check_finished(result), lowest_seats=[0, 1, 2])

    run(main())
    assert_no_processes(marker)


def _answer(request_id: int) -> bot_pb2.BotMessage:
    return bot_pb2.BotMessage(decision=bot_pb2.Decision(request_id=request_id, cards=[1]))


def test_a_long_lived_stream_tells_stale_from_unknown_answers_in_constant_memory() -> None:
    """A league stream serves match after match for hours: what it keeps to classify late
    answers must not grow with the requests sent, and the classification stays exact."""

    async def main() -> None:
        hello = bot_pb2.Hello(protocol_version=1)
        stream = SeatStream(None, hello)  # type: ignore[arg-type]  # no message is written
        other = SeatStream(None, hello)  # another seat's stream, in the same matches
        faults: list[tuple[FaultReason, int]] = []
        stream.on_fault = lambda reason, detail, rid: faults.append((reason, rid))

        def ask(s: SeatStream) -> int:
            rid = s.next_request_id()
            answer = s.expect(rid)
            s.deliver(_answer(rid), 0.0)
            assert answer.done() and answer.result()[0].decision.request_id == rid
            s.settle()
            return rid

        first = [ask(stream) for _ in range(3)]
        theirs_early = [ask(other) for _ in range(3)]
        # A request prepared and never armed uses up no id.
        assert stream.next_request_id() == stream.next_request_id()

        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            # 400 matches of 25 requests each, interleaved with the other seat: a set of
            # the ids would grow by hundreds of kilobytes (the test's tracemalloc makes each
            # request costly, so it does not go on for hours).
            for _ in range(400):
                for _ in range(25):
                    ask(stream)
                    ask(other)
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        server_py = tracemalloc.Filter(True, "*/referee/match/server.py")
        grown = sum(
            d.size_diff
            for d in after.filter_traces([server_py]).compare_to(
                before.filter_traces([server_py]), "filename"
            )
        )
        # The stream keeps two integers, however many requests it sent.
        assert grown < 4096, f"the stream grew by {grown} bytes over 10,000 requests"
        assert faults == []

        last = ask(stream)
        pending = stream.next_request_id()
        answer = stream.expect(pending)
        theirs_late = ask(other)
        for rid in (*first, last):  # answers to old requests of this stream, every match
            stream.deliver(_answer(rid), 0.0)
        for rid in (
            *theirs_early,  # the other seat's, sent before this stream's latest requests
            theirs_late,  # the other seat's, sent after this stream's pending request
            pending + 1,  # this stream's next id, not sent yet
            pending + 1_000_000,
            0,
            first[0] - 1,  # below this stream's first id
        ):
            stream.deliver(_answer(rid), 0.0)
        assert not answer.done()  # none of them answered the pending request
        stale = [(FaultReason.STALE_REQUEST_ID, rid) for rid in (*first, last)]
        unknown = [
            (FaultReason.UNKNOWN_REQUEST_ID, rid)
            for rid in (*theirs_early, theirs_late, pending + 1, pending + 1_000_000, 0)
        ]
        assert faults[: len(stale) + len(unknown)] == stale + unknown
        assert faults[-1] == (FaultReason.UNKNOWN_REQUEST_ID, first[0] - 1)
        stream.deliver(_answer(pending), 0.0)
        assert answer.done() and answer.result()[0].decision.request_id == pending
        # An id is armed only as the stream's next one: no request can take another's id.
        stream.settle()
        with pytest.raises(ValueError):
            stream.expect(pending)

    run(main())
