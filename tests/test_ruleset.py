"""Rule sets: presets, options, refusals with one-line messages, the TOML table round trip."""

from __future__ import annotations

from typing import Any

import pytest

from referee.rules import (
    PRESETS,
    AllZeroTrick,
    Deck,
    FirstLead,
    Match,
    MatchTies,
    PainCard,
    PainVisibility,
    Round,
    RuleError,
    RuleSet,
    TrumpRule,
    from_table,
    preset,
)

# docs/rules.md, "Presets": the player counts each preset allows.
PRESET_PLAYERS = {
    "sticheln": (3, 8),
    "amigo": (3, 6),
    "sore-spot": (3, 6),
    "french-2-14": (4, 4),
    "stick-em-secret": (3, 8),
}


def assert_one_line_naming(error: pytest.ExceptionInfo[RuleError], *words: str) -> None:
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


def test_presets_are_exactly_those_of_rules_md() -> None:
    assert set(PRESETS) == set(PRESET_PLAYERS)


def test_sticheln_is_every_option_at_its_default() -> None:
    rules = preset("sticheln")
    assert rules.deck is Deck.SUITS_PER_PLAYER
    assert rules.pain_card is PainCard.SET_ASIDE
    assert rules.pain_cards_per_player == 1
    assert rules.pain_visibility is PainVisibility.REVEALED
    assert rules.first_lead is FirstLead.LEFT_OF_DEALER
    assert rules.trump_rule is TrumpRule.HIGHEST
    assert rules.all_zero_trick is AllZeroTrick.SET_ASIDE
    assert rules.rounds_for(5) == 5
    assert rules.match_ties is MatchTies.POSITIVE_ROUNDS
    assert rules.long_hands_3p is False
    assert preset() == rules == preset("sticheln", **{})


def test_amigo_preset_takes_all_zero_tricks_to_the_leader() -> None:
    rules = preset("amigo")
    assert rules.deck is Deck.AMIGO
    assert rules.all_zero_trick is AllZeroTrick.LEADER_TAKES
    assert rules.replace(all_zero_trick=AllZeroTrick.SET_ASIDE).pain_card is PainCard.SET_ASIDE


def test_sore_spot_and_french_2_14_presets_use_french_decks() -> None:
    assert preset("sore-spot").deck is Deck.FRENCH_ZERO_ACE
    assert preset("french-2-14").deck is Deck.FRENCH_2_14


def test_stick_em_secret_preset_is_seed_001s_reading() -> None:
    rules = preset("stick-em-secret")
    assert rules.pain_card is PainCard.KEPT_IN_HAND
    assert rules.pain_visibility is PainVisibility.SECRET
    assert rules.first_lead is FirstLead.DEALER
    assert rules.trump_rule is TrumpRule.LAST_SUIT
    assert rules.deck is Deck.SUITS_PER_PLAYER
    assert rules.all_zero_trick is AllZeroTrick.SET_ASIDE


@pytest.mark.parametrize(("name", "limits"), PRESET_PLAYERS.items())
def test_preset_player_range(name: str, limits: tuple[int, int]) -> None:
    rules = preset(name)
    assert rules.player_range() == limits
    lo, hi = limits
    for players in range(lo, hi + 1):
        rules.check_players(players)


@pytest.mark.parametrize(("name", "limits"), PRESET_PLAYERS.items())
def test_player_counts_outside_the_preset_are_refused(name: str, limits: tuple[int, int]) -> None:
    rules = preset(name)
    lo, hi = limits
    for players in (0, 1, 2, lo - 1, hi + 1, 9, 20):
        if lo <= players <= hi:
            continue
        with pytest.raises(RuleError) as error:
            rules.check_players(players)
        assert_one_line_naming(error, "players", str(players))
        with pytest.raises(RuleError):
            Match(rules, players, seed=1)
        with pytest.raises(RuleError):
            Round.deal(rules, players, seed=1)


def test_unknown_preset_is_refused() -> None:
    with pytest.raises(RuleError) as error:
        preset("skat")
    assert_one_line_naming(error, "preset", "'skat'")


ENUM_OPTIONS = {
    "deck": Deck,
    "pain_card": PainCard,
    "pain_visibility": PainVisibility,
    "first_lead": FirstLead,
    "trump_rule": TrumpRule,
    "all_zero_trick": AllZeroTrick,
    "match_ties": MatchTies,
}


@pytest.mark.parametrize("option", ENUM_OPTIONS)
def test_every_enum_option_accepts_each_value_by_name(option: str) -> None:
    for value in ENUM_OPTIONS[option]:
        overrides: dict[str, Any] = {option: value.value}
        assert getattr(preset("sticheln", **overrides), option) is value


@pytest.mark.parametrize("option", ENUM_OPTIONS)
@pytest.mark.parametrize("value", ["nonsense", "", 3, None])
def test_invalid_enum_option_values_are_refused(option: str, value: object) -> None:
    with pytest.raises(RuleError) as error:
        preset("sticheln", **{option: value})
    assert_one_line_naming(error, option, repr(value))


@pytest.mark.parametrize("value", [0, 3, -1, "2", 1.0, True, None])
def test_invalid_pain_cards_per_player_is_refused(value: object) -> None:
    with pytest.raises(RuleError) as error:
        preset("sticheln", pain_cards_per_player=value)
    assert_one_line_naming(error, "pain_cards_per_player", repr(value))


