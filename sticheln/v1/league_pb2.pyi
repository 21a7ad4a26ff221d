from sticheln.v1 import game_pb2 as _game_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Bot(_message.Message):
    __slots__ = ("name", "owner", "description", "previous_version", "version", "active", "connected_streams", "registered_at", "hosted", "status", "submission", "sha256", "matches", "refusal", "playing_submission")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_VERSION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_STREAMS_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_FIELD_NUMBER: _ClassVar[int]
    HOSTED_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    PLAYING_SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    owner: str
    description: str
    previous_version: str
    version: int
    active: bool
    connected_streams: int
    registered_at: float
    hosted: bool
    status: str
    submission: int
    sha256: str
    matches: int
    refusal: str
    playing_submission: int
    def __init__(self, name: _Optional[str] = ..., owner: _Optional[str] = ..., description: _Optional[str] = ..., previous_version: _Optional[str] = ..., version: _Optional[int] = ..., active: _Optional[bool] = ..., connected_streams: _Optional[int] = ..., registered_at: _Optional[float] = ..., hosted: _Optional[bool] = ..., status: _Optional[str] = ..., submission: _Optional[int] = ..., sha256: _Optional[str] = ..., matches: _Optional[int] = ..., refusal: _Optional[str] = ..., playing_submission: _Optional[int] = ...) -> None: ...

