"""Conversion between engine types and protocol messages: round trips and refusals."""

from __future__ import annotations

import random
from collections.abc import Iterator
from enum import StrEnum
from typing import Any

import pytest
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from referee import convert
from referee.convert import (
    pain_from_proto,
    pain_to_proto,
    round_result_from_proto,
    round_result_to_proto,
    rules_from_proto,
    rules_to_proto,
    trick_from_proto,
    trick_to_proto,
    view_from_proto,
    view_to_proto,
)
from referee.rules import (
    PRESETS,
    SUIT_NAMES,
    AllZeroTrick,
    Deck,
    FirstLead,
    Match,
    MatchTies,
    PainCard,
    PainVisibility,
    Phase,
    RoundResult,
    RuleError,
    RuleSet,
    Trick,
    TrickReason,
    TrumpRule,
    View,
    preset,
    view,
)
from sticheln.v1 import bot_pb2, game_pb2

# -- enum maps ---------------------------------------------------------------------------

ENUM_MAPS: list[tuple[type[StrEnum], EnumTypeWrapper, dict[Any, Any], dict[int, Any]]] = [
    (Deck, game_pb2.Deck, convert.DECK_TO_PROTO, convert.DECK_FROM_PROTO),
    (PainCard, game_pb2.PainCardRule, convert.PAIN_CARD_TO_PROTO, convert.PAIN_CARD_FROM_PROTO),
    (
        PainVisibility,
        game_pb2.PainVisibility,
        convert.PAIN_VISIBILITY_TO_PROTO,
        convert.PAIN_VISIBILITY_FROM_PROTO,
    ),
    (FirstLead, game_pb2.FirstLead, convert.FIRST_LEAD_TO_PROTO, convert.FIRST_LEAD_FROM_PROTO),
    (TrumpRule, game_pb2.TrumpRule, convert.TRUMP_RULE_TO_PROTO, convert.TRUMP_RULE_FROM_PROTO),
    (
        AllZeroTrick,
        game_pb2.AllZeroTrick,
        convert.ALL_ZERO_TRICK_TO_PROTO,
        convert.ALL_ZERO_TRICK_FROM_PROTO,
    ),
    (MatchTies, game_pb2.MatchTies, convert.MATCH_TIES_TO_PROTO, convert.MATCH_TIES_FROM_PROTO),
    (Phase, game_pb2.Phase, convert.PHASE_TO_PROTO, convert.PHASE_FROM_PROTO),
    (
        TrickReason,
        game_pb2.TrickReason,
        convert.TRICK_REASON_TO_PROTO,
        convert.TRICK_REASON_FROM_PROTO,
    ),
]


@pytest.mark.parametrize(
    ("engine", "proto", "to_proto", "from_proto"),
    ENUM_MAPS,
    ids=[m[0].__name__ for m in ENUM_MAPS],
)
def test_enum_maps_cover_both_sides_one_to_one(
    engine: type[StrEnum],
    proto: EnumTypeWrapper,
    to_proto: dict[Any, int],
    from_proto: dict[int, Any],
) -> None:
    assert set(to_proto) == set(engine)
    assert set(to_proto.values()) == set(proto.values()) - {0}
    assert {from_proto[v]: v for v in from_proto} == to_proto


@pytest.mark.parametrize(
    ("engine", "proto", "to_proto", "from_proto"),
    [m for m in ENUM_MAPS if m[0] is not Phase],
    ids=[m[0].__name__ for m in ENUM_MAPS if m[0] is not Phase],
)
def test_enum_values_keep_the_engine_names(
    engine: type[StrEnum],
    proto: EnumTypeWrapper,
    to_proto: dict[Any, int],
    from_proto: dict[int, Any],
) -> None:
    for member, number in to_proto.items():
        assert proto.Name(number).endswith("_" + member.name)


def test_phase_over_is_round_over() -> None:
    assert convert.PHASE_TO_PROTO[Phase.OVER] == game_pb2.PHASE_ROUND_OVER


def test_suit_numbers_are_the_engines_suits() -> None:
    for number, name in enumerate(SUIT_NAMES):
        expected = "SUIT_UNSPECIFIED" if number == 0 else f"SUIT_{name.upper()}"
        assert game_pb2.Suit.Name(number) == expected
    assert len(game_pb2.Suit.values()) == len(SUIT_NAMES)


