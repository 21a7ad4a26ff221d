"""The league end to end: ``referee serve`` processes and sample bot processes over
127.0.0.1; bots join late, disconnect and return; SIGTERM and restart; league files.
The tests that keep a league's data run once on SQLite and once on PostgreSQL
(the ``league_db`` fixture).
"""

from __future__ import annotations

import itertools
import math
import shutil
import subprocess
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
    db_rows,
    finished,
    query,
    serving,
    wait_for,
    write_config,
)

from referee.league.config import load_league_config
from referee.league.registry import token_hash
from referee.match.dealkey import DealKey
from referee.results.ratings import MIN_MATCHES, LiveElo, MatchOutcome, fit_standings
from referee.tournament.config import ConfigError
from sticheln.v1 import league_pb2

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")


def played(db: Path | str, league: str, bot: str, forfeited: bool | None = None) -> list[Any]:
    """The finished matches ``bot`` sat in (forfeited or not, when given)."""
    out = []
    for m in finished(db, league):
        if bot in m["seating"] and (forfeited is None or (bot in m["forfeited"]) == forfeited):
            out.append(m)
    return out


def running_with(serve: Any, bot: str) -> str | None:
    """A running match ``bot`` sits in, from the public API (WatchMatch's first message)."""
    for match_id in serve.recent().running:
        try:
            first = next(
                iter(
                    serve.league.WatchMatch(
                        league_pb2.WatchMatchRequest(match_id=match_id), timeout=5
                    )
                )
            )
        except (grpc.RpcError, StopIteration):
            continue  # it ended meanwhile
        if bot in first.match.seating:
            return str(match_id)
    return None


