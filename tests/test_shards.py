"""Sharded tournaments: ``--shard i/K`` on a shared PostgreSQL database or on SQLite files
plus ``referee merge``, against an unsharded run of the same tournament.

Every run is the real command in a subprocess with real bot processes; PostgreSQL is a
real server on loopback (tests/postgres_server.py). The bots are deterministic, so an
unsharded run and any split of it into shards must give the same standings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from referee.match.dealkey import KEY_ENV, DealKey
from referee.tournament.config import load_config
from referee.tournament.run import Shard
from referee.tournament.schedule import make_schedule

BOTS = Path(__file__).parent / "bots"
CMD = [sys.executable, "-m", "referee.cli"]
#: One deal key for every run: an unsharded run and its shards deal alike only with one key.
KEY = DealKey.new()
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", KEY_ENV: KEY.hex()}
MATCHES = 12  # 4 tables of 3 bots, 3 matches each


def tournament_file(tmp: Path, out: str, seed: int = 11) -> Path:
    """Four deterministic bots (two lowest-card, two highest-card), tables of three."""
    text = (
        f'[tournament]\nname = "sharded"\nseed = {seed}\ntable_size = 3\nmatches_per_table = 3\n'
        f'parallel = 1\nout = "{out}"\n[clock]\ndecision_ms = 10000\nstartup_ms = 60000\n'
    )
    for i, script in enumerate(["lowest", "highest", "lowest", "highest"]):
        text += (
            f'[[bots]]\nname = "{script}{i}"\n'
            f'command = ["{sys.executable}", "{script}_bot.py", "--marker={marker_of(tmp)}"]\n'
            f'workdir = "{BOTS}"\n'
        )
    path = tmp / f"{out}.toml"
    path.write_text(text)
    return path


def comparable(out: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The published standings without the think times (wall-clock measurements), and
    every match's result rows."""
    rows = json.loads((out / "ratings.json").read_text())["standings"]
    standings = [{k: v for k, v in r.items() if not k.startswith("think_")} for r in rows]
    return standings, (out / "results.csv").read_text().splitlines()


def referee(
    *args: str, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CMD, *args], capture_output=True, text=True, timeout=timeout, env=env or ENV, check=False
    )


def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CMD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or ENV
    )


#: The environment without a deal key: each tournament makes its own.
NO_KEY = {k: v for k, v in ENV.items() if k != KEY_ENV}


#: Tells this session's bots from any another pytest session left behind (temporary
#: folders' names repeat from one session to the next).
SESSION = uuid.uuid4().hex


def marker_of(tmp: Path) -> str:
    """The marker on the command lines of the bots of the tournament in ``tmp``."""
    return f"{tmp.name}-{SESSION}"


def no_bots_left(marker: str) -> bool:
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if marker.encode() in (p / "cmdline").read_bytes():
                    return False
            except OSError:
                pass
    return True


