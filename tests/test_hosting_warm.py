"""Warm hosted bots, end to end: a ``referee serve`` league whose hosted matches a real
``referee league worker`` process plays from warm, jailed bot processes. Each uploaded bot
reports on stderr (its log in the worker's folder) every match its process serves, under
a random name per process, and when it exits; one of them dies in the middle of its
process's second league match. A worker's queue preference is checked on the queue alone.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from leaguekit import (
    ADMIN_TOKEN,
    REFEREE,
    ROOT,
    SAMPLES,
    Serve,
    query,
    serving,
    sqlite_db,
    wait_for,
)
from test_hosting import VALIDATED_S, bots_json, cli, code_dir, league_file, submitted

from referee.jail import gvisor
from referee.league.config import load_league_config
from referee.league.submissions import PREFER_WAIT_S, MatchQueue
from referee.match.pool import default_idle_s
from referee.results.store import open_store

__all__ = ["code_dir"]  # the fixture, imported for the tests below

# Three validations (a dozen jailed check-bot matches each) come first: minutes on a
# loaded machine.
pytestmark = pytest.mark.timeout(1800)

WARM_BOT = '''\
"""The heuristic sample bot, telling on stderr each league match its process serves."""
import atexit, os, sys, uuid

from heuristic_bot import HeuristicBot
from sticheln_bot import run

PROCESS = uuid.uuid4().hex[:12]
DIES_IN = int(os.environ.get("WARM_DIES_IN", "0"))  # its process's Nth league match
served = 0


class WarmBot(HeuristicBot):
    def on_match_start(self, start):
        global served
        super().on_match_start(start)
        self.decisions = 0
        # A league match, not validation's (whose other seats are the house's bots).
        if not any(name.startswith("house-") for name in start.seating):
            served += 1
            self.dies = served == DIES_IN
            print(f"warm-bot {PROCESS} match {served} {start.match_id}", file=sys.stderr, flush=True)
        else:
            self.dies = False

    def choose_card(self, view):
        self.decisions += 1
        if self.dies and self.decisions == 3:
            print(f"warm-bot {PROCESS} dies", file=sys.stderr, flush=True)
            os._exit(9)
        return super().choose_card(view)


atexit.register(lambda: print(f"warm-bot {PROCESS} exits", file=sys.stderr, flush=True))
run(WarmBot())
'''


def warm_upload(folder: Path, dies_in: int = 0) -> Path:
    folder.mkdir()
    for name in ("heuristic_bot.py", "sticheln_bot.py"):
        shutil.copy(SAMPLES / "python" / name, folder / name)
    (folder / "warm_bot.py").write_text(WARM_BOT)
    env = f'env = {{ WARM_DIES_IN = "{dies_in}" }}\n' if dies_in else ""
    (folder / "bot.toml").write_text(
        f'name = "warm"\ncommand = ["python3", "warm_bot.py"]\nseats = 4\n{env}'
    )
    return folder


def submit_until_playing(s: Serve, name: str, folder: Path, token: str, first: int = 1) -> int:
    """Submit ``folder`` for ``name`` until a submission plays; its number. Validation on
    a loaded machine can time a check-bot scenario out: then it is submitted again, as
    its author would (three times at most)."""
    for number in range(first, first + 3):
        submitted(
            cli(s.address, "submit", str(folder), "--bot-file", "bot.toml", token=token),
            name,
            number,
        )
        row = wait_for(
            lambda: (r := bots_json(s.address)[name])["status"] != "validating" and r,
            VALIDATED_S * 6,
            f"{name}'s submission {number} to be decided",
            every=1,
        )
        if row["status"] == "playing":
            return number
    raise AssertionError(f"{name} was refused three times: {row['refusal']}")


def reports(logs: Path) -> dict[str, dict[str, list[tuple[str, ...]]]]:
    """Per bot (its log's name), per process: what it reported, in order."""
    out: dict[str, dict[str, list[tuple[str, ...]]]] = defaultdict(lambda: defaultdict(list))
    for log in logs.glob("*.log"):
        bot = log.name.split("+", 1)[0]
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("warm-bot "):
                _, process, *what = line.split()
                out[bot][process].append(tuple(what))
    return out


def records(folder: Path) -> dict[str, Path]:
    """The worker's records by the match id their bots were told (``bot_match_id``)."""
    out = {}
    for path in folder.glob("*.jsonl"):
        with path.open() as f:
            header = json.loads(f.readline() or "{}")
        if "bot_match_id" in header:
            out[header["bot_match_id"]] = path
    return out


def seat_faults(record: Path) -> list[tuple[int, str]]:
    lines = [json.loads(x) for x in record.read_text().splitlines() if x.strip()]
    return [(x["seat"], x["reason"]) for x in lines if x["type"] == "fault"]


def test_warm_worker_keeps_processes_restarts_a_dead_one_and_stops_a_retired_one(
    tmp_path: Path, code_dir: Path
) -> None:
    db = sqlite_db(tmp_path)
    config = league_file(tmp_path, db, code_dir, workers=0)
    uploads = {
        "alpha": warm_upload(tmp_path / "alpha"),
        "beta": warm_upload(tmp_path / "beta"),
        "gamma": warm_upload(tmp_path / "gamma", dies_in=2),
    }
    where = tmp_path / "worker"
    where.mkdir()
    with serving(config, tmp_path / "serve.log") as s:
        tokens = {n: s.register(n) for n in uploads}
        first = {n: submit_until_playing(s, n, f, tokens[n]) for n, f in uploads.items()}
        worker = subprocess.Popen(
            [*REFEREE, "league", "worker", "--database", str(db.target), "--name", "w",
             "--sandbox", "bubblewrap", "--out", "out", "--code-dir", str(code_dir.parent / "w"),
             "--log-level", "info"],
            cwd=where, stdout=subprocess.DEVNULL, stderr=(where / "worker.log").open("wb"),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        logs = where / "out" / "logs"
        try:

            def enough() -> bool:
                seen = reports(logs)
                gamma = seen.get("gamma", {})
                dead = [p for p, what in gamma.items() if ("dies",) in what]
                restarted = [p for p in gamma if p not in dead and gamma[p]]
                # Each bot reports a match as its MatchStart comes: alpha's third may be in
                # before beta's.
                served = [
                    sum(w[0] == "match" for w in what)
                    for bot in ("alpha", "beta")
                    for what in seen.get(bot, {}).values()
                ]
                return bool(dead and restarted) and len(served) == 2 and min(served) >= 3

            wait_for(enough, 300, "alpha and beta to serve 3 matches, gamma to die once", every=1)
            seen = reports(logs)
            # One process of alpha and one of beta served every match they played here.
            for bot in ("alpha", "beta"):
                assert len(seen[bot]) == 1, seen[bot]
                (played,) = seen[bot].values()
                numbers = [int(w[1]) for w in played if w[0] == "match"]
                assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 3
                assert len({w[2] for w in played if w[0] == "match"}) == len(numbers)
            # gamma's first process died in its second match; that seat alone faulted.
            gamma = seen["gamma"]
            dead = next(p for p, w in gamma.items() if ("dies",) in w)
            died_in = [w[2] for w in gamma[dead] if w[0] == "match"][-1]  # as it was told
            assert [w for w in gamma[dead] if w[0] == "match"][-1][1] == "2"
            record = wait_for(
                lambda: records(where / "out" / "matches").get(died_in),
                60,
                "the record of the match gamma died in",
            )
            header = json.loads(record.read_text().split("\n", 1)[0])
            faults = seat_faults(record)
            assert faults and {header["seating"][seat] for seat, _ in faults} == {"gamma"}, faults
            assert faults[0][1] == "crash", faults
            # A fresh gamma process played the later matches.
            restarted = [p for p in gamma if p != dead]
            assert restarted and gamma[restarted[0]][0][:2] == ("match", "1")
            alpha_process = next(iter(seen["alpha"]))

            # alpha's next submission (the same code) retires the first: the worker stops
            # the process of submission 1, which exits when its stream ends. (Validation
            # on a loaded machine can time a check-bot scenario out: then it is submitted
            # again, as its author would.)
            number = submit_until_playing(
                s, "alpha", uploads["alpha"], tokens["alpha"], first["alpha"] + 1
            )
            assert bots_json(s.address)["alpha"]["playing_submission"] == number
            wait_for(
                lambda: ("exits",) in reports(logs)["alpha"][alpha_process],
                60,
                "the retired submission's process to exit",
                every=0.5,
            )
            stopped = (where / "worker.log").read_text()
            assert re.search(r"bot_process_stopped.*alpha|alpha.*bot_process_stopped", stopped)
            wait_for(
                lambda: any(
                    p != alpha_process and ("match", "2") in [w[:2] for w in what]
                    for p, what in reports(logs)["alpha"].items()
                ),
                120,
                "alpha's new submission to play from a warm process of its own",
                every=1,
            )
        finally:
            worker.terminate()
            assert worker.wait(60) == 0
        # The faults of every match the worker played: gamma's crashes only.
        for path in (where / "out" / "matches").glob("*.jsonl"):
            header = json.loads(path.read_text().split("\n", 1)[0])
            assert {header["seating"][seat] for seat, _ in seat_faults(path)} <= {"gamma"}
        matches = query(db.target, "SELECT COUNT(*), COUNT(DISTINCT deal) FROM matches")[0]
        assert matches[0] == matches[1], "every league match is a deal of its own"


def test_a_worker_prefers_the_queued_match_whose_bots_it_holds(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "queue.db"))
    try:
        queue = MatchQueue(store, "league")

        def code(*bots: str, number: int = 1) -> dict[str, dict[str, object]]:
            return {b: {"bot": b, "submission": number} for b in bots}

        queue.put(0, "m0", ("a", "b", "c"), code("a", "b", "c"))
        queue.put(1, "m1", ("d", "e", "f"), code("d", "e", "f"))
        queue.put(2, "m2", ("a", "e", "f"), code("a", "e", "f"))
        # Holding d, e and f: m1, though m0 is older.
        taken = queue.take("w1", 30, {"d": 1, "e": 1, "f": 1})
        assert taken is not None and taken.idx == 1
        # Holding an older submission of e and f counts for nothing: m0, the oldest.
        taken = queue.take("w2", 30, {"e": 2, "f": 2})
        assert taken is not None and taken.idx == 0
        # Without warm bots, the oldest: m2.
        queue.put(3, "m3", ("d", "e", "f"), code("d", "e", "f"))
        store.execute("UPDATE match_queue SET queued_at = queued_at - ? WHERE idx = 2",
                      (PREFER_WAIT_S + 1,))  # fmt: skip
        # m2 has waited long enough: it goes first, whoever holds d, e and f.
        taken = queue.take("w1", 30, {"d": 1, "e": 1, "f": 1})
        assert taken is not None and taken.idx == 2
        taken = queue.take("w1", 30, {"d": 1, "e": 1, "f": 1})
        assert taken is not None and taken.idx == 3
    finally:
        store.close()


def _worker_start(log: Path) -> dict[str, object] | None:
    """The worker's ``worker_start`` log line, once written."""
    if not log.exists():
        return None
    for line in log.read_text(errors="replace").splitlines():
        if '"worker_start"' in line:
            return dict(json.loads(line))
    return None


def test_an_idle_warm_bot_is_kept_a_minute_in_gvisor_and_ten_in_bubblewrap(
    tmp_path: Path, code_dir: Path
) -> None:
    """An idle gVisor sandbox costs 20-50 ms of CPU a second and a fresh start about 1.1 s
    (docs/hosting.md): unless told otherwise, a worker keeps an idle gVisor bot for 60 s,
    a bubblewrap one for 600 s; ``--bot-idle-s`` and ``warm_idle_s`` still decide."""
    assert (default_idle_s("gvisor"), default_idle_s("bubblewrap")) == (60.0, 600.0)
    assert default_idle_s("none") == 600.0
    db = sqlite_db(tmp_path)
    config = league_file(tmp_path, db, code_dir, workers=0)
    assert (
        load_league_config(config, {"STICHELN_ADMIN_TOKEN": ADMIN_TOKEN}).hosting.warm_idle_s
        is None
    )
    runs = [("bubblewrap", ()), ("bubblewrap", ("--bot-idle-s", "30"))]
    if not gvisor.missing():
        runs.append(("gvisor", ()))
    with serving(config, tmp_path / "serve.log"):
        for i, (tier, flags) in enumerate(runs):
            where = tmp_path / f"worker-{i}"
            where.mkdir()
            worker = subprocess.Popen(
                [*REFEREE, "league", "worker", "--database", str(db.target), "--name", f"w{i}",
                 "--sandbox", tier, *flags, "--out", "out", "--code-dir", str(where / "code"),
                 "--log-level", "info"],
                cwd=where, stdout=subprocess.DEVNULL, stderr=(where / "worker.log").open("wb"),
            )  # fmt: skip
            try:
                start = wait_for(functools.partial(_worker_start, where / "worker.log"), 60,
                                 "the worker's start line")  # fmt: skip
            finally:
                worker.terminate()
                assert worker.wait(60) == 0
            wanted = 30.0 if flags else default_idle_s(tier)
            assert f"idle_s={wanted}" in str(start["warm"]), (tier, flags, start)