def test_five_bots_join_leave_return_and_the_standings_match_the_database(
    tmp_path: Path, league_db: LeagueDb
) -> None:
    name = "e2e"
    config = write_config(
        tmp_path / "league.toml",
        {"name": name, "table_size": 3, "parallel": 2, **league_db.table},
    )
    db = league_db.target
    with serving(config, tmp_path / "serve.log") as serve, bots(serve.address, tmp_path) as b:
        tokens = {n: serve.register(n) for n in ("rand", "heur", "node", "slow", "late")}
        b.start("random", "rand", tokens["rand"])
        b.start("heuristic", "heur", tokens["heur"])
        b.start("node", "node", tokens["node"], seats=2)
        b.start("slow", "slow", tokens["slow"], think_ms=15)
        wait_for(lambda: len(finished(db, name)) >= 6, 120, "6 matches with four bots")
        listed = serve.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
        assert {x.name: x.connected_streams for x in listed} == {
            "rand": 1,
            "heur": 1,
            "node": 2,
            "slow": 1,
            "late": 0,
        }
        assert not played(db, name, "late")

        # A bot joins late and is scheduled.
        b.start("random", "late", tokens["late"])
        wait_for(lambda: len(played(db, name, "late")) >= 2, 120, "the late bot playing")

        # A bot disconnects in the middle of a match: it forfeits that match only. A kill
        # that lands after the bot's last answer of its match (or between two matches)
        # leaves nothing to forfeit: then it comes back and is killed again.
        def streams(bot: str) -> int:
            listed = serve.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
            return int({x.name: x.connected_streams for x in listed}[bot])

        lost_ones: list[Any] = []
        for _attempt in range(3):
            wait_for(lambda: running_with(serve, "slow"), 60, "a match with 'slow'")
            b.kill("slow")
            gone = len(finished(db, name))
            wait_for(
                lambda: streams("slow") == 0 and running_with(serve, "slow") is None,
                60,
                "'slow' gone and no match seating it",
            )
            lost_ones = played(db, name, "slow", forfeited=True)
            if lost_ones:
                break
            b.start("slow", "slow", tokens["slow"], think_ms=15)
            wait_for(lambda: streams("slow") == 1, 60, "'slow' back")
        [lost] = lost_ones
        assert lost["forfeited"] == ["slow"]
        # Matches go on without it, and it forfeited no other.
        wait_for(lambda: len(finished(db, name)) >= gone + 4, 120, "matches without 'slow'")
        assert played(db, name, "slow", forfeited=True) == [lost]
        assert streams("slow") == 0

        # It returns and is scheduled again.
        before = {m["match_id"] for m in played(db, name, "slow")}
        b.start("slow", "slow", tokens["slow"], think_ms=0)
        wait_for(
            lambda: [m for m in played(db, name, "slow", False) if m["match_id"] not in before],
            120,
            "'slow' playing again",
        )
        b.close()  # every bot leaves; their running matches end with forfeits
        wait_for(lambda: not serve.recent().running, 60, "no match running")

        # The published standings are those of the database, every match counted.
        done = finished(db, name)
        standings = wait_for(
            lambda: (s := serve.standings()).matches == len(done) and s, 60, "fresh standings"
        )
        recent = serve.recent()

    outcomes = [
        MatchOutcome(
            tuple(m["seating"]),
            tuple(m["places"]),
            f"{m['idx']:08d}",
            forfeited=tuple(b in m["forfeited"] for b in m["seating"]),
        )
        for m in done
    ]
    fitted = {
        s.bot: s for s in fit_standings(outcomes, bootstrap=20, seed=0, min_matches=MIN_MATCHES)
    }
    elo = LiveElo()
    for o in outcomes:
        elo.update(o)
    assert {s.bot for s in standings.standings} == {"rand", "heur", "node", "slow", "late"}
    assert [s.bot for s in standings.standings] == list(fitted)  # best first
    for s in standings.standings:
        f = fitted[s.bot]
        assert math.isclose(s.rating, f.rating, abs_tol=1e-9)
        assert math.isclose(s.ci_low, f.ci_low, abs_tol=1e-9)
        assert math.isclose(s.ci_high, f.ci_high, abs_tol=1e-9)
        assert s.ci_low <= s.rating <= s.ci_high
        assert math.isclose(s.live_elo, elo.ratings()[s.bot], abs_tol=1e-9)
        mine = [m for m in done if s.bot in m["seating"]]
        assert s.matches == len(mine)
        places = [m["places"][m["seating"].index(s.bot)] for m in mine]
        assert math.isclose(s.mean_place, sum(places) / len(places))
    # Recent matches: the database's, newest first.
    newest = list(reversed(done))[: len(recent.matches)]
    assert [(r.match_id, list(r.seating), list(r.places)) for r in recent.matches] == [
        (m["match_id"], m["seating"], m["places"]) for m in newest
    ]
    # Seats rotate: every bot that played enough sat in every seat position.
    for bot in ("rand", "heur", "node"):
        seats = {m["seating"].index(bot) for m in done if bot in m["seating"]}
        assert seats == {0, 1, 2}, (bot, seats)


