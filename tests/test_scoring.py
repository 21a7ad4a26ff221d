"""Scoring a round: docs/rules.md rule 8, the seeds' worked examples, pain card options."""

from __future__ import annotations

from conftest import cards

from referee.rules import Phase, Round, preset, score_cards

CLUBS, SPADES, HEARTS, DIAMONDS = 1, 2, 3, 4


def parse(text: str) -> int:
    """One card from its text form."""
    return cards(text)[0]


def scored_by_round(
    rules_name: str, players: int, pain: list[list[int]], piles: list[list[int]]
) -> list[int] | None:
    """The scores the engine's own round scoring step gives for these piles and pain cards."""
    rules = preset(rules_name)
    rnd = Round(rules, players, 0, [[] for _ in range(players)], [])
    for seat, choice in enumerate(pain):
        rnd.pain[seat] = tuple(choice)
        for c in choice:
            rnd.pain_suits[seat] |= 1 << (c // 16)
    rnd.captured = [list(p) for p in piles]
    rnd._score()
    assert rnd.phase is Phase.OVER
    return rnd.scores


# -- seed 000 -----------------------------------------------------------------------------

# Pain suit clubs, 0 of clubs laid down; captured 4, 7 and Q of clubs and 17 other cards.
SEED_000_PAIN = cards("C0")
SEED_000_PILE = cards("C4 C7 C12") + cards("S1 S2 S3 S4 S5 S6 S7 S8 S9 H1 H2 H3 H4 H5 H6 D1 D2")


def test_seed_000_round_total_with_score_cards() -> None:
    assert len(SEED_000_PILE) == 20
    assert score_cards(SEED_000_PILE + SEED_000_PAIN, {CLUBS}) == -6


def test_seed_000_round_total_through_round_scoring() -> None:
    scores = scored_by_round("sticheln", 3, [SEED_000_PAIN, [], []], [SEED_000_PILE, [], []])
    assert scores is not None
    assert scores[0] == -6


def test_seed_000_round_total_by_playing_the_last_trick() -> None:
    # The seat already holds 14 of its 20 cards; the last trick brings 3 more, and the
    # round ends and is scored by the engine as play reaches the end of the hands.
    rules = preset("sticheln")
    hands = [cards("C0 H9"), cards("D10 H2"), cards("D11 H3")]
    rnd = Round(rules, 3, dealer=2, hands=hands, set_aside=[])
    rnd.apply(0, (parse("C0"),))
    rnd.apply(1, (parse("D10"),))
    rnd.apply(2, (parse("D11"),))
    assert rnd.phase is Phase.PLAY and rnd.to_play == 0
    rnd.captured[0] = cards("C4 C7 C12 S1 S2 S3 S4 S5 S6 S7 S8 S9 H1 H4 H5 H6 D1")
    for seat, c in ((0, "H9"), (1, "H2"), (2, "H3")):
        rnd.apply(seat, parse(c))
    assert rnd.is_over
    assert rnd.tricks[-1].winner == 0
    assert rnd.scores is not None
    assert rnd.scores[0] == -6


# -- seed 003 -----------------------------------------------------------------------------

# Anna (hearts) laid down 2 of hearts and has 6 and 10 of hearts and 14 other cards.
ANNA_PAIN = cards("H2")
ANNA_PILE = cards("H6 H10 C2 C3 C4 C5 C6 C7 C8 C9 S2 S3 S4 S5 D2 D3")
# Ben (spades) laid down the Ace of spades and has 3 and 9 of spades and 10 other cards.
BEN_PAIN = cards("S0")
BEN_PILE = cards("S3 S9 C10 C11 C12 C13 H3 H4 H5 D4 D5 D6")


def test_seed_003_scores_with_score_cards() -> None:
    assert score_cards(ANNA_PILE + ANNA_PAIN, [HEARTS]) == -4
    assert score_cards(BEN_PILE + BEN_PAIN, [SPADES]) == -2


def test_seed_003_scores_through_round_scoring() -> None:
    scores = scored_by_round(
        "sore-spot", 4, [ANNA_PAIN, BEN_PAIN, [], []], [ANNA_PILE, BEN_PILE, [], []]
    )
    assert scores is not None
    assert scores[:2] == [-4, -2]


# -- rule 8 in general --------------------------------------------------------------------


def test_other_suit_cards_score_one_whatever_their_rank() -> None:
    assert score_cards(cards("S0 S1 S14 H13 D7"), {CLUBS}) == 5


def test_pain_suit_card_scores_minus_its_rank() -> None:
    for rank in range(15):
        assert score_cards([CLUBS * 16 + rank], {CLUBS}) == -rank


def test_pain_suit_zero_scores_nothing() -> None:
    assert score_cards(cards("C0 H0"), {CLUBS, HEARTS}) == 0


def test_empty_pile_scores_zero() -> None:
    assert score_cards([], {CLUBS}) == 0


def test_two_pain_suits_both_cost_their_rank() -> None:
    assert score_cards(cards("C3 H5 C7 H2 S4 D9"), {CLUBS, HEARTS}) == -3 - 5 - 7 - 2 + 1 + 1


def test_set_aside_pain_card_scores_for_its_owner() -> None:
    scores = scored_by_round("sticheln", 3, [cards("C9"), cards("S1"), cards("H0")], [[], [], []])
    assert scores == [-9, -1, 0]


def test_two_set_aside_pain_cards_score_for_their_owner() -> None:
    rules = preset("sticheln", pain_cards_per_player=2)
    rnd = Round(rules, 3, 0, [[], [], []], [])
    rnd.pain = [tuple(cards("C9 H4")), tuple(cards("S1 C2")), tuple(cards("H0 S0"))]
    rnd.pain_suits = [1 << CLUBS | 1 << HEARTS, 1 << SPADES | 1 << CLUBS, 1 << HEARTS | 1 << SPADES]
    rnd.captured = [cards("S5"), cards("H5"), cards("C5")]
    rnd._score()
    assert rnd.scores == [-9 - 4 + 1, -1 - 2 + 1, 0 + 0 + 1]


def test_kept_in_hand_pain_card_scores_only_for_whoever_captures_it() -> None:
    # Seat 0 keeps C9 as its pain card in its hand and plays it; seat 2 wins the trick
    # with S5, so C9 scores +1 for seat 2 and nothing for seat 0.
    rules = preset("sticheln", pain_card="kept_in_hand")
    rnd = Round(rules, 3, dealer=2, hands=[cards("C9"), cards("C3"), cards("S5")], set_aside=[])
    for seat, c in enumerate(("C9", "C3", "S5")):
        rnd.apply(seat, (parse(c),))
    assert [len(h) for h in rnd.hands] == [1, 1, 1]
    for seat, c in enumerate(("C9", "C3", "S5")):
        rnd.apply(seat, parse(c))
    assert rnd.is_over
    # Seat 2's pain suit is spades: S5 costs 5, C9 and C3 are +1 each.
    assert rnd.scores == [0, 0, 1 + 1 - 5]


def test_kept_in_hand_pain_suit_still_costs_its_owner() -> None:
    rules = preset("sticheln", pain_card="kept_in_hand")
    rnd = Round(rules, 3, dealer=2, hands=[cards("C2"), cards("S1"), cards("H14")], set_aside=[])
    rnd.apply(0, (parse("C2"),))
    rnd.apply(1, (parse("S1"),))
    rnd.apply(2, (parse("H14"),))
    # Seat 0 leads C2, seat 1 S1, seat 2 H14: H14 wins; seat 2 (hearts) takes its own pain
    # card back, which costs it 14.
    for seat, c in enumerate(("C2", "S1", "H14")):
        rnd.apply(seat, parse(c))
    assert rnd.tricks[-1].winner == 2
    assert rnd.scores == [0, 0, 1 + 1 - 14]
