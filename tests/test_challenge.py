"""Challenges' bookkeeping, without a server: the daily allowance and when it frees up,
the refusals, a challenge that waits too long, and one a stop interrupted.

An author's whole path (CLI, a real ``referee serve``, dial-in and hosted seats, watch
links, records, pages, unrated) is in tests/test_authors.py, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from leaguekit import ADMIN_TOKEN, write_config

from referee.league import challenge
from referee.league.challenge import Challenges
from referee.league.config import load_league_config
from referee.league.registry import BotRegistry
from referee.match.server import Refused
from referee.results.store import Store, open_store


class Lobby:
    """The streams connected, per bot (only ``connected`` is asked)."""

    def __init__(self, connected: dict[str, int]) -> None:
        self.streams = connected

    def connected(self, bot: str) -> int:
        return self.streams.get(bot, 0)


class Stream:
    """An idle stream of a bot that dials in."""

    busy = False


def idle(*bots: str) -> dict[str, list[Any]]:
    """The matchmaker's seatable bots: each with one idle stream."""
    return {bot: [Stream()] for bot in bots}


class Dispatch:
    """Records what would be played."""

    def __init__(self) -> None:
        self.played: list[tuple[str, tuple[str, ...]]] = []

    def play_unrated(self, match_id: str, seating: tuple[str, ...], play: Any) -> None:
        self.played.append((match_id, seating))  # ``play`` is never called: nothing plays


def challenges(tmp_path: Path, per_day: int = 3) -> tuple[Challenges, Store, Dispatch]:
    config = write_config(tmp_path / "c.toml", {"name": "c", "challenges_per_day": per_day})
    store = open_store(tmp_path / "c.db")
    registry = BotRegistry(store)
    for name in ("a", "b", "c", "gone"):
        registry.register(name, f"{name}-owner", "")
    registry.revoke("gone")
    dispatch = Dispatch()
    lobby = Lobby({"a": 1, "b": 1, "c": 1})
    made = Challenges(
        load_league_config(config, {"STICHELN_ADMIN_TOKEN": ADMIN_TOKEN}),
        store,
        registry,
        lobby,
        dispatch,
        dict,
        lambda: None,  # type: ignore[arg-type]
    )
    return made, store, dispatch


def refused(fn: Any, *args: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(Refused) as info:
        fn(*args)
    return info.value.code, info.value.message


def test_the_allowance_counts_each_match_and_says_when_it_frees_up(tmp_path: Path) -> None:
    room, store, _ = challenges(tmp_path)
    asked = room.ask("a", ["b", "c"], 2)
    assert asked.match_ids == ["c-challenge-1", "c-challenge-2"] and asked.left == 1
    assert [c.seating for c in room.queued] == [("a", "b", "c"), ("b", "c", "a")]
    code, why = refused(room.ask, "a", ["b", "c"], 2)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    frees = time.strftime("%Y-%m-%d %H:%M", time.gmtime(asked.resets_at))
    assert "has 1 of its 3 challenge matches per 24 hours left" in why and frees in why, why
    # Another entry's allowance is its own; numbers go on.
    assert room.ask("b", ["a", "c"], 1).match_ids == ["c-challenge-3"]
    # The ask 24 hours ago no longer counts.
    store.execute("UPDATE league_usage SET at = at - 86401 WHERE who = 'a'")
    assert room.ask("a", ["b", "c"], 3).left == 0


def test_refusals_name_what_is_wrong(tmp_path: Path) -> None:
    room, _, _ = challenges(tmp_path)
    cases = [
        (["nobody", "b"], 1, grpc.StatusCode.NOT_FOUND, "no bot named 'nobody'"),
        (["gone", "b"], 1, grpc.StatusCode.FAILED_PRECONDITION, "'gone' is not playing"),
        (["b", "b"], 1, grpc.StatusCode.INVALID_ARGUMENT, "name each opponent once"),
        (["a", "b"], 1, grpc.StatusCode.INVALID_ARGUMENT, "name each opponent once"),
        (["b", "c"], 6, grpc.StatusCode.INVALID_ARGUMENT, "allowed: 1 to 5"),
        (["b", "c", "a2"], 1, grpc.StatusCode.NOT_FOUND, "'a2'"),
    ]
    for opponents, matches, code, words in cases:
        got = refused(room.ask, "a", opponents, matches)
        assert got[0] == code and words in got[1], (opponents, got)
    room.lobby.streams["b"] = 0  # type: ignore[attr-defined]
    assert "'b' is not playing: no stream" in refused(room.ask, "a", ["b", "c"], 1)[1]
    assert room.allowance.left("a") == 3  # nothing refused was counted
    (tmp_path / "off").mkdir()
    off, _, _ = challenges(tmp_path / "off", per_day=0)
    assert "challenges_per_day = 0" in refused(off.ask, "a", ["b", "c"], 1)[1]


def test_seated_when_all_can_sit_dropped_after_waiting_and_replayed_after_a_stop(
    tmp_path: Path,
) -> None:
    room, store, dispatch = challenges(tmp_path)
    room.ask("a", ["b", "c"], 2)
    assert not room.seat(idle("a", "b")) and not dispatch.played  # c cannot sit
    assert room.seat(idle("a", "b", "c"))
    assert dispatch.played == [("c-challenge-1", ("a", "b", "c"))]

    def statuses() -> list[tuple[str, str]]:
        rows = store.execute("SELECT match_id, status, seating FROM league_challenges").fetchall()
        assert all(json.loads(r[2]) for r in rows)
        return sorted((str(r[0]), str(r[1])) for r in rows)

    assert statuses() == [("c-challenge-1", "running"), ("c-challenge-2", "queued")]
    # The league stopped in the middle of the first: both are queued again at its start.
    room.load()
    assert [c.match_id for c in room.queued] == ["c-challenge-1", "c-challenge-2"]
    # Not seated within WAIT_S: dropped, and the seat goes to nobody.
    for c in room.queued:
        c.asked_at -= challenge.WAIT_S + 1
    assert not room.seat(idle("a", "b", "c")) and not room.queued
    assert statuses() == [("c-challenge-1", "expired"), ("c-challenge-2", "expired")]