def test_sigterm_mid_match_exits_0_and_the_match_is_replayed_after_restart(
    tmp_path: Path, league_db: LeagueDb
) -> None:
    name = "term"
    config = write_config(
        tmp_path / "league.toml",
        {"name": name, "table_size": 3, "parallel": 1, "shutdown_grace_s": 0, **league_db.table},
    )
    db = league_db.target
    trio = ("a", "b", "c")
    with serving(config, tmp_path / "serve1.log") as serve, bots(serve.address, tmp_path) as b:
        tokens = {n: serve.register(n) for n in trio}
        procs = [b.start("slow", n, tokens[n], think_ms=20) for n in trio]
        wait_for(lambda: len(finished(db, name)) >= 2, 120, "two finished matches")
        wait_for(
            lambda: any(m["status"] == "running" for m in db_rows(db, name)),
            60,
            "a running match",
        )
        assert serve.stop() == 0  # SIGTERM
        # The league ended their streams with status OK: the bots exit 0, not left waiting.
        assert [p.wait(30) for p in procs] == [0, 0, 0], [
            (tmp_path / f"bot-{n}.log").read_text()[-500:] for n in trio
        ]
    rows = {m["match_id"]: m for m in db_rows(db, name)}
    done_before = {m["match_id"]: m for m in finished(db, name)}
    # The match SIGTERM interrupted (the one seen running, or the next when that one ended
    # first) is planned again: replayed later.
    planned = [m for m, row in rows.items() if row["status"] == "planned"]
    assert len(planned) == 1, f"one interrupted match, replayed later: {planned}"
    [match_id] = planned
    assert match_id not in done_before
    assert all(m["status"] in ("finished", "planned") for m in rows.values())
    old_seed = rows[match_id]["seed"]

    with serving(config, tmp_path / "serve2.log") as serve, bots(serve.address, tmp_path) as b:
        for n in trio:
            b.start("random", n, tokens[n])
        wait_for(
            lambda: any(m["match_id"] == match_id for m in finished(db, name)),
            120,
            "the interrupted match replayed",
        )
        wait_for(lambda: len(finished(db, name)) >= len(done_before) + 2, 120, "more matches")
        record = serve.league.GetMatchRecord(
            league_pb2.GetMatchRecordRequest(match_id=match_id), timeout=10
        )
    after = finished(db, name)
    ids = [m["match_id"] for m in after]
    assert len(ids) == len(set(ids))  # nothing duplicated
    kept = {m["match_id"]: m for m in after}
    for mid, m in done_before.items():  # nothing lost, nothing replayed twice
        assert (kept[mid]["seating"], kept[mid]["totals"], kept[mid]["finish_order"]) == (
            m["seating"],
            m["totals"],
            m["finish_order"],
        )
    replayed = kept[match_id]
    assert replayed["seating"] == rows[match_id]["planned_seating"]
    assert replayed["seed"] != old_seed  # a new deal: the seats saw part of the old one
    assert f'"seed":"{replayed["seed"]}"' in record.record_jsonl.rstrip("\n").rsplit("\n", 1)[-1]
    assert record.summary.seating == replayed["seating"]
    # Every deal, the replay's too, comes from the key stored when the league was created;
    # both runs publish its commitment in their first log line, never the key.
    ((key_hex,),) = query(db, "SELECT deal_key FROM deal_keys")
    deals = dict(query(db, "SELECT match_id, deal FROM matches"))
    key = DealKey.from_hex(key_hex)
    assert replayed["seed"] == key.match_seed(deals[match_id])
    # The first run dealt match n from deal n; the replay has a deal number of its own.
    assert deals[match_id] != int(match_id.rsplit("-", 1)[1])
    assert sorted(deals.values()) == sorted(set(deals.values()))
    for log in ("serve1.log", "serve2.log"):
        text = (tmp_path / log).read_text()
        start = next(line for line in text.splitlines() if line.startswith("{"))
        assert '"event": "league_start"' in start
        assert f'"deal_key_commitment": "{key.commitment()}"' in start
        assert key.hex() not in text.lower()


def test_ladder_matches_per_minute_spaces_the_starts_that_parallel_would_allow_at_once(
    tmp_path: Path,
) -> None:
    """Three bots of four streams each could fill four tables at once (``parallel`` 4);
    at 120 a minute the ladder starts one every half second."""
    name = "paced"
    config = write_config(
        tmp_path / "league.toml",
        {"name": name, "table_size": 3, "parallel": 4, "ladder_matches_per_minute": 120},
    )
    db = tmp_path / "out" / "league.db"
    with serving(config, tmp_path / "serve.log") as serve, bots(serve.address, tmp_path) as b:
        for bot in ("a", "b", "c"):
            b.start("random", bot, serve.register(bot), seats=4)
        wait_for(lambda: len(finished(db, name)) >= 5, 120, "5 paced matches")
    starts = sorted(
        row[0]
        for row in query(
            db,
            "SELECT started_at FROM matches WHERE tournament = ? AND started_at IS NOT NULL",
            (name,),
        )
    )
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    # Half a second apart by the league's clock; stored a moment after each start.
    assert len(gaps) >= 4 and min(gaps) > 0.3, gaps
    assert starts[-1] - starts[0] >= 0.5 * len(gaps) - 0.2, gaps