# -- rule sets ---------------------------------------------------------------------------


def rule_option_values() -> Iterator[Any]:
    """One rule set per value of every rule option (the rest at the default)."""
    enum_fields: dict[str, type[StrEnum]] = {
        "deck": Deck,
        "pain_card": PainCard,
        "pain_visibility": PainVisibility,
        "first_lead": FirstLead,
        "trump_rule": TrumpRule,
        "all_zero_trick": AllZeroTrick,
        "match_ties": MatchTies,
    }
    for field, enum in enum_fields.items():
        for member in enum:
            options: dict[str, Any] = {field: member}
            yield pytest.param(RuleSet(**options), id=f"{field}={member.value}")
    for n in (1, 2):
        yield pytest.param(RuleSet(pain_cards_per_player=n), id=f"pain_cards_per_player={n}")
    for n in (0, 1, 3, 12):
        yield pytest.param(RuleSet(rounds=n), id=f"rounds={n}")
    yield pytest.param(
        RuleSet(deck=Deck.FRENCH_ZERO_ACE, long_hands_3p=True, max_players=6),
        id="long_hands_3p=true",
    )
    for n in range(3, 9):
        yield pytest.param(RuleSet(min_players=n), id=f"min_players={n}")
        yield pytest.param(RuleSet(max_players=n), id=f"max_players={n}")


PRESET_RULES = [pytest.param(preset(name), id=name) for name in PRESETS]


@pytest.mark.parametrize("rules", [*PRESET_RULES, *rule_option_values()])
def test_rule_set_round_trips(rules: RuleSet) -> None:
    msg = rules_to_proto(rules)
    assert rules_from_proto(msg) == rules
    wire = game_pb2.RuleSet.FromString(msg.SerializeToString())
    assert rules_from_proto(wire) == rules


def test_rule_set_message_spells_out_every_field() -> None:
    rules = preset("stick-em-secret", pain_cards_per_player=2, rounds=3)
    msg = rules_to_proto(rules)
    assert msg == game_pb2.RuleSet(
        preset="stick-em-secret",
        deck=game_pb2.DECK_SUITS_PER_PLAYER,
        pain_card=game_pb2.PAIN_CARD_RULE_KEPT_IN_HAND,
        pain_cards_per_player=2,
        pain_visibility=game_pb2.PAIN_VISIBILITY_SECRET,
        first_lead=game_pb2.FIRST_LEAD_DEALER,
        trump_rule=game_pb2.TRUMP_RULE_LAST_SUIT,
        all_zero_trick=game_pb2.ALL_ZERO_TRICK_SET_ASIDE,
        rounds=3,
        match_ties=game_pb2.MATCH_TIES_POSITIVE_ROUNDS,
        long_hands_3p=False,
        min_players=3,
        max_players=8,
    )
    proto_fields = {f.name for f in game_pb2.RuleSet.DESCRIPTOR.fields}
    assert proto_fields == set(rules.to_table()) | {"min_players", "max_players"}


def test_rules_to_proto_returns_a_message_the_caller_may_change() -> None:
    rules = preset("amigo")
    first = rules_to_proto(rules)
    first.rounds = 99
    first.preset = "changed"
    assert rules_to_proto(rules).rounds == 0
    assert rules_to_proto(rules).preset == "amigo"


ENUM_FIELDS = [
    "deck",
    "pain_card",
    "pain_visibility",
    "first_lead",
    "trump_rule",
    "all_zero_trick",
    "match_ties",
]


def assert_one_line_naming(
    error: pytest.ExceptionInfo[ValueError], field: str, *words: str
) -> None:
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{field}: "), message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


@pytest.mark.parametrize("field", ENUM_FIELDS)
def test_unspecified_enum_is_refused_naming_the_field(field: str) -> None:
    msg = rules_to_proto(preset("sticheln"))
    setattr(msg, field, 0)
    with pytest.raises(RuleError) as error:
        rules_from_proto(msg)
    assert_one_line_naming(error, field, "UNSPECIFIED", "allowed:")


