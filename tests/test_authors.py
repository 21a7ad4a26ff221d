"""Hosted bots as their authors use them, on SQLite and PostgreSQL, with real
``referee league`` commands against a real ``referee serve``: a bot that never answers
is refused after its first scenarios with a refusal a person can read; code that was
built once is never built again (a second entry uploading it, its author resubmitting it);
an author challenges a dial-in and a hosted entry to unrated matches and watches them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import pytest
from leaguekit import (
    ADMIN_TOKEN,
    REFEREE,
    ROOT,
    LeagueDb,
    bots,
    fetched_record,
    query,
    serving,
    wait_for,
)
from test_hosting import (
    PYTHON_BOT,
    VALIDATED_S,
    bots_json,
    build_bot,
    cli,
    code_dir,
    league_file,
    submitted,
)

from sticheln.v1 import league_pb2

# A league's whole life for its authors (uploads, validations, rollbacks, challenges): minutes.
pytestmark = pytest.mark.timeout(900)

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


def chatty_bot(folder: Path) -> Path:
    """The Python sample bot behind a start that says something on stderr."""
    shutil.copytree(PYTHON_BOT, folder, ignore=shutil.ignore_patterns("bot.toml", "__pycache__"))
    (folder / "chatty.py").write_text(
        "import runpy, sys\n"
        "print('gamma: hello from my own stderr', file=sys.stderr, flush=True)\n"
        "runpy.run_path('heuristic_bot.py', run_name='__main__')\n"
    )
    (folder / "bot.toml").write_text(
        'name = "gamma"\ncommand = ["python3", "chatty.py"]\nseats = 8\n'
    )
    return folder


def web_get(url: str, token: str = "") -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


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


def history(address: str, bot: str, token: str) -> list[dict[str, Any]]:
    done = cli(address, "status", bot, "--history", "--json", token=token)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def rated(address: str, bot: str, token: str, numbers: set[int]) -> list[dict[str, Any]] | None:
    """``bot``'s history once each of ``numbers`` has a published rating."""
    rows = history(address, bot, token)
    ok = all(r["rating"] is not None for r in rows if r["submission"] in numbers)
    return rows if ok and {r["submission"] for r in rows} >= numbers else None