def test_every_bot_of_a_match_stopped_by_sigterm_sees_its_stream_end_with_ok(
    tmp_path: Path,
) -> None:
    """With no grace period the match stops while a bot is answering its last request; the
    stream ends once the answer is in, so no bot sees its answer's write fail (reported as
    INTERNAL by gRPC) instead of the status OK. Several times: it is a race."""
    trio = ("a", "b", "c")
    for attempt in range(3):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        config = write_config(
            folder / "league.toml",
            {"name": "stop", "table_size": 3, "parallel": 1, "shutdown_grace_s": 0},
        )
        db = folder / "out" / "league.db"
        with serving(config, folder / "serve.log") as serve, bots(serve.address, folder) as b:
            tokens = {n: serve.register(n) for n in trio}
            procs = [b.start("slow", n, tokens[n], think_ms=20) for n in trio]
            wait_for(
                lambda db=db: (
                    any(m["status"] == "running" for m in db_rows(db, "stop"))
                    and len(finished(db, "stop")) >= 1
                ),
                120,
                "a finished match and a running one",
            )
            assert serve.stop() == 0  # SIGTERM
            codes = [p.wait(30) for p in procs]
        logs = [(folder / f"bot-{n}.log").read_text() for n in trio]
        assert codes == [0, 0, 0], (attempt, logs)
        assert not any("INTERNAL" in text for text in logs), (attempt, logs)


