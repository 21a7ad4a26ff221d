"""One round: simultaneous pain choice and reveal, first lead, tricks, refusals, the end."""

from __future__ import annotations

import random
from typing import Any

import pytest
from conftest import cards, play_round

from referee.rules import (
    IllegalAction,
    Phase,
    Round,
    TrickReason,
    preset,
)


def card(text: str) -> int:
    return cards(text)[0]


def snapshot(rnd: Round) -> tuple[Any, ...]:
    """Everything a round holds, deep-copied, to check that a refused action changed nothing."""
    return (
        [list(h) for h in rnd.hands],
        list(rnd.set_aside),
        list(rnd.pain),
        list(rnd.pain_suits),
        rnd.phase,
        rnd.leader,
        rnd.to_play,
        list(rnd.trick),
        list(rnd.tricks),
        [list(c) for c in rnd.captured],
        list(rnd.discarded),
        None if rnd.scores is None else list(rnd.scores),
    )


def pick_all(rnd: Round, rng: random.Random) -> None:
    """Every seat picks a random legal pain choice."""
    for seat in rnd.to_act():
        rnd.apply(seat, rng.choice(rnd.legal_actions(seat)))


def small_round(all_zero_trick: str = "set_aside") -> Round:
    """Three players, three cards each; seat 0 leads (dealer 2). Pain: C5, S5, H4."""
    rules = preset("sticheln", all_zero_trick=all_zero_trick)
    hands = [cards("C0 C5 H9"), cards("S0 S5 H3"), cards("H0 H4 S9")]
    rnd = Round(rules, 3, dealer=2, hands=hands, set_aside=[])
    for seat, c in enumerate(("C5", "S5", "H4")):
        rnd.apply(seat, (card(c),))
    return rnd


# -- the pain choice ----------------------------------------------------------------------


def test_pain_choice_waits_for_every_seat_at_once() -> None:
    rnd = Round.deal(preset("sticheln"), 5, seed=1)
    assert rnd.phase is Phase.PAIN
    assert sorted(rnd.to_act()) == [0, 1, 2, 3, 4]
    assert rnd.to_play == -1


def test_pain_choices_may_come_in_any_seat_order() -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=2)
    for seat, waiting in ((2, [0, 1, 3]), (0, [1, 3]), (3, [1])):
        rnd.apply(seat, (rnd.hands[seat][0],))
        assert sorted(rnd.to_act()) == waiting
        assert rnd.phase is Phase.PAIN
        assert rnd.legal_actions(seat) == []
    rnd.apply(1, (rnd.hands[1][-1],))
    assert rnd.phase is Phase.PLAY


def test_legal_pain_choices_are_each_single_card_of_the_hand() -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=3)
    for seat in range(3):
        assert sorted(rnd.legal_actions(seat)) == sorted((c,) for c in rnd.hands[seat])


def test_set_aside_pain_card_leaves_the_hand() -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=4)
    pain = rnd.hands[1][3]
    rnd.apply(1, (pain,))
    assert pain not in rnd.hands[1]
    assert len(rnd.hands[1]) == 14
    assert rnd.pain[1] == (pain,)


def test_kept_in_hand_pain_card_stays_in_the_hand() -> None:
    rnd = Round.deal(preset("sticheln", pain_card="kept_in_hand"), 4, seed=4)
    pain = rnd.hands[1][3]
    rnd.apply(1, (pain,))
    assert pain in rnd.hands[1]
    assert len(rnd.hands[1]) == 15
    assert rnd.pain[1] == (pain,)


