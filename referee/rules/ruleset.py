"""The rule set: every option of docs/rules.md as validated data, and the named presets.

A rule set is static: it says which deck is used, how pain cards work, how tricks are
won and how a match is scored. It never changes during a match. Build one with
:func:`preset` (a name plus overrides) or :func:`from_table` (a TOML ``[rules]`` table);
both refuse an invalid value or combination with a :class:`RuleError` whose message is
one line naming the field, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class RuleError(ValueError):
    """An invalid rule set value or combination; the message is one line for a user."""


class Deck(StrEnum):
    """Which cards are dealt (docs/rules.md, option ``deck``)."""

    SUITS_PER_PLAYER = "suits_per_player"  # N suits x ranks 0..14
    AMIGO = "amigo"  # the published 1993 deck, trimmed by player count
    FRENCH_ZERO_ACE = "french_zero_ace"  # 52 cards, Ace = 0, 2..10, J 11, Q 12, K 13
    FRENCH_2_14 = "french_2_14"  # 52 cards, ranks 2..14, no zeros


class PainCard(StrEnum):
    """What happens to a pain card after the reveal."""

    SET_ASIDE = "set_aside"  # lies face up in front of its owner and scores for it
    KEPT_IN_HAND = "kept_in_hand"  # stays in the hand and is played like any card


class PainVisibility(StrEnum):
    """When the other players learn a player's pain card(s)."""

    REVEALED = "revealed"  # at the simultaneous reveal, before the first lead
    SECRET = "secret"  # only when the round is scored


class FirstLead(StrEnum):
    """Who leads the first trick of a round."""

    LEFT_OF_DEALER = "left_of_dealer"
    DEALER = "dealer"


class TrumpRule(StrEnum):
    """How a trick holding cards of several non-lead suits is won."""

    HIGHEST = "highest"  # the highest non-zero off-suit card, whatever its suit
    LAST_SUIT = "last_suit"  # the off-suit played most recently; highest within it


class AllZeroTrick(StrEnum):
    """What happens to a trick in which every card is a zero."""

    SET_ASIDE = "set_aside"  # nobody wins; the cards leave play; the leader leads again
    LEADER_TAKES = "leader_takes"  # the leader takes it and it scores normally


class MatchTies(StrEnum):
    """How equal match totals are ranked."""

    POSITIVE_ROUNDS = "positive_rounds"  # more rounds with a positive score ranks higher
    SHARED = "shared"  # equal totals share the place


#: The smallest and largest number of players for each deck.
DECK_PLAYERS: dict[Deck, tuple[int, int]] = {
    Deck.SUITS_PER_PLAYER: (3, 8),
    Deck.AMIGO: (3, 6),
    Deck.FRENCH_ZERO_ACE: (3, 6),
    Deck.FRENCH_2_14: (3, 8),
}


@dataclass(frozen=True, slots=True)
class RuleSet:
    """A complete, validated rule set.

    ``rounds == 0`` means "as many rounds as players" (docs/rules.md's default ``players``).
    ``min_players`` and ``max_players`` are the preset's limits; the deck may narrow them
    further (see :meth:`player_range`).
    """

    preset: str = "sticheln"
    deck: Deck = Deck.SUITS_PER_PLAYER
    pain_card: PainCard = PainCard.SET_ASIDE
    pain_cards_per_player: int = 1
    pain_visibility: PainVisibility = PainVisibility.REVEALED
    first_lead: FirstLead = FirstLead.LEFT_OF_DEALER
    trump_rule: TrumpRule = TrumpRule.HIGHEST
    all_zero_trick: AllZeroTrick = AllZeroTrick.SET_ASIDE
    rounds: int = 0
    match_ties: MatchTies = MatchTies.POSITIVE_ROUNDS
    long_hands_3p: bool = False
    min_players: int = 3
    max_players: int = 8
    # Computed once: rule sets key the engine's caches, hashed on every deal.
    _hash: int = dataclasses.field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        _validate(self)
        values = tuple(getattr(self, f) for f in _FIELD_NAMES)
        object.__setattr__(self, "_hash", hash(values))

    def __hash__(self) -> int:
        return self._hash

    def player_range(self) -> tuple[int, int]:
        """The player counts this rule set can be played with, inclusive."""
        lo, hi = DECK_PLAYERS[self.deck]
        return max(lo, self.min_players), min(hi, self.max_players)

    def rounds_for(self, players: int) -> int:
        """How many rounds a match of ``players`` players lasts."""
        return self.rounds or players

    def check_players(self, players: int) -> None:
        """Refuse a player count this rule set cannot be played with."""
        lo, hi = self.player_range()
        if not lo <= players <= hi:
            raise RuleError(
                f"players: {players} is not allowed by rule set {self.preset!r} "
                f"with deck {self.deck.value!r}; allowed: {lo} to {hi}"
            )
        # Imported here: deck depends on this module.
        from referee.rules.deck import deck_for

        _, hand_size = deck_for(self, players)
        if hand_size < self.pain_cards_per_player + 1:
            raise RuleError(
                f"deck: {self.deck.value!r} gives {hand_size} cards per player for "
                f"{players} players; allowed: at least pain_cards_per_player + 1 = "
                f"{self.pain_cards_per_player + 1}"
            )

    def replace(self, **changes: Any) -> RuleSet:
        """A copy with some fields changed; values may be enums or strings (validated again)."""
        for key in changes:
            if key not in _FIELD_NAMES:
                raise RuleError(f"{key}: unknown rule option; allowed: {', '.join(_FIELD_NAMES)}")
        return dataclasses.replace(self, **{k: _coerce(k, v) for k, v in changes.items()})

    def to_table(self) -> dict[str, Any]:
        """The rule set as a TOML-ready ``[rules]`` table (round-trips :func:`from_table`).

        The player limits are not options: they come from the preset.
        """
        out: dict[str, Any] = {}
        for name in _FIELD_NAMES:
            if name in ("min_players", "max_players"):
                continue
            value = getattr(self, name)
            if name == "rounds" and value == 0:
                value = "players"
            out[name] = value.value if isinstance(value, StrEnum) else value
        return out


