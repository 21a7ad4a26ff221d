"""Conversion between the rules engine's types and the ``sticheln.v1`` protocol messages.

This is the one module that knows both sides: servicers, the match runner and Python bots
convert through it and nowhere else. Cards need no conversion (the engine's card int is the
wire code), so lists of cards go through ``extend`` untouched.

Messages from the wire are checked: an unspecified or unknown enum value, or a rule set the
engine refuses, raises :class:`~referee.rules.RuleError` (rule sets) or ``ValueError``
(other messages) with a one-line message naming the field.

:func:`view_to_proto` runs for every decision the referee asks for, so it is written for
speed: scalar lists are extended in one call each, and the parts a view repeats from one
decision to the next (rule set, pain picks, completed tricks, round results) are encoded
once and merged in as bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from functools import lru_cache
from typing import TypeVar

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from referee.rules import (
    AllZeroTrick,
    Deck,
    FirstLead,
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
)
from referee.rules.round import PainChoice
from sticheln.v1 import game_pb2

__all__ = [
    "ALL_ZERO_TRICK_FROM_PROTO",
    "ALL_ZERO_TRICK_TO_PROTO",
    "DECK_FROM_PROTO",
    "DECK_TO_PROTO",
    "FIRST_LEAD_FROM_PROTO",
    "FIRST_LEAD_TO_PROTO",
    "MATCH_TIES_FROM_PROTO",
    "MATCH_TIES_TO_PROTO",
    "PAIN_CARD_FROM_PROTO",
    "PAIN_CARD_TO_PROTO",
    "PAIN_VISIBILITY_FROM_PROTO",
    "PAIN_VISIBILITY_TO_PROTO",
    "PHASE_FROM_PROTO",
    "PHASE_TO_PROTO",
    "TRICK_REASON_FROM_PROTO",
    "TRICK_REASON_TO_PROTO",
    "TRUMP_RULE_FROM_PROTO",
    "TRUMP_RULE_TO_PROTO",
    "pain_from_proto",
    "pain_to_proto",
    "round_result_from_proto",
    "round_result_to_proto",
    "rules_from_proto",
    "rules_to_proto",
    "trick_from_proto",
    "trick_to_proto",
    "view_from_proto",
    "view_to_proto",
]

_E = TypeVar("_E", bound=StrEnum)

# -- enum maps ---------------------------------------------------------------------------
# Written out rather than derived from names, so renaming a value on either side is a
# visible edit here; tests check that both sides are covered completely.

DECK_TO_PROTO: dict[Deck, game_pb2.Deck] = {
    Deck.SUITS_PER_PLAYER: game_pb2.DECK_SUITS_PER_PLAYER,
    Deck.AMIGO: game_pb2.DECK_AMIGO,
    Deck.FRENCH_ZERO_ACE: game_pb2.DECK_FRENCH_ZERO_ACE,
    Deck.FRENCH_2_14: game_pb2.DECK_FRENCH_2_14,
}
PAIN_CARD_TO_PROTO: dict[PainCard, game_pb2.PainCardRule] = {
    PainCard.SET_ASIDE: game_pb2.PAIN_CARD_RULE_SET_ASIDE,
    PainCard.KEPT_IN_HAND: game_pb2.PAIN_CARD_RULE_KEPT_IN_HAND,
}
PAIN_VISIBILITY_TO_PROTO: dict[PainVisibility, game_pb2.PainVisibility] = {
    PainVisibility.REVEALED: game_pb2.PAIN_VISIBILITY_REVEALED,
    PainVisibility.SECRET: game_pb2.PAIN_VISIBILITY_SECRET,
}
FIRST_LEAD_TO_PROTO: dict[FirstLead, game_pb2.FirstLead] = {
    FirstLead.LEFT_OF_DEALER: game_pb2.FIRST_LEAD_LEFT_OF_DEALER,
    FirstLead.DEALER: game_pb2.FIRST_LEAD_DEALER,
}
TRUMP_RULE_TO_PROTO: dict[TrumpRule, game_pb2.TrumpRule] = {
    TrumpRule.HIGHEST: game_pb2.TRUMP_RULE_HIGHEST,
    TrumpRule.LAST_SUIT: game_pb2.TRUMP_RULE_LAST_SUIT,
}
ALL_ZERO_TRICK_TO_PROTO: dict[AllZeroTrick, game_pb2.AllZeroTrick] = {
    AllZeroTrick.SET_ASIDE: game_pb2.ALL_ZERO_TRICK_SET_ASIDE,
    AllZeroTrick.LEADER_TAKES: game_pb2.ALL_ZERO_TRICK_LEADER_TAKES,
}
MATCH_TIES_TO_PROTO: dict[MatchTies, game_pb2.MatchTies] = {
    MatchTies.POSITIVE_ROUNDS: game_pb2.MATCH_TIES_POSITIVE_ROUNDS,
    MatchTies.SHARED: game_pb2.MATCH_TIES_SHARED,
}
PHASE_TO_PROTO: dict[Phase, game_pb2.Phase] = {
    Phase.PAIN: game_pb2.PHASE_PAIN,
    Phase.PLAY: game_pb2.PHASE_PLAY,
    Phase.OVER: game_pb2.PHASE_ROUND_OVER,
}
TRICK_REASON_TO_PROTO: dict[TrickReason, game_pb2.TrickReason] = {
    TrickReason.OFF_SUIT_HIGHEST: game_pb2.TRICK_REASON_OFF_SUIT_HIGHEST,
    TrickReason.OFF_SUIT_LAST_SUIT: game_pb2.TRICK_REASON_OFF_SUIT_LAST_SUIT,
    TrickReason.LEAD_SUIT_HIGHEST: game_pb2.TRICK_REASON_LEAD_SUIT_HIGHEST,
    TrickReason.ALL_ZERO: game_pb2.TRICK_REASON_ALL_ZERO,
}


def _inverse(forward: Mapping[_E, int]) -> dict[int, _E]:
    return {number: member for member, number in forward.items()}


DECK_FROM_PROTO = _inverse(DECK_TO_PROTO)
PAIN_CARD_FROM_PROTO = _inverse(PAIN_CARD_TO_PROTO)
PAIN_VISIBILITY_FROM_PROTO = _inverse(PAIN_VISIBILITY_TO_PROTO)
FIRST_LEAD_FROM_PROTO = _inverse(FIRST_LEAD_TO_PROTO)
TRUMP_RULE_FROM_PROTO = _inverse(TRUMP_RULE_TO_PROTO)
ALL_ZERO_TRICK_FROM_PROTO = _inverse(ALL_ZERO_TRICK_TO_PROTO)
MATCH_TIES_FROM_PROTO = _inverse(MATCH_TIES_TO_PROTO)
PHASE_FROM_PROTO = _inverse(PHASE_TO_PROTO)
TRICK_REASON_FROM_PROTO = _inverse(TRICK_REASON_TO_PROTO)


def _enum_from_proto(
    field: str,
    number: int,
    table: Mapping[int, _E],
    proto_enum: EnumTypeWrapper,
    error: type[ValueError] = ValueError,
) -> _E:
    """The engine value of a proto enum number, or ``error`` naming the field."""
    member = table.get(number)
    if member is None:
        by_number = proto_enum.DESCRIPTOR.values_by_number
        shown = f"{by_number[number].name} ({number})" if number in by_number else str(number)
        allowed = ", ".join(by_number[n].name for n in sorted(table))
        raise error(f"{field}: {shown} is not allowed; allowed: {allowed}")
    return member


# -- rule sets ---------------------------------------------------------------------------


@lru_cache(maxsize=128)
def _rules_message(rules: RuleSet) -> game_pb2.RuleSet:
    """The message for a rule set, built once; callers copy it and never change it."""
    return game_pb2.RuleSet(
        preset=rules.preset,
        deck=DECK_TO_PROTO[rules.deck],
        pain_card=PAIN_CARD_TO_PROTO[rules.pain_card],
        pain_cards_per_player=rules.pain_cards_per_player,
        pain_visibility=PAIN_VISIBILITY_TO_PROTO[rules.pain_visibility],
        first_lead=FIRST_LEAD_TO_PROTO[rules.first_lead],
        trump_rule=TRUMP_RULE_TO_PROTO[rules.trump_rule],
        all_zero_trick=ALL_ZERO_TRICK_TO_PROTO[rules.all_zero_trick],
        rounds=rules.rounds,
        match_ties=MATCH_TIES_TO_PROTO[rules.match_ties],
        long_hands_3p=rules.long_hands_3p,
        min_players=rules.min_players,
        max_players=rules.max_players,
    )


def rules_to_proto(rules: RuleSet) -> game_pb2.RuleSet:
    """The ``RuleSet`` message of a rule set (a fresh message the caller may change)."""
    msg = game_pb2.RuleSet()
    msg.CopyFrom(_rules_message(rules))
    return msg


def rules_from_proto(msg: game_pb2.RuleSet) -> RuleSet:
    """The validated rule set of a ``RuleSet`` message; raises RuleError naming the field."""
    return _rules_from_wire(msg.SerializeToString(deterministic=True))


@lru_cache(maxsize=128)
def _rules_from_wire(data: bytes) -> RuleSet:
    # Keyed by the wire bytes: a bot converts the same rule set on every decision.
    msg = game_pb2.RuleSet.FromString(data)
    return RuleSet(
        preset=msg.preset,
        deck=_enum_from_proto("deck", msg.deck, DECK_FROM_PROTO, game_pb2.Deck, RuleError),
        pain_card=_enum_from_proto(
            "pain_card", msg.pain_card, PAIN_CARD_FROM_PROTO, game_pb2.PainCardRule, RuleError
        ),
        pain_cards_per_player=msg.pain_cards_per_player,
        pain_visibility=_enum_from_proto(
            "pain_visibility",
            msg.pain_visibility,
            PAIN_VISIBILITY_FROM_PROTO,
            game_pb2.PainVisibility,
            RuleError,
        ),
        first_lead=_enum_from_proto(
            "first_lead", msg.first_lead, FIRST_LEAD_FROM_PROTO, game_pb2.FirstLead, RuleError
        ),
        trump_rule=_enum_from_proto(
            "trump_rule", msg.trump_rule, TRUMP_RULE_FROM_PROTO, game_pb2.TrumpRule, RuleError
        ),
        all_zero_trick=_enum_from_proto(
            "all_zero_trick",
            msg.all_zero_trick,
            ALL_ZERO_TRICK_FROM_PROTO,
            game_pb2.AllZeroTrick,
            RuleError,
        ),
        rounds=msg.rounds,
        match_ties=_enum_from_proto(
            "match_ties", msg.match_ties, MATCH_TIES_FROM_PROTO, game_pb2.MatchTies, RuleError
        ),
        long_hands_3p=msg.long_hands_3p,
        min_players=msg.min_players,
        max_players=msg.max_players,
    )


# -- tricks, pain picks, round results ---------------------------------------------------


def trick_to_proto(trick: Trick) -> game_pb2.Trick:
    """The ``Trick`` message of a completed trick."""
    return game_pb2.Trick(
        leader=trick.leader,
        cards=trick.cards,
        winner=trick.winner,
        reason=TRICK_REASON_TO_PROTO[trick.reason],
        tie=trick.tie,
    )


def trick_from_proto(msg: game_pb2.Trick) -> Trick:
    """The engine's trick of a ``Trick`` message; raises ValueError for a bad reason."""
    reason = _enum_from_proto(
        "trick.reason", msg.reason, TRICK_REASON_FROM_PROTO, game_pb2.TrickReason
    )
    return Trick(msg.leader, tuple(msg.cards), msg.winner, reason, msg.tie)


