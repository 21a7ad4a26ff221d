"""The rating rules where tournaments and leagues use them: stored forfeits tie for last,
the ``min_matches`` key, and the league's published standings (provisional bots, groups,
open interval ends, warnings)."""

from __future__ import annotations

import array
import math
from pathlib import Path

import pytest

from referee.league.standings import compute_standings
from referee.results.ratings import MIN_MATCHES, fit
from referee.results.stats import outcomes_from
from referee.results.store import StoredResult
from referee.tournament.config import ConfigError, load_config

# The bots run in a folder of their own: a bot's folder may not hold the output folder.
BOTS = "".join(
    f'[[bots]]\nname = "b{i}"\ncommand = ["python3", "bot.py"]\nworkdir = "bots"\n'
    for i in range(4)
)


def rows(idx: int, *seats: tuple[str, int, bool]) -> list[StoredResult]:
    """A stored match from (bot, place, forfeited) per seat."""
    return [
        StoredResult(idx, f"m{idx}", seat, bot, 0, place, forfeited, 0, 0, array.array("I"))
        for seat, (bot, place, forfeited) in enumerate(seats)
    ]


def test_stored_forfeits_tie_for_last() -> None:
    stored = rows(0, ("a", 1, False), ("b", 3, True), ("c", 2, False), ("d", 4, True))
    (outcome,) = outcomes_from(stored)
    assert outcome.places == (1, 3, 2, 3)
    by_bot = {s.bot: s.rating for s in fit([outcome], bootstrap=0).standings}
    assert by_bot["b"] == pytest.approx(by_bot["d"], abs=1e-9)


def test_min_matches_is_a_tournament_key_with_a_default(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    (tmp_path / "bots").mkdir()
    path.write_text("[tournament]\ntable_size = 3\n" + BOTS)
    assert load_config(path).min_matches == MIN_MATCHES
    path.write_text("[tournament]\ntable_size = 3\nmin_matches = 12\n" + BOTS)
    assert load_config(path).min_matches == 12
    path.write_text('[tournament]\ntable_size = 3\nmin_matches = "many"\n' + BOTS)
    with pytest.raises(ConfigError, match="min_matches = 'many' is not allowed"):
        load_config(path)


def test_the_league_publishes_provisional_bots_groups_open_ends_and_warnings() -> None:
    stored: list[StoredResult] = []
    # One group plays eight matches in a cycle of wins; two bots elsewhere meet six times,
    # always with the same winner; a newcomer plays once and wins.
    for k in range(8):
        order = [("a", "b", "c"), ("b", "c", "a"), ("c", "a", "b")][k % 3]
        stored += rows(len(stored), *((bot, p + 1, False) for p, bot in enumerate(order)))
    for _ in range(6):
        stored += rows(len(stored), ("x", 1, False), ("y", 2, False))
    stored += rows(len(stored), ("new", 1, False), ("a", 2, False), ("b", 3, False))
    response = compute_standings(stored, bootstrap=20, min_matches=5)
    by_bot = {s.bot: s for s in response.standings}
    assert [s.bot for s in response.standings][-1] == "new"
    assert by_bot["new"].provisional and not by_bot["a"].provisional
    assert by_bot["new"].ci_high_open and by_bot["new"].ci_high == math.inf
    assert {by_bot[b].group for b in "abc"} == {0} and {by_bot[b].group for b in "xy"} == {1}
    # Two bots that only ever met each other, always with the same winner: only the prior
    # holds their difference, so one of them has an open end.
    assert by_bot["x"].ci_high_open or by_bot["y"].ci_low_open
    assert any("2 groups that never met" in w for w in response.warnings)
    assert any("provisional: new" in w for w in response.warnings)


def test_the_league_flags_intervals_the_data_cannot_support() -> None:
    stored: list[StoredResult] = []
    for _ in range(10):  # every match a three-way tie
        stored += rows(len(stored), ("a", 1, False), ("b", 1, False), ("c", 1, False))
    response = compute_standings(stored, bootstrap=20, min_matches=0)
    assert all(s.unidentified and not s.anchor for s in response.standings)
    assert any("no width" in w for w in response.warnings)


def test_a_forfeit_is_read_from_the_record_s_fault_line() -> None:
    from referee.results.documents import results_from_record

    lines = [
        {"type": "header", "match_id": "m", "seating": ["a", "b", "c"]},
        {"type": "fault", "seat": 2, "reason": "disconnect", "forfeited": True},
        # An end line that does not list the forfeit (a record written by hand, say).
        {"type": "end", "totals": [5, 0, -3], "places": [1, 2, 3]},
    ]
    seats = results_from_record(lines, 0)
    assert [s.forfeited for s in seats] == [False, False, True]
    (outcome,) = outcomes_from(seats)
    assert outcome.forfeited == (False, False, True)