class RegisterBotRequest(_message.Message):
    __slots__ = ("name", "owner", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    owner: str
    description: str
    def __init__(self, name: _Optional[str] = ..., owner: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class RegisterBotResponse(_message.Message):
    __slots__ = ("bot", "token")
    BOT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    bot: Bot
    token: str
    def __init__(self, bot: _Optional[_Union[Bot, _Mapping]] = ..., token: _Optional[str] = ...) -> None: ...

class RegisterVersionRequest(_message.Message):
    __slots__ = ("previous_version", "name", "description")
    PREVIOUS_VERSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    previous_version: str
    name: str
    description: str
    def __init__(self, previous_version: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RevokeTokenResponse(_message.Message):
    __slots__ = ("bot",)
    BOT_FIELD_NUMBER: _ClassVar[int]
    bot: Bot
    def __init__(self, bot: _Optional[_Union[Bot, _Mapping]] = ...) -> None: ...

class ListBotsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListBotsResponse(_message.Message):
    __slots__ = ("bots",)
    BOTS_FIELD_NUMBER: _ClassVar[int]
    bots: _containers.RepeatedCompositeFieldContainer[Bot]
    def __init__(self, bots: _Optional[_Iterable[_Union[Bot, _Mapping]]] = ...) -> None: ...

class StandingsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Standing(_message.Message):
    __slots__ = ("bot", "rating", "ci_low", "ci_high", "games", "live_elo", "matches", "mean_place", "mean_score", "faults", "provisional", "group", "ci_low_open", "ci_high_open", "anchor", "unidentified", "cut_share")
    BOT_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    CI_LOW_FIELD_NUMBER: _ClassVar[int]
    CI_HIGH_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    LIVE_ELO_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    MEAN_PLACE_FIELD_NUMBER: _ClassVar[int]
    MEAN_SCORE_FIELD_NUMBER: _ClassVar[int]
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    PROVISIONAL_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CI_LOW_OPEN_FIELD_NUMBER: _ClassVar[int]
    CI_HIGH_OPEN_FIELD_NUMBER: _ClassVar[int]
    ANCHOR_FIELD_NUMBER: _ClassVar[int]
    UNIDENTIFIED_FIELD_NUMBER: _ClassVar[int]
    CUT_SHARE_FIELD_NUMBER: _ClassVar[int]
    bot: str
    rating: float
    ci_low: float
    ci_high: float
    games: int
    live_elo: float
    matches: int
    mean_place: float
    mean_score: float
    faults: int
    provisional: bool
    group: int
    ci_low_open: bool
    ci_high_open: bool
    anchor: bool
    unidentified: bool
    cut_share: float
    def __init__(self, bot: _Optional[str] = ..., rating: _Optional[float] = ..., ci_low: _Optional[float] = ..., ci_high: _Optional[float] = ..., games: _Optional[int] = ..., live_elo: _Optional[float] = ..., matches: _Optional[int] = ..., mean_place: _Optional[float] = ..., mean_score: _Optional[float] = ..., faults: _Optional[int] = ..., provisional: _Optional[bool] = ..., group: _Optional[int] = ..., ci_low_open: _Optional[bool] = ..., ci_high_open: _Optional[bool] = ..., anchor: _Optional[bool] = ..., unidentified: _Optional[bool] = ..., cut_share: _Optional[float] = ...) -> None: ...

class StandingsResponse(_message.Message):
    __slots__ = ("standings", "matches", "published_at", "warnings", "submissions")
    STANDINGS_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_AT_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    SUBMISSIONS_FIELD_NUMBER: _ClassVar[int]
    standings: _containers.RepeatedCompositeFieldContainer[Standing]
    matches: int
    published_at: float
    warnings: _containers.RepeatedScalarFieldContainer[str]
    submissions: _containers.RepeatedCompositeFieldContainer[SubmissionStanding]
    def __init__(self, standings: _Optional[_Iterable[_Union[Standing, _Mapping]]] = ..., matches: _Optional[int] = ..., published_at: _Optional[float] = ..., warnings: _Optional[_Iterable[str]] = ..., submissions: _Optional[_Iterable[_Union[SubmissionStanding, _Mapping]]] = ...) -> None: ...

class SubmissionStanding(_message.Message):
    __slots__ = ("bot", "submission", "rating", "ci_low", "ci_high", "matches", "provisional")
    BOT_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    CI_LOW_FIELD_NUMBER: _ClassVar[int]
    CI_HIGH_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    PROVISIONAL_FIELD_NUMBER: _ClassVar[int]
    bot: str
    submission: int
    rating: float
    ci_low: float
    ci_high: float
    matches: int
    provisional: bool
    def __init__(self, bot: _Optional[str] = ..., submission: _Optional[int] = ..., rating: _Optional[float] = ..., ci_low: _Optional[float] = ..., ci_high: _Optional[float] = ..., matches: _Optional[int] = ..., provisional: _Optional[bool] = ...) -> None: ...

class RecentMatchesRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class MatchSummary(_message.Message):
    __slots__ = ("match_id", "seating", "totals", "places", "forfeited_seats", "finished_at", "finish_order", "submissions", "sha256s", "challenge")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEATING_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    PLACES_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_SEATS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISH_ORDER_FIELD_NUMBER: _ClassVar[int]
    SUBMISSIONS_FIELD_NUMBER: _ClassVar[int]
    SHA256S_FIELD_NUMBER: _ClassVar[int]
    CHALLENGE_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seating: _containers.RepeatedScalarFieldContainer[str]
    totals: _containers.RepeatedScalarFieldContainer[int]
    places: _containers.RepeatedScalarFieldContainer[int]
    forfeited_seats: _containers.RepeatedScalarFieldContainer[int]
    finished_at: float
    finish_order: int
    submissions: _containers.RepeatedScalarFieldContainer[int]
    sha256s: _containers.RepeatedScalarFieldContainer[str]
    challenge: str
    def __init__(self, match_id: _Optional[str] = ..., seating: _Optional[_Iterable[str]] = ..., totals: _Optional[_Iterable[int]] = ..., places: _Optional[_Iterable[int]] = ..., forfeited_seats: _Optional[_Iterable[int]] = ..., finished_at: _Optional[float] = ..., finish_order: _Optional[int] = ..., submissions: _Optional[_Iterable[int]] = ..., sha256s: _Optional[_Iterable[str]] = ..., challenge: _Optional[str] = ...) -> None: ...

class RecentMatchesResponse(_message.Message):
    __slots__ = ("matches", "running")
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[MatchSummary]
    running: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, matches: _Optional[_Iterable[_Union[MatchSummary, _Mapping]]] = ..., running: _Optional[_Iterable[str]] = ...) -> None: ...

class GetMatchRecordRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class GetMatchRecordResponse(_message.Message):
    __slots__ = ("summary", "record_jsonl")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    RECORD_JSONL_FIELD_NUMBER: _ClassVar[int]
    summary: MatchSummary
    record_jsonl: str
    def __init__(self, summary: _Optional[_Union[MatchSummary, _Mapping]] = ..., record_jsonl: _Optional[str] = ...) -> None: ...

class WatchMatchRequest(_message.Message):
    __slots__ = ("match_id", "delay_rounds")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    DELAY_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    delay_rounds: int
    def __init__(self, match_id: _Optional[str] = ..., delay_rounds: _Optional[int] = ...) -> None: ...

class WatchMatchResponse(_message.Message):
    __slots__ = ("match", "event", "end")
    MATCH_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    match: WatchedMatch
    event: PublicEvent
    end: MatchEnded
    def __init__(self, match: _Optional[_Union[WatchedMatch, _Mapping]] = ..., event: _Optional[_Union[PublicEvent, _Mapping]] = ..., end: _Optional[_Union[MatchEnded, _Mapping]] = ...) -> None: ...

class WatchedMatch(_message.Message):
    __slots__ = ("match_id", "seating", "rules", "seed_commitment", "challenge")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEATING_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    CHALLENGE_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seating: _containers.RepeatedScalarFieldContainer[str]
    rules: _game_pb2.RuleSet
    seed_commitment: bytes
    challenge: str
    def __init__(self, match_id: _Optional[str] = ..., seating: _Optional[_Iterable[str]] = ..., rules: _Optional[_Union[_game_pb2.RuleSet, _Mapping]] = ..., seed_commitment: _Optional[bytes] = ..., challenge: _Optional[str] = ...) -> None: ...

class PublicEvent(_message.Message):
    __slots__ = ("round_index", "round_dealt", "pain_revealed", "card_played", "trick", "round_scored", "fault")
    ROUND_INDEX_FIELD_NUMBER: _ClassVar[int]
    ROUND_DEALT_FIELD_NUMBER: _ClassVar[int]
    PAIN_REVEALED_FIELD_NUMBER: _ClassVar[int]
    CARD_PLAYED_FIELD_NUMBER: _ClassVar[int]
    TRICK_FIELD_NUMBER: _ClassVar[int]
    ROUND_SCORED_FIELD_NUMBER: _ClassVar[int]
    FAULT_FIELD_NUMBER: _ClassVar[int]
    round_index: int
    round_dealt: RoundDealt
    pain_revealed: PainRevealed
    card_played: CardPlay
    trick: _game_pb2.Trick
    round_scored: RoundScored
    fault: SeatFault
    def __init__(self, round_index: _Optional[int] = ..., round_dealt: _Optional[_Union[RoundDealt, _Mapping]] = ..., pain_revealed: _Optional[_Union[PainRevealed, _Mapping]] = ..., card_played: _Optional[_Union[CardPlay, _Mapping]] = ..., trick: _Optional[_Union[_game_pb2.Trick, _Mapping]] = ..., round_scored: _Optional[_Union[RoundScored, _Mapping]] = ..., fault: _Optional[_Union[SeatFault, _Mapping]] = ...) -> None: ...

class RoundDealt(_message.Message):
    __slots__ = ("dealer",)
    DEALER_FIELD_NUMBER: _ClassVar[int]
    dealer: int
    def __init__(self, dealer: _Optional[int] = ...) -> None: ...

class PainRevealed(_message.Message):
    __slots__ = ("pain",)
    PAIN_FIELD_NUMBER: _ClassVar[int]
    pain: _containers.RepeatedCompositeFieldContainer[_game_pb2.PainPick]
    def __init__(self, pain: _Optional[_Iterable[_Union[_game_pb2.PainPick, _Mapping]]] = ...) -> None: ...

class CardPlay(_message.Message):
    __slots__ = ("seat", "card")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: int
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[int] = ...) -> None: ...

class RoundScored(_message.Message):
    __slots__ = ("scores", "totals", "pain")
    SCORES_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    PAIN_FIELD_NUMBER: _ClassVar[int]
    scores: _containers.RepeatedScalarFieldContainer[int]
    totals: _containers.RepeatedScalarFieldContainer[int]
    pain: _containers.RepeatedCompositeFieldContainer[_game_pb2.PainPick]
    def __init__(self, scores: _Optional[_Iterable[int]] = ..., totals: _Optional[_Iterable[int]] = ..., pain: _Optional[_Iterable[_Union[_game_pb2.PainPick, _Mapping]]] = ...) -> None: ...

class SeatFault(_message.Message):
    __slots__ = ("seat", "reason", "strikes", "forfeited")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STRIKES_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_FIELD_NUMBER: _ClassVar[int]
    seat: int
    reason: str
    strikes: int
    forfeited: bool
    def __init__(self, seat: _Optional[int] = ..., reason: _Optional[str] = ..., strikes: _Optional[int] = ..., forfeited: _Optional[bool] = ...) -> None: ...

class MatchEnded(_message.Message):
    __slots__ = ("totals", "places", "reason", "seed", "seed_nonce")
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    PLACES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SEED_NONCE_FIELD_NUMBER: _ClassVar[int]
    totals: _containers.RepeatedScalarFieldContainer[int]
    places: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    seed: int
    seed_nonce: bytes
    def __init__(self, totals: _Optional[_Iterable[int]] = ..., places: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ..., seed: _Optional[int] = ..., seed_nonce: _Optional[bytes] = ...) -> None: ...

class SubmitHeader(_message.Message):
    __slots__ = ("bot", "format", "size", "sha256", "bot_file")
    BOT_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    BOT_FILE_FIELD_NUMBER: _ClassVar[int]
    bot: str
    format: str
    size: int
    sha256: str
    bot_file: str
    def __init__(self, bot: _Optional[str] = ..., format: _Optional[str] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ..., bot_file: _Optional[str] = ...) -> None: ...

class SubmitRequest(_message.Message):
    __slots__ = ("header", "chunk")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    header: SubmitHeader
    chunk: bytes
    def __init__(self, header: _Optional[_Union[SubmitHeader, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class Submission(_message.Message):
    __slots__ = ("bot", "number", "sha256", "status", "refusal", "report", "submitted_at", "decided_at", "build_sha256", "bot_file", "rating", "ci_low", "ci_high", "matches")
    BOT_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    DECIDED_AT_FIELD_NUMBER: _ClassVar[int]
    BUILD_SHA256_FIELD_NUMBER: _ClassVar[int]
    BOT_FILE_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    CI_LOW_FIELD_NUMBER: _ClassVar[int]
    CI_HIGH_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    bot: str
    number: int
    sha256: str
    status: str
    refusal: str
    report: str
    submitted_at: float
    decided_at: float
    build_sha256: str
    bot_file: str
    rating: float
    ci_low: float
    ci_high: float
    matches: int
    def __init__(self, bot: _Optional[str] = ..., number: _Optional[int] = ..., sha256: _Optional[str] = ..., status: _Optional[str] = ..., refusal: _Optional[str] = ..., report: _Optional[str] = ..., submitted_at: _Optional[float] = ..., decided_at: _Optional[float] = ..., build_sha256: _Optional[str] = ..., bot_file: _Optional[str] = ..., rating: _Optional[float] = ..., ci_low: _Optional[float] = ..., ci_high: _Optional[float] = ..., matches: _Optional[int] = ...) -> None: ...

class SubmitResponse(_message.Message):
    __slots__ = ("submission",)
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    submission: Submission
    def __init__(self, submission: _Optional[_Union[Submission, _Mapping]] = ...) -> None: ...

class SubmissionStatusRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class SubmissionStatusResponse(_message.Message):
    __slots__ = ("submissions",)
    SUBMISSIONS_FIELD_NUMBER: _ClassVar[int]
    submissions: _containers.RepeatedCompositeFieldContainer[Submission]
    def __init__(self, submissions: _Optional[_Iterable[_Union[Submission, _Mapping]]] = ...) -> None: ...

class ActivateSubmissionRequest(_message.Message):
    __slots__ = ("name", "submission")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    submission: int
    def __init__(self, name: _Optional[str] = ..., submission: _Optional[int] = ...) -> None: ...

class GetLogsRequest(_message.Message):
    __slots__ = ("name", "match_id", "submission")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    match_id: str
    submission: int
    def __init__(self, name: _Optional[str] = ..., match_id: _Optional[str] = ..., submission: _Optional[int] = ...) -> None: ...

class BotLog(_message.Message):
    __slots__ = ("kind", "submission", "match_id", "seats", "text", "truncated", "written_at")
    KIND_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_AT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    submission: int
    match_id: str
    seats: _containers.RepeatedScalarFieldContainer[int]
    text: str
    truncated: bool
    written_at: float
    def __init__(self, kind: _Optional[str] = ..., submission: _Optional[int] = ..., match_id: _Optional[str] = ..., seats: _Optional[_Iterable[int]] = ..., text: _Optional[str] = ..., truncated: _Optional[bool] = ..., written_at: _Optional[float] = ...) -> None: ...

class GetLogsResponse(_message.Message):
    __slots__ = ("logs", "retention_days")
    LOGS_FIELD_NUMBER: _ClassVar[int]
    RETENTION_DAYS_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[BotLog]
    retention_days: int
    def __init__(self, logs: _Optional[_Iterable[_Union[BotLog, _Mapping]]] = ..., retention_days: _Optional[int] = ...) -> None: ...

class EndSeasonRequest(_message.Message):
    __slots__ = ("deals", "max_matches", "parallel")
    DEALS_FIELD_NUMBER: _ClassVar[int]
    MAX_MATCHES_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_FIELD_NUMBER: _ClassVar[int]
    deals: int
    max_matches: int
    parallel: int
    def __init__(self, deals: _Optional[int] = ..., max_matches: _Optional[int] = ..., parallel: _Optional[int] = ...) -> None: ...

class CancelFinalRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Finalist(_message.Message):
    __slots__ = ("bot", "submission", "sha256")
    BOT_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    bot: str
    submission: int
    sha256: str
    def __init__(self, bot: _Optional[str] = ..., submission: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class Season(_message.Message):
    __slots__ = ("number", "started_at", "ended_at", "final", "status", "finalists", "deals", "table_size", "planned", "finished", "finished_at", "deal_key_commitment", "deal_key", "standings", "matches")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FINALISTS_FIELD_NUMBER: _ClassVar[int]
    DEALS_FIELD_NUMBER: _ClassVar[int]
    TABLE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PLANNED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    DEAL_KEY_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    DEAL_KEY_FIELD_NUMBER: _ClassVar[int]
    STANDINGS_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    number: int
    started_at: float
    ended_at: float
    final: str
    status: str
    finalists: _containers.RepeatedCompositeFieldContainer[Finalist]
    deals: int
    table_size: int
    planned: int
    finished: int
    finished_at: float
    deal_key_commitment: str
    deal_key: str
    standings: StandingsResponse
    matches: _containers.RepeatedCompositeFieldContainer[MatchSummary]
    def __init__(self, number: _Optional[int] = ..., started_at: _Optional[float] = ..., ended_at: _Optional[float] = ..., final: _Optional[str] = ..., status: _Optional[str] = ..., finalists: _Optional[_Iterable[_Union[Finalist, _Mapping]]] = ..., deals: _Optional[int] = ..., table_size: _Optional[int] = ..., planned: _Optional[int] = ..., finished: _Optional[int] = ..., finished_at: _Optional[float] = ..., deal_key_commitment: _Optional[str] = ..., deal_key: _Optional[str] = ..., standings: _Optional[_Union[StandingsResponse, _Mapping]] = ..., matches: _Optional[_Iterable[_Union[MatchSummary, _Mapping]]] = ...) -> None: ...

class SeasonsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SeasonsResponse(_message.Message):
    __slots__ = ("current", "current_since", "seasons")
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_SINCE_FIELD_NUMBER: _ClassVar[int]
    SEASONS_FIELD_NUMBER: _ClassVar[int]
    current: int
    current_since: float
    seasons: _containers.RepeatedCompositeFieldContainer[Season]
    def __init__(self, current: _Optional[int] = ..., current_since: _Optional[float] = ..., seasons: _Optional[_Iterable[_Union[Season, _Mapping]]] = ...) -> None: ...

class ChallengeRequest(_message.Message):
    __slots__ = ("name", "opponents", "matches")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPPONENTS_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    name: str
    opponents: _containers.RepeatedScalarFieldContainer[str]
    matches: int
    def __init__(self, name: _Optional[str] = ..., opponents: _Optional[_Iterable[str]] = ..., matches: _Optional[int] = ...) -> None: ...

class ChallengeResponse(_message.Message):
    __slots__ = ("match_ids", "watch", "left", "resets_at")
    MATCH_IDS_FIELD_NUMBER: _ClassVar[int]
    WATCH_FIELD_NUMBER: _ClassVar[int]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    RESETS_AT_FIELD_NUMBER: _ClassVar[int]
    match_ids: _containers.RepeatedScalarFieldContainer[str]
    watch: _containers.RepeatedScalarFieldContainer[str]
    left: int
    resets_at: float
    def __init__(self, match_ids: _Optional[_Iterable[str]] = ..., watch: _Optional[_Iterable[str]] = ..., left: _Optional[int] = ..., resets_at: _Optional[float] = ...) -> None: ...
