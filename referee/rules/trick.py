"""Who wins a trick, and why (docs/rules.md rule 6 and the ``trump_rule`` option)."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from referee.rules.cards import Card
from referee.rules.ruleset import TrumpRule


class TrickReason(StrEnum):
    """Why a trick went where it went."""

    OFF_SUIT_HIGHEST = "off_suit_highest"  # highest non-zero card not of the lead suit
    OFF_SUIT_LAST_SUIT = "off_suit_last_suit"  # highest of the off-suit played most recently
    LEAD_SUIT_HIGHEST = "lead_suit_highest"  # only the lead suit (besides zeros) was played
    ALL_ZERO = "all_zero"  # every card is a zero: nobody wins it


class TrickOutcome(NamedTuple):
    """The result of :func:`trick_winner`.

    ``position`` is the index into the trick's cards (0 = the leader's card), or -1 when
    every card is a zero. ``tie`` is true when an equal rank played later lost to it.
    """

    position: int
    reason: TrickReason
    tie: bool


def trick_winner(cards: list[Card] | tuple[Card, ...], trump_rule: TrumpRule) -> TrickOutcome:
    """The winning position in a complete trick, given in play order from the leader.

    Steps, in order: the first card's suit is the lead suit (even a zero); zeros are
    treated as absent; if a non-zero card of another suit was played, the off-suit rule
    decides (``highest``: the highest such card, the earlier of equal ranks; ``last_suit``:
    the suit of the most recent such card, highest within it); otherwise the highest
    non-zero lead-suit card; if all are zeros, nobody.
    """
    lead_suit = cards[0] >> 4
    if trump_rule is TrumpRule.HIGHEST:
        best = -1
        best_rank = 0
        tie = False
        for i, c in enumerate(cards):
            rank = c & 15
            if rank and c >> 4 != lead_suit:
                if rank > best_rank:
                    best, best_rank, tie = i, rank, False
                elif rank == best_rank:
                    tie = True
        if best >= 0:
            return TrickOutcome(best, TrickReason.OFF_SUIT_HIGHEST, tie)
    else:
        last_suit = -1
        for c in reversed(cards):
            if c & 15 and c >> 4 != lead_suit:
                last_suit = c >> 4
                break
        if last_suit >= 0:
            best = max(
                (i for i, c in enumerate(cards) if c >> 4 == last_suit and c & 15),
                key=lambda i: cards[i] & 15,
            )
            return TrickOutcome(best, TrickReason.OFF_SUIT_LAST_SUIT, False)
    best = -1
    best_rank = 0
    for i, c in enumerate(cards):
        rank = c & 15
        if rank > best_rank:  # only lead-suit cards and zeros are left here
            best, best_rank = i, rank
    if best >= 0:
        return TrickOutcome(best, TrickReason.LEAD_SUIT_HIGHEST, False)
    return TrickOutcome(-1, TrickReason.ALL_ZERO, False)
