"""A match: rounds, the rotating dealer, totals, and the ranking of docs/rules.md rule 10."""

from __future__ import annotations

import random

import pytest
from conftest import random_action

from referee.rules import (
    IllegalAction,
    Match,
    MatchTies,
    Phase,
    RoundResult,
    deal,
    preset,
    ranking,
)


def play_match(match: Match, rng: random.Random) -> list[list[list[int]]]:
    """Play to the end with random legal actions; returns each round's hands as dealt."""
    dealt: list[list[list[int]]] = []
    while not match.is_over:
        rnd = match.round
        if rnd.phase is Phase.PAIN and all(p is None for p in rnd.pain):
            dealt.append([list(h) for h in rnd.hands])
        seat = rng.choice(match.to_act())
        match.apply(seat, random_action(rnd, seat, rng))
    return dealt


@pytest.mark.parametrize("players", [3, 4, 5, 8])
def test_match_has_one_round_per_player_by_default(players: int, rng: random.Random) -> None:
    match = Match(preset("sticheln"), players, seed=players)
    assert match.rounds_total == players
    play_match(match, rng)
    assert len(match.results) == players
    assert [r.round_index for r in match.results] == list(range(players))


@pytest.mark.parametrize(("rounds", "players"), [(1, 4), (2, 5), (7, 3)])
def test_fixed_rounds_option(rounds: int, players: int, rng: random.Random) -> None:
    match = Match(preset("sticheln", rounds=rounds), players, seed=11)
    assert match.rounds_total == rounds
    play_match(match, rng)
    assert len(match.results) == rounds
    assert match.is_over


@pytest.mark.parametrize(("rounds", "players"), [(0, 4), (7, 3)])
def test_dealer_rotates_each_round(rounds: int, players: int, rng: random.Random) -> None:
    rules = preset("sticheln", rounds=rounds or "players")
    match = Match(rules, players, seed=5)
    play_match(match, rng)
    assert [r.dealer for r in match.results] == [r % players for r in range(len(match.results))]


def test_each_round_is_dealt_from_the_seed_and_round_index(rng: random.Random) -> None:
    rules = preset("sore-spot")
    match = Match(rules, 4, seed=2026)
    dealt = play_match(match, rng)
    assert len(dealt) == 4
    for r, hands in enumerate(dealt):
        assert hands == deal(rules, 4, 2026, r, r % 4)[0]


def test_totals_are_sums_of_round_scores(rng: random.Random) -> None:
    match = Match(preset("amigo"), 5, seed=99)
    play_match(match, rng)
    for seat in range(5):
        assert match.totals[seat] == sum(r.scores[seat] for r in match.results)


def test_round_results_record_the_pain_cards_and_scores(rng: random.Random) -> None:
    match = Match(preset("sticheln", pain_cards_per_player=2), 3, seed=4)
    rnd = match.round
    play_match(match, rng)
    first = match.results[0]
    assert first.pain == tuple(tuple(p or ()) for p in rnd.pain)
    assert all(len(p) == 2 for p in first.pain)
    assert list(first.scores) == rnd.scores


def test_match_waits_for_the_round_in_progress() -> None:
    match = Match(preset("sticheln"), 4, seed=1)
    assert sorted(match.to_act()) == [0, 1, 2, 3]
    assert match.round_index == 0
    assert match.legal_actions(2) == match.round.legal_actions(2)


def test_acting_after_the_match_is_over_is_refused(rng: random.Random) -> None:
    match = Match(preset("sticheln", rounds=1), 3, seed=3)
    play_match(match, rng)
    totals = list(match.totals)
    with pytest.raises(IllegalAction):
        match.apply(0, 16)
    with pytest.raises(IllegalAction):
        match.apply(1, (16,))
    assert match.totals == totals and len(match.results) == 1


