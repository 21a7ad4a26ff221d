"""Misbehaviour as data: a fault is a recorded reason, applied by the match runner.

The rules engine only says what is legal; what happens when a bot is late, wrong, garbled
or gone is decided here and in the runner, and every case leaves a :class:`Fault` in the
match record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from referee.rules import Action, Card, Phase, Round, card_str


class FaultReason(StrEnum):
    """Why a seat faulted; the values are the record's and the metrics' labels."""

    TIMEOUT = "timeout"
    ILLEGAL_CARD_NOT_IN_HAND = "illegal_card_not_in_hand"
    ILLEGAL_WRONG_PHASE = "illegal_wrong_phase"
    ILLEGAL_WRONG_COUNT = "illegal_wrong_count"
    MALFORMED_MESSAGE = "malformed_message"
    STALE_REQUEST_ID = "stale_request_id"
    UNKNOWN_REQUEST_ID = "unknown_request_id"
    DISCONNECT = "disconnect"
    CRASH = "crash"
    HANDSHAKE_FAILED = "handshake_failed"


#: Faults that count no strike: a late answer was already struck as a timeout.
NO_STRIKE = frozenset({FaultReason.STALE_REQUEST_ID})
#: Faults after which the seat cannot go on: it forfeits at once.
FORFEIT_AT_ONCE = frozenset(
    {FaultReason.DISCONNECT, FaultReason.CRASH, FaultReason.HANDSHAKE_FAILED}
)


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault of one seat: what happened, when, and what it cost."""

    seat: int
    reason: FaultReason
    detail: str
    round_index: int
    request_id: int
    strikes: int
    forfeited: bool


def fallback_action(rnd: Round, seat: int) -> Action:
    """What the referee plays for a faulted or forfeited seat (documented in the proto).

    A card play: the lowest card code in the hand. A pain choice: the lowest card, and
    for two pain cards also the lowest card of another suit (the second lowest when the
    hand holds one suit).
    """
    hand = sorted(rnd.hands[seat])
    if rnd.phase is Phase.PLAY:
        return hand[0]
    if rnd.rules.pain_cards_per_player == 1:
        return (hand[0],)
    first = hand[0]
    other = next((c for c in hand if c >> 4 != first >> 4), hand[1])
    return (first, other)


def check_decision(
    rnd: Round, seat: int, cards: Sequence[int]
) -> tuple[Action | None, FaultReason | None, str]:
    """Turn a bot's answer into an action, or say which fault it is and why."""
    if rnd.phase is Phase.PLAY:
        if seat != rnd.to_play:
            return None, FaultReason.ILLEGAL_WRONG_PHASE, f"seat {seat} answered out of turn"
        if len(cards) != 1:
            return (
                None,
                FaultReason.ILLEGAL_WRONG_COUNT,
                f"sent {len(cards)} cards for a card play; expected 1",
            )
        card: Card = cards[0]
        if card not in rnd.hands[seat]:
            return (
                None,
                FaultReason.ILLEGAL_CARD_NOT_IN_HAND,
                f"played card {_name(card)}, which is not in the hand",
            )
        return card, None, ""
    if rnd.phase is Phase.PAIN:
        want = rnd.rules.pain_cards_per_player
        if rnd.pain[seat] is not None:
            return None, FaultReason.ILLEGAL_WRONG_PHASE, "the pain card was already chosen"
        if len(cards) != want:
            return (
                None,
                FaultReason.ILLEGAL_WRONG_COUNT,
                f"sent {len(cards)} pain cards; expected {want}",
            )
        choice = tuple(cards)
        if choice not in rnd.legal_pain_choices(seat) and choice[
            ::-1
        ] not in rnd.legal_pain_choices(seat):
            missing = [c for c in choice if c not in rnd.hands[seat]]
            if missing:
                return (
                    None,
                    FaultReason.ILLEGAL_CARD_NOT_IN_HAND,
                    f"chose pain card {_name(missing[0])}, which is not in the hand",
                )
            return (
                None,
                FaultReason.ILLEGAL_WRONG_COUNT,
                "the two pain cards must be two different cards of two suits",
            )
        return choice, None, ""
    return None, FaultReason.ILLEGAL_WRONG_PHASE, "the round is over"


def _name(card: int) -> str:
    return f"{card_str(card)} (code {card})" if 16 <= card < 144 else f"code {card}"