def test_an_author_submits_resubmits_rolls_back_and_reads_each_submissions_rating(
    tmp_path: Path, league_db: LeagueDb, code_dir: Path
) -> None:
    config = league_file(
        tmp_path,
        league_db,
        code_dir,
        workers=1,
        submissions_per_day=5,
        validation_jobs=3,
        log_kb=4,
    )
    text = config.read_text().replace("[league]\n", "[league]\nchallenges_per_day = 3\n", 1)
    config.write_text(text)
    # The league's own start-up time (10 s by default), not the tests' roomier one.
    text = config.read_text().replace("startup_ms = 30000", "startup_ms = 10000")
    config.write_text(text.replace("[league]\n", "[league]\nweb_port = 0\n", 1))
    with serving(config, tmp_path / "serve.log") as s:
        web = s.lines.get(timeout=30).rsplit(" ", 1)[1].strip().rstrip("/")
        tokens = {n: s.register(n) for n in ("alpha", "beta", "gamma", "mute", "dial")}
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

        # 3: the built code plays; another entry uploading the same code reuses the build.
        alpha = wait_for(lambda: status_of(s.address, "alpha", 1), VALIDATED_S, "alpha", every=0.5)
        assert alpha["status"] == "playing", admin_status(s.address, "alpha")
        assert "build: done, output" in admin_status(s.address, "alpha")
        submitted(
            cli(s.address, "submit", str(folder), "--bot-file", "bot.toml", token=tokens["beta"]),
            "beta",
            1,
        )
        gamma_sha = submitted(
            cli(s.address, "submit", str(chatty_bot(tmp_path / "gamma")), "--bot-file",
                "bot.toml", token=tokens["gamma"]), "gamma", 1,
        )  # fmt: skip
        for bot in ("beta", "gamma"):
            row = wait_for(partial(status_of, s.address, bot, 1), VALIDATED_S, bot, every=0.5)
            assert row["status"] == "playing", admin_status(s.address, bot)
        assert "build: the same code was built before, output" in admin_status(s.address, "beta")
        wait_for(lambda: bots_json(s.address)["alpha"]["matches"] >= 2, 180, "alpha's matches", 1)

        # 5: matches on demand. gamma (hosted) meets dial (a bot that dials in) and alpha
        # (hosted), unrated, within its allowance of 3 a day, and is told where to watch.
        began = time.monotonic()
        codes = {"alpha": sha, "gamma": gamma_sha}
        with bots(s.address, tmp_path) as dial:
            dial.start("random", "dial", tokens["dial"])
            wait_for(lambda: bots_json(s.address)["dial"]["connected_streams"] == 1, 60, "dial")
            asked = cli(s.address, "challenge", "gamma", "dial", "alpha", "--matches", "2",
                        token=tokens["gamma"])  # fmt: skip
            assert asked.returncode == 0, asked.stderr
            shown = [line.split("  ") for line in asked.stdout.splitlines()]
            ids = [match_id for match_id, _ in shown]
            assert ids == ["hosted-challenge-1", "hosted-challenge-2"], asked.stdout
            assert [watch for _, watch in shown] == [f"{web}/match?id={i}" for i in ids]
            assert asked.stderr.startswith("1 challenge matches left;"), asked.stderr

            def refusal(*args: str, token: str = tokens["gamma"]) -> str:
                done = cli(s.address, "challenge", *args, token=token)
                assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done
                return done.stderr

            over = refusal("gamma", "dial", "alpha", "--matches", "2")
            assert "RESOURCE_EXHAUSTED" in over and "has 1 of its 3" in over, over
            assert re.search(r"may be asked at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", over)
            assert "NOT_FOUND: no bot named 'nobody'" in refusal("gamma", "nobody", "alpha")
            assert "'mute' is not playing" in refusal("gamma", "mute", "alpha")
            assert "UNAUTHENTICATED" in refusal("gamma", "dial", "alpha", token="stb_not-a-token")
            assert "PERMISSION_DENIED" in refusal("gamma", "dial", "alpha", token=tokens["beta"])

            def played(match_id: str) -> list[dict[str, Any]] | None:
                try:
                    return fetched_record(s.league, match_id, tmp_path)
                except grpc.RpcError:  # queued (NOT_FOUND) or running (FAILED_PRECONDITION)
                    return None

            records = [wait_for(partial(played, i), 240, i, every=0.5) for i in ids]
            print(f"two challenge matches over {time.monotonic() - began:.1f} s after dial started")
        for i, (match_id, record) in enumerate(zip(ids, records, strict=True)):
            head = record[0]
            assert head["challenge"] == "gamma" and record[-1]["type"] == "end"
            seating = ["gamma", "dial", "alpha", "gamma", "dial"][i : i + 3]
            assert head["seating"] == seating
            assert [c and c["sha256"] for c in head["code"]] == [codes.get(b) for b in seating]
            # Its page and its replay say it is a challenge.
            assert web_get(f"{web}/api/matches/{match_id}")[1]["challenge"] == "gamma"
            with urllib.request.urlopen(f"{web}/match?id={match_id}", timeout=30) as page:
                assert 'id="challenge">Challenge asked for by' in page.read().decode()
            first = next(iter(s.league.WatchMatch(
                league_pb2.WatchMatchRequest(match_id=match_id), timeout=30)))  # fmt: skip
            assert first.match.challenge == "gamma"
        # gamma's stderr in them is kept for gamma.
        logs = cli(s.address, "logs", "gamma", "--match", ids[0], token=tokens["gamma"])
        assert "gamma: hello from my own stderr" in logs.stdout, logs
        # Unrated: no challenge is one of the league's matches, results or recent matches,
        # and each entry's standing counts only its rated matches.
        assert not query(
            league_db.target, "SELECT idx FROM matches WHERE match_id LIKE ?", ("%chall%",)
        )
        assert all(m.match_id not in ids for m in s.recent().matches)

        def counted_alike() -> bool:
            # One publication against the matches it counts (the first N to finish).
            st = s.standings()
            rows = query(
                league_db.target,
                "SELECT seating FROM matches WHERE status = 'finished' AND finish_order <= ?",
                (st.matches,),
            )
            line = {x.bot: x.matches for x in st.standings}
            seated = [json.loads(r[0]) for r in rows]
            return len(rows) == st.matches and all(
                line.get(b, 0) == sum(b in x for x in seated) for b in ("dial", "gamma")
            )

        wait_for(counted_alike, 60, "the standings to count the rated matches only", every=0.5)
        print(f"challenges checked {time.monotonic() - began:.1f} s after dial started")

        # The author resubmits the same code: not built again; it plays from now on.
        again = cli(
            s.address, "submit", str(folder), "--bot-file", "bot.toml", token=tokens["alpha"]
        )
        assert submitted(again, "alpha", 2) == sha
        row = wait_for(partial(status_of, s.address, "alpha", 2), VALIDATED_S, "alpha 2", every=0.5)
        assert row["status"] == "playing", admin_status(s.address, "alpha")
        assert "build: the same code was built before, output" in admin_status(s.address, "alpha")
        builds = query(league_db.target, "SELECT sha256, bot_file, build_sha256 FROM league_builds")
        assert len(builds) == 1 and builds[0][:2] == (sha, "bot.toml"), builds

        # 1: each submission is rated on its own matches; --history --json says so.
        rows = wait_for(
            lambda: rated(s.address, "alpha", tokens["alpha"], {1, 2}), 240, "both rated", every=2
        )
        assert [(r["submission"], r["status"], r["sha256"]) for r in rows] == [
            (2, "playing", sha),
            (1, "retired", sha),
        ]
        for r in rows:
            assert r["matches"] >= 1, r
            low, high = r["interval"]
            assert low is None or high is None or low <= r["rating"] <= high, r
        seats = dict(
            query(
                league_db.target,
                "SELECT c.submission, COUNT(*) FROM league_seat_code c JOIN matches m ON "
                "m.tournament = c.tournament AND m.idx = c.idx WHERE c.bot = 'alpha' AND "
                "m.status = 'finished' GROUP BY c.submission",
            )
        )
        assert all(r["matches"] <= seats[r["submission"]] for r in rows), (rows, seats)
        # Every record and result names each seat's submission and code hash.
        recent = s.recent().matches
        assert recent
        # (dial, a bot that dials in, played some of them: no submission, no hash.)
        hashes = {"alpha": sha, "beta": sha, "gamma": gamma_sha, "dial": ""}
        for summary in recent:
            assert list(summary.sha256s) == [hashes[b] for b in summary.seating], summary
            numbers = zip(summary.seating, summary.submissions, strict=True)
            assert all((n >= 1) == (b != "dial") for b, n in numbers), summary
            record = fetched_record(s.league, summary.match_id, tmp_path)
            code = record[0]["code"]
            assert [c["sha256"] if c else "" for c in code] == list(summary.sha256s)
            assert [c["submission"] if c else 0 for c in code] == list(summary.submissions)

        # Rollback: submission 1 plays again, without a build, and is no upload.
        uploads = query(league_db.target, "SELECT COUNT(*) FROM league_submissions")[0][0]
        done = cli(s.address, "activate", "alpha", "1", token=tokens["alpha"])
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"alpha: submission 1, sha256 {sha}, validating"
        wait_for(
            lambda: (
                [r["status"] for r in history(s.address, "alpha", tokens["alpha"])]
                == ["retired", "playing"]
            ),
            VALIDATED_S,
            "submission 1 to play again",
            every=2,  # a command each time
        )
        assert query(league_db.target, "SELECT COUNT(*) FROM league_submissions")[0][0] == uploads
        refused = cli(s.address, "activate", "alpha", "1", token=tokens["beta"])
        assert refused.returncode == 1 and "PERMISSION_DENIED" in refused.stderr, refused.stderr
        playing = cli(s.address, "activate", "alpha", "1", token=tokens["alpha"])
        assert playing.returncode == 1 and "it plays already" in playing.stderr, playing.stderr
        assert "build: the same code was built before" in admin_status(s.address, "alpha")
        # The entry's line in the standings is its playing submission's (submission 1).

        def entry_is_submission_1() -> bool:
            one = next(
                r for r in history(s.address, "alpha", tokens["alpha"]) if r["submission"] == 1
            )
            line = next((x for x in s.standings().standings if x.bot == "alpha"), None)
            return line is not None and line.matches == one["matches"] and one["matches"] > 0

        wait_for(entry_is_submission_1, 120, "alpha's line to be submission 1's", every=2)

        # 2: logs for their owners: the bot's own stderr of each ranked match kept, and
        # its validation reports; the entry's token, never another's.
        logs = cli(s.address, "logs", "gamma", token=tokens["gamma"])
        assert logs.returncode == 0, logs.stderr
        heads = re.findall(r"^== match (\S+), submission 1, seat (\d+), .* UTC", logs.stdout, re.M)
        assert heads, logs.stdout
        assert "gamma: hello from my own stderr" in logs.stdout
        assert "== validation of submission 1" in logs.stdout
        assert "PASS preset-sticheln" in logs.stdout
        one = cli(s.address, "logs", "gamma", "--match", heads[0][0], token=tokens["gamma"])
        assert re.findall(r"^== (\S+ \S+)", one.stdout, re.M) == [f"match {heads[0][0]},"]
        other = cli(s.address, "logs", "gamma", token=tokens["alpha"])
        assert other.returncode == 1 and "PERMISSION_DENIED" in other.stderr, other.stderr
        kept = query(league_db.target, "SELECT LENGTH(text) FROM league_logs WHERE bot = 'gamma'")
        assert kept and all(n <= 4096 for (n,) in kept), kept  # log_kb = 4
        # The web page's API shows the same to the owner, and nothing to anyone else.
        url = f"{web}/api/logs?name=gamma"
        assert web_get(url)[0] == 401
        assert web_get(url, tokens["alpha"])[0] == 403
        status, doc = web_get(url, tokens["gamma"])
        assert status == 200 and doc["retention_days"] == 14
        assert any("hello from my own stderr" in m["text"] for m in doc["matches"])
        assert doc["validation"][0]["submission"] == 1
        status, page = web_get(f"{web}/api/bot?name=gamma")
        assert "hello from my own stderr" not in json.dumps(page)
