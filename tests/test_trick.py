"""Who wins a trick: docs/rules.md rule 6 and the ``trump_rule`` option."""

from __future__ import annotations

import pytest
from conftest import cards, reference_trick_winner
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import TrickReason, TrumpRule, trick_winner

HIGHEST = TrumpRule.HIGHEST
LAST_SUIT = TrumpRule.LAST_SUIT
OFF_HIGHEST = TrickReason.OFF_SUIT_HIGHEST
OFF_LAST = TrickReason.OFF_SUIT_LAST_SUIT
LEAD = TrickReason.LEAD_SUIT_HIGHEST
ZERO = TrickReason.ALL_ZERO

# Seed 003's three worked examples, with the sore-spot encoding (Ace = 0, Q = 12, K = 13).
# Seats in play order of each trick: example 1 Anna Ben Carla Dan, example 2 Dan Anna Ben
# Carla, example 3 Anna Ben Carla Dan.
SEED_003 = [
    pytest.param("D9 H4 D13 S7", 3, OFF_HIGHEST, False, id="dan_wins_with_7S_over_lead_suit_KD"),
    pytest.param("C12 H6 S6 D0", 1, OFF_HIGHEST, True, id="anna_wins_6H_tie_with_6S_played_first"),
    pytest.param("C8 C10 H0 C5", 1, LEAD, False, id="ben_wins_10C_only_lead_suit_ace_ignored"),
]


@pytest.mark.parametrize(("trick", "position", "reason", "tie"), SEED_003)
def test_seed_003_trick_examples(trick: str, position: int, reason: TrickReason, tie: bool) -> None:
    assert trick_winner(cards(trick), HIGHEST) == (position, reason, tie)


def test_seed_003_winners_are_the_named_players() -> None:
    seats = {"Anna": 0, "Ben": 1, "Carla": 2, "Dan": 3}
    # (leader, trick, winner's name)
    examples = [("Anna", "D9 H4 D13 S7", "Dan"), ("Dan", "C12 H6 S6 D0", "Anna")]
    examples.append(("Anna", "C8 C10 H0 C5", "Ben"))
    for leader, trick, winner in examples:
        position = trick_winner(cards(trick), HIGHEST).position
        assert (seats[leader] + position) % 4 == seats[winner]


# (trick in play order, winning position, reason, tie)
HIGHEST_CASES = [
    pytest.param("C14 H2", 1, OFF_HIGHEST, False, id="any_off_suit_card_beats_the_lead_suit"),
    pytest.param("C5 H3 S11 D10", 2, OFF_HIGHEST, False, id="highest_off_suit_whatever_its_suit"),
    pytest.param("C5 H13 S2 H4", 1, OFF_HIGHEST, False, id="highest_off_suit_played_early"),
    pytest.param("C2 H7 S7 D7", 1, OFF_HIGHEST, True, id="three_way_tie_first_played_wins"),
    pytest.param("C2 H5 S5 D9", 3, OFF_HIGHEST, False, id="tie_below_the_winner_is_no_tie"),
    pytest.param("C9 H9 S9", 1, OFF_HIGHEST, True, id="tie_off_suit_lead_rank_irrelevant"),
    pytest.param("H0 S9 H3", 1, OFF_HIGHEST, False, id="zero_led_sets_the_lead_suit"),
    pytest.param("H0 H5 H7", 2, LEAD, False, id="zero_led_then_only_its_suit"),
    pytest.param("H0 S5 S7", 2, OFF_HIGHEST, False, id="zero_led_others_all_off_suit"),
    pytest.param("C5 H0 S0", 0, LEAD, False, id="off_suit_zeros_are_not_trumps"),
    pytest.param("C0 H0 S0 D1", 3, OFF_HIGHEST, False, id="a_one_beats_three_zeros"),
    pytest.param("S0 S4 S2", 1, LEAD, False, id="lead_suit_zero_is_ignored"),
    pytest.param("S13 S4 S2", 0, LEAD, False, id="leader_wins_lead_suit_only_trick"),
    pytest.param("S2 S4 S13", 2, LEAD, False, id="last_card_wins_lead_suit_only_trick"),
    pytest.param("C0 H0 S0", -1, ZERO, False, id="all_zero_nobody_wins"),
    pytest.param("C0 H0 S0 D0 K0 W0 P0 R0", -1, ZERO, False, id="all_zero_eight_players"),
    pytest.param("C3 H1 S2 D4 K5 W6 P7 R14", 7, OFF_HIGHEST, False, id="eight_players_last_wins"),
    pytest.param("R14 C1 S1 H1 D1 K1 W1 P1", 1, OFF_HIGHEST, True, id="eight_players_ones_tie"),
]