def test_pain_suits_are_those_of_the_pain_cards() -> None:
    rnd = Round.deal(preset("sticheln", pain_cards_per_player=2), 3, seed=5)
    choices = {}
    for seat in range(3):
        choice = rnd.legal_actions(seat)[-1]
        assert isinstance(choice, tuple)
        choices[seat] = choice
        rnd.apply(seat, choice)
    for seat, choice in choices.items():
        assert rnd.pain_suits_of(seat) == sorted({c // 16 for c in choice})
        assert len(rnd.pain_suits_of(seat)) == 2


def test_two_pain_cards_legal_choices_are_pairs_of_different_suits() -> None:
    rnd = Round.deal(preset("sticheln", pain_cards_per_player=2), 4, seed=6)
    hand = rnd.hands[0]
    expected = {frozenset((a, b)) for a in hand for b in hand if a < b and a // 16 != b // 16}
    legal = rnd.legal_actions(0)
    assert {frozenset(c) for c in legal if isinstance(c, tuple)} == expected
    assert len(legal) == len(expected)


def test_two_pain_cards_both_leave_the_hand() -> None:
    rnd = Round.deal(preset("sticheln", pain_cards_per_player=2), 3, seed=7)
    hand = rnd.hands[2]
    a = hand[0]
    b = next(c for c in hand if c // 16 != a // 16)
    rnd.apply(2, (a, b))
    assert a not in rnd.hands[2] and b not in rnd.hands[2]
    assert len(rnd.hands[2]) == 13


@pytest.mark.parametrize(
    "bad",
    ["same_suit", "same_card", "one_card", "three_cards", "not_held", "empty"],
)
def test_two_pain_cards_refusals_change_nothing(bad: str) -> None:
    rnd = Round.deal(preset("sticheln", pain_cards_per_player=2), 3, seed=8)
    hand = rnd.hands[0]
    a = hand[0]
    same = next(c for c in hand if c != a and c // 16 == a // 16)
    other = next(c for c in hand if c // 16 != a // 16)
    not_held = rnd.hands[1][0]
    choice = {
        "same_suit": (a, same),
        "same_card": (a, a),
        "one_card": (a,),
        "three_cards": (a, same, other),
        "not_held": (a, not_held) if not_held // 16 != a // 16 else (not_held, other),
        "empty": (),
    }[bad]
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(0, choice)
    assert snapshot(rnd) == before
    assert 0 in rnd.to_act()


def test_one_pain_card_rule_refuses_two() -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=8)
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(0, tuple(rnd.hands[0][:2]))
    assert snapshot(rnd) == before


def test_pain_choice_twice_is_refused() -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=9)
    rnd.apply(0, (rnd.hands[0][0],))
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(0, (rnd.hands[0][0],))
    assert snapshot(rnd) == before


def test_pain_card_not_held_is_refused() -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=10)
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(0, (rnd.hands[1][0],))
    assert snapshot(rnd) == before


def test_card_during_the_pain_choice_is_refused() -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=11)
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(1, rnd.hands[1][0])
    assert snapshot(rnd) == before


@pytest.mark.parametrize("code", [-1, 300, 999])
def test_pain_choice_of_a_card_code_out_of_range_is_refused(code: int) -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=11)
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(0, (code,))
    assert snapshot(rnd) == before


def test_several_players_may_pick_the_same_suit() -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=12)
    for seat in range(3):
        hearts = [c for c in rnd.hands[seat] if c // 16 == 3]
        rnd.apply(seat, (hearts[0],))
    assert rnd.phase is Phase.PLAY
    assert [rnd.pain_suits_of(s) for s in range(3)] == [[3], [3], [3]]


def test_pain_choice_for_a_seat_that_does_not_exist_is_refused() -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=11)
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(3, (rnd.hands[0][0],))
    assert snapshot(rnd) == before


# -- the first lead -----------------------------------------------------------------------


@pytest.mark.parametrize("players", [3, 4, 6, 8])
def test_first_lead_left_of_dealer(players: int, rng: random.Random) -> None:
    for dealer in range(players):
        rnd = Round.deal(preset("sticheln"), players, seed=dealer, round_index=0, dealer=dealer)
        pick_all(rnd, rng)
        assert rnd.phase is Phase.PLAY
        assert rnd.leader == rnd.to_play == (dealer + 1) % players
        assert rnd.to_act() == [(dealer + 1) % players]


@pytest.mark.parametrize("players", [3, 5])
def test_first_lead_dealer(players: int, rng: random.Random) -> None:
    for dealer in range(players):
        rnd = Round.deal(preset("sticheln", first_lead="dealer"), players, 7, dealer=dealer)
        pick_all(rnd, rng)
        assert rnd.leader == rnd.to_play == dealer


# -- play ---------------------------------------------------------------------------------


def test_any_card_of_the_hand_may_be_played(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=12)
    pick_all(rnd, rng)
    leader = rnd.to_play
    rnd.apply(leader, rnd.hands[leader][0])
    seat = rnd.to_play
    assert seat == (leader + 1) % 4
    # No duty to follow suit: every card of the hand, whatever the lead.
    assert sorted(rnd.legal_actions(seat)) == sorted(rnd.hands[seat])
    assert rnd.legal_plays() == rnd.hands[seat]
    assert all(rnd.legal_actions(s) == [] for s in range(4) if s != seat)


