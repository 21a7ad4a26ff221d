"""Invariants of random legal play, across every preset, option, player count and seed.

Each example deals a round and plays it with a seeded random player, then checks the
engine against independent recomputations: the cards are conserved, the round has one
trick per card in hand, every trick goes where rule 6 says, the scores follow rule 8, no
view shows hidden information, and the same seed and actions give the same round.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from conftest import play_round, reference_score, reference_trick_winner
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import (
    PRESETS,
    AllZeroTrick,
    Deck,
    FirstLead,
    Match,
    MatchTies,
    PainCard,
    PainVisibility,
    Phase,
    Round,
    RuleSet,
    TrumpRule,
    deck_for,
    preset,
    view,
)

#: Every rule option with every value it may take (docs/rules.md's options table).
OPTIONS: dict[str, list[Any]] = {
    "deck": [d.value for d in Deck],
    "pain_card": [v.value for v in PainCard],
    "pain_cards_per_player": [1, 2],
    "pain_visibility": [v.value for v in PainVisibility],
    "first_lead": [v.value for v in FirstLead],
    "trump_rule": [v.value for v in TrumpRule],
    "all_zero_trick": [v.value for v in AllZeroTrick],
    "match_ties": [v.value for v in MatchTies],
}


@dataclass(frozen=True)
class Game:
    rules: RuleSet
    players: int
    seed: int
    round_index: int
    dealer: int
    play_seed: int


@st.composite
def rule_sets(draw: st.DrawFn) -> RuleSet:
    """A preset with any subset of its options overridden by any allowed value."""
    name = draw(st.sampled_from(sorted(PRESETS)))
    overrides: dict[str, Any] = {}
    for option, values in OPTIONS.items():
        value = draw(st.sampled_from([None, *values]))  # None keeps the preset's value
        if value is not None:
            overrides[option] = value
    rules = preset(name, **overrides)
    if rules.deck is Deck.FRENCH_ZERO_ACE and draw(st.booleans()):
        rules = preset(name, **overrides, long_hands_3p=True)
    return rules


@st.composite
def games(draw: st.DrawFn) -> Game:
    rules = draw(rule_sets())
    lo, hi = rules.player_range()
    players = draw(st.integers(lo, hi))
    return Game(
        rules=rules,
        players=players,
        seed=draw(st.integers(0, 2**64 - 1)),
        round_index=draw(st.integers(0, 20)),
        dealer=draw(st.integers(0, players - 1)),
        play_seed=draw(st.integers(0, 2**32 - 1)),
    )


def visible_pain_expected(rnd: Round, seat: int) -> list[tuple[int, ...] | None]:
    """docs/rules.md: own pick at once; others' after the reveal; under secret at the end."""
    if rnd.phase is Phase.PAIN or (
        rnd.phase is Phase.PLAY and rnd.rules.pain_visibility is PainVisibility.SECRET
    ):
        return [rnd.pain[s] if s == seat else None for s in range(rnd.players)]
    return list(rnd.pain)


def check_views(rnd: Round) -> None:
    """No seat's view holds another hand, the set-aside cards or an unrevealed pain card."""
    played = set(rnd.trick)
    for trick in rnd.tricks:
        played |= set(trick.cards)
    for seat in range(rnd.players):
        v = view(rnd, seat)
        assert v.hand == tuple(rnd.hands[seat])
        assert list(v.pain) == visible_pain_expected(rnd, seat)
        visible_pain = {c for choice in v.pain for c in choice or ()}
        shown = set(v.hand) | set(v.trick) | visible_pain
        for trick in v.tricks:
            shown |= set(trick.cards)
        others = {c for s in range(rnd.players) if s != seat for c in rnd.hands[s]}
        hidden_pain = {
            c
            for s in range(rnd.players)
            if v.pain[s] is None
            for c in rnd.pain[s] or ()
            if c not in played
        }
        assert not shown & set(rnd.set_aside)
        assert not shown & hidden_pain
        assert shown & others <= visible_pain
        assert shown <= set(v.hand) | played | visible_pain


def first_leader(rules: RuleSet, players: int, dealer: int) -> int:
    return dealer if rules.first_lead is FirstLead.DEALER else (dealer + 1) % players


