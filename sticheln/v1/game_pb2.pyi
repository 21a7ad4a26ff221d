from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Suit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUIT_UNSPECIFIED: _ClassVar[Suit]
    SUIT_CLUBS: _ClassVar[Suit]
    SUIT_SPADES: _ClassVar[Suit]
    SUIT_HEARTS: _ClassVar[Suit]
    SUIT_DIAMONDS: _ClassVar[Suit]
    SUIT_CAPS: _ClassVar[Suit]
    SUIT_SWITCHES: _ClassVar[Suit]
    SUIT_PLANETS: _ClassVar[Suit]
    SUIT_STARS: _ClassVar[Suit]

class Deck(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECK_UNSPECIFIED: _ClassVar[Deck]
    DECK_SUITS_PER_PLAYER: _ClassVar[Deck]
    DECK_AMIGO: _ClassVar[Deck]
    DECK_FRENCH_ZERO_ACE: _ClassVar[Deck]
    DECK_FRENCH_2_14: _ClassVar[Deck]

class PainCardRule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PAIN_CARD_RULE_UNSPECIFIED: _ClassVar[PainCardRule]
    PAIN_CARD_RULE_SET_ASIDE: _ClassVar[PainCardRule]
    PAIN_CARD_RULE_KEPT_IN_HAND: _ClassVar[PainCardRule]

class PainVisibility(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PAIN_VISIBILITY_UNSPECIFIED: _ClassVar[PainVisibility]
    PAIN_VISIBILITY_REVEALED: _ClassVar[PainVisibility]
    PAIN_VISIBILITY_SECRET: _ClassVar[PainVisibility]

class FirstLead(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FIRST_LEAD_UNSPECIFIED: _ClassVar[FirstLead]
    FIRST_LEAD_LEFT_OF_DEALER: _ClassVar[FirstLead]
    FIRST_LEAD_DEALER: _ClassVar[FirstLead]

class TrumpRule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRUMP_RULE_UNSPECIFIED: _ClassVar[TrumpRule]
    TRUMP_RULE_HIGHEST: _ClassVar[TrumpRule]
    TRUMP_RULE_LAST_SUIT: _ClassVar[TrumpRule]

class AllZeroTrick(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALL_ZERO_TRICK_UNSPECIFIED: _ClassVar[AllZeroTrick]
    ALL_ZERO_TRICK_SET_ASIDE: _ClassVar[AllZeroTrick]
    ALL_ZERO_TRICK_LEADER_TAKES: _ClassVar[AllZeroTrick]

class MatchTies(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_TIES_UNSPECIFIED: _ClassVar[MatchTies]
    MATCH_TIES_POSITIVE_ROUNDS: _ClassVar[MatchTies]
    MATCH_TIES_SHARED: _ClassVar[MatchTies]

class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PHASE_UNSPECIFIED: _ClassVar[Phase]
    PHASE_PAIN: _ClassVar[Phase]
    PHASE_PLAY: _ClassVar[Phase]
    PHASE_ROUND_OVER: _ClassVar[Phase]

class TrickReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRICK_REASON_UNSPECIFIED: _ClassVar[TrickReason]
    TRICK_REASON_OFF_SUIT_HIGHEST: _ClassVar[TrickReason]
    TRICK_REASON_OFF_SUIT_LAST_SUIT: _ClassVar[TrickReason]
    TRICK_REASON_LEAD_SUIT_HIGHEST: _ClassVar[TrickReason]
    TRICK_REASON_ALL_ZERO: _ClassVar[TrickReason]
SUIT_UNSPECIFIED: Suit
SUIT_CLUBS: Suit
SUIT_SPADES: Suit
SUIT_HEARTS: Suit
SUIT_DIAMONDS: Suit
SUIT_CAPS: Suit
SUIT_SWITCHES: Suit
SUIT_PLANETS: Suit
SUIT_STARS: Suit
DECK_UNSPECIFIED: Deck
DECK_SUITS_PER_PLAYER: Deck
DECK_AMIGO: Deck
DECK_FRENCH_ZERO_ACE: Deck
DECK_FRENCH_2_14: Deck
PAIN_CARD_RULE_UNSPECIFIED: PainCardRule
PAIN_CARD_RULE_SET_ASIDE: PainCardRule
PAIN_CARD_RULE_KEPT_IN_HAND: PainCardRule
PAIN_VISIBILITY_UNSPECIFIED: PainVisibility
PAIN_VISIBILITY_REVEALED: PainVisibility
PAIN_VISIBILITY_SECRET: PainVisibility
FIRST_LEAD_UNSPECIFIED: FirstLead
FIRST_LEAD_LEFT_OF_DEALER: FirstLead
FIRST_LEAD_DEALER: FirstLead
TRUMP_RULE_UNSPECIFIED: TrumpRule
TRUMP_RULE_HIGHEST: TrumpRule
TRUMP_RULE_LAST_SUIT: TrumpRule
ALL_ZERO_TRICK_UNSPECIFIED: AllZeroTrick
ALL_ZERO_TRICK_SET_ASIDE: AllZeroTrick
ALL_ZERO_TRICK_LEADER_TAKES: AllZeroTrick
MATCH_TIES_UNSPECIFIED: MatchTies
MATCH_TIES_POSITIVE_ROUNDS: MatchTies
MATCH_TIES_SHARED: MatchTies
PHASE_UNSPECIFIED: Phase
PHASE_PAIN: Phase
PHASE_PLAY: Phase
PHASE_ROUND_OVER: Phase
TRICK_REASON_UNSPECIFIED: TrickReason
TRICK_REASON_OFF_SUIT_HIGHEST: TrickReason
TRICK_REASON_OFF_SUIT_LAST_SUIT: TrickReason
TRICK_REASON_LEAD_SUIT_HIGHEST: TrickReason
TRICK_REASON_ALL_ZERO: TrickReason

class RuleSet(_message.Message):
    __slots__ = ("preset", "deck", "pain_card", "pain_cards_per_player", "pain_visibility", "first_lead", "trump_rule", "all_zero_trick", "rounds", "match_ties", "long_hands_3p", "min_players", "max_players")
    PRESET_FIELD_NUMBER: _ClassVar[int]
    DECK_FIELD_NUMBER: _ClassVar[int]
    PAIN_CARD_FIELD_NUMBER: _ClassVar[int]
    PAIN_CARDS_PER_PLAYER_FIELD_NUMBER: _ClassVar[int]
    PAIN_VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    FIRST_LEAD_FIELD_NUMBER: _ClassVar[int]
    TRUMP_RULE_FIELD_NUMBER: _ClassVar[int]
    ALL_ZERO_TRICK_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    MATCH_TIES_FIELD_NUMBER: _ClassVar[int]
    LONG_HANDS_3P_FIELD_NUMBER: _ClassVar[int]
    MIN_PLAYERS_FIELD_NUMBER: _ClassVar[int]
    MAX_PLAYERS_FIELD_NUMBER: _ClassVar[int]
    preset: str
    deck: Deck
    pain_card: PainCardRule
    pain_cards_per_player: int
    pain_visibility: PainVisibility
    first_lead: FirstLead
    trump_rule: TrumpRule
    all_zero_trick: AllZeroTrick
    rounds: int
    match_ties: MatchTies
    long_hands_3p: bool
    min_players: int
    max_players: int
    def __init__(self, preset: _Optional[str] = ..., deck: _Optional[_Union[Deck, str]] = ..., pain_card: _Optional[_Union[PainCardRule, str]] = ..., pain_cards_per_player: _Optional[int] = ..., pain_visibility: _Optional[_Union[PainVisibility, str]] = ..., first_lead: _Optional[_Union[FirstLead, str]] = ..., trump_rule: _Optional[_Union[TrumpRule, str]] = ..., all_zero_trick: _Optional[_Union[AllZeroTrick, str]] = ..., rounds: _Optional[int] = ..., match_ties: _Optional[_Union[MatchTies, str]] = ..., long_hands_3p: _Optional[bool] = ..., min_players: _Optional[int] = ..., max_players: _Optional[int] = ...) -> None: ...

class Trick(_message.Message):
    __slots__ = ("leader", "cards", "winner", "reason", "tie")
    LEADER_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TIE_FIELD_NUMBER: _ClassVar[int]
    leader: int
    cards: _containers.RepeatedScalarFieldContainer[int]
    winner: int
    reason: TrickReason
    tie: bool
    def __init__(self, leader: _Optional[int] = ..., cards: _Optional[_Iterable[int]] = ..., winner: _Optional[int] = ..., reason: _Optional[_Union[TrickReason, str]] = ..., tie: _Optional[bool] = ...) -> None: ...

class PainPick(_message.Message):
    __slots__ = ("cards",)
    CARDS_FIELD_NUMBER: _ClassVar[int]
    cards: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, cards: _Optional[_Iterable[int]] = ...) -> None: ...

class RoundResult(_message.Message):
    __slots__ = ("round_index", "dealer", "pain", "scores")
    ROUND_INDEX_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    PAIN_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    round_index: int
    dealer: int
    pain: _containers.RepeatedCompositeFieldContainer[PainPick]
    scores: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, round_index: _Optional[int] = ..., dealer: _Optional[int] = ..., pain: _Optional[_Iterable[_Union[PainPick, _Mapping]]] = ..., scores: _Optional[_Iterable[int]] = ...) -> None: ...

class View(_message.Message):
    __slots__ = ("rules", "players", "seat", "round_index", "rounds_total", "dealer", "phase", "hand", "pain", "set_aside_count", "leader", "to_play", "trick", "tricks", "round_results", "totals", "match_over")
    RULES_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ROUND_INDEX_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    PAIN_FIELD_NUMBER: _ClassVar[int]
    SET_ASIDE_COUNT_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    TO_PLAY_FIELD_NUMBER: _ClassVar[int]
    TRICK_FIELD_NUMBER: _ClassVar[int]
    TRICKS_FIELD_NUMBER: _ClassVar[int]
    ROUND_RESULTS_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    MATCH_OVER_FIELD_NUMBER: _ClassVar[int]
    rules: RuleSet
    players: int
    seat: int
    round_index: int
    rounds_total: int
    dealer: int
    phase: Phase
    hand: _containers.RepeatedScalarFieldContainer[int]
    pain: _containers.RepeatedCompositeFieldContainer[PainPick]
    set_aside_count: int
    leader: int
    to_play: int
    trick: _containers.RepeatedScalarFieldContainer[int]
    tricks: _containers.RepeatedCompositeFieldContainer[Trick]
    round_results: _containers.RepeatedCompositeFieldContainer[RoundResult]
    totals: _containers.RepeatedScalarFieldContainer[int]
    match_over: bool
    def __init__(self, rules: _Optional[_Union[RuleSet, _Mapping]] = ..., players: _Optional[int] = ..., seat: _Optional[int] = ..., round_index: _Optional[int] = ..., rounds_total: _Optional[int] = ..., dealer: _Optional[int] = ..., phase: _Optional[_Union[Phase, str]] = ..., hand: _Optional[_Iterable[int]] = ..., pain: _Optional[_Iterable[_Union[PainPick, _Mapping]]] = ..., set_aside_count: _Optional[int] = ..., leader: _Optional[int] = ..., to_play: _Optional[int] = ..., trick: _Optional[_Iterable[int]] = ..., tricks: _Optional[_Iterable[_Union[Trick, _Mapping]]] = ..., round_results: _Optional[_Iterable[_Union[RoundResult, _Mapping]]] = ..., totals: _Optional[_Iterable[int]] = ..., match_over: _Optional[bool] = ...) -> None: ...