LAST_SUIT_CASES = [
    pytest.param("D9 H4 D13 S7", 3, OFF_LAST, False, id="seed_003_example_1_same_winner"),
    pytest.param("C12 H6 S6 D0", 2, OFF_LAST, False, id="seed_003_example_2_latest_suit_wins"),
    pytest.param("C8 C10 H0 C5", 1, LEAD, False, id="seed_003_example_3_lead_suit_only"),
    pytest.param("C5 H13 S2", 2, OFF_LAST, False, id="latest_off_suit_beats_higher_earlier"),
    pytest.param("C5 H13 S2 H4", 1, OFF_LAST, False, id="highest_within_the_latest_suit"),
    pytest.param("C5 S2 H13 S9 H0", 3, OFF_LAST, False, id="latest_zero_does_not_set_the_suit"),
    pytest.param("C3 C9 H2", 2, OFF_LAST, False, id="single_off_suit_card_wins"),
    pytest.param("C14 C13 H1", 2, OFF_LAST, False, id="off_suit_one_beats_lead_suit_ace"),
    pytest.param("H0 S9 H3", 1, OFF_LAST, False, id="zero_led_sets_the_lead_suit"),
    pytest.param("C5 H0 S0", 0, LEAD, False, id="off_suit_zeros_are_not_trumps"),
    pytest.param("S13 S4 S2", 0, LEAD, False, id="leader_wins_lead_suit_only_trick"),
    pytest.param("C0 H0 S0", -1, ZERO, False, id="all_zero_nobody_wins"),
]


@pytest.mark.parametrize(("trick", "position", "reason", "tie"), HIGHEST_CASES)
def test_trump_rule_highest(trick: str, position: int, reason: TrickReason, tie: bool) -> None:
    assert trick_winner(cards(trick), HIGHEST) == (position, reason, tie)


@pytest.mark.parametrize(("trick", "position", "reason", "tie"), LAST_SUIT_CASES)
def test_trump_rule_last_suit(trick: str, position: int, reason: TrickReason, tie: bool) -> None:
    assert trick_winner(cards(trick), LAST_SUIT) == (position, reason, tie)


@pytest.mark.parametrize("rule", [HIGHEST, LAST_SUIT])
def test_zero_never_wins(rule: TrumpRule) -> None:
    for trick in ("C0 H1 S1", "H5 C0 H0", "D0 D3 K0", "S0 C2 H0"):
        outcome = trick_winner(cards(trick), rule)
        assert cards(trick)[outcome.position] % 16 != 0


@pytest.mark.parametrize("rule", [HIGHEST, LAST_SUIT])
def test_trick_winner_accepts_a_tuple(rule: TrumpRule) -> None:
    assert trick_winner(tuple(cards("C3 H4 S5")), rule) == trick_winner(cards("C3 H4 S5"), rule)


@st.composite
def tricks(draw: st.DrawFn) -> list[int]:
    """3 to 8 distinct cards of suits 1..8, ranks 0..14, zeros made frequent."""
    size = draw(st.integers(3, 8))
    rank = st.one_of(st.just(0), st.integers(0, 14))
    card = st.builds(lambda s, r: s * 16 + r, st.integers(1, 8), rank)
    return draw(st.lists(card, min_size=size, max_size=size, unique=True))


@settings(max_examples=300, deadline=None)
@given(trick=tricks(), rule=st.sampled_from(TrumpRule))
def test_trick_winner_matches_rule_6(trick: list[int], rule: TrumpRule) -> None:
    outcome = trick_winner(trick, rule)
    assert outcome.position == reference_trick_winner(trick, rule.value)
    if outcome.position < 0:
        assert outcome.reason is ZERO
        return
    winner = trick[outcome.position]
    assert winner % 16 != 0
    lead_suit = trick[0] // 16
    off_suit = [c for c in trick if c % 16 and c // 16 != lead_suit]
    assert (outcome.reason is LEAD) == (not off_suit)
    if rule is HIGHEST:
        later_equal = [c for c in trick[outcome.position + 1 :] if c in off_suit]
        later_equal = [c for c in later_equal if c % 16 == winner % 16]
        assert outcome.tie == bool(later_equal)