def pain_to_proto(pick: PainChoice | None) -> game_pb2.PainPick:
    """The ``PainPick`` message of a pick; None (unseen or not picked) is an empty pick."""
    return game_pb2.PainPick(cards=pick or ())


def pain_from_proto(msg: game_pb2.PainPick) -> PainChoice | None:
    """The pick of a ``PainPick`` message; an empty pick is None."""
    return tuple(msg.cards) or None


def round_result_to_proto(result: RoundResult) -> game_pb2.RoundResult:
    """The ``RoundResult`` message of a scored round."""
    return game_pb2.RoundResult(
        round_index=result.round_index,
        dealer=result.dealer,
        pain=[game_pb2.PainPick(cards=p) for p in result.pain],
        scores=result.scores,
    )


def round_result_from_proto(msg: game_pb2.RoundResult) -> RoundResult:
    """The engine's round result of a ``RoundResult`` message."""
    return RoundResult(
        msg.round_index,
        msg.dealer,
        tuple(tuple(p.cards) for p in msg.pain),
        tuple(msg.scores),
    )


# -- views -------------------------------------------------------------------------------
# A view repeats, decision after decision, the same rule set, pain picks, completed tricks
# and round results. Their wire bytes (each with its View field tag) are cached by value,
# and a view is the scalar fields set directly plus one MergeFromString of the cached
# parts: parsing in C is several times faster than building the submessages in Python.


