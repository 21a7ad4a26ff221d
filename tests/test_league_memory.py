"""A league runs for weeks: publishing its standings must not cost its process memory in
proportion to the matches played so far, and a finished match leaves nothing behind in
memory (not even garbage waiting for the cyclic collector) but is still found through the
database."""

from __future__ import annotations

import asyncio
import collections
import gc
import tracemalloc
from pathlib import Path

import pytest
from bots.harness import run
from leaguekit import LeagueDb, bots

from referee.league.config import LeagueConfig, league_from_table
from referee.league.service import League, match_id_of
from referee.match.faults import Fault, FaultReason
from referee.match.runner import MatchResult, SeatResult
from referee.tournament.schedule import ScheduledMatch

pytestmark = pytest.mark.timeout(120)
BOTS = ["ann", "ben", "cy", "dee", "eve"]


def _config(tmp_path: Path, **options: object) -> LeagueConfig:
    return league_from_table(
        {"league": {"name": "mem", "seed": 1, "table_size": 4, "bootstrap": 20, **options}},
        tmp_path,
        tmp_path / "league.toml",
        {"STICHELN_ADMIN_TOKEN": "x" * 32},
    )


def _league(tmp_path: Path, db: LeagueDb) -> League:
    """A league whose matches the test finishes itself (see :func:`_finish`)."""
    config = _config(tmp_path, **db.table)
    league = League(config)
    league.store.open_tournament(config.name, league.fingerprint(), "mem")
    league.key = league.store.deal_key(config.name)
    return league


def _finish(league: League, index: int) -> None:
    seating = tuple(BOTS[(index + i) % len(BOTS)] for i in range(4))
    m = ScheduledMatch(index, tuple(sorted(seating)), seating, index)
    name = league.config.name
    key = league.store.deal_key(name)
    assert key is not None
    league.store.plan(name, [m], lambda m: match_id_of(name, m.index), key)
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
    # Fitted in this process, the publication's peak grew about 1.8 KB per match played
    # (the places of every match, for the Bradley-Terry fit), and the process's resident
    # set about 2.6 KB (the allocator keeps what a peak took). Fitted in a process of its
    # own, it costs the league the same whatever the history.
    assert many - few < 20_000, (few, many)
    assert many < 200_000, (few, many)


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


async def _until_finished(league: League, count: int, timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while league.finished_count() < count:
            await asyncio.sleep(0.02)


def test_a_finished_match_leaves_no_reference_cycle(tmp_path: Path) -> None:
    # Reference counting must free a match as it ends. Whatever of it sits in a reference
    # cycle (its record lines, engine state, feed: some 330 objects a match when the
    # runner's cancelled stream watchers held it) waits for the collector's older
    # generations, which under the league's load ran minutes apart.
    league = League(_config(tmp_path, port=0, publish_interval_s=0.0))
    names = BOTS[:4]
    tokens = {name: league.registry.register(name, f"{name}-owner", "")[1] for name in names}
    run(league.start())
    try:
        with bots(league.server.address, tmp_path) as b:
            for name in names:
                b.start("random", name, tokens[name])
            run(_until_finished(league, 2))  # what the first matches set up once
            gc.collect()
            gc.disable()
            try:
                start = league.finished_count()
                run(_until_finished(league, start + 10))
                played = league.finished_count() - start
                gc.set_debug(gc.DEBUG_SAVEALL)
                found = gc.collect()
                kinds = collections.Counter(type(o).__qualname__ for o in gc.garbage)
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                gc.enable()
    finally:
        run(league.stop())
    assert found / played < 20, (played, kinds.most_common(12))


def test_the_web_pages_read_only_the_matches_finished_since_their_last_read(
    tmp_path: Path, league_db: LeagueDb
) -> None:
    from referee.web.sources import LeagueSource

    league = _league(tmp_path, league_db)
    name = league.config.name
    for i in range(3):
        _finish(league, i)
    rows, upto = league.store.results_since(name, 0)
    assert [r.idx for r in rows] == [i for i in range(3) for _ in range(4)]
    assert league.store.results_since(name, upto) == ([], upto)
    _finish(league, 3)
    newer, later = league.store.results_since(name, upto)
    assert [r.idx for r in newer] == [3] * 4 and later > upto
    assert league.store.results(name) == rows + newer

    source = LeagueSource(league)
    first, _ = source.load(100)
    assert first == league.store.results(name)
    again, _ = source.load(100)
    assert again == []  # nothing finished: nothing read
    _finish(league, 4)
    grown, _ = source.load(100)
    assert [r.idx for r in grown] == [4] * 4  # only the new match
    # A long history is read a batch of matches at a time.
    batched = LeagueSource(league)
    batches = [[r.idx for r in batched.load(2)[0]] for _ in range(4)]
    assert batches == [[0] * 4 + [1] * 4, [2] * 4 + [3] * 4, [4] * 4, []]