def test_playing_out_of_turn_is_refused(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=13)
    pick_all(rnd, rng)
    wrong = (rnd.to_play + 2) % 4
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(wrong, rnd.hands[wrong][0])
    assert snapshot(rnd) == before


def test_playing_a_card_not_held_is_refused(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=14)
    pick_all(rnd, rng)
    seat = rnd.to_play
    for bad in (rnd.hands[(seat + 1) % 4][0], rnd.pain[seat][0], 0, 999, -1):  # type: ignore[index]
        before = snapshot(rnd)
        with pytest.raises(IllegalAction):
            rnd.apply(seat, bad)
        assert snapshot(rnd) == before


def test_pain_choice_during_play_is_refused(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=15)
    pick_all(rnd, rng)
    seat = rnd.to_play
    before = snapshot(rnd)
    with pytest.raises(IllegalAction):
        rnd.apply(seat, (rnd.hands[seat][0],))
    with pytest.raises(IllegalAction):
        rnd.choose_pain(seat, (rnd.hands[seat][0],))
    assert snapshot(rnd) == before


def test_acting_after_the_round_is_over_is_refused(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 3, seed=16)
    play_round(rnd, rng)
    assert rnd.is_over and rnd.to_act() == [] and rnd.to_play == -1
    before = snapshot(rnd)
    for seat in range(3):
        assert rnd.legal_actions(seat) == []
        with pytest.raises(IllegalAction):
            rnd.apply(seat, rnd.tricks[-1].cards[0])
        with pytest.raises(IllegalAction):
            rnd.apply(seat, (rnd.tricks[-1].cards[0],))
    assert snapshot(rnd) == before


def test_trick_winner_takes_the_cards_and_leads_next() -> None:
    rules = preset("sticheln")
    hands = [cards("C3 C4 C9"), cards("S5 S6 H1"), cards("H7 H8 S1")]
    rnd = Round(rules, 3, dealer=2, hands=hands, set_aside=[])
    for seat, c in enumerate(("C9", "H1", "S1")):
        rnd.apply(seat, (card(c),))
    assert rnd.to_play == 0
    for seat, c in ((0, "C3"), (1, "S5"), (2, "H7")):  # H7 is the highest off-suit card
        rnd.apply(seat, card(c))
    assert rnd.tricks[-1] == (0, tuple(cards("C3 S5 H7")), 2, TrickReason.OFF_SUIT_HIGHEST, False)
    assert rnd.captured == [[], [], cards("C3 S5 H7")]
    assert rnd.leader == rnd.to_play == 2
    assert rnd.trick == []
    rnd.apply(2, card("H8"))  # seat 2 leads hearts; S6 is off-suit and wins
    rnd.apply(0, card("C4"))
    rnd.apply(1, card("S6"))
    assert rnd.tricks[-1].winner == 1
    assert rnd.is_over
    # Seat 0 (clubs): pain C9 -9. Seat 1 (hearts): H8 -8, C4 +1, S6 +1, pain H1 -1.
    # Seat 2 (spades): C3 +1, S5 -5, H7 +1, pain S1 -1.
    assert rnd.scores == [-9, -7, -4]


# -- all-zero tricks ----------------------------------------------------------------------


def test_all_zero_trick_set_aside_nobody_wins_and_leader_leads_again() -> None:
    rnd = small_round("set_aside")
    assert rnd.to_play == 0
    for seat, c in ((0, "C0"), (1, "S0"), (2, "H0")):
        rnd.apply(seat, card(c))
    trick = rnd.tricks[-1]
    assert (trick.winner, trick.reason) == (-1, TrickReason.ALL_ZERO)
    assert rnd.discarded == cards("C0 S0 H0")
    assert rnd.captured == [[], [], []]
    assert rnd.leader == rnd.to_play == 0
    for seat, c in ((0, "H9"), (1, "H3"), (2, "S9")):
        rnd.apply(seat, card(c))
    assert rnd.is_over
    assert len(rnd.tricks) == 2
    assert rnd.scores == [-5, -5, -9 - 3 + 1 - 4]


