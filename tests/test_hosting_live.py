"""A match a ``referee league worker`` process plays is watched live in the league's web
pages: its record lines go through the database (``league_live``) to the league, whose
live stream (``/api/matches/{id}/live``) shows the match's events while it runs, the same
events its record gives once it is over."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from leaguekit import REFEREE, ROOT, SAMPLES, query, serving, sqlite_db, wait_for
from test_hosting import code_dir, league_file
from test_hosting_warm import submit_until_playing

from referee.league.feed import replay_feed
from referee.match.record import read_record
from referee.web.live import event_json

__all__ = ["code_dir"]  # the fixture, imported for the test below

# Three validations (a dozen jailed check-bot matches each) come first: minutes on a
# loaded machine.
pytestmark = pytest.mark.timeout(1800)

SLOW_BOT = '''\
"""The heuristic sample bot, thinking THINK_MS before each card: a match lasts long
enough to be watched."""
import os, time

from heuristic_bot import HeuristicBot
from sticheln_bot import run

THINK_S = float(os.environ.get("THINK_MS", "0")) / 1000


class SlowBot(HeuristicBot):
    def on_match_start(self, start):
        super().on_match_start(start)
        # Slow in league matches only (validation's other seats are the house's bots).
        self.slow = not any(name.startswith("house-") for name in start.seating)

    def choose_card(self, view):
        if self.slow:
            time.sleep(THINK_S)
        return super().choose_card(view)


run(SlowBot())
'''


def slow_upload(folder: Path) -> Path:
    folder.mkdir()
    for name in ("heuristic_bot.py", "sticheln_bot.py"):
        shutil.copy(SAMPLES / "python" / name, folder / name)
    (folder / "slow_bot.py").write_text(SLOW_BOT)
    (folder / "bot.toml").write_text(
        'name = "slow"\ncommand = ["python3", "slow_bot.py"]\nenv = { THINK_MS = "60" }\n'
    )
    return folder


def watch(url: str, until: float) -> list[tuple[float, dict[str, Any]]]:
    """A live stream's events with the wall-clock time each arrived, to its end."""
    out: list[tuple[float, dict[str, Any]]] = []
    with urllib.request.urlopen(url, timeout=60) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                out.append((time.time(), json.loads(line[6:])))
                if out[-1][1]["type"] == "end":
                    break
            if line.startswith("event: close") or time.monotonic() > until:
                break
    return out


def test_a_match_a_worker_plays_is_watched_live_in_the_web_pages(
    tmp_path: Path, code_dir: Path
) -> None:
    db = sqlite_db(tmp_path)
    config = league_file(tmp_path, db, code_dir, workers=0)
    config.write_text(config.read_text().replace("[league]\n", "[league]\nweb_port = 0\n", 1))
    where = tmp_path / "worker"
    where.mkdir()
    with serving(config, tmp_path / "serve.log") as s:
        web = s.lines.get(timeout=30).rsplit(" ", 1)[1].strip().rstrip("/")
        for name in ("alpha", "beta", "gamma"):
            submit_until_playing(s, name, slow_upload(tmp_path / name), s.register(name))
        worker = subprocess.Popen(
            [*REFEREE, "league", "worker", "--database", str(db.target), "--name", "w",
             "--sandbox", "bubblewrap", "--out", "out", "--code-dir", str(code_dir.parent / "w")],
            cwd=where, stdout=subprocess.DEVNULL, stderr=(where / "worker.log").open("wb"),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        try:
            # The match the worker holds now (a leased match in the queue).
            leased = wait_for(
                lambda: query(
                    db.target, "SELECT match_id FROM match_queue WHERE status = 'leased'"
                ),
                120,
                "the worker to take a match",
                every=0.1,
            )
            match_id = leased[0][0]
            events = watch(f"{web}/api/matches/{match_id}/live", time.monotonic() + 300)
        finally:
            worker.terminate()
            assert worker.wait(60) == 0
        finished_at = query(
            db.target, "SELECT finished_at FROM matches WHERE match_id = ?", (match_id,)
        )[0][0]
        assert finished_at is not None, "the watched match finished"
        kinds = [e["type"] for _, e in events]
        assert kinds[0] == "match" and events[0][1]["match_id"] == match_id
        assert kinds[-1] == "end" and events[-1][1]["reason"] == "completed", kinds[-3:]
        plays = [t for t, e in events if e["type"] == "play"]
        # Cards were on the live table while the match ran, not only once it was over.
        assert plays and plays[0] < finished_at - 2, (plays[0], finished_at)
        live_before_end = sum(1 for t in plays if t < finished_at)
        assert live_before_end >= len(plays) // 2, (live_before_end, len(plays))
        # Every event, once and in order: what the finished match's record gives.
        record = tmp_path / "out" / "matches" / f"{match_id}.jsonl"
        replayed = replay_feed(match_id, list(read_record(record)))
        expected = [_key(event_json(m)) for m in _all(replayed)]
        assert [_key(e) for _, e in events] == expected


def _key(event: dict[str, Any]) -> tuple[Any, ...]:
    """What an event says (the web adds running scores to some)."""
    return tuple(event.get(k) for k in ("type", "round", "seat", "card", "dealer", "totals"))


def _all(feed: Any) -> list[Any]:
    """The public messages of a finished feed, without waiting."""
    from referee.league.feed import Spectator

    return Spectator(feed, 0).take()
