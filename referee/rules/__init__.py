"""The Sticheln rules engine: pure, deterministic, fast.

Imports no grpc, asyncio, logging or metrics, so a bot can use it to simulate as well as
the referee can use it to judge. Typical use::

    from referee.rules import Match, preset, view

    match = Match(preset("sticheln"), players=4, seed=42)
    while not match.is_over:
        for seat in match.to_act():
            match.apply(seat, policy(view(match, seat), match.legal_actions(seat)))
    print(match.totals, match.places())
"""

from referee.rules.cards import (
    SUIT_LETTERS,
    SUIT_NAMES,
    Card,
    card,
    card_str,
    cards_str,
    parse_card,
    rank_of,
    suit_of,
)
from referee.rules.deck import deal, deck_for, shuffled
from referee.rules.match import Match, RoundResult, ranking
from referee.rules.round import Action, IllegalAction, PainChoice, Phase, Round, Trick, score_cards
from referee.rules.ruleset import (
    DECK_PLAYERS,
    PRESETS,
    AllZeroTrick,
    Deck,
    FirstLead,
    MatchTies,
    PainCard,
    PainVisibility,
    RuleError,
    RuleSet,
    TrumpRule,
    from_table,
    preset,
)
from referee.rules.trick import TrickOutcome, TrickReason, trick_winner
from referee.rules.view import View, view

__all__ = [
    "DECK_PLAYERS",
    "PRESETS",
    "SUIT_LETTERS",
    "SUIT_NAMES",
    "Action",
    "AllZeroTrick",
    "Card",
    "Deck",
    "FirstLead",
    "IllegalAction",
    "Match",
    "MatchTies",
    "PainCard",
    "PainChoice",
    "PainVisibility",
    "Phase",
    "Round",
    "RoundResult",
    "RuleError",
    "RuleSet",
    "Trick",
    "TrickOutcome",
    "TrickReason",
    "TrumpRule",
    "View",
    "card",
    "card_str",
    "cards_str",
    "deal",
    "deck_for",
    "from_table",
    "parse_card",
    "preset",
    "rank_of",
    "ranking",
    "score_cards",
    "shuffled",
    "suit_of",
    "trick_winner",
    "view",
]
