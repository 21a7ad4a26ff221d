"""What one seat may know: docs/rules.md rule 11, "What each seat may know", via view()."""

from __future__ import annotations

import dataclasses
import random

import pytest
from conftest import play_round, random_action

from referee.rules import Match, Phase, Round, View, preset, view

#: Every field of View. A new field must be added here on purpose, after checking that it
#: carries nothing hidden.
VIEW_FIELDS = {
    "rules",
    "players",
    "seat",
    "round_index",
    "rounds_total",
    "dealer",
    "phase",
    "hand",
    "pain",
    "set_aside_count",
    "leader",
    "to_play",
    "trick",
    "tricks",
    "round_results",
    "totals",
    "match_over",
}


def cards_in(v: View) -> set[int]:
    """Every card a view shows, in any field that holds cards."""
    shown = set(v.hand) | set(v.trick)
    for choice in v.pain:
        shown |= set(choice or ())
    for trick in v.tricks:
        shown |= set(trick.cards)
    for result in v.round_results:
        for choice in result.pain:
            shown |= set(choice)
    return shown


def played(rnd: Round) -> set[int]:
    out = set(rnd.trick)
    for trick in rnd.tricks:
        out |= set(trick.cards)
    return out


def pick(rnd: Round, seat: int, rng: random.Random) -> None:
    rnd.apply(seat, random_action(rnd, seat, rng))


def test_view_has_no_field_for_hidden_information() -> None:
    names = {f.name for f in dataclasses.fields(View)}
    assert names == VIEW_FIELDS
    for hidden in ("hands", "set_aside", "seed", "captured", "discarded"):
        assert hidden not in names


def test_view_of_a_seat_that_does_not_exist_is_refused() -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=1)
    for seat in (-1, 3):
        with pytest.raises(ValueError, match="seat"):
            view(rnd, seat)


def test_own_hand_and_public_facts_are_shown() -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=2, dealer=1)
    v = view(rnd, 2)
    assert v.hand == tuple(rnd.hands[2])
    assert (v.seat, v.players, v.dealer, v.phase) == (2, 4, 1, Phase.PAIN)
    assert v.rules == rnd.rules
    assert v.set_aside_count == 0


@pytest.mark.parametrize("visibility", ["revealed", "secret"])
def test_nothing_about_others_picks_during_the_pain_choice(
    visibility: str, rng: random.Random
) -> None:
    rnd = Round.deal(preset("sticheln", pain_visibility=visibility), 4, seed=3)
    before = view(rnd, 0)
    assert before.pain == (None, None, None, None)
    for seat in (3, 1, 2):
        pick(rnd, seat, rng)
        # Not even whether they picked: seat 0's view is exactly as before.
        assert view(rnd, 0) == before


def test_own_pick_is_visible_at_once(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=4)
    pick(rnd, 1, rng)
    assert view(rnd, 1).pain == (None, rnd.pain[1], None)
    assert view(rnd, 1).own_pain == rnd.pain[1]
    assert view(rnd, 1).hand == tuple(rnd.hands[1])  # without the set-aside pain card


def test_revealed_picks_are_visible_to_all_after_the_reveal(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=5)
    for seat in range(4):
        pick(rnd, seat, rng)
    assert rnd.phase is Phase.PLAY
    for seat in range(4):
        assert view(rnd, seat).pain == tuple(rnd.pain)


def test_secret_picks_stay_hidden_until_the_round_is_scored(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln", pain_visibility="secret"), 4, seed=6)
    for seat in range(4):
        pick(rnd, seat, rng)

    def check(r: Round) -> None:
        for seat in range(4):
            pain = view(r, seat).pain
            if r.is_over:
                assert pain == tuple(r.pain)
            else:
                assert pain == tuple(r.pain[s] if s == seat else None for s in range(4))

    play_round(rnd, rng, on_step=check)
    assert rnd.is_over


def test_secret_picks_of_a_match_round_are_public_once_it_is_scored(
    rng: random.Random,
) -> None:
    match = Match(preset("stick-em-secret"), 3, seed=7)
    first = match.round
    while match.round is first:
        seat = rng.choice(match.to_act())
        match.apply(seat, random_action(first, seat, rng))
    for seat in range(3):
        v = view(match, seat)
        assert v.round_results[0].pain == tuple(tuple(p or ()) for p in first.pain)
        assert v.round_index == 1 and v.phase is Phase.PAIN
        assert v.pain == (None, None, None)
        assert v.totals == tuple(first.scores or ())


def contains(value: object, wanted: tuple[int, ...]) -> bool:
    """Whether ``wanted`` occurs anywhere inside ``value`` (tuples, lists, dataclasses)."""
    if value == wanted:
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(contains(getattr(value, f.name), wanted) for f in dataclasses.fields(value))
    if isinstance(value, (tuple, list)):
        return any(contains(v, wanted) for v in value)
    return False


def test_last_trick_of_a_match_round_is_in_the_finished_rounds_view(rng: random.Random) -> None:
    # The match deals the next round as soon as a round is scored, and a match view holds
    # the current round in full plus earlier rounds' results. The finished round's own view
    # still holds its last trick: the runner builds the trick events from it.
    match = Match(preset("sticheln"), 3, seed=13)
    first = match.round
    while match.round is first:
        seat = rng.choice(match.to_act())
        match.apply(seat, random_action(first, seat, rng))
    last = first.tricks[-1]
    for seat in range(3):
        assert contains(view(first, seat), last.cards), f"seat {seat} never sees the last trick"
        assert not contains(view(match, seat), last.cards)


def test_view_shows_play_in_progress(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=8)
    for seat in range(4):
        pick(rnd, seat, rng)
    leader = rnd.to_play
    rnd.apply(leader, rnd.hands[leader][0])
    for seat in range(4):
        v = view(rnd, seat)
        assert v.trick == tuple(rnd.trick)
        assert (v.leader, v.to_play) == (leader, (leader + 1) % 4)


def test_set_aside_cards_are_counted_but_never_shown(rng: random.Random) -> None:
    rules = preset("sticheln", deck="french_2_14")
    rnd = Round.deal(rules, 5, seed=9)
    hidden = set(rnd.set_aside)
    assert len(hidden) == 2

    def check(r: Round) -> None:
        for seat in range(5):
            v = view(r, seat)
            assert v.set_aside_count == 2
            assert not cards_in(v) & hidden

    play_round(rnd, rng, on_step=check)


@pytest.mark.parametrize("name", ["sticheln", "stick-em-secret", "sore-spot"])
def test_no_card_of_another_hand_is_shown(name: str, rng: random.Random) -> None:
    rnd = Round.deal(preset(name), 4, seed=10)

    def check(r: Round) -> None:
        for seat in range(4):
            v = view(r, seat)
            assert v.hand == tuple(r.hands[seat])
            visible_pain = {c for choice in v.pain for c in choice or ()}
            others = {c for s in range(4) if s != seat for c in r.hands[s]}
            # Another hand's cards appear only as revealed pain cards (kept_in_hand).
            assert cards_in(v) & others <= visible_pain
            assert cards_in(v) <= set(v.hand) | played(r) | visible_pain

    play_round(rnd, rng, on_step=check)


def test_view_is_a_copy_not_a_window_into_the_state(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=11)
    v = view(rnd, 0)
    hand = v.hand
    play_round(rnd, rng)
    assert view(rnd, 0) != v
    assert v.hand == hand and len(hand) == 15
    assert v.phase is Phase.PAIN