def test_refused_action_changes_nothing_in_the_match() -> None:
    match = Match(preset("sticheln"), 3, seed=8)
    with pytest.raises(IllegalAction):
        match.apply(0, match.round.hands[0][0])  # a card during the pain choice
    assert match.to_act() == [0, 1, 2]
    assert match.results == [] and match.totals == [0, 0, 0]


def test_same_seed_and_actions_give_the_same_match() -> None:
    results = []
    for _ in range(2):
        match = Match(preset("stick-em-secret"), 4, seed=77)
        play_match(match, random.Random(5))
        results.append((match.results, match.totals))
    assert results[0] == results[1]


def test_positive_rounds_counts_rounds_above_zero() -> None:
    match = Match(preset("sticheln", rounds=3), 3, seed=1)
    match.results = [
        RoundResult(0, 0, ((), (), ()), (5, 0, -1)),
        RoundResult(1, 1, ((), (), ()), (1, 2, -3)),
        RoundResult(2, 2, ((), (), ()), (-2, 0, 7)),
    ]
    assert match.positive_rounds() == [2, 1, 1]


def test_places_use_totals_and_the_rule_sets_tie_break() -> None:
    for ties, expected in (("positive_rounds", [1, 2, 3]), ("shared", [1, 1, 3])):
        match = Match(preset("sticheln", rounds=2, match_ties=ties), 3, seed=1)
        match.results = [
            RoundResult(0, 0, ((), (), ()), (3, -2, 0)),
            RoundResult(1, 1, ((), (), ()), (1, 6, -4)),
        ]
        match.totals = [4, 4, -4]
        assert match.places() == expected


def test_places_rank_forfeited_seats_last() -> None:
    match = Match(preset("sticheln", rounds=1), 4, seed=1)
    match.results = [RoundResult(0, 0, ((), (), (), ()), (10, 5, 3, -1))]
    match.totals = [10, 5, 3, -1]
    assert match.places() == [1, 2, 3, 4]
    assert match.places(forfeited={0}) == [4, 1, 2, 3]
    assert match.places(forfeited=[0, 2]) == [3, 1, 4, 2]


# -- ranking() ------------------------------------------------------------------------------


def test_higher_total_ranks_first() -> None:
    assert ranking([3, 10, -5, 4], [0, 0, 0, 0]) == [3, 1, 4, 2]


def test_competition_places_share_and_skip() -> None:
    assert ranking([10, 5, 5, 1], [1, 1, 1, 1]) == [1, 2, 2, 4]
    assert ranking([7, 7, 7], [0, 0, 0]) == [1, 1, 1]


def test_equal_totals_are_broken_by_positive_rounds() -> None:
    assert ranking([5, 5, 3, 5], [2, 1, 0, 2]) == [1, 3, 4, 1]
    assert ranking([5, 5], [0, 3], MatchTies.POSITIVE_ROUNDS) == [2, 1]


def test_positive_rounds_do_not_beat_a_higher_total() -> None:
    assert ranking([6, 5], [0, 4]) == [1, 2]


def test_shared_ties_ignore_positive_rounds() -> None:
    assert ranking([5, 5, 3, 5], [2, 1, 0, 2], MatchTies.SHARED) == [1, 1, 4, 1]


def test_forfeited_seats_rank_below_everyone_and_among_themselves_by_total() -> None:
    assert ranking([100, 0, -50, 20], [4, 0, 0, 1], forfeited={0}) == [4, 2, 3, 1]
    assert ranking([100, 0, -50, 20], [4, 0, 0, 1], forfeited={0, 3}) == [3, 1, 2, 4]
    assert ranking([1, 1, 1], [0, 0, 0], MatchTies.SHARED, forfeited={1, 2}) == [1, 2, 2]


def test_match_refuses_a_bad_seed() -> None:
    with pytest.raises(ValueError, match="seed"):
        Match(preset("sticheln"), 3, seed=-1)
    with pytest.raises(ValueError, match="seed"):
        Match(preset("sticheln"), 3, seed=2**64)
