"""The league's seating rules: no two versions of one bot (one family) and no two bots of
one owner at one table unless the league file's ``[seating]`` lets them; a league whose
idle bots cannot fill such a table waits, says why once, and plays as soon as they can.

The scheduler's choice on its own (pure), then real ``referee serve`` processes with
sample bot processes over 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from leaguekit import ADMIN, Serve, bots, finished, serving, wait_for, write_config
from webkit import get_json

from referee.league.config import load_league_config
from referee.league.scheduler import History, SeatingRules, can_seat, choose_table
from referee.tournament.config import ConfigError
from sticheln.v1 import league_pb2

# -- the scheduler ---------------------------------------------------------------------------

#: bot -> (family, owner)
ENTRIES = {
    "alpha": ("alpha", "ada"),
    "alpha@v2": ("alpha", "ada"),
    "beta": ("beta", "bob"),
    "beta-fork": ("beta-fork", "bob"),
    "gamma": ("gamma", "cy"),
    "solo": ("solo", ""),
    "solo2": ("solo2", ""),
}


def marks(rules: SeatingRules, names: list[str]) -> dict[str, tuple[object, object]]:
    return {n: rules.marks(n, *ENTRIES[n]) for n in names}


@pytest.mark.parametrize("seed", range(40))
def test_a_table_never_holds_two_of_a_family_or_an_owner(seed: int) -> None:
    names = list(ENTRIES)
    m = marks(SeatingRules(), names)
    table = choose_table(names, 4, History(), random.Random(seed), m)
    assert len(set(table)) == 4
    assert len({ENTRIES[b][0] for b in table}) == 4
    owners = [ENTRIES[b][1] for b in table if ENTRIES[b][1]]
    assert len(owners) == len(set(owners))


def test_the_first_choice_leaves_room_for_a_whole_table() -> None:
    """The greedy order would seat ``alpha`` first (least certain); but then no third bot
    fits, so the one table there is (without it) is chosen."""
    entries = {"a1": ("A", "X"), "a2": ("A", "Y"), "b1": ("B", "X"), "c1": ("C", "Z")}
    m = {n: SeatingRules().marks(n, *fo) for n, fo in entries.items()}
    history = History(uncertainty={"a2": 10.0, "b1": 10.0, "c1": 10.0})  # a1: unknown, first
    for seed in range(20):
        table = choose_table(list(entries), 3, history, random.Random(seed), m)
        assert sorted(table) == ["a2", "b1", "c1"]


def test_one_family_alone_cannot_fill_a_table_and_says_so() -> None:
    names = ["alpha", "alpha@v2", "solo"]
    m = marks(SeatingRules(), names)
    assert not can_seat(names, 3, m)
    with pytest.raises(ValueError, match="cannot fill a table of 3"):
        choose_table(names, 3, History(), random.Random(1), m)
    # A family's versions share its owner: they may sit together once both rules relax.
    assert not can_seat(names, 3, marks(SeatingRules(same_family=True), names))
    relaxed = marks(SeatingRules(same_family=True, same_owner=True), names)
    assert sorted(choose_table(names, 3, History(), random.Random(1), relaxed)) == sorted(names)
    # One owner's two families need same_owner too.
    forks = ["beta", "beta-fork", "gamma"]
    assert not can_seat(forks, 3, marks(SeatingRules(same_family=True), forks))
    assert can_seat(forks, 3, marks(SeatingRules(same_owner=True), forks))


# -- a real league ---------------------------------------------------------------------------


def register(serve: Serve, name: str, owner: str) -> str:
    return str(
        serve.league.RegisterBot(
            league_pb2.RegisterBotRequest(name=name, owner=owner), metadata=ADMIN, timeout=10
        ).token
    )


def version_of(serve: Serve, previous: str) -> tuple[str, str]:
    reply = serve.league.RegisterVersion(
        league_pb2.RegisterVersionRequest(previous_version=previous), metadata=ADMIN, timeout=10
    )
    return reply.bot.name, reply.token


def league_file(tmp: Path, name: str, seating: str = "", web: bool = False) -> Path:
    table: dict[str, Any] = {"name": name, "table_size": 3, "parallel": 2}
    if web:
        table["web_port"] = 0
    path = write_config(tmp / "league.toml", table, None, None)
    if seating:
        path.write_text(path.read_text() + "[seating]\n" + seating + "\n", encoding="utf-8")
    return path


def test_a_league_waits_rather_than_seat_a_family_or_an_owner_together(tmp_path: Path) -> None:
    config = league_file(tmp_path, "apart", web=True)
    log = tmp_path / "serve.log"
    db = tmp_path / "out" / "league.db"
    with serving(config, log) as serve, bots(serve.address, tmp_path) as b:
        url = serve.lines.get(timeout=30).split(" ", 2)[2].strip().rstrip("/")
        tokens = {"alpha": register(serve, "alpha", "ada")}
        v2, tokens[v2] = version_of(serve, "alpha")
        tokens["beta"] = register(serve, "beta", "bob")
        tokens["beta-fork"] = register(serve, "beta-fork", "bob")
        tokens["gamma"] = register(serve, "gamma", "cy")
        owners = {"alpha": "ada", v2: "ada", "beta": "bob", "beta-fork": "bob", "gamma": "cy"}
        families = {"alpha": "alpha", v2: "alpha", "beta": "beta", "beta-fork": "beta-fork"}
        families["gamma"] = "gamma"
        # Four bots, two owners, one of them with two versions of a bot: no table of three.
        for name in ("alpha", v2, "beta", "beta-fork"):
            b.start("random", name, tokens[name], seats=2)
        wait_for(
            lambda: (
                sum(
                    s.connected_streams
                    for s in serve.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
                )
                == 8
            ),
            60,
            "eight streams connected",
        )
        four = sorted(["alpha", v2, "beta", "beta-fork"])

        def waiting() -> list[dict[str, Any]]:
            lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
            return [x for x in lines if x.get("event") == "league_waiting"]

        said = wait_for(
            lambda: [w for w in waiting() if w["idle"] == four], 30, "the league saying why"
        )
        assert "cannot fill a table of 3" in said[0]["why"]
        assert "one family or one owner" in said[0]["why"]
        assert serve.recent().running == [] and finished(db, "apart") == []
        # The web pages say it too.
        assert get_json(f"{url}/api/info")["waiting"] == said[-1]["why"]
        # Another owner's bot: tables of three, each with one of ada's and one of bob's.
        b.start("random", "gamma", tokens["gamma"], seats=2)
        wait_for(lambda: len(finished(db, "apart")) >= 4, 180, "four finished matches")
        assert get_json(f"{url}/api/info")["waiting"] is None
        # Said once for each set of idle bots, not at every wake (a stream joining, say).
        idle_sets = [w["idle"] for w in waiting()]
        assert all(a != b for a, b in itertools.pairwise(idle_sets)), idle_sets
        assert idle_sets.count(four) == 1
    for m in finished(db, "apart"):
        seating = m["seating"]
        assert len({families[x] for x in seating}) == 3, seating
        assert len({owners[x] for x in seating}) == 3, seating
    seated = {x for m in finished(db, "apart") for x in m["seating"]}
    assert {"alpha", v2} & seated and {"beta", "beta-fork"} & seated


def test_a_league_file_can_let_a_family_share_a_table(tmp_path: Path) -> None:
    config = league_file(tmp_path, "together", "same_family = true")
    db = tmp_path / "out" / "league.db"
    with serving(config, tmp_path / "serve.log") as serve, bots(serve.address, tmp_path) as b:
        # No owner given: only the family rule could keep the two versions apart.
        tokens = {"alpha": register(serve, "alpha", "")}
        v2, tokens[v2] = version_of(serve, "alpha")
        tokens["solo"] = register(serve, "solo", "")
        for name, token in tokens.items():
            b.start("random", name, token)
        wait_for(lambda: finished(db, "together"), 120, "a finished match")
    assert sorted(finished(db, "together")[0]["seating"]) == sorted(["alpha", v2, "solo"])


def test_the_seating_table_is_read_from_the_league_file(tmp_path: Path) -> None:
    env = {"STICHELN_ADMIN_TOKEN": "x" * 20}
    path = league_file(tmp_path, "rules", "same_owner = true")
    assert load_league_config(path, env).seating == SeatingRules(same_owner=True)
    assert load_league_config(league_file(tmp_path, "rules"), env).seating == SeatingRules()
    bad = league_file(tmp_path, "rules", "same_families = true")
    with pytest.raises(
        ConfigError,
        match=r"\[seating\] has unknown key 'same_families'; allowed: same_family, same_owner",
    ) as info:
        load_league_config(bad, env)
    assert "\n" not in str(info.value)
