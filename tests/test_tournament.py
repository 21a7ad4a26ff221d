"""Tournaments end to end: real bot processes, the SQLite store, resume after kill -9, metrics."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from referee.match.dealkey import KEY_ENV, DealKey
from referee.match.metrics import RefereeMetrics
from referee.tournament.config import load_config
from referee.tournament.run import run_tournament

BOTS = Path(__file__).parent / "bots"


#: Tells this session's bots from any another pytest session left behind (temporary
#: folders' names repeat from one session to the next).
SESSION = uuid.uuid4().hex


def marker_of(tmp_path: Path) -> str:
    """The marker on the command lines of the bots of the tournament in ``tmp_path``."""
    return f"{tmp_path.name}-{SESSION}"


def league(tmp_path: Path, name: str = "t", parallel: int = 2, matches_per_table: int = 3) -> Path:
    """Four deterministic bots (two lowest-card, two highest-card), tables of three."""
    bots = ""
    for i, script in enumerate(
        ["lowest_bot.py", "highest_bot.py", "lowest_bot.py", "highest_bot.py"]
    ):
        bots += f'[[bots]]\nname = "{script.split("_")[0]}{i}"\ncommand = ["{sys.executable}", "{script}", "--marker={marker_of(tmp_path)}"]\nworkdir = "{BOTS}"\n'
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[tournament]\nname = "{name}"\nseed = 11\ntable_size = 3\nmatches_per_table = {matches_per_table}\n'
        f'parallel = {parallel}\nout = "out-{name}"\n'
        "[clock]\ndecision_ms = 10000\nstartup_ms = 60000\n" + bots
    )
    return path


def standings(out: Path) -> list[tuple[str, float, float, float]]:
    data = json.loads((out / "ratings.json").read_text())
    return [(s["bot"], s["rating"], s["ci_low"], s["ci_high"]) for s in data["standings"]]


def finished(db: Path) -> int:
    """Finished matches in the database (0 while the tournament is still creating it)."""
    with sqlite3.connect(db) as con:
        try:
            row = con.execute("SELECT COUNT(*) FROM matches WHERE status = 'finished'").fetchone()
        except sqlite3.OperationalError:  # the tables do not exist yet
            return 0
        return int(row[0])


def test_tournament_plays_every_match_stores_and_exports(tmp_path: Path) -> None:
    config = load_config(league(tmp_path))
    registry = CollectorRegistry()
    outcome = asyncio.run(run_tournament(config, metrics=RefereeMetrics(registry), progress=False))
    assert outcome.finished == outcome.planned == 12
    assert {s.bot for s in outcome.standings} == {"lowest0", "highest1", "lowest2", "highest3"}
    assert all(stat.matches == 9 for stat in outcome.stats.values())
    for name in ("ratings.json", "ratings.csv", "results.csv", "report.html"):
        assert (config.out / name).stat().st_size > 0
    rows = (config.out / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 12 * 3
    # Metrics from a fresh registry agree with the tournament.
    assert registry.get_sample_value("sticheln_matches_total") == 12
    assert registry.get_sample_value("sticheln_matches_finished") == 12
    assert registry.get_sample_value("sticheln_matches_planned") == 12
    assert registry.get_sample_value("sticheln_matches_running") == 0
    decisions = sum(
        registry.get_sample_value("sticheln_decisions_total", {"bot": b, "phase": p}) or 0
        for b in outcome.stats
        for p in ("pain", "play")
    )
    assert decisions == sum(len(r.think_us) for r in _stored(config.database))
    assert registry.get_sample_value("sticheln_rounds_total") == 12 * 3
    assert registry.get_sample_value("sticheln_tricks_total") == 12 * 3 * 14
    for bot, value in outcome.live_elo.items():
        assert registry.get_sample_value("sticheln_elo", {"bot": bot}) == pytest.approx(value)


def _stored(db: Path) -> list:  # type: ignore[type-arg]
    from referee.results.store import Store

    store = Store(db)
    try:
        return store.results("t")
    finally:
        store.close()


@pytest.mark.timeout(240)
def test_kill_9_then_resume_gives_the_same_standings(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "referee.cli", "tournament"]
    # Equal standings need equal deals: both tournaments are created with one deal key.
    # The resume below is given none: it deals from the key stored at creation.
    key = DealKey.new().hex()
    resume_env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    resume_env.pop(KEY_ENV, None)
    env = {**resume_env, KEY_ENV: key}
    whole = league(tmp_path, "whole", parallel=2)
    subprocess.run([*cmd, str(whole)], check=True, capture_output=True, timeout=200, env=env)

    killed = league(tmp_path, "killed", parallel=2)
    db = tmp_path / "out-killed" / "tournament.db"
    proc = subprocess.Popen(
        [*cmd, str(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    deadline = time.monotonic() + 120
    while not (db.exists() and finished(db) >= 3):
        assert proc.poll() is None, "the tournament ended before it could be killed"
        assert time.monotonic() < deadline, "no match finished in time"
        time.sleep(0.05)  # polling the database for a condition, not waiting out a race
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    kept = finished(db)
    assert 3 <= kept < 12
    with sqlite3.connect(db) as con:
        before = dict(
            con.execute("SELECT idx, finished_at FROM matches WHERE status = 'finished'").fetchall()
        )
    subprocess.run(
        [*cmd, str(killed)], check=True, capture_output=True, timeout=200, env=resume_env
    )
    with sqlite3.connect(db) as con:
        after = dict(
            con.execute("SELECT idx, finished_at FROM matches WHERE status = 'finished'").fetchall()
        )
        rows = con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert len(after) == 12 and rows == 12 * 3
    assert all(after[i] == t for i, t in before.items()), "a finished match was played again"
    assert standings(tmp_path / "out-whole") == standings(tmp_path / "out-killed")
    # No bot outlived the killed referee.
    assert not [
        p
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _has_marker(p, marker_of(tmp_path))
    ]


def _has_marker(proc: Path, marker: str) -> bool:
    try:
        return marker.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.timeout(120)
def test_metrics_endpoint_serves_sticheln_series_while_running(tmp_path: Path) -> None:
    path = league(tmp_path, "m", parallel=1, matches_per_table=1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee.cli", "tournament", str(path), "--metrics-port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line.startswith(("sandbox: ", "bounds: ")):  # said once the database took the run
            line = proc.stderr.readline()
        assert line.startswith("metrics on http://127.0.0.1:"), line
        url = line.split()[-1]
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        assert "sticheln_matches_planned 4.0" in body
        assert "# TYPE sticheln_think_time_seconds histogram" in body
        out, _ = proc.communicate(timeout=100)
        assert "4/4 matches finished" in out
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, "-event_engine_listener"),
        ("", "-event_engine_listener"),
        ("callv3_batch_validation", "callv3_batch_validation,-event_engine_listener"),
        ("event_engine_listener", "event_engine_listener"),  # the user's choice is kept
        (
            " -event_engine_listener ,callv3_batch_validation",
            "-event_engine_listener,callv3_batch_validation",
        ),
    ],
)
def test_grpc_settings_are_applied_before_grpc_is_imported(
    given: str | None, expected: str
) -> None:
    """Bots are forked while gRPC threads run; with gRPC's fork handlers on, a child could
    crash (SIGSEGV) between fork and exec and the bot would forfeit before playing. And
    the server runs without the EventEngine listener (referee/runtime/grpcenv.py) unless the user
    names that experiment. gRPC reads both once, on import, so they must be in place first."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GRPC_ENABLE_FORK_SUPPORT", "GRPC_EXPERIMENTS")
    }
    if given is not None:
        env["GRPC_EXPERIMENTS"] = given
    code = (
        "import sys, os\n"
        "import referee.tournament.run, referee.cli\n"
        "assert 'grpc' in sys.modules\n"
        "print(os.environ.get('GRPC_ENABLE_FORK_SUPPORT'))\n"
        "print(os.environ.get('GRPC_EXPERIMENTS'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["false", expected]
    # gRPC accepted the setting: an experiment name it does not know would be logged.
    assert "Unknown experiment" not in done.stderr