@lru_cache(maxsize=128)
def _view_rules_wire(rules: RuleSet) -> bytes:
    return game_pb2.View(rules=_rules_message(rules)).SerializeToString()


@lru_cache(maxsize=1024)
def _view_pain_wire(pick: PainChoice | None) -> bytes:
    return game_pb2.View(pain=[game_pb2.PainPick(cards=pick or ())]).SerializeToString()


@lru_cache(maxsize=16384)
def _view_trick_wire(trick: Trick) -> bytes:
    return game_pb2.View(tricks=[trick_to_proto(trick)]).SerializeToString()


@lru_cache(maxsize=1024)
def _view_round_result_wire(result: RoundResult) -> bytes:
    return game_pb2.View(round_results=[round_result_to_proto(result)]).SerializeToString()


def view_to_proto(view: View, out: game_pb2.View | None = None) -> game_pb2.View:
    """The ``View`` message of one seat's view (the referee's per-decision hot path).

    With ``out`` (for example ``request.view``) that message is cleared and filled in
    instead of a new one, which saves copying the view into its request.
    """
    if out is None:
        msg = game_pb2.View()
    else:
        msg = out
        msg.Clear()
    msg.players = view.players
    msg.seat = view.seat
    msg.round_index = view.round_index
    msg.rounds_total = view.rounds_total
    msg.dealer = view.dealer
    msg.phase = PHASE_TO_PROTO[view.phase]
    msg.hand.extend(view.hand)
    msg.set_aside_count = view.set_aside_count
    msg.leader = view.leader
    msg.to_play = view.to_play
    msg.trick.extend(view.trick)
    msg.totals.extend(view.totals)
    msg.match_over = view.match_over
    msg.MergeFromString(
        _view_rules_wire(view.rules)
        + b"".join(map(_view_pain_wire, view.pain))
        + b"".join(map(_view_trick_wire, view.tricks))
        + b"".join(map(_view_round_result_wire, view.round_results))
    )
    return msg