@pytest.fixture(scope="module")
def unsharded(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The standings of one unsharded run, the reference every split must equal."""
    tmp = tmp_path_factory.mktemp("whole")
    done = referee("tournament", str(tournament_file(tmp, "whole")))
    assert done.returncode == 0, done.stderr
    return comparable(tmp / "whole")


def pg_counts(url: str) -> tuple[int, int, list[int]]:
    """Finished matches, result rows, and the finish orders, from the shared database."""
    with psycopg.connect(url) as con:
        finished = con.execute("SELECT COUNT(*) FROM matches WHERE status = 'finished'").fetchone()
        rows = con.execute("SELECT COUNT(*) FROM results").fetchone()
        orders = [r[0] for r in con.execute("SELECT finish_order FROM matches ORDER BY 1")]
    assert finished is not None and rows is not None
    return int(finished[0]), int(rows[0]), orders


def test_shards_partition_the_schedule(tmp_path: Path) -> None:
    config = load_config(tournament_file(tmp_path, "p"))
    schedule = make_schedule(config)
    for k in (1, 2, 3, 5):
        parts = [[m.index for m in schedule if Shard(i, k).holds(m)] for i in range(k)]
        flat = sorted(i for part in parts for i in part)
        assert flat == [m.index for m in schedule], f"{k} shards do not cover the schedule once"
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
    dry = referee("tournament", str(tournament_file(tmp_path, "p")), "--shard", "1/3", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith(f"tournament sharded (shard 1/3): {MATCHES // 3} matches")


def said(stderr: str) -> list[str]:
    """What the run said on stderr besides the sandbox's and the bounds' descriptions."""
    return [x for x in stderr.strip().splitlines() if not x.startswith(("sandbox: ", "bounds: "))]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard", "2/2"], "--shard '2/2' is not allowed; allowed: i/K with 0 <= i < K"),
        (["--shard", "one/2"], "--shard 'one/2' is not allowed"),
        (["--shard", "1"], "--shard '1' is not allowed"),
        (["--shard", "0/0"], "--shard '0/0' is not allowed"),
        (["--db", "mysql://h/db"], "unsupported scheme 'mysql'"),
        (["--db", "sqlite://"], "no file path"),
    ],
)
def test_bad_shard_or_database_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = referee("tournament", str(tournament_file(tmp_path, "bad")), *args, timeout=60)
    assert done.returncode == 2
    # Only that line: the sandbox and the bounds are said once the run is taken.
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_unreachable_postgres_is_one_line_without_the_password(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://referee:hunter2@127.0.0.1:{port}/sticheln"
    done = referee("tournament", str(tournament_file(tmp_path, "x")), "--db", url, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()  # no sandbox or bounds line before it
    assert len(lines) == 1 and "cannot connect to the database" in lines[0], done.stderr
    assert "hunter2" not in done.stderr and "referee:***@" in lines[0]


def test_a_shard_given_another_deal_key_is_refused_in_one_line(tmp_path: Path) -> None:
    from referee.results.store import open_store

    path = tournament_file(tmp_path, "keyed")
    config = load_config(path)
    db = tmp_path / "keyed.db"
    store = open_store(db)  # a tournament a first shard made with a key of its own
    try:
        store.open_tournament(config.name, config.fingerprint(), config.fingerprint_hash())
        store.deal_key(config.name, DealKey.new())
    finally:
        store.close()
    done = referee("tournament", str(path), "--shard", "1/2", "--db", str(db), timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "not the given key" in lines[0] and "give every shard the same key" in lines[0]


@pytest.mark.timeout(400)
@pytest.mark.parametrize("k", [2, 3])
def test_concurrent_shards_on_postgres_equal_the_unsharded_run(
    tmp_path: Path, postgres_url: str, unsharded: tuple[list[dict[str, Any]], list[str]], k: int
) -> None:
    config = tournament_file(tmp_path, "pg")
    shards = [
        start("tournament", str(config), "--shard", f"{i}/{k}", "--db", postgres_url)
        for i in range(k)
    ]
    _finish_on_postgres(shards, k, config, postgres_url)
    assert comparable(tmp_path / "pg") == unsharded
    assert no_bots_left(marker_of(tmp_path))


@pytest.mark.timeout(400)
def test_postgres_shards_given_no_key_all_deal_from_the_first_key_stored(
    tmp_path: Path, postgres_url: str
) -> None:
    """Shards that start at once on an empty database race to create the deal key; one
    wins, every shard deals from it, and the finished tournament verifies."""
    k = 3
    config = tournament_file(tmp_path, "pgkey")
    shards = [
        start("tournament", str(config), "--shard", f"{i}/{k}", "--db", postgres_url, env=NO_KEY)
        for i in range(k)
    ]
    _finish_on_postgres(shards, k, config, postgres_url)
    with psycopg.connect(postgres_url) as con:
        (stored,) = con.execute("SELECT commitment FROM deal_keys").fetchall()
    out = tmp_path / "pgkey"
    headers = [
        json.loads(p.read_text().split("\n", 1)[0]) for p in (out / "matches").glob("*.jsonl")
    ]
    assert len(headers) == MATCHES
    assert {h["deal_key_commitment"] for h in headers} == {stored[0]}
    assert stored[0] != KEY.commitment()
    assert (out / "deal-key.txt").read_text().strip() != KEY.hex()
    audit = referee("verify", str(out), "--commitment", stored[0], env=NO_KEY)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def _finish_on_postgres(
    shards: list[subprocess.Popen[str]], k: int, config: Path, postgres_url: str
) -> None:
    """Wait for the shards, check the shared database and merge (which exports)."""
    for i, proc in enumerate(shards):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert f"shard {i}/{k}: " in out
    finished, rows, orders = pg_counts(postgres_url)
    assert finished == MATCHES and rows == MATCHES * 3
    assert sorted(orders) == list(range(1, MATCHES + 1)), "two matches got one finish order"
    merged = referee("merge", str(config), "--db", postgres_url)
    assert merged.returncode == 0, merged.stderr


@pytest.mark.timeout(400)
def test_a_shard_killed_and_restarted_loses_and_duplicates_nothing(
    tmp_path: Path, postgres_url: str, unsharded: tuple[list[dict[str, Any]], list[str]]
) -> None:
    config = tournament_file(tmp_path, "kill")
    victim = start("tournament", str(config), "--shard", "0/2", "--db", postgres_url)
    other = start("tournament", str(config), "--shard", "1/2", "--db", postgres_url)

    def victim_finished() -> int:
        with psycopg.connect(postgres_url) as con:
            try:
                row = con.execute(
                    "SELECT COUNT(*) FROM matches WHERE status = 'finished' AND idx % 2 = 0"
                ).fetchone()
            except psycopg.errors.UndefinedTable:
                return 0
        return int(row[0]) if row else 0

    deadline = time.monotonic() + 120
    while victim_finished() < 3:
        assert victim.poll() is None, "the shard ended before it could be killed"
        assert time.monotonic() < deadline, "no match of the shard finished in time"
        time.sleep(0.05)  # polling the database for a condition, not waiting out a race
    os.kill(victim.pid, signal.SIGKILL)
    victim.communicate(timeout=30)
    with psycopg.connect(postgres_url) as con:
        before = dict(
            con.execute(
                "SELECT idx, finished_at FROM matches WHERE status = 'finished' AND idx % 2 = 0"
            ).fetchall()
        )
    assert 3 <= len(before) < MATCHES // 2
    _, err = other.communicate(timeout=300)
    assert other.returncode == 0, err  # the other shard played on, unaffected
    incomplete = referee("merge", str(config), "--db", postgres_url)
    assert incomplete.returncode == 1
    assert "scheduled match(es) are not finished: sharded-00" in incomplete.stderr

    again = referee("tournament", str(config), "--shard", "0/2", "--db", postgres_url)
    assert again.returncode == 0, again.stderr
    with psycopg.connect(postgres_url) as con:
        after = dict(
            con.execute(
                "SELECT idx, finished_at FROM matches WHERE status = 'finished' AND idx % 2 = 0"
            ).fetchall()
        )
    assert len(after) == MATCHES // 2
    assert all(after[i] == t for i, t in before.items()), "a finished match was played again"
    finished, rows, orders = pg_counts(postgres_url)
    assert finished == MATCHES and rows == MATCHES * 3
    assert sorted(orders) == list(range(1, MATCHES + 1))
    # The shard that completed the tournament exported it; the merge agrees.
    assert comparable(tmp_path / "kill") == unsharded
    assert referee("merge", str(config), "--db", postgres_url).returncode == 0
    assert comparable(tmp_path / "kill") == unsharded
    assert no_bots_left(marker_of(tmp_path))


@pytest.mark.timeout(400)
def test_sqlite_shard_files_and_merge_equal_the_unsharded_run(
    tmp_path: Path, unsharded: tuple[list[dict[str, Any]], list[str]]
) -> None:
    config = tournament_file(tmp_path, "files")
    files = [tmp_path / f"shard-{i}.db" for i in range(3)]
    shards = [
        start("tournament", str(config), "--shard", f"{i}/3", "--db", str(f))
        for i, f in enumerate(files)
    ]
    for proc in shards:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    assert not (tmp_path / "files" / "ratings.json").exists(), "a lone shard exported standings"

    partial = referee("merge", str(config), str(files[0]), str(files[1]))
    assert partial.returncode == 1
    missing = [f"sharded-{i:05d}" for i in range(2, MATCHES, 3)]
    assert f"{len(missing)} scheduled match(es) are not finished: {missing[0]}" in partial.stderr
    assert not (tmp_path / "files" / "ratings.json").exists()

    merged = referee("merge", str(config), *map(str, files))
    assert merged.returncode == 0, merged.stderr
    assert (
        f"{MATCHES - 2 * MATCHES // 3} matches copied, {2 * MATCHES // 3} already there"
        in merged.stdout
    )
    assert comparable(tmp_path / "files") == unsharded
    again = referee("merge", str(config), *map(str, files))
    assert f"0 matches copied, {MATCHES} already there" in again.stdout
    results = (tmp_path / "files" / "results.csv").read_text().splitlines()
    assert len(results) == 1 + MATCHES * 3, "a merged match was stored twice"


def test_a_sqlite_shard_without_a_deal_key_is_refused_in_one_line(tmp_path: Path) -> None:
    config = tournament_file(tmp_path, "nokey")
    done = referee(
        "tournament", str(config), "--shard", "0/2", "--db", str(tmp_path / "s.db"), env=NO_KEY
    )
    assert done.returncode == 2
    lines = said(done.stderr)
    assert len(lines) == 1 and "needs the tournament's deal key" in lines[0], done.stderr
    assert "referee deal-key" in lines[0] and "--deal-key-file" in lines[0]
    assert not (tmp_path / "s.db").exists()
    bad = tmp_path / "bad.key"
    bad.write_text("not a key\n")
    done = referee("tournament", str(config), "--shard", "0/2", "--deal-key-file", str(bad))
    assert done.returncode == 2
    lines = said(done.stderr)
    assert len(lines) == 1 and f"--deal-key-file {bad}: a deal key is 64 hex digits" in lines[0]


@pytest.mark.timeout(300)
def test_merge_refuses_shards_dealt_with_different_keys(tmp_path: Path) -> None:
    config = tournament_file(tmp_path, "twokeys")
    made = referee("deal-key", "--out", str(tmp_path / "other.key"))
    assert made.returncode == 0, made.stderr
    other = DealKey.from_hex((tmp_path / "other.key").read_text())
    assert (tmp_path / "other.key").stat().st_mode & 0o777 == 0o600
    assert f"commitment: {other.commitment()}" in made.stderr
    dbs = [tmp_path / "a.db", tmp_path / "b.db"]
    first = referee("tournament", str(config), "--shard", "0/4", "--db", str(dbs[0]))
    second = referee(
        "tournament",
        str(config),
        "--shard",
        "1/4",
        "--db",
        str(dbs[1]),
        "--deal-key-file",
        str(tmp_path / "other.key"),
    )
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    refused = referee("merge", str(config), *map(str, dbs), "--db", str(tmp_path / "m.db"))
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{dbs[1]} was dealt with the deal key of commitment" in lines[0]
    assert other.commitment() in lines[0] and KEY.commitment() in lines[0]
    # A shard resumed with another key than its database's is refused too.
    again = referee(
        "tournament",
        str(config),
        "--shard",
        "0/4",
        "--db",
        str(dbs[0]),
        "--deal-key-file",
        str(tmp_path / "other.key"),
    )
    assert again.returncode == 2
    assert "give every shard the same key" in again.stderr


def test_merge_refuses_a_shard_of_another_configuration(tmp_path: Path) -> None:
    other = tournament_file(tmp_path, "other", seed=12)
    shard_db = tmp_path / "other-shard.db"
    done = referee("tournament", str(other), "--shard", "0/4", "--db", str(shard_db))
    assert done.returncode == 0, done.stderr
    config = tournament_file(tmp_path, "mine")
    refused = referee("merge", str(config), str(shard_db))
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "with a different configuration (seed: 12 -> 11" in lines[0], lines
    absent = referee("merge", str(config), str(tmp_path / "empty.db"))
    assert absent.returncode == 2 and "holds no tournament 'sharded'" in absent.stderr


def test_the_kubernetes_shard_and_merge_jobs_call_these_commands(tmp_path: Path) -> None:
    """The Indexed Job's args, expanded as Kubernetes would, parse into a shard per
    completion index that together cover deploy/league.toml's schedule; the merge Job's
    args parse into ``referee merge`` on the same file and database."""
    import yaml

    from referee.cli import build_parser

    root = Path(__file__).parent.parent / "deploy"
    job = next(
        d
        for d in yaml.safe_load_all((root / "kubernetes" / "50-shards-job.yaml").read_text())
        if d and d["kind"] == "Job"
    )
    k = job["spec"]["completions"]
    assert job["spec"]["completionMode"] == "Indexed"
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    schedule = make_schedule(load_config(root / "league.toml"))
    covered: list[int] = []
    for index in range(k):
        expanded = [
            a.replace("$(JOB_COMPLETION_INDEX)", str(index)).replace(
                "$(DATABASE_URL)", "postgresql://u:p@db:5432/s"
            )
            for a in args
        ]
        parsed = build_parser().parse_args(expanded)
        assert parsed.command == "tournament" and parsed.db == "postgresql://u:p@db:5432/s"
        shard = Shard.parse(parsed.shard)
        assert shard.count == k, "--shard .../K differs from the Job's completions"
        covered += [m.index for m in schedule if shard.holds(m)]
    assert sorted(covered) == [m.index for m in schedule]
    merge = next(
        d
        for d in yaml.safe_load_all(
            (root / "kubernetes" / "after-shards" / "60-merge-job.yaml").read_text()
        )
        if d and d["kind"] == "Job"
    )
    margs = merge["spec"]["template"]["spec"]["containers"][0]["args"]
    parsed = build_parser().parse_args(
        [a.replace("$(DATABASE_URL)", "postgresql://u:p@db:5432/s") for a in margs]
    )
    assert parsed.command == "merge" and parsed.file == args[1]
    assert parsed.db == "postgresql://u:p@db:5432/s" and parsed.shard_db == []