def test_pain_cards_per_player_one_or_two() -> None:
    assert preset("sticheln", pain_cards_per_player=2).pain_cards_per_player == 2
    assert preset("sticheln", pain_cards_per_player=1).pain_cards_per_player == 1


@pytest.mark.parametrize("value", [0, -1, "five", "", 2.5, True, None])
def test_invalid_rounds_are_refused(value: object) -> None:
    with pytest.raises(RuleError) as error:
        preset("sticheln", rounds=value)
    assert_one_line_naming(error, "rounds", repr(value))


def test_rounds_players_or_a_fixed_number() -> None:
    assert preset("sticheln", rounds="players").rounds_for(6) == 6
    assert preset("sticheln", rounds=1).rounds_for(6) == 1
    assert preset("sticheln", rounds=9).rounds_for(3) == 9


@pytest.mark.parametrize("value", ["yes", 1, 0, None])
def test_invalid_long_hands_3p_is_refused(value: object) -> None:
    with pytest.raises(RuleError) as error:
        preset("sore-spot", long_hands_3p=value)
    assert_one_line_naming(error, "long_hands_3p", repr(value))


@pytest.mark.parametrize("name", ["sticheln", "amigo", "french-2-14", "stick-em-secret"])
def test_long_hands_3p_needs_the_french_zero_ace_deck(name: str) -> None:
    with pytest.raises(RuleError) as error:
        preset(name, long_hands_3p=True)
    assert_one_line_naming(error, "long_hands_3p", "french_zero_ace")


def test_long_hands_3p_with_a_french_zero_ace_deck_is_accepted() -> None:
    assert preset("sore-spot", long_hands_3p=True).long_hands_3p is True
    assert preset("sticheln", deck="french_zero_ace", long_hands_3p=True).long_hands_3p


@pytest.mark.parametrize("name", ["follow_suit", "seed", "players", "min_players", "preset"])
def test_unknown_option_names_are_refused(name: str) -> None:
    with pytest.raises(RuleError) as error:
        preset("sticheln", **{name: 1})
    assert_one_line_naming(error, name)


def test_replace_validates_again() -> None:
    rules = preset("sticheln")
    with pytest.raises(RuleError) as error:
        rules.replace(pain_cards_per_player=3)
    assert_one_line_naming(error, "pain_cards_per_player", "3")
    with pytest.raises(RuleError):
        rules.replace(trump_rule="lowest")


def test_rule_set_refuses_raw_strings_for_enum_fields() -> None:
    with pytest.raises(RuleError) as error:
        RuleSet(deck="amigo")  # type: ignore[arg-type]
    assert_one_line_naming(error, "deck", "'amigo'")


def test_rule_set_is_immutable_and_hashable() -> None:
    rules = preset("amigo")
    with pytest.raises(AttributeError):
        rules.deck = Deck.SUITS_PER_PLAYER  # type: ignore[misc]
    assert hash(rules) == hash(preset("amigo"))


def test_deck_override_narrows_the_player_range() -> None:
    assert preset("sticheln", deck="amigo").player_range() == (3, 6)
    assert preset("sticheln", deck="french_zero_ace").player_range() == (3, 6)


# -- TOML tables --------------------------------------------------------------------------


def test_from_table_applies_preset_and_overrides() -> None:
    rules = from_table({"preset": "amigo", "trump_rule": "last_suit", "rounds": 3})
    assert rules == preset("amigo", trump_rule=TrumpRule.LAST_SUIT, rounds=3)
    assert rules.preset == "amigo"


def test_from_table_defaults_to_sticheln() -> None:
    assert from_table({}) == preset("sticheln")
    assert from_table({"rounds": "players"}) == preset("sticheln")


def test_from_table_refuses_like_preset() -> None:
    with pytest.raises(RuleError) as error:
        from_table({"preset": 5})
    assert_one_line_naming(error, "preset", "5")
    with pytest.raises(RuleError) as error:
        from_table({"preset": "sticheln", "first_lead": "random"})
    assert_one_line_naming(error, "first_lead", "'random'")
    with pytest.raises(RuleError) as error:
        from_table({"colour": "red"})
    assert_one_line_naming(error, "colour")


def test_to_table_holds_plain_values_only() -> None:
    table = preset("stick-em-secret", pain_cards_per_player=2).to_table()
    for value in table.values():
        assert type(value) in (str, int, bool)
    assert table["preset"] == "stick-em-secret"
    assert table["trump_rule"] == "last_suit"
    assert table["pain_cards_per_player"] == 2


ROUND_TRIP = [pytest.param(preset(name), id=name) for name in PRESET_PLAYERS] + [
    pytest.param(preset("sore-spot", long_hands_3p=True, rounds=2), id="sore-spot-long-2-rounds"),
    pytest.param(
        preset("amigo", pain_cards_per_player=2, match_ties="shared", first_lead="dealer"),
        id="amigo-variant",
    ),
]


@pytest.mark.parametrize("rules", ROUND_TRIP)
def test_from_table_round_trips_to_table(rules: RuleSet) -> None:
    assert from_table(rules.to_table()) == rules