_ENUM_FIELDS: dict[str, type[StrEnum]] = {
    "deck": Deck,
    "pain_card": PainCard,
    "pain_visibility": PainVisibility,
    "first_lead": FirstLead,
    "trump_rule": TrumpRule,
    "all_zero_trick": AllZeroTrick,
    "match_ties": MatchTies,
}


def _allowed(enum: type[StrEnum]) -> str:
    return ", ".join(repr(e.value) for e in enum)


def _validate(rules: RuleSet) -> None:
    for name, enum in _ENUM_FIELDS.items():
        value = getattr(rules, name)
        if not isinstance(value, enum):
            raise RuleError(f"{name}: {value!r} is not allowed; allowed: {_allowed(enum)}")
    if type(rules.pain_cards_per_player) is not int or rules.pain_cards_per_player not in (1, 2):
        raise RuleError(
            f"pain_cards_per_player: {rules.pain_cards_per_player!r} is not allowed; allowed: 1, 2"
        )
    if type(rules.rounds) is not int or rules.rounds < 0:
        raise RuleError(
            f"rounds: {rules.rounds!r} is not allowed; allowed: 'players' or a whole number >= 1"
        )
    if type(rules.long_hands_3p) is not bool:
        raise RuleError(
            f"long_hands_3p: {rules.long_hands_3p!r} is not allowed; allowed: true, false"
        )
    if rules.long_hands_3p and rules.deck is not Deck.FRENCH_ZERO_ACE:
        raise RuleError(
            f"long_hands_3p: true is not allowed with deck {rules.deck.value!r}; "
            "allowed only with deck 'french_zero_ace'"
        )
    for name in ("min_players", "max_players"):
        value = getattr(rules, name)
        if type(value) is not int or not 3 <= value <= 8:
            raise RuleError(f"{name}: {value!r} is not allowed; allowed: 3 to 8")
    lo, hi = rules.player_range()
    if lo > hi:
        raise RuleError(
            f"deck: {rules.deck.value!r} is not allowed with players {rules.min_players} to "
            f"{rules.max_players}; the deck allows {DECK_PLAYERS[rules.deck][0]} to "
            f"{DECK_PLAYERS[rules.deck][1]}"
        )


#: The named presets of docs/rules.md. Each maps to the fields that differ from the default.
PRESETS: dict[str, dict[str, Any]] = {
    "sticheln": {},
    "amigo": {
        "deck": Deck.AMIGO,
        "all_zero_trick": AllZeroTrick.LEADER_TAKES,
        "max_players": 6,
    },
    "sore-spot": {"deck": Deck.FRENCH_ZERO_ACE, "max_players": 6},
    "french-2-14": {"deck": Deck.FRENCH_2_14, "min_players": 4, "max_players": 4},
    "stick-em-secret": {
        "pain_card": PainCard.KEPT_IN_HAND,
        "pain_visibility": PainVisibility.SECRET,
        "first_lead": FirstLead.DEALER,
        "trump_rule": TrumpRule.LAST_SUIT,
    },
}

_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(RuleSet) if f.name != "_hash")
_OVERRIDABLE = tuple(n for n in _FIELD_NAMES if n not in ("preset", "min_players", "max_players"))


def preset(name: str = "sticheln", **overrides: Any) -> RuleSet:
    """The preset ``name`` with some options overridden; values may be enums or strings."""
    if name not in PRESETS:
        raise RuleError(
            f"preset: {name!r} is not allowed; allowed: {', '.join(map(repr, PRESETS))}"
        )
    fields: dict[str, Any] = {"preset": name, **PRESETS[name]}
    for key, value in overrides.items():
        if key not in _OVERRIDABLE:
            raise RuleError(f"{key}: unknown rule option; allowed: {', '.join(_OVERRIDABLE)}")
        fields[key] = _coerce(key, value)
    return RuleSet(**fields)


def from_table(table: Mapping[str, Any]) -> RuleSet:
    """A rule set from a TOML ``[rules]`` table: ``preset`` plus any option overrides."""
    items = dict(table)
    name = items.pop("preset", "sticheln")
    if not isinstance(name, str):
        raise RuleError(
            f"preset: {name!r} is not allowed; allowed: {', '.join(map(repr, PRESETS))}"
        )
    return preset(name, **items)


def _coerce(key: str, value: Any) -> Any:
    """Turn a TOML value into the field's type, refusing what cannot be one."""
    enum = _ENUM_FIELDS.get(key)
    if enum is not None:
        if isinstance(value, enum):
            return value
        try:
            return enum(value)
        except ValueError:
            raise RuleError(f"{key}: {value!r} is not allowed; allowed: {_allowed(enum)}") from None
    if key == "rounds" and value == "players":
        return 0
    if key == "rounds" and (type(value) is not int or value < 1):
        raise RuleError(
            f"rounds: {value!r} is not allowed; allowed: 'players' or a whole number >= 1"
        )
    return value