@settings(max_examples=150, deadline=None)
@given(game=games())
def test_random_round_keeps_every_rule(game: Game) -> None:
    rules, players = game.rules, game.players
    rnd = Round.deal(rules, players, game.seed, game.round_index, game.dealer)
    deck, hand_size = deck_for(rules, players)
    dealt = [list(h) for h in rnd.hands]
    set_aside_at_deal = list(rnd.set_aside)

    # The deal: full hands, and the set-aside cards account for the rest of the deck.
    assert [len(h) for h in dealt] == [hand_size] * players
    assert Counter([c for h in dealt for c in h] + set_aside_at_deal) == Counter(deck)
    assert len(set_aside_at_deal) == len(deck) - hand_size * players

    steps = play_round(rnd, random.Random(game.play_seed), on_step=check_views)
    assert rnd.is_over and rnd.scores is not None
    assert rnd.set_aside == set_aside_at_deal

    # The pain choice: the right number of own cards, of different suits when two.
    pain_set_aside = rules.pain_card is PainCard.SET_ASIDE
    for seat, choice in enumerate(rnd.pain):
        assert choice is not None
        assert len(choice) == rules.pain_cards_per_player
        assert set(choice) <= set(dealt[seat])
        if len(choice) == 2:
            assert choice[0] // 16 != choice[1] // 16 or len({c // 16 for c in dealt[seat]}) == 1

    # One trick per card in hand after the pain choice; every trick is complete.
    per_hand = hand_size - (rules.pain_cards_per_player if pain_set_aside else 0)
    assert len(rnd.tricks) == per_hand
    assert all(len(t.cards) == players for t in rnd.tricks)

    # Every trick goes where rule 6 and the options say; the right seat leads each trick.
    leader = first_leader(rules, players, game.dealer)
    captured: list[list[int]] = [[] for _ in range(players)]
    discarded: list[int] = []
    leader_takes = rules.all_zero_trick is AllZeroTrick.LEADER_TAKES
    for trick in rnd.tricks:
        assert trick.leader == leader
        position = reference_trick_winner(trick.cards, rules.trump_rule.value)
        winner = (leader + position) % players if position >= 0 else -1
        if position < 0 and leader_takes:
            winner = leader
        assert trick.winner == winner
        if winner >= 0:
            captured[winner].extend(trick.cards)
            leader = winner
        else:
            discarded.extend(trick.cards)
    assert [sorted(c) for c in rnd.captured] == [sorted(c) for c in captured]
    assert sorted(rnd.discarded) == sorted(discarded)

    # Cards are conserved: each dealt card is captured, discarded or a set-aside pain card.
    pain_cards = [c for p in rnd.pain for c in p or ()] if pain_set_aside else []
    ended = [c for pile in rnd.captured for c in pile] + rnd.discarded + pain_cards
    assert Counter(ended) == Counter(c for h in dealt for c in h)

    # Scores follow rule 8, recomputed here.
    for seat in range(players):
        pile = captured[seat] + (list(rnd.pain[seat] or ()) if pain_set_aside else [])
        suits = {c // 16 for c in rnd.pain[seat] or ()}
        assert rnd.scores[seat] == reference_score(pile, suits)

    # The same seed and the same actions give the same round.
    again = Round.deal(rules, players, game.seed, game.round_index, game.dealer)
    assert again.hands == dealt
    for seat, action in steps:
        again.apply(seat, action)
    assert again.tricks == rnd.tricks
    assert again.scores == rnd.scores
    assert again.pain == rnd.pain


@settings(max_examples=60, deadline=None)
@given(rules=rule_sets(), data=st.data())
def test_random_match_totals_and_dealers(rules: RuleSet, data: st.DataObject) -> None:
    lo, hi = rules.player_range()
    players = data.draw(st.integers(lo, min(hi, 5)))
    rounds = data.draw(st.sampled_from([None, 1, 2]))
    if rounds is not None:
        rules = rules.replace(rounds=rounds)
    seed = data.draw(st.integers(0, 2**64 - 1))
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    match = Match(rules, players, seed)
    while not match.is_over:
        seat = rng.choice(match.to_act())
        match.apply(seat, rng.choice(match.legal_actions(seat)))
    assert len(match.results) == (rounds or players)
    assert [r.dealer for r in match.results] == [r % players for r in range(len(match.results))]
    for seat in range(players):
        assert match.totals[seat] == sum(r.scores[seat] for r in match.results)
    places = match.places()
    for a, b in itertools.permutations(range(players), 2):
        if match.totals[a] > match.totals[b]:
            assert places[a] < places[b]


def test_every_combination_of_options_is_accepted_and_deals() -> None:
    values = list(itertools.product(*OPTIONS.values()))
    for name in PRESETS:
        for combo in values:
            rules = preset(name, **dict(zip(OPTIONS, combo, strict=True)))
            lo, hi = rules.player_range()
            assert lo <= hi
            for players in (lo, hi):
                rules.check_players(players)
                deck, hand_size = deck_for(rules, players)
                assert hand_size >= rules.pain_cards_per_player + 1
                assert len(deck) >= hand_size * players