def test_the_example_league_file_serves_as_is(tmp_path: Path) -> None:
    # A copy, so that its relative output folder lands in tmp_path.
    (tmp_path / "examples").mkdir()
    example = tmp_path / "examples" / "league-service.toml"
    shutil.copy(ROOT / "examples" / "league-service.toml", example)
    config = load_league_config(example, {"STICHELN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert config.database == (tmp_path / "results" / "league-service" / "league.db")
    assert config.admin_token_env == "STICHELN_ADMIN_TOKEN"
    with serving(example, tmp_path / "serve.log", ("--port", "0")) as serve:
        assert serve.standings().matches == 0
        serve.register("first")
        assert [
            b.name for b in serve.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
        ] == ["first"]
    assert config.database.exists()


BAD = [
    ("[league\n", "not valid TOML"),
    ("[league]\nnmae = 'x'\n", "unknown key 'nmae'"),
    ("[league]\ntable_size = 2\n", "table_size"),
    ("[league]\nport = 'x'\n", "port"),
    ("[league]\nshutdown_grace_s = -1\n", "shutdown_grace_s"),
    ("[league]\ntls_cert = 'a.pem'\n", "tls_cert and tls_key go together"),
    ("[bots]\n", "unknown table [bots]"),
    ("[clock]\ndecision = 3\n", "unknown key 'decision'"),
    ("[league]\ndatabase_env = 'NO_SUCH_DATABASE_URL'\n", "$NO_SUCH_DATABASE_URL"),
    ("[league]\ndatabase = 'a.db'\ndatabase_env = 'DB_URL'\n", "not both"),
    ("[league]\ndatabase = 3\n", "database = 3 is not allowed"),
]


@pytest.mark.parametrize(("text", "says"), BAD)
def test_a_malformed_league_file_is_one_clear_error(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_league_config(path, {"STICHELN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert says in str(info.value) and "\n" not in str(info.value)


def test_the_database_is_a_path_from_the_files_folder_or_a_url_kept_as_given(
    tmp_path: Path,
) -> None:
    env = {"STICHELN_ADMIN_TOKEN": ADMIN_TOKEN}
    url = "postgresql://league:pw@db.example:5432/league"
    for table, want in [
        ({}, tmp_path / "results" / "l" / "league.db"),
        ({"database": "data/l.db"}, tmp_path / "data" / "l.db"),
        ({"database": url}, url),
        ({"database": "postgres://db/l"}, "postgres://db/l"),
        ({"database_env": "LEAGUE_DB"}, url),
    ]:
        path = write_config(tmp_path / "l.toml", {**table, "out": "results/l"})
        config = load_league_config(path, {**env, "LEAGUE_DB": url})
        assert config.database == want, table
    # A path from the environment resolves from the file's folder too.
    path = write_config(tmp_path / "l.toml", {"database_env": "LEAGUE_DB"})
    config = load_league_config(path, {**env, "LEAGUE_DB": "state/l.db"})
    assert config.database == tmp_path / "state" / "l.db"


def test_referee_serve_with_a_malformed_file_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[league]\ntable_size = 'four'\n", encoding="utf-8")
    env = {"STICHELN_ADMIN_TOKEN": ADMIN_TOKEN, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [*REFEREE, "serve", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("referee serve: ") and "table_size" in lines[0]
    # Without the admin token it says where the token is read from.
    proc = subprocess.run(
        [*REFEREE, "serve", "--config", str(ROOT / "examples" / "league-service.toml")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip().splitlines() == [proc.stderr.strip()]
        and "$STICHELN_ADMIN_TOKEN" in proc.stderr
    )


def test_referee_league_commands_administer_a_running_league(
    tmp_path: Path, league_db: LeagueDb
) -> None:
    config = write_config(
        tmp_path / "league.toml", {"name": "cli", "table_size": 3, **league_db.table}
    )
    env = {"PATH": "/usr/bin:/bin", "STICHELN_ADMIN_TOKEN": ADMIN_TOKEN}

    def league(*argv: str, token: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*REFEREE, "league", *argv, "--address", serve.address],
            capture_output=True,
            text=True,
            timeout=60,
            env=env if token else {"PATH": "/usr/bin:/bin"},
        )

    with serving(config, tmp_path / "serve.log") as serve:
        reg = league("register", "alpha", "--owner", "ada")
        assert reg.returncode == 0, reg.stderr
        token = reg.stdout.strip()
        assert token.startswith("stb_") and "\n" not in token
        ver = league("version", "alpha")
        assert ver.returncode == 0 and ver.stdout.strip().startswith("stb_"), ver.stderr
        assert "alpha@v2" in ver.stderr
        again = league("register", "alpha")
        assert again.returncode == 1
        assert again.stderr.strip() == (
            "referee league register: ALREADY_EXISTS: a bot named 'alpha' is already registered"
        )
        no_token = league("register", "beta", token=False)
        assert no_token.returncode == 2 and "STICHELN_ADMIN_TOKEN" in no_token.stderr
        env["STICHELN_ADMIN_TOKEN"] = token  # a bot token is no admin token
        denied = league("revoke", "alpha")
        assert denied.returncode == 1 and "PERMISSION_DENIED" in denied.stderr
        env["STICHELN_ADMIN_TOKEN"] = ADMIN_TOKEN
        assert league("revoke", "alpha").returncode == 0
        bots_out = league("bots", token=False)
        assert bots_out.returncode == 0
        rows = [line.split() for line in bots_out.stdout.splitlines()[1:]]
        assert [(r[0], r[1], r[2]) for r in rows] == [
            ("alpha", "1", "no"),
            ("alpha@v2", "2", "yes"),
        ]
        listed = serve.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
        assert [(b.name, b.active) for b in listed] == [("alpha", False), ("alpha@v2", True)]
        # Another connection reads the entries while the league runs: every write is
        # committed at once, and only the tokens' hashes are stored.
        stored = query(
            league_db.target,
            "SELECT name, version, active, family, previous, token_sha256 FROM league_bots "
            "ORDER BY registered_at",
        )
        assert [r[:5] for r in stored] == [
            ("alpha", 1, 0, "alpha", ""),
            ("alpha@v2", 2, 1, "alpha", "alpha"),
        ]
        assert stored[0][5] == token_hash(token) and token not in repr(stored)
        standings = league("standings", token=False)
        assert standings.returncode == 0 and standings.stdout.startswith("0 matches")
