"""Uploads nobody can block: the attacks that kept every other author from uploading,
reproduced against a real ``referee serve`` league with real gRPC streams.

- Four entries hold ``Submit`` streams open from another address, a byte every second,
  and reopen each one as soon as the league cuts it: the league cuts each slow stream
  once its first seconds are over (``upload_min_kib_s``), every reopening costs its entry
  one of ``upload_attempts_per_day``, and an honest upload from this address is taken at
  once and validated to ``playing`` in its usual time meanwhile.
- Twelve uploads cancelled after 100 bytes each count against the entry's attempts: the
  next is refused, naming the limit and when it frees.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from leaguekit import LeagueDb, query, serving, wait_for
from test_hosting import PYTHON_BOT, VALIDATED_S, bots_json, cli, league_file, submitted
from test_hosting import code_dir as code_dir  # the fixture

from sticheln.v1 import league_pb2, league_pb2_grpc

pytestmark = pytest.mark.timeout(900)
#: The attackers' address (loopback, not the honest author's 127.0.0.1).
ELSEWHERE = "127.0.0.2"


@contextlib.contextmanager
def relay(target: str, source: str) -> Iterator[str]:
    """A TCP relay on 127.0.0.1 whose connections reach ``target`` from ``source``: a
    client on another address, as the league sees it."""
    host, _, port = target.rpartition(":")
    loop = asyncio.new_event_loop()
    ready: list[str] = []
    started = threading.Event()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(host, int(port), local_addr=(source, 0))
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    async def main() -> asyncio.Server:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        ready.append(f"127.0.0.1:{server.sockets[0].getsockname()[1]}")
        started.set()
        return server

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(main(), loop).result(10)
    started.wait(10)
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


class SlowSender:
    """An entry that holds a Submit stream open with a byte a second, and reopens it the
    moment it is refused or cut, until stopped; what each attempt ended with is counted."""

    def __init__(self, address: str, token: str) -> None:
        self.address = address
        self.token = token
        self.stop = threading.Event()
        self.endings: Counter[str] = Counter()
        self.details: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _requests(self) -> Iterator[league_pb2.SubmitRequest]:
        header = league_pb2.SubmitHeader(format="tar.gz", size=1 << 20, bot_file="bot.toml")
        yield league_pb2.SubmitRequest(header=header)
        while not self.stop.wait(1.0):
            yield league_pb2.SubmitRequest(chunk=b"x")

    def _run(self) -> None:
        with grpc.insecure_channel(self.address) as channel:
            stub = league_pb2_grpc.LeagueStub(channel)  # type: ignore[no-untyped-call]
            while not self.stop.is_set():
                try:
                    stub.Submit(
                        self._requests(),
                        metadata=[("authorization", f"Bearer {self.token}")],
                        timeout=120,
                    )
                    self.endings["accepted"] += 1
                except grpc.RpcError as exc:
                    self.endings[exc.code().name] += 1
                    self.details.append(str(exc.details()))
                    if exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                        self.stop.wait(0.5)  # refused at once: reopen, not spin

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def test_slow_streams_and_cancelled_uploads_block_nobody(tmp_path: Path, code_dir: Path) -> None:
    db = LeagueDb("sqlite", tmp_path / "out" / "league.db")
    config = league_file(tmp_path, db, code_dir, upload_attempts_per_day=12)
    with serving(config, tmp_path / "serve.log") as s:
        attackers = {
            f"slow-{i}": s.register(f"slow-{i}", owner=f"mallory-{i % 2}") for i in range(4)
        }
        honest = s.register("honest")
        canceller = s.register("canceller")
        with relay(s.address, ELSEWHERE) as elsewhere:
            senders = [SlowSender(elsewhere, token) for token in attackers.values()]
            try:
                # The four hold their streams before the honest author comes.
                wait_for(
                    lambda: query(db.target, "SELECT COUNT(*) FROM league_usage")[0][0] >= 4,
                    30,
                    "the four slow uploads to start",
                )
                started = time.monotonic()
                submitted(
                    cli(s.address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml",
                        token=honest), "honest", 1,
                )  # fmt: skip

                # Twelve uploads cancelled after 100 bytes, meanwhile: each is counted.
                stub = s.league
                for i in range(12):
                    gate = threading.Event()

                    def requests(
                        gate: threading.Event = gate,
                    ) -> Iterator[league_pb2.SubmitRequest]:
                        header = league_pb2.SubmitHeader(
                            format="tar.gz", size=1000, bot_file="bot.toml"
                        )
                        yield league_pb2.SubmitRequest(header=header)
                        yield league_pb2.SubmitRequest(chunk=b"y" * 100)
                        gate.wait(60)

                    call = stub.Submit.future(
                        requests(), metadata=[("authorization", f"Bearer {canceller}")]
                    )
                    wait_for(
                        lambda n=i + 1: (
                            query(
                                db.target,
                                "SELECT COUNT(*) FROM league_usage WHERE who = 'canceller'",
                            )[0][0]
                            >= n
                        ),
                        30,
                        f"cancelled upload {i + 1} to be counted",
                    )
                    call.cancel()
                    gate.set()
                refused = cli(
                    s.address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml",
                    token=canceller,
                )  # fmt: skip
                assert refused.returncode == 1
                line = refused.stderr.strip()
                assert "RESOURCE_EXHAUSTED" in line and "upload_attempts_per_day" in line, line
                assert "canceller" in line and "the next may start at" in line, line
                assert "\n" not in line

                # The honest upload plays in its usual time, the attack still on.
                wait_for(
                    lambda: bots_json(s.address)["honest"]["status"] == "playing",
                    VALIDATED_S,
                    "the honest submission to play",
                    every=1,
                )
                took = time.monotonic() - started
                # The attack went on all along: the slow streams were cut by the least
                # rate, then refused once their entry's attempts were spent.
                wait_for(
                    lambda: all(
                        any("upload_attempts_per_day" in d for d in x.details) for x in senders
                    ),
                    120,
                    "every slow sender to spend its attempts",
                    every=0.5,
                )
            finally:
                for sender in senders:
                    sender.close()
        for sender in senders:
            cut = [d for d in sender.details if "upload_min_kib_s" in d]
            assert cut, sender.details
            assert sender.endings["accepted"] == 0
            assert "slower than this league's upload_min_kib_s = 32" in cut[0]
        # Each of them started at most its allowance of uploads.
        counts = dict(query(db.target, "SELECT who, COUNT(*) FROM league_usage GROUP BY who"))
        assert all(counts[name] <= 12 for name in attackers), counts
        assert counts["canceller"] == 12 and counts["honest"] == 1, counts
        nothing = query(db.target, "SELECT COUNT(*) FROM league_submissions WHERE bot != 'honest'")[
            0
        ][0]
        assert nothing == 0
        print(f"honest upload: submit to playing in {took:.1f} s under the attack")