@pytest.mark.parametrize("field", ENUM_FIELDS)
def test_unknown_enum_number_is_refused_naming_the_field(field: str) -> None:
    msg = rules_to_proto(preset("sticheln"))
    setattr(msg, field, 57)
    with pytest.raises(RuleError) as error:
        rules_from_proto(msg)
    assert_one_line_naming(error, field, "57", "allowed:")


def test_empty_rule_set_message_is_refused() -> None:
    with pytest.raises(RuleError) as error:
        rules_from_proto(game_pb2.RuleSet())
    assert_one_line_naming(error, "deck", "DECK_UNSPECIFIED")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"pain_cards_per_player": 0}, "pain_cards_per_player"),
        ({"pain_cards_per_player": 3}, "pain_cards_per_player"),
        ({"min_players": 0}, "min_players"),
        ({"max_players": 9}, "max_players"),
        ({"long_hands_3p": True}, "long_hands_3p"),
        ({"deck": game_pb2.DECK_AMIGO, "min_players": 7}, "deck"),
    ],
)
def test_invalid_values_are_refused_naming_the_field(changes: dict[str, Any], field: str) -> None:
    msg = rules_to_proto(preset("sticheln"))
    for key, value in changes.items():
        setattr(msg, key, value)
    with pytest.raises(RuleError) as error:
        rules_from_proto(msg)
    assert_one_line_naming(error, field)


# -- tricks, pain picks, round results ---------------------------------------------------


def test_set_aside_trick_has_winner_minus_one_on_the_wire() -> None:
    trick = Trick(2, (16, 32, 48, 64), -1, TrickReason.ALL_ZERO, False)
    msg = game_pb2.Trick.FromString(trick_to_proto(trick).SerializeToString())
    assert msg.winner == -1
    assert list(msg.cards) == [16, 32, 48, 64]
    assert msg.reason == game_pb2.TRICK_REASON_ALL_ZERO
    assert trick_from_proto(msg) == trick


def test_trick_with_unspecified_reason_is_refused() -> None:
    with pytest.raises(ValueError) as error:
        trick_from_proto(game_pb2.Trick(leader=0, cards=[17, 18, 19], winner=2))
    assert_one_line_naming(error, "trick.reason", "TRICK_REASON_UNSPECIFIED")


def test_pain_pick_none_is_empty() -> None:
    assert list(pain_to_proto(None).cards) == []
    assert pain_from_proto(pain_to_proto(None)) is None
    assert pain_from_proto(pain_to_proto((35, 70))) == (35, 70)


def test_round_result_round_trips() -> None:
    result = RoundResult(3, 3, ((17,), (34,), (51,), (68,)), (-4, 12, 0, -21))
    msg = game_pb2.RoundResult.FromString(round_result_to_proto(result).SerializeToString())
    assert [list(p.cards) for p in msg.pain] == [[17], [34], [51], [68]]
    assert list(msg.scores) == [-4, 12, 0, -21]
    assert round_result_from_proto(msg) == result


# -- views -------------------------------------------------------------------------------


def reference_view_message(v: View) -> game_pb2.View:
    """The View message built field by field, the slow and obvious way."""
    msg = game_pb2.View()
    msg.rules.CopyFrom(rules_to_proto(v.rules))
    msg.players = v.players
    msg.seat = v.seat
    msg.round_index = v.round_index
    msg.rounds_total = v.rounds_total
    msg.dealer = v.dealer
    msg.phase = convert.PHASE_TO_PROTO[v.phase]
    msg.hand.extend(v.hand)
    for pick in v.pain:
        msg.pain.add().cards.extend(pick or ())
    msg.set_aside_count = v.set_aside_count
    msg.leader = v.leader
    msg.to_play = v.to_play
    msg.trick.extend(v.trick)
    for t in v.tricks:
        msg.tricks.append(trick_to_proto(t))
    for r in v.round_results:
        msg.round_results.append(round_result_to_proto(r))
    msg.totals.extend(v.totals)
    msg.match_over = v.match_over
    return msg


