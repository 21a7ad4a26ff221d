"""Hosted bots as their authors use them, on SQLite and PostgreSQL, with real
``referee league`` commands against a real ``referee serve``: a bot that never answers
is refused after its first scenarios with a refusal a person can read; code that was
built once is never built again (a second entry uploading it, its author resubmitting it).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from functools import partial
from pathlib import Path
from typing import Any

from leaguekit import ADMIN_TOKEN, REFEREE, ROOT, LeagueDb, query, serving, wait_for
from test_hosting import (
    VALIDATED_S,
    bots_json,
    build_bot,
    cli,
    code_dir,
    league_file,
    submitted,
)

__all__ = ["code_dir"]  # the fixture, used by name

#: A bot that completes its handshake, then never answers (it says so on stderr).
MUTE_BOT = """
import asyncio, os, sys
import grpc
from sticheln.v1 import bot_pb2, bot_pb2_grpc

async def main():
    async with grpc.aio.insecure_channel(os.environ["STICHELN_REFEREE"]) as channel:
        call = bot_pb2_grpc.RefereeStub(channel).Play()
        hello = bot_pb2.Hello(bot_name="mute", bot_version="1", protocol_version=1,
                              token=os.environ["STICHELN_TOKEN"])
        await call.write(bot_pb2.BotMessage(hello=hello))
        async for message in call:
            if message.WhichOneof("kind") == "request":
                print("mute: thinking forever", file=sys.stderr, flush=True)

asyncio.run(main())
"""


def mute_bot(folder: Path) -> Path:
    folder.mkdir()
    (folder / "mute_bot.py").write_text(MUTE_BOT)
    (folder / "bot.toml").write_text('name = "mute"\ncommand = ["python3", "mute_bot.py"]\n')
    return folder


def admin_status(address: str, name: str, *args: str) -> str:
    done = subprocess.run(
        [*REFEREE, "league", "status", name, *args, "--address", address],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={**os.environ, "STICHELN_ADMIN_TOKEN": ADMIN_TOKEN},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def status_of(address: str, bot: str, number: int) -> dict[str, Any] | None:
    row = bots_json(address).get(bot)
    if row is None or row["submission"] != number or row["status"] == "validating":
        return None
    return row


def test_an_author_is_refused_quickly_and_never_waits_for_the_same_build(
    tmp_path: Path, league_db: LeagueDb, code_dir: Path
) -> None:
    config = league_file(
        tmp_path,
        league_db,
        code_dir,
        workers=0,
        submissions_per_day=5,
        validation_jobs=3,
    )
    # The league's own start-up time (10 s by default), not the tests' roomier one.
    config.write_text(config.read_text().replace("startup_ms = 30000", "startup_ms = 10000"))
    with serving(config, tmp_path / "serve.log") as s:
        tokens = {n: s.register(n) for n in ("alpha", "beta", "mute")}
        build = "cp heuristic_bot.py generated_bot.py && echo built >&2"
        folder = build_bot(tmp_path / "built", build)
        sent = time.monotonic()
        submitted(
            cli(s.address, "submit", str(mute_bot(tmp_path / "mute")), "--bot-file", "bot.toml",
                token=tokens["mute"]), "mute", 1,
        )  # fmt: skip
        sha = submitted(
            cli(s.address, "submit", str(folder), "--bot-file", "bot.toml", token=tokens["alpha"]),
            "alpha",
            1,
        )

        # 7: a bot that never answers is refused once its first scenarios timed out, in
        # words a person can find in a match (round, trick, which card), no internal id.
        mute = wait_for(lambda: status_of(s.address, "mute", 1), VALIDATED_S, "mute", every=0.5)
        print(f"mute refused {time.monotonic() - sent:.1f} s after its upload")
        assert mute["status"] == "refused"
        line = mute["refusal"]
        found = re.fullmatch(
            r"check-bot: (\d+) of (\d+) scenarios failed, (\d+) not played; first ([\w-]+): "
            r"round 1, (trick 1, leading it|choosing the pain cards?): timeout: "
            r"no answer within \d+ ms; sent nothing in time; expected .*",
            line,
        )
        assert found, line
        failed, total, skipped = (int(x) for x in found.groups()[:3])
        assert failed <= 3 and failed + skipped == total, line  # three families at once
        assert not re.search(r"\d{6,}", line), line
        report = admin_status(s.address, "mute")
        assert report.count("not played: the bot timed out in") == skipped, report

        # 3: the built code plays; another entry uploading the same code, and its author
        # resubmitting it, reuse the build: the same code is never built twice.
        alpha = wait_for(lambda: status_of(s.address, "alpha", 1), VALIDATED_S, "alpha", every=0.5)
        assert alpha["status"] == "playing", admin_status(s.address, "alpha")
        assert "build: done, output" in admin_status(s.address, "alpha")
        submitted(
            cli(s.address, "submit", str(folder), "--bot-file", "bot.toml", token=tokens["beta"]),
            "beta",
            1,
        )
        again = cli(
            s.address, "submit", str(folder), "--bot-file", "bot.toml", token=tokens["alpha"]
        )
        assert submitted(again, "alpha", 2) == sha
        for bot, number in (("beta", 1), ("alpha", 2)):
            row = wait_for(partial(status_of, s.address, bot, number), VALIDATED_S, bot, every=0.5)
            assert row["status"] == "playing", admin_status(s.address, bot)
            assert "build: the same code was built before, output" in admin_status(s.address, bot)
        builds = query(league_db.target, "SELECT sha256, bot_file, build_sha256 FROM league_builds")
        assert len(builds) == 1 and builds[0][:2] == (sha, "bot.toml"), builds
        outputs = query(
            league_db.target, "SELECT DISTINCT build_sha256 FROM league_submissions WHERE bot IN "
            "('alpha', 'beta')",
        )  # fmt: skip
        assert outputs == [(builds[0][2],)], outputs
