"""A league runs for weeks: publishing its standings must not cost its process memory in
proportion to the matches played so far, and a finished match leaves nothing behind in
memory but is still found through the database."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from bots.harness import run
from leaguekit import LeagueDb

from referee.league.config import league_from_table
from referee.league.service import League, match_id_of
from referee.match.faults import Fault, FaultReason
from referee.match.runner import MatchResult, SeatResult
from referee.tournament.schedule import ScheduledMatch

pytestmark = pytest.mark.timeout(120)
BOTS = ["ann", "ben", "cy", "dee", "eve"]


def _league(tmp_path: Path, db: LeagueDb) -> League:
    config = league_from_table(
        {"league": {"name": "mem", "seed": 1, "table_size": 4, "bootstrap": 20, **db.table}},
        tmp_path,
        tmp_path / "league.toml",
        {"STICHELN_ADMIN_TOKEN": "x" * 32},
    )
    league = League(config)
    league.store.open_tournament(config.name, league.fingerprint(), "mem")
    league.key = league.store.deal_key(config.name)
    return league


def _finish(league: League, index: int) -> None:
    seating = tuple(BOTS[(index + i) % len(BOTS)] for i in range(4))
    m = ScheduledMatch(index, tuple(sorted(seating)), seating, index)
    name = league.config.name
    assert league.key is not None
    league.store.plan(name, [m], lambda m: match_id_of(name, m.index), league.key)
    record = league.config.out / f"{index}.jsonl"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text('{"type":"header"}\n')
    seats = [
        SeatResult(
            s,
            bot,
            total=10 - s,
            place=s + 1,
            forfeited=False,
            positive_rounds=1,
            faults=[Fault(s, FaultReason.TIMEOUT, "late", 0, 1, 1, False)] if s == 3 else [],
            think_s=[0.001 * (k % 7 + 1) for k in range(60)],  # a 4-round match's decisions
        )
        for s, bot in enumerate(seating)
    ]
    result = MatchResult(match_id_of(name, index), seats, record, index, 1.0, 240)
    league.store.mark_running(name, index, record)
    league.store.save_result(name, index, result)
    league._finished += 1


def _publication_peak(league: League) -> int:
    tracemalloc.start()
    try:
        run(league._publish())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_publishing_the_standings_costs_little_memory_per_match_played(
    tmp_path: Path, league_db: LeagueDb
) -> None:
    league = _league(tmp_path, league_db)
    for i in range(200):
        _finish(league, i)
    _publication_peak(league)  # the first one also pays for one-off set-up
    few = _publication_peak(league)
    for i in range(200, 1200):
        _finish(league, i)
    many = _publication_peak(league)
    assert league.standings().matches == 1200
    # Loading every match's think times cost about 4.7 KB per match played; what is left
    # (the places of every match, for the Bradley-Terry fit, freed after the fit) is
    # about 1.8 KB.
    per_match = (many - few) / 1000
    assert per_match < 2_500, (few, many)


def test_a_finished_match_is_found_through_the_database(
    tmp_path: Path, league_db: LeagueDb
) -> None:
    league = _league(tmp_path, league_db)
    for i in range(3):
        _finish(league, i)
    summary, text = league.record(match_id_of("mem", 1))
    assert summary.match_id == "mem-000001"
    assert text == '{"type":"header"}\n'
    for unknown in ("mem-000009", "other-000001", "mem-x", "mem-1"):
        with pytest.raises(Exception, match="no finished match"):
            league.record(unknown)
