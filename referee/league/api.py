"""The ``sticheln.v1.League`` service: thin; the league's rooms hold the state.

Admin calls (register, new version, revoke, end a season) need the league's admin token; a bot's own
calls (Submit, SubmissionStatus) its bot token; the rest are public. Domain errors map to
gRPC status codes in one place (:func:`_mapped`).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import grpc
import structlog

from referee.league.archive import ArchiveRefused
from referee.league.publishing import RECENT
from referee.league.registry import BotEntry, RegistryError
from referee.league.season import DEFAULT_DEALS, SeasonRefused
from referee.league.uploads import client_address
from referee.match.server import Refused
from referee.results.store import StoreError
from sticheln.v1 import league_pb2

if TYPE_CHECKING:
    from referee.league.service import League

log = structlog.get_logger("referee.league")

LEAGUE_SERVICE = "sticheln.v1.League"

_REGISTRY_CODES = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "exists": grpc.StatusCode.ALREADY_EXISTS,
    "not_found": grpc.StatusCode.NOT_FOUND,
}

Context = grpc.aio.ServicerContext[Any, Any]


def _mapped(
    fn: Callable[[Any, Context], Awaitable[Any]],
) -> Callable[[Any, Context], Awaitable[Any]]:
    """Domain errors to gRPC status codes, in one place."""

    async def call(request: Any, context: Context) -> Any:
        try:
            return await fn(request, context)
        except Refused as exc:
            await context.abort(exc.code, exc.message)
        except RegistryError as exc:
            await context.abort(_REGISTRY_CODES[exc.kind], str(exc))
        except StoreError as exc:  # the database is away: the call may work again later
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))

    return call


class LeagueServicer:
    """``sticheln.v1.League``: thin; the league holds the state."""

    def __init__(self, league: League) -> None:
        self.league = league
        #: Every entry's latest submission as last read (ListBots while the database is away).
        self._latest: dict[str, Any] = {}

    def _admin(self, context: Context) -> None:
        """Refuse unless the call carries the admin token."""
        metadata = {k.lower(): v for k, v in (context.invocation_metadata() or ())}
        auth = metadata.get("authorization", "")
        if isinstance(auth, bytes):
            auth = auth.decode("utf-8", "replace")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                "an admin call needs the league's admin token as metadata 'authorization: Bearer <token>'",
            )
        token = auth[7:].strip()
        admin = self.league.config.admin_token
        if secrets.compare_digest(token.encode(), admin.encode()):
            return
        if self.league.registry.by_token(token) is not None:
            raise Refused(
                grpc.StatusCode.PERMISSION_DENIED,
                "a bot token cannot make admin calls; use the league's admin token",
            )
        raise Refused(grpc.StatusCode.UNAUTHENTICATED, "the admin token is not valid")

    async def RegisterBot(
        self, request: league_pb2.RegisterBotRequest, context: Context
    ) -> league_pb2.RegisterBotResponse:
        self._admin(context)
        entry, token = self.league.registry.register(
            request.name, request.owner, request.description
        )
        log.info("bot_registered", bot=entry.name, owner=entry.owner)
        return league_pb2.RegisterBotResponse(bot=self.league.bot_message(entry), token=token)

    async def RegisterVersion(
        self, request: league_pb2.RegisterVersionRequest, context: Context
    ) -> league_pb2.RegisterBotResponse:
        self._admin(context)
        entry, token = self.league.registry.register_version(
            request.previous_version, request.name, request.description
        )
        log.info("bot_version_registered", bot=entry.name, previous=entry.previous)
        return league_pb2.RegisterBotResponse(bot=self.league.bot_message(entry), token=token)

    async def RevokeToken(
        self, request: league_pb2.RevokeTokenRequest, context: Context
    ) -> league_pb2.RevokeTokenResponse:
        self._admin(context)
        entry = self.league.registry.revoke(request.name)
        self.league.revoked(entry)
        log.info("bot_revoked", bot=entry.name)
        return league_pb2.RevokeTokenResponse(bot=self.league.bot_message(entry))

    async def ListBots(
        self, request: league_pb2.ListBotsRequest, context: Context
    ) -> league_pb2.ListBotsResponse:
        try:
            latest = self._latest = self.league.submissions.latest_by_bot()
        except StoreError:
            # The league serves on while its database is away: submissions as last read.
            latest = self._latest
        return league_pb2.ListBotsResponse(
            bots=[self.league.bot_message(e, latest) for e in self.league.registry.entries()]
        )

    def _bearer(self, context: Context) -> str:
        metadata = {k.lower(): v for k, v in (context.invocation_metadata() or ())}
        auth = metadata.get("authorization", "")
        if isinstance(auth, bytes):
            auth = auth.decode("utf-8", "replace")
        return str(auth[7:]).strip() if auth.startswith("Bearer ") else ""

    def _entry_of_token(self, context: Context, what: str) -> BotEntry:
        """The active entry whose bot token the call carries; UNAUTHENTICATED otherwise."""
        token = self._bearer(context)
        if not token:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                f"{what} needs the entry's bot token as metadata 'authorization: Bearer "
                "<token>' (STICHELN_BOT_TOKEN for referee league submit)",
            )
        entry = self.league.registry.by_token(token)
        if entry is None:
            raise Refused(grpc.StatusCode.UNAUTHENTICATED, "the bot token is not valid")
        if not entry.active:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                f"the token of bot {entry.name!r} was revoked; ask the league's administrator "
                "for a new version",
            )
        return entry

    async def Submit(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], context: Context
    ) -> league_pb2.SubmitResponse:
        try:
            uploads = self.league.uploads
            if uploads is None:
                raise Refused(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    "this league hosts no bots ([hosting] enabled = false); connect your bot "
                    "instead",
                )
            entry = self._entry_of_token(context, "a submission")
            sub = await uploads.receive(requests, entry, client_address(context.peer()))
            return league_pb2.SubmitResponse(submission=self.league.submission_message(sub))
        except Refused as exc:
            await context.abort(exc.code, exc.message)
        except StoreError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        raise AssertionError("unreachable")  # abort raises

    def _owner_or_admin(self, context: Context, name: str, what: str) -> None:
        """The call carries ``name``'s bot token or the admin token, and ``name`` is
        registered; Refused (or a registry error) otherwise."""
        token = self._bearer(context)
        admin = self.league.config.admin_token
        if not (token and secrets.compare_digest(token.encode(), admin.encode())):
            entry = self.league.registry.by_token(token) if token else None
            if entry is None or entry.name != name:
                raise Refused(
                    grpc.StatusCode.PERMISSION_DENIED
                    if entry is not None
                    else grpc.StatusCode.UNAUTHENTICATED,
                    f"{what} of {name!r} are read with its bot token or the admin token "
                    "('authorization: Bearer <token>')",
                )
        if self.league.registry.get(name) is None:
            raise RegistryError(f"no bot named {name!r} is registered", "not_found")

    async def SubmissionStatus(
        self, request: league_pb2.SubmissionStatusRequest, context: Context
    ) -> league_pb2.SubmissionStatusResponse:
        self._owner_or_admin(context, request.name, "the submissions")
        history = self.league.submissions.history(request.name)
        return league_pb2.SubmissionStatusResponse(
            submissions=[self.league.submission_message(s) for s in history]
        )

    async def ActivateSubmission(
        self, request: league_pb2.ActivateSubmissionRequest, context: Context
    ) -> league_pb2.SubmitResponse:
        hosting = self.league.hosting
        if hosting is None:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this league hosts no bots ([hosting] enabled = false)",
            )
        self._owner_or_admin(context, request.name, "the submissions")
        entry = self.league.registry.get(request.name)
        if entry is not None and not entry.active:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION, f"bot {request.name!r} was revoked")
        try:
            s = self.league.submissions.reactivate(request.name, request.submission)
        except LookupError as exc:
            raise Refused(grpc.StatusCode.NOT_FOUND, str(exc).strip("'\"")) from None
        except ValueError as exc:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION, str(exc)) from None
        log.info("submission_activated", bot=s.bot, submission=s.number, sha256=s.sha256)
        hosting.validate_later(s)
        return league_pb2.SubmitResponse(submission=self.league.submission_message(s))

    async def GetLogs(
        self, request: league_pb2.GetLogsRequest, context: Context
    ) -> league_pb2.GetLogsResponse:
        self._owner_or_admin(context, request.name, "the logs")
        league = self.league
        response = league_pb2.GetLogsResponse(
            retention_days=league.config.hosting.log_retention_days
        )
        logs = league.dispatch.bot_logs
        for kept in logs.of(request.name, request.match_id, request.submission):
            response.logs.add(
                kind="match",
                submission=kept.submission,
                match_id=kept.match_id,
                seats=kept.seats,
                text=kept.text,
                truncated=kept.truncated,
                written_at=kept.written_at,
            )
        if not request.match_id:
            for sub in league.submissions.history(request.name):
                if request.submission and sub.number != request.submission:
                    continue
                response.logs.add(
                    kind="validation",
                    submission=sub.number,
                    text=sub.report or sub.refusal or sub.status,
                    written_at=sub.decided_at or sub.submitted_at,
                )
        return response

    async def EndSeason(
        self, request: league_pb2.EndSeasonRequest, context: Context
    ) -> league_pb2.Season:
        self._admin(context)
        seasons = self.league.seasons
        try:
            season = await seasons.end(
                request.deals or DEFAULT_DEALS, request.max_matches, request.parallel
            )
        except SeasonRefused as exc:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION, str(exc)) from None
        except ArchiveRefused as exc:  # a frozen submission's code is gone from the store
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION, str(exc)) from None
        return seasons.message(season)

    async def CancelFinal(
        self, request: league_pb2.CancelFinalRequest, context: Context
    ) -> league_pb2.Season:
        self._admin(context)
        seasons = self.league.seasons
        try:
            season = await seasons.cancel()
        except SeasonRefused as exc:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION, str(exc)) from None
        return seasons.message(season)

    async def Seasons(
        self, request: league_pb2.SeasonsRequest, context: Context
    ) -> league_pb2.SeasonsResponse:
        return self.league.seasons.response()

    async def Challenge(
        self, request: league_pb2.ChallengeRequest, context: Context
    ) -> league_pb2.ChallengeResponse:
        entry = self._entry_of_token(context, "a challenge")
        if request.name and request.name != entry.name:
            raise Refused(
                grpc.StatusCode.PERMISSION_DENIED,
                f"the token is {entry.name!r}'s, not {request.name!r}'s",
            )
        asked = self.league.challenges.ask(
            entry.name, list(request.opponents), request.matches or 1
        )
        web = self.league.web_address
        return league_pb2.ChallengeResponse(
            match_ids=asked.match_ids,
            watch=[f"{web}match?id={quote(i, safe='')}" for i in asked.match_ids] if web else [],
            left=asked.left,
            resets_at=asked.resets_at,
        )

    async def Standings(
        self, request: league_pb2.StandingsRequest, context: Context
    ) -> league_pb2.StandingsResponse:
        return self.league.standings()

    async def RecentMatches(
        self, request: league_pb2.RecentMatchesRequest, context: Context
    ) -> league_pb2.RecentMatchesResponse:
        limit = request.limit or 20
        return self.league.recent(min(limit, RECENT))

    async def GetMatchRecord(
        self, request: league_pb2.GetMatchRecordRequest, context: Context
    ) -> league_pb2.GetMatchRecordResponse:
        summary, text = self.league.record(request.match_id)
        return league_pb2.GetMatchRecordResponse(summary=summary, record_jsonl=text)

    async def WatchMatch(self, request: league_pb2.WatchMatchRequest, context: Context) -> None:
        try:
            feed = self.league.feed(request.match_id)
        except Refused as exc:
            await context.abort(exc.code, exc.message)
            return
        # The league's delay holds for every spectator door; a watcher may ask for more.
        delay = max(request.delay_rounds, self.league.config.web_delay_rounds)
        messages: AsyncIterator[league_pb2.WatchMatchResponse] = feed.watch(delay)
        async for msg in messages:
            await context.write(msg)

    def handler(self) -> grpc.GenericRpcHandler[Any, Any]:
        """The generic handler registering every method on the server."""
        unary: dict[str, tuple[Callable[[Any, Context], Awaitable[Any]], Any]] = {
            "RegisterBot": (self.RegisterBot, league_pb2.RegisterBotRequest),
            "RegisterVersion": (self.RegisterVersion, league_pb2.RegisterVersionRequest),
            "RevokeToken": (self.RevokeToken, league_pb2.RevokeTokenRequest),
            "ListBots": (self.ListBots, league_pb2.ListBotsRequest),
            "Standings": (self.Standings, league_pb2.StandingsRequest),
            "RecentMatches": (self.RecentMatches, league_pb2.RecentMatchesRequest),
            "GetMatchRecord": (self.GetMatchRecord, league_pb2.GetMatchRecordRequest),
            "SubmissionStatus": (self.SubmissionStatus, league_pb2.SubmissionStatusRequest),
            "ActivateSubmission": (
                self.ActivateSubmission,
                league_pb2.ActivateSubmissionRequest,
            ),
            "GetLogs": (self.GetLogs, league_pb2.GetLogsRequest),
            "EndSeason": (self.EndSeason, league_pb2.EndSeasonRequest),
            "Seasons": (self.Seasons, league_pb2.SeasonsRequest),
            "CancelFinal": (self.CancelFinal, league_pb2.CancelFinalRequest),
            "Challenge": (self.Challenge, league_pb2.ChallengeRequest),
        }
        methods: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
            name: grpc.unary_unary_rpc_method_handler(
                _mapped(fn),
                request_deserializer=message.FromString,
                response_serializer=lambda m: m.SerializeToString(),
            )
            for name, (fn, message) in unary.items()
        }
        methods["Submit"] = grpc.stream_unary_rpc_method_handler(
            self.Submit,
            request_deserializer=league_pb2.SubmitRequest.FromString,
            response_serializer=lambda m: m.SerializeToString(),
        )
        methods["WatchMatch"] = grpc.unary_stream_rpc_method_handler(
            self.WatchMatch,
            request_deserializer=league_pb2.WatchMatchRequest.FromString,
            response_serializer=lambda m: m.SerializeToString(),
        )
        return grpc.method_handlers_generic_handler(LEAGUE_SERVICE, methods)