def test_all_zero_trick_leader_takes_it_and_it_scores() -> None:
    rnd = small_round("leader_takes")
    for seat, c in ((0, "C0"), (1, "S0"), (2, "H0")):
        rnd.apply(seat, card(c))
    trick = rnd.tricks[-1]
    assert (trick.winner, trick.reason) == (0, TrickReason.ALL_ZERO)
    assert rnd.discarded == []
    assert rnd.captured[0] == cards("C0 S0 H0")
    assert rnd.to_play == 0
    for seat, c in ((0, "H9"), (1, "H3"), (2, "S9")):
        rnd.apply(seat, card(c))
    # Seat 0 (clubs): C0 0, S0 +1, H0 +1, pain C5 -5.
    assert rnd.scores == [-3, -5, -15]


def test_all_zero_leader_is_not_left_of_the_dealer() -> None:
    # The same player leads again even when that is not the first leader.
    rules = preset("sticheln")
    hands = [cards("C1 C0 H9 C14"), cards("S1 S0 H3 S14"), cards("H1 H0 S9 H14")]
    rnd = Round(rules, 3, dealer=2, hands=hands, set_aside=[])
    for seat, c in enumerate(("C14", "S14", "H14")):
        rnd.apply(seat, (card(c),))
    for seat, c in ((0, "C1"), (1, "S1"), (2, "H0")):  # S1 is the only off-suit card
        rnd.apply(seat, card(c))
    assert rnd.tricks[-1].winner == 1
    for seat, c in ((1, "S0"), (2, "H1"), (0, "C0")):
        rnd.apply(seat, card(c))
    assert rnd.tricks[-1].winner == 2
    rnd.apply(2, card("S9"))
    rnd.apply(0, card("H9"))
    rnd.apply(1, card("H3"))
    assert rnd.tricks[-1].winner == 0
    assert rnd.is_over


# -- whole rounds -------------------------------------------------------------------------


@pytest.mark.parametrize(("pain_card", "tricks"), [("set_aside", 14), ("kept_in_hand", 15)])
def test_fifteen_card_hands_play_14_or_15_tricks(
    pain_card: str, tricks: int, rng: random.Random
) -> None:
    for seed in range(5):
        rules = preset("sticheln", pain_card=pain_card, all_zero_trick="leader_takes")
        rnd = Round.deal(rules, 4, seed)
        play_round(rnd, rng)
        assert len(rnd.tricks) == tricks
        assert all(len(t.cards) == 4 for t in rnd.tricks)


@pytest.mark.parametrize(("pain_card", "tricks"), [("set_aside", 14), ("kept_in_hand", 15)])
def test_all_zero_tricks_set_aside_still_use_one_card_per_hand(
    pain_card: str, tricks: int, rng: random.Random
) -> None:
    # An all-zero trick is led again by the same player, but it took a card from every
    # hand, so the round still has one trick per card in hand.
    seen_all_zero = 0
    for seed in range(30):
        rnd = Round.deal(preset("sticheln", pain_card=pain_card), 3, seed)
        play_round(rnd, rng)
        repeats = sum(t.winner == -1 for t in rnd.tricks)
        seen_all_zero += repeats
        assert len(rnd.tricks) == tricks
        assert len(rnd.discarded) == 3 * repeats
    assert seen_all_zero > 0  # the random player does produce all-zero tricks


def test_leader_of_each_trick_is_the_previous_winner(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 5, seed=17, dealer=3)
    play_round(rnd, rng)
    assert rnd.tricks[0].leader == 4
    for previous, trick in zip(rnd.tricks, rnd.tricks[1:], strict=False):
        expected = previous.winner if previous.winner >= 0 else previous.leader
        assert trick.leader == expected


def test_sore_spot_hands_play_their_size_minus_the_pain_card(rng: random.Random) -> None:
    for players, size in ((3, 12), (4, 13), (5, 10), (6, 8)):
        rules = preset("sore-spot", all_zero_trick="leader_takes")
        rnd = Round.deal(rules, players, seed=players)
        assert [len(h) for h in rnd.hands] == [size] * players
        play_round(rnd, rng)
        assert len(rnd.tricks) == size - 1


def test_clone_is_independent(rng: random.Random) -> None:
    rnd = Round.deal(preset("sticheln"), 4, seed=18)
    pick_all(rnd, rng)
    before = snapshot(rnd)
    copy = rnd.clone()
    assert snapshot(copy) == before
    play_round(copy, rng)
    assert copy.is_over
    assert snapshot(rnd) == before