# A bot converts the same completed tricks and round results on every decision: cached by
# their wire bytes, which are cheaper to get than the engine tuples are to build.


@lru_cache(maxsize=4096)
def _trick_from_wire(data: bytes) -> Trick:
    return trick_from_proto(game_pb2.Trick.FromString(data))


@lru_cache(maxsize=1024)
def _round_result_from_wire(data: bytes) -> RoundResult:
    return round_result_from_proto(game_pb2.RoundResult.FromString(data))


def view_from_proto(msg: game_pb2.View) -> View:
    """The engine's view of a ``View`` message (for Python bots and tests).

    Raises RuleError for a bad rule set and ValueError for another bad enum value.
    """
    return View(
        rules=rules_from_proto(msg.rules),
        players=msg.players,
        seat=msg.seat,
        round_index=msg.round_index,
        rounds_total=msg.rounds_total,
        dealer=msg.dealer,
        phase=_enum_from_proto("view.phase", msg.phase, PHASE_FROM_PROTO, game_pb2.Phase),
        hand=tuple(msg.hand),
        pain=tuple(tuple(p.cards) or None for p in msg.pain),
        set_aside_count=msg.set_aside_count,
        leader=msg.leader,
        to_play=msg.to_play,
        trick=tuple(msg.trick),
        tricks=tuple([_trick_from_wire(t.SerializeToString()) for t in msg.tricks]),
        round_results=tuple(
            [_round_result_from_wire(r.SerializeToString()) for r in msg.round_results]
        ),
        totals=tuple(msg.totals),
        match_over=msg.match_over,
    )