def match_views(rules: RuleSet, players: int, seed: int) -> Iterator[View]:
    """Every seat's view after every action of a seeded random match."""
    match = Match(rules, players, seed)
    rng = random.Random(seed)
    while True:
        for seat in range(players):
            yield view(match, seat)
        if match.is_over:
            return
        seat = rng.choice(match.to_act())
        legal = match.legal_actions(seat)
        zeros = [a for a in legal if isinstance(a, int) and a & 15 == 0]
        # Zeros often, so that all-zero tricks (winner -1 or the leader) happen.
        match.apply(seat, rng.choice(zeros if zeros and rng.random() < 0.5 else legal))


VIEW_CASES = [
    pytest.param(preset("sticheln"), 4, id="sticheln-4"),
    pytest.param(preset("sticheln", pain_cards_per_player=2, rounds=2), 3, id="two-pain-cards-3"),
    pytest.param(preset("stick-em-secret", rounds=2), 5, id="stick-em-secret-5"),
    pytest.param(preset("amigo", rounds=2), 6, id="amigo-6"),
    pytest.param(preset("sore-spot", rounds=1), 5, id="sore-spot-5"),
    pytest.param(preset("french-2-14", rounds=1), 4, id="french-2-14-4"),
]


@pytest.mark.parametrize(("rules", "players"), VIEW_CASES)
def test_every_view_of_a_match_round_trips(rules: RuleSet, players: int) -> None:
    phases = set()
    for v in match_views(rules, players, seed=11):
        msg = view_to_proto(v)
        assert msg == reference_view_message(v)
        wire = game_pb2.View.FromString(msg.SerializeToString())
        assert view_from_proto(wire) == v
        phases.add(v.phase)
    assert phases == set(Phase)


def test_view_mid_round_round_trips_with_hidden_picks_empty() -> None:
    rules = preset("stick-em-secret")
    match = Match(rules, 4, seed=5)
    rng = random.Random(5)
    while match.round_index < 1 or len(match.round.tricks) < 3 or not match.round.trick:
        seat = match.to_act()[0]
        match.apply(seat, rng.choice(match.legal_actions(seat)))
    v = view(match, 2)
    msg = game_pb2.View.FromString(view_to_proto(v).SerializeToString())

    assert msg.phase == game_pb2.PHASE_PLAY
    assert list(msg.hand) == list(v.hand)
    assert list(msg.trick) == list(v.trick)
    assert len(msg.tricks) == 3
    assert len(msg.round_results) == 1
    # Under secret visibility only the own pick is visible during play.
    assert [bool(p.cards) for p in msg.pain] == [False, False, True, False]
    assert all(len(p.cards) == 1 for p in msg.round_results[0].pain)
    assert view_from_proto(msg) == v


def test_view_before_the_first_lead_has_leader_and_to_play_minus_one() -> None:
    v = view(Match(preset("sticheln"), 4, seed=1), 0)
    msg = game_pb2.View.FromString(view_to_proto(v).SerializeToString())
    assert msg.phase == game_pb2.PHASE_PAIN
    assert msg.leader == -1
    assert msg.to_play == -1
    assert len(msg.hand) == 15
    assert len(msg.pain) == 4
    assert view_from_proto(msg) == v


def test_view_to_proto_fills_a_given_message_replacing_its_content() -> None:
    views = list(match_views(preset("sticheln"), 3, seed=2))
    request = bot_pb2.DecisionRequest(request_id=7)
    view_to_proto(views[-1], out=request.view)
    view_to_proto(views[40], out=request.view)
    assert request.view == view_to_proto(views[40])
    assert request.request_id == 7


def test_view_with_unspecified_phase_is_refused() -> None:
    msg = view_to_proto(view(Match(preset("sticheln"), 3, seed=1), 0))
    msg.phase = game_pb2.PHASE_UNSPECIFIED
    with pytest.raises(ValueError) as error:
        view_from_proto(msg)
    assert_one_line_naming(error, "view.phase", "PHASE_UNSPECIFIED")


def test_view_with_bad_rules_is_refused_with_rule_error() -> None:
    msg = view_to_proto(view(Match(preset("sticheln"), 3, seed=1), 0))
    msg.rules.trump_rule = game_pb2.TRUMP_RULE_UNSPECIFIED
    with pytest.raises(RuleError) as error:
        view_from_proto(msg)
    assert_one_line_naming(error, "trump_rule", "TRUMP_RULE_UNSPECIFIED")
