"""The tests that tests/test_interrupt.py interrupts with Ctrl-C, in a pytest session of
their own (the file's name does not start with ``test_``: the suite does not collect it).

Each starts what the suite's fixtures and helpers start, says so with a file in
``$STICHELN_INTERRUPT_READY``, and waits to be interrupted: the session-wide PostgreSQL
server, a match of sandboxed bots on a loopback referee (bubblewrap, then gVisor where
runsc runs), and a check-bot run with its temporary folder.

The PostgreSQL test's worker tears down slowly, as a loaded machine's may: longer than
pytest-xdist waits for a worker to end after a Ctrl-C (10 s) before it kills it, so the
session's fixtures never stop their server there.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bots.harness import bot, new_marker, play_match, run

from referee.jail import gvisor
from referee.jail.sandbox import Sandbox
from referee.match.runner import Clock
from referee.match.server import RefereeServer

READY = Path(os.environ.get("STICHELN_INTERRUPT_READY", "/nonexistent"))
ROOT = Path(__file__).resolve().parent.parent


def ready(name: str) -> None:
    (READY / name).touch()


@pytest.fixture
def slow_teardown() -> Iterator[None]:
    yield
    time.sleep(60)


def test_the_postgres_server(postgres_server: Any, slow_teardown: None) -> None:
    postgres_server.create_database("interrupted")
    ready("postgres")
    time.sleep(3600)


def _a_match_in(sandbox: Sandbox, name: str, tmp_path: Path) -> None:
    marker = new_marker()
    # Bots that think an hour on their first decision, never late (untimed): the match
    # runs until the interruption however slow the machine is to start the others.
    slow = bot("lowest_bot.py", marker, env={"SLEEP_MS": "3600000"})

    async def scenario() -> None:
        attached = Attached()
        server = RefereeServer(sandbox=sandbox, observer=attached)
        await server.start("127.0.0.1", 0)
        try:
            playing = asyncio.ensure_future(
                play_match(
                    [slow, slow, slow],
                    out_dir=tmp_path,
                    server=server,
                    clock=Clock(decision_ms=10_000, time_bank_ms=0, startup_ms=3_600_000),
                    untimed=(0, 1, 2),
                )
            )
            # Under way once every bot's stream is attached (a gVisor sandbox's processes
            # are the sentry's, not the host's: /proc would not say).
            while attached.streams < 3 and not playing.done():
                await asyncio.sleep(0.05)  # polling until the bots have connected
            ready(name)
            await playing
        finally:
            await server.stop(0.5)

    run(scenario())


class Attached:
    """Counts the streams that completed their handshake (the server's observer)."""

    def __init__(self) -> None:
        self.streams = 0

    def stream_attached(self) -> None:
        self.streams += 1

    def stream_closed(self) -> None:
        pass


def test_a_match_in_bubblewrap(tmp_path: Path) -> None:
    _a_match_in(Sandbox("bubblewrap"), "bubblewrap", tmp_path)


@pytest.mark.skipif(bool(gvisor.missing()), reason=gvisor.missing() or "-")
def test_a_match_in_gvisor(tmp_path: Path) -> None:
    _a_match_in(Sandbox("gvisor"), "gvisor", tmp_path)


def test_check_bot() -> None:
    bot_file = ROOT / "sample_bots" / "random.toml"
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee.cli", "check-bot", "--bot", str(bot_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    while not list(tmp.glob("check-bot-*/matches/*.jsonl")) and proc.poll() is None:
        time.sleep(0.05)  # polling for its first match, not waiting out a race
    ready("check-bot")
    proc.wait()
