"""A match nobody played is not a result: with fewer than two seats connected it ends
``aborted``, is stored as such, is neither rated nor counted, and the tournament plays it
once more with the same deal before reporting it (exit status 1, no standings)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bots.harness import (
    BOTS_DIR,
    READ_BOTS,
    assert_no_processes,
    bot,
    bot_table,
    new_marker,
    record_lines,
    run_match,
    toml_text,
)
from machine import stretched

from referee.match.record import replay
from referee.match.runner import Clock
from referee.rules import preset

pytestmark = pytest.mark.timeout(150)
#: The broken bots are to fail in the matches themselves, not in the start check.
NO_CHECK = ("--no-preflight",)


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


def test_a_match_with_one_seat_connected_is_aborted_and_nothing_is_dealt(
    tmp_path: Path, marker: str
) -> None:
    matches = tmp_path / "matches.txt"
    good = bot("lowest_bot.py", marker, env={"MATCHES": str(matches)})
    broken = [
        bot("handshake_bot.py", marker, name=f"old{i}", env={"MODE": "version"}) for i in (1, 2)
    ]
    # The refused bots exit at once; the long start-up limit is for the good one.
    clock = Clock(decision_ms=10_000, startup_ms=30_000)
    result = run_match(
        [broken[0], good, broken[1]], preset("sticheln", rounds=1), out_dir=tmp_path, clock=clock
    )
    assert result.aborted
    assert result.reason == "aborted: fewer than two seats connected (1 of 3)"
    lines = record_lines(result.record_path)
    assert [x["type"] for x in lines] == ["header", "fault", "fault", "end"]
    assert lines[-1]["reason"] == result.reason
    assert lines[-1]["places"] == [] and lines[-1]["forfeited"] == [0, 2]
    account = replay(result.record_path)
    assert account.aborted == result.reason
    assert not matches.exists()  # the connected bot was never seated: no MatchStart


def _bot_file(name: str, marker: str, env: dict[str, str]) -> str:
    script = "handshake_bot.py" if env.get("MODE") else "lowest_bot.py"
    table = bot_table(script, marker, name=name, env=env)
    return "[[bots]]\n" + toml_text(table).replace("[env]", "[bots.env]")


def test_a_tournament_retries_an_aborted_match_once_then_reports_it(
    tmp_path: Path, marker: str
) -> None:
    bots = "".join(
        _bot_file(name, marker, {"MODE": "version"} if name.startswith("old") else {})
        for name in ("good1", "good2", "old1", "old2")
    )
    path = tmp_path / "t.toml"
    path.write_text(
        '[tournament]\nname = "t"\nseed = 2\ntable_size = 3\nmatches_per_table = 1\n'
        f'parallel = 1\nout = "{tmp_path / "out"}"\n[clock]\ndecision_ms = 10000\n'
        "startup_ms = 30000\n" + bots
    )
    ran = subprocess.run(
        # An explicit level: the log off a terminal is JSON lines, read below.
        [
            *(sys.executable, "-m", "referee.cli", "tournament", str(path), *NO_CHECK),
            *("--workers", "1", "--log-level", "warning"),
        ],
        capture_output=True,
        text=True,
        timeout=stretched(120),
        cwd=BOTS_DIR,
    )
    assert ran.returncode == 1, ran.stderr
    last = ran.stdout.strip().splitlines()[-1]
    assert last.startswith("2/4 matches finished; 2 aborted, each played twice")
    assert "t-00" in last and "run the same command again" in last
    assert "Traceback" not in ran.stderr
    events = [json.loads(x) for x in ran.stderr.splitlines() if x.startswith("{")]
    replayed = [e for e in events if e["event"] == "match_replayed"]
    assert len(replayed) == 2 and all(e["why"].startswith("aborted") for e in replayed)
    with sqlite3.connect(tmp_path / "out" / "tournament.db") as db:
        status = dict(db.execute("SELECT match_id, status FROM matches").fetchall())
        rated = {r[0] for r in db.execute("SELECT DISTINCT idx FROM results").fetchall()}
    assert sorted(status.values()) == ["aborted", "aborted", "finished", "finished"]
    aborted = sorted(m for m, s in status.items() if s == "aborted")
    assert all(m in last for m in aborted)
    assert len(rated) == 2  # only the played matches have results
    for match_id in aborted:
        end = record_lines(tmp_path / "out" / "matches" / f"{match_id}.jsonl")[-1]
        assert end["reason"] == "aborted: fewer than two seats connected (1 of 3)"
    assert not (tmp_path / "out" / "ratings.json").exists()


def test_referee_match_reports_an_aborted_match_with_exit_status_1(
    tmp_path: Path, marker: str
) -> None:
    files = []
    for name, env in (("good", {}), ("old1", {"MODE": "version"}), ("old2", {"MODE": "token"})):
        path = tmp_path / f"{name}.toml"
        script = "handshake_bot.py" if env else "lowest_bot.py"
        path.write_text(toml_text(bot_table(script, marker, name=name, env=env)))
        files.append(path)
    ran = subprocess.run(
        [sys.executable, "-m", "referee.cli", "match", "--out", str(tmp_path / "out")]
        + ["--startup-ms", "30000", "--no-preflight", *READ_BOTS]
        + [x for f in files for x in ("--bot", str(f))],
        capture_output=True,
        text=True,
        timeout=stretched(60),
    )
    assert ran.returncode == 1
    assert ran.stdout == ""
    assert "aborted: fewer than two seats connected (1 of 3); it was not played" in ran.stderr
    assert "protocol version 2 is not supported" in ran.stderr
    assert "refused with UNAUTHENTICATED" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_a_duplicate_tournament_whose_seatings_are_refused_ends_instead_of_stalling(
    tmp_path: Path, marker: str
) -> None:
    """Every seating of both deals is aborted (two of its three bots are refused): a
    deal's last seating, held until the deal's other seatings have ended, must not wait
    for seatings that ended aborted, or the run stops making progress and never ends."""
    bots = "".join(
        _bot_file(name, marker, {"MODE": "version"} if name.startswith("old") else {})
        for name in ("good1", "old1", "old2")
    )
    path = tmp_path / "t.toml"
    path.write_text(
        '[tournament]\nname = "t"\nseed = 2\nmode = "duplicate"\ntable_size = 3\n'
        f'matches_per_table = 6\nparallel = 2\nout = "{tmp_path / "out"}"\n'
        "[clock]\ndecision_ms = 10000\nstartup_ms = 30000\n"
        # The schedule is the subject, not the tier (a duplicate tournament's default is
        # the strongest): bubblewrap, a fraction of gVisor's cost per sandbox.
        '[sandbox]\nmode = "bubblewrap"\n' + bots
    )
    ran = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(path), *NO_CHECK, "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=stretched(100),
        cwd=BOTS_DIR,
    )
    assert ran.returncode == 1, ran.stderr
    last = ran.stdout.strip().splitlines()[-1]
    assert last.startswith("0/6 matches finished; 6 aborted, each played twice"), last
    with sqlite3.connect(tmp_path / "out" / "tournament.db") as db:
        status = [s for (s,) in db.execute("SELECT status FROM matches").fetchall()]
    assert status == ["aborted"] * 6
