from sticheln.v1 import game_pb2 as _game_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProtocolVersion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROTOCOL_VERSION_UNSPECIFIED: _ClassVar[ProtocolVersion]
    PROTOCOL_VERSION_1: _ClassVar[ProtocolVersion]

class DecisionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_KIND_UNSPECIFIED: _ClassVar[DecisionKind]
    DECISION_KIND_PAIN_CHOICE: _ClassVar[DecisionKind]
    DECISION_KIND_CARD_PLAY: _ClassVar[DecisionKind]

class FaultReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAULT_REASON_UNSPECIFIED: _ClassVar[FaultReason]
    FAULT_REASON_TIMEOUT: _ClassVar[FaultReason]
    FAULT_REASON_ILLEGAL_CARD_NOT_IN_HAND: _ClassVar[FaultReason]
    FAULT_REASON_ILLEGAL_WRONG_PHASE: _ClassVar[FaultReason]
    FAULT_REASON_ILLEGAL_WRONG_COUNT: _ClassVar[FaultReason]
    FAULT_REASON_MALFORMED_MESSAGE: _ClassVar[FaultReason]
    FAULT_REASON_STALE_REQUEST_ID: _ClassVar[FaultReason]
    FAULT_REASON_UNKNOWN_REQUEST_ID: _ClassVar[FaultReason]
    FAULT_REASON_DISCONNECT: _ClassVar[FaultReason]
    FAULT_REASON_CRASH: _ClassVar[FaultReason]
    FAULT_REASON_HANDSHAKE_FAILED: _ClassVar[FaultReason]
PROTOCOL_VERSION_UNSPECIFIED: ProtocolVersion
PROTOCOL_VERSION_1: ProtocolVersion
DECISION_KIND_UNSPECIFIED: DecisionKind
DECISION_KIND_PAIN_CHOICE: DecisionKind
DECISION_KIND_CARD_PLAY: DecisionKind
FAULT_REASON_UNSPECIFIED: FaultReason
FAULT_REASON_TIMEOUT: FaultReason
FAULT_REASON_ILLEGAL_CARD_NOT_IN_HAND: FaultReason
FAULT_REASON_ILLEGAL_WRONG_PHASE: FaultReason
FAULT_REASON_ILLEGAL_WRONG_COUNT: FaultReason
FAULT_REASON_MALFORMED_MESSAGE: FaultReason
FAULT_REASON_STALE_REQUEST_ID: FaultReason
FAULT_REASON_UNKNOWN_REQUEST_ID: FaultReason
FAULT_REASON_DISCONNECT: FaultReason
FAULT_REASON_CRASH: FaultReason
FAULT_REASON_HANDSHAKE_FAILED: FaultReason

class BotMessage(_message.Message):
    __slots__ = ("hello", "decision")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    decision: Decision
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., decision: _Optional[_Union[Decision, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("bot_name", "bot_version", "protocol_version", "token", "capabilities", "max_concurrent_matches")
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_MATCHES_FIELD_NUMBER: _ClassVar[int]
    bot_name: str
    bot_version: str
    protocol_version: int
    token: str
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    max_concurrent_matches: int
    def __init__(self, bot_name: _Optional[str] = ..., bot_version: _Optional[str] = ..., protocol_version: _Optional[int] = ..., token: _Optional[str] = ..., capabilities: _Optional[_Iterable[str]] = ..., max_concurrent_matches: _Optional[int] = ...) -> None: ...

class Decision(_message.Message):
    __slots__ = ("request_id", "cards")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    cards: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, request_id: _Optional[int] = ..., cards: _Optional[_Iterable[int]] = ...) -> None: ...

class RefereeMessage(_message.Message):
    __slots__ = ("events", "welcome", "match_start", "request", "match_end")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    MATCH_START_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    MATCH_END_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    welcome: Welcome
    match_start: MatchStart
    request: DecisionRequest
    match_end: MatchEnd
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., welcome: _Optional[_Union[Welcome, _Mapping]] = ..., match_start: _Optional[_Union[MatchStart, _Mapping]] = ..., request: _Optional[_Union[DecisionRequest, _Mapping]] = ..., match_end: _Optional[_Union[MatchEnd, _Mapping]] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("protocol_version", "referee_version", "message", "capabilities")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    REFEREE_VERSION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    referee_version: str
    message: str
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, protocol_version: _Optional[int] = ..., referee_version: _Optional[str] = ..., message: _Optional[str] = ..., capabilities: _Optional[_Iterable[str]] = ...) -> None: ...

class Clock(_message.Message):
    __slots__ = ("decision_ms", "time_bank_ms", "startup_ms")
    DECISION_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    STARTUP_MS_FIELD_NUMBER: _ClassVar[int]
    decision_ms: int
    time_bank_ms: int
    startup_ms: int
    def __init__(self, decision_ms: _Optional[int] = ..., time_bank_ms: _Optional[int] = ..., startup_ms: _Optional[int] = ...) -> None: ...

class MatchStart(_message.Message):
    __slots__ = ("match_id", "seat", "seating", "rules", "clock", "seed_commitment", "rounds_total", "strike_limit", "bot_seed")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SEATING_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    STRIKE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    BOT_SEED_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    seating: _containers.RepeatedScalarFieldContainer[str]
    rules: _game_pb2.RuleSet
    clock: Clock
    seed_commitment: bytes
    rounds_total: int
    strike_limit: int
    bot_seed: int
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., seating: _Optional[_Iterable[str]] = ..., rules: _Optional[_Union[_game_pb2.RuleSet, _Mapping]] = ..., clock: _Optional[_Union[Clock, _Mapping]] = ..., seed_commitment: _Optional[bytes] = ..., rounds_total: _Optional[int] = ..., strike_limit: _Optional[int] = ..., bot_seed: _Optional[int] = ...) -> None: ...

class DecisionRequest(_message.Message):
    __slots__ = ("request_id", "kind", "count", "timeout_ms", "time_bank_ms", "view")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    kind: DecisionKind
    count: int
    timeout_ms: int
    time_bank_ms: int
    view: _game_pb2.View
    def __init__(self, request_id: _Optional[int] = ..., kind: _Optional[_Union[DecisionKind, str]] = ..., count: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., time_bank_ms: _Optional[int] = ..., view: _Optional[_Union[_game_pb2.View, _Mapping]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("round_start", "pain_reveal", "card_played", "trick_result", "round_scores", "fault")
    ROUND_START_FIELD_NUMBER: _ClassVar[int]
    PAIN_REVEAL_FIELD_NUMBER: _ClassVar[int]
    CARD_PLAYED_FIELD_NUMBER: _ClassVar[int]
    TRICK_RESULT_FIELD_NUMBER: _ClassVar[int]
    ROUND_SCORES_FIELD_NUMBER: _ClassVar[int]
    FAULT_FIELD_NUMBER: _ClassVar[int]
    round_start: RoundStart
    pain_reveal: PainReveal
    card_played: CardPlayed
    trick_result: TrickResult
    round_scores: RoundScores
    fault: FaultNotice
    def __init__(self, round_start: _Optional[_Union[RoundStart, _Mapping]] = ..., pain_reveal: _Optional[_Union[PainReveal, _Mapping]] = ..., card_played: _Optional[_Union[CardPlayed, _Mapping]] = ..., trick_result: _Optional[_Union[TrickResult, _Mapping]] = ..., round_scores: _Optional[_Union[RoundScores, _Mapping]] = ..., fault: _Optional[_Union[FaultNotice, _Mapping]] = ...) -> None: ...

class RoundStart(_message.Message):
    __slots__ = ("round_index", "dealer", "hand")
    ROUND_INDEX_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    round_index: int
    dealer: int
    hand: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, round_index: _Optional[int] = ..., dealer: _Optional[int] = ..., hand: _Optional[_Iterable[int]] = ...) -> None: ...

class PainReveal(_message.Message):
    __slots__ = ("pain",)
    PAIN_FIELD_NUMBER: _ClassVar[int]
    pain: _containers.RepeatedCompositeFieldContainer[_game_pb2.PainPick]
    def __init__(self, pain: _Optional[_Iterable[_Union[_game_pb2.PainPick, _Mapping]]] = ...) -> None: ...

class CardPlayed(_message.Message):
    __slots__ = ("seat", "card")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: int
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[int] = ...) -> None: ...

class TrickResult(_message.Message):
    __slots__ = ("trick",)
    TRICK_FIELD_NUMBER: _ClassVar[int]
    trick: _game_pb2.Trick
    def __init__(self, trick: _Optional[_Union[_game_pb2.Trick, _Mapping]] = ...) -> None: ...

class RoundScores(_message.Message):
    __slots__ = ("result", "totals")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    result: _game_pb2.RoundResult
    totals: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, result: _Optional[_Union[_game_pb2.RoundResult, _Mapping]] = ..., totals: _Optional[_Iterable[int]] = ...) -> None: ...

class FaultNotice(_message.Message):
    __slots__ = ("request_id", "reason", "detail", "strikes", "forfeited", "seat")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    STRIKES_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    reason: FaultReason
    detail: str
    strikes: int
    forfeited: bool
    seat: int
    def __init__(self, request_id: _Optional[int] = ..., reason: _Optional[_Union[FaultReason, str]] = ..., detail: _Optional[str] = ..., strikes: _Optional[int] = ..., forfeited: _Optional[bool] = ..., seat: _Optional[int] = ...) -> None: ...

class MatchEnd(_message.Message):
    __slots__ = ("totals", "places", "rounds", "seed", "seed_nonce", "forfeited_seats", "reason", "seed_withheld")
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    PLACES_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SEED_NONCE_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_SEATS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEED_WITHHELD_FIELD_NUMBER: _ClassVar[int]
    totals: _containers.RepeatedScalarFieldContainer[int]
    places: _containers.RepeatedScalarFieldContainer[int]
    rounds: _containers.RepeatedCompositeFieldContainer[_game_pb2.RoundResult]
    seed: int
    seed_nonce: bytes
    forfeited_seats: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    seed_withheld: str
    def __init__(self, totals: _Optional[_Iterable[int]] = ..., places: _Optional[_Iterable[int]] = ..., rounds: _Optional[_Iterable[_Union[_game_pb2.RoundResult, _Mapping]]] = ..., seed: _Optional[int] = ..., seed_nonce: _Optional[bytes] = ..., forfeited_seats: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ..., seed_withheld: _Optional[str] = ...) -> None: ...
