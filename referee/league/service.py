"""The league: a long-lived referee that bots join over the network (``referee serve``).

One gRPC port serves the bot protocol (``sticheln.v1.Referee``), the ``sticheln.v1.League``
service, health checking and reflection. A bot opens up to ``Hello.max_concurrent_matches``
streams with its bot token; the league's lobby (:mod:`referee.league.lobby`) is the server's
:class:`~referee.match.server.Lobby`: it admits those streams and keeps the idle ones, and
whenever ``table_size`` different bots can be seated the matchmaker
(:mod:`referee.league.matchmaking`) plans a match and dispatch (:mod:`referee.league.dispatch`)
plays it, lending the streams to the match runner like the tournament's bot pool does. A
stream serves one match at a time; when the match ends it is idle again. This module puts
the rooms together (:class:`League`) and starts and stops them in order.

Matches and ratings are the tournament's: the league is one "tournament" in the
:class:`~referee.results.store.Store` whose matches are planned one at a time as they
start. A match is marked running when it starts and stored, all of it in one transaction,
when it ends. The database is the league file's: a SQLite file or a PostgreSQL server
(:func:`~referee.results.store.open_store`, bot entries included). As in a
tournament, each database call is one short statement made from the event loop, in
autocommit mode, so the web pages and any other process reading the database see every
write at once. On SIGTERM the league stops starting matches, gives the running ones
``shutdown_grace_s`` to finish, and stops the rest; they stay planned in the database and
are replayed from the start (same seating, same match id, a new deal: the seats saw part
of the old one) as soon as their bots are connected again after a restart.

One league serves a database under its name: the league holds the store's league lock
(:meth:`~referee.results.store.Store.lock_league`) for its lifetime, and a second one is
refused at start. When the database goes away (a PostgreSQL store reconnects by itself a
few times first), a store call that still fails is one logged line and the league goes
on serving: no new match starts, a finished match's result is kept in memory and stored
as soon as the database is back (tried again every :data:`STORE_RETRY_S`), and one still
unsaved when the league stops is replayed at the next start like an interrupted match.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import grpc
import structlog

from referee.jail.sandbox import Sandbox
from referee.league.api import LEAGUE_SERVICE, LeagueServicer
from referee.league.challenge import Challenges
from referee.league.config import LeagueConfig
from referee.league.dispatch import LEASE_S, QUEUE_POLL_S, Dispatch
from referee.league.fairplay import FairPlayRoom
from referee.league.feed import MatchFeed, replay_feed
from referee.league.hosting import Hosting, hosted_mode
from referee.league.lobby import LAST_ANSWER_S, StreamLobby, league_intake
from referee.league.matchmaking import STORE_RETRY_S, Deals, Matchmaker, match_id_of
from referee.league.publishing import RECENT, Publisher
from referee.league.registry import BotEntry, BotRegistry
from referee.league.retention import Swept
from referee.league.scheduler import History
from referee.league.season import Seasons
from referee.league.submissions import REFUSED, RETIRED, MatchQueue, Submission, Submissions
from referee.league.uploads import MAX_UPLOADS, Uploads
from referee.match.dealkey import DealKey
from referee.match.metrics import RefereeMetrics
from referee.match.record import ReplayError, read_record
from referee.match.server import SERVICE_NAME, RefereeServer, Refused, TlsConfig
from referee.results.store import StoreError, open_store, redact
from referee.tournament.schedule import ScheduledMatch
from sticheln.v1 import league_pb2

__all__ = [
    "LAST_ANSWER_S",
    "LEAGUE_SERVICE",
    "LEASE_S",
    "MAX_UPLOADS",
    "QUEUE_POLL_S",
    "RECENT",
    "STORE_RETRY_S",
    "League",
    "LeagueServicer",
    "league_intake",
    "match_id_of",
]

log = structlog.get_logger("referee.league")


class League:
    """The league: its rooms put together, started and stopped in order.

    - :class:`~referee.league.lobby.StreamLobby`: the streams of dial-in bots;
    - :class:`~referee.league.matchmaking.Matchmaker`: who plays whom, and when;
    - :class:`~referee.league.dispatch.Dispatch`: where a match is played (here, or by a
      worker through the database's queue);
    - :class:`~referee.league.publishing.Publisher`: finished matches, ratings, standings
      and the records of finished matches;
    - :class:`~referee.league.hosting.Hosting` and :class:`~referee.league.uploads.Uploads`:
      hosted code, uploaded, built and validated (``[hosting] enabled``);
    - :class:`~referee.league.api.LeagueServicer`: the ``sticheln.v1.League`` service.
    """

    def __init__(self, config: LeagueConfig, metrics: RefereeMetrics | None = None) -> None:
        self.config = config
        self.metrics = metrics or RefereeMetrics()
        self.store = open_store(config.database)
        try:
            self.store.lock_league(config.name)
            self.registry = BotRegistry(self.store)
            self.submissions = Submissions(self.store)
            self.queue = MatchQueue(self.store, config.name)
        except BaseException:
            self.store.close()
            raise
        # The bots this league starts are hosted ones: in the strongest tier the machine
        # has ([sandbox] mode = "gvisor" insists on gVisor).
        sandbox = Sandbox(hosted_mode(config.sandbox) if config.hosting.enabled else config.sandbox)
        #: Hosted code ([hosting] enabled), else None.
        self.hosting: Hosting | None = None
        self.uploads: Uploads | None = None
        if config.hosting.enabled:
            self.hosting = Hosting(
                config.hosting,
                self.submissions,
                sandbox,
                config.out / "validation",
                config.clock.startup_ms / 1000,
                clock=config.clock,
                database=config.database,
                owner_of=self._owner_of,
            )
            self.hosting.on_decided.append(self._hosted_decided)
            self.hosting.on_swept.append(self._swept)
            self.uploads = Uploads(self.hosting, self.submissions, self._owner_of)
        #: Seasons and their finals (:mod:`referee.league.season`).
        self.seasons = Seasons(
            config,
            self.store,
            self.submissions,
            self.hosting,
            active=lambda bot: (e := self.registry.get(bot)) is not None and e.active,
        )
        self.deals = Deals()
        history = History()
        self.lobby = StreamLobby(config, self.registry, wake=lambda: self.matchmaker.wake())
        self.publisher = Publisher(
            config,
            self.store,
            self.metrics,
            history,
            retry_later=lambda: self.matchmaker.retry_later(),
        )
        #: The fair-play test, fed each match as it is counted (docs/fairplay.md); None
        #: with ``fairplay = false``.
        self.fairplay: FairPlayRoom | None = None
        if config.fairplay:
            self.fairplay = FairPlayRoom(
                config.out,
                flagged=lambda bot, on: self.metrics.fairplay_flagged.labels(bot).set(int(on)),
            )
            self.publisher.on_counted.append(self._judge)
        self.servicer = LeagueServicer(self)
        self.server = RefereeServer(
            handshake_timeout=config.handshake_timeout_s,
            observer=self.metrics,
            lobby=self.lobby,
            services=[(LEAGUE_SERVICE, self.servicer.handler())],
            sandbox=sandbox,
            intake=league_intake(config.max_seats_per_bot),
        )
        self.dispatch = Dispatch(
            config,
            self.store,
            self.metrics,
            self.server,
            self.deals,
            self.lobby,
            self.publisher,
            self.submissions,
            self.queue,
            self.hosting,
            wake=lambda: self.matchmaker.wake(),
            replay=lambda m, new_deal: self.matchmaker.replay(m, new_deal),
        )
        self.matchmaker = Matchmaker(
            config,
            self.store,
            self.registry,
            self.submissions,
            self.lobby,
            self.dispatch,
            self.publisher,
            self.deals,
            history,
        )
        #: Matches on demand (``referee league challenge``), seated by the matchmaker.
        self.challenges = Challenges(
            config,
            self.store,
            self.registry,
            self.lobby,
            self.dispatch,
            lambda: self.matchmaker.playing,
            lambda: self.matchmaker.wake(),
        )
        self.matchmaker.challenges = self.challenges
        #: The web pages' address ("" when the league serves none): challenges link to them.
        self.web_address = ""
        self._stopping = False

    # -- start and stop ---------------------------------------------------------------------

    def fingerprint(self) -> dict[str, Any]:
        """What must not change while a league lives (its ratings compare like with like)."""
        c = self.config
        return {
            "league": True,
            "rules": c.rules.to_table(),
            "table_size": c.table_size,
            "strike_limit": c.strike_limit,
            "clock": {
                "decision_ms": c.clock.decision_ms,
                "time_bank_ms": c.clock.time_bank_ms,
                "startup_ms": c.clock.startup_ms,
            },
        }

    async def start(self) -> None:
        """Open the database (replays planned from an interrupted run), then serve."""
        c = self.config
        fingerprint = self.fingerprint()
        digest = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()
        self.store.open_tournament(c.name, fingerprint, digest)
        key = self.key = self.store.deal_key(c.name)
        interrupted = self.store.reset_interrupted(c.name)
        rows = self.store.match_rows(c.name)
        self.deals.next_index = max((r["idx"] for r in rows), default=-1) + 1
        self.deals.next_deal = max((r["deal"] for r in rows), default=-1) + 1
        for r in rows:
            if r["status"] == "planned":
                # A league plans a match when it starts it, so every planned match was
                # interrupted: its bots saw part of the deal, and it is replayed with a new
                # one (a deal number no match has used).
                seating = tuple(json.loads(r["seating"]))
                deal = self.deals.take()
                self.store.set_deal(c.name, r["idx"], deal, key.match_seed(deal))
                self.matchmaker.replays.append(
                    ScheduledMatch(r["idx"], tuple(sorted(seating)), seating, deal)
                )
        results = self.store.results(c.name, think=False)
        self.publisher.load(results)
        if self.fairplay is not None:
            for r in rows:  # finished matches the fair-play test has not counted yet
                if r["status"] == "finished" and r["record_path"]:
                    self.fairplay.add(r["match_id"], Path(r["record_path"]))
            self.fairplay.start()
        self.metrics.decision_limit.set(c.clock.decision_ms / 1000)
        if results:
            await self.publisher.publish()
        voided = self.queue.void_unfinished()
        self.matchmaker.refresh_playing()
        self.challenges.load()
        revalidating = self.hosting.resume() if self.hosting is not None else 0
        if self.hosting is not None:
            self.hosting.start_sweeping()
        finals = self.seasons.resume() if self.hosting is not None else 0
        tls = TlsConfig(c.tls_cert, c.tls_key) if c.tls_cert and c.tls_key else None
        await self.server.start(c.host, c.port, tls)
        self.matchmaker.start()
        self.dispatch.start()
        log.info(
            "league_start",
            league=c.name,
            database=redact(c.database),
            deal_key_commitment=key.commitment(),
            address=self.server.address,
            finished=self.publisher.finished_count,
            replays=len(self.matchmaker.replays),
            replaying_interrupted=interrupted,
            bots=len(self.registry.entries()),
            hosting=c.hosting.enabled,
            hosted=len(self.matchmaker.playing),
            revalidating=revalidating,
            finals_resumed=finals,
            queue_voided=len(voided),
        )

    async def stop(self) -> None:
        """Stop: no new match; running ones get the grace period, the rest are replayed later."""
        self._stopping = True
        self.lobby.closing = True
        self.publisher.hold()
        for service in ("", SERVICE_NAME, LEAGUE_SERVICE):  # health checks see it go at once
            await self.server.set_serving(service, False)
        await self.matchmaker.stop()
        await self.seasons.stop()  # a final's finished matches stay; the next start plays on
        if self.hosting is not None:
            await self.hosting.stop()
        await self.dispatch.stop(self.config.shutdown_grace_s)
        interrupted: int | None = None
        if self.publisher.save_unsaved():
            try:
                interrupted = self.store.reset_interrupted(self.config.name)
            except StoreError as exc:
                log.error("store_failed", doing="reset the interrupted matches", error=str(exc))
        else:
            # They are "running" in the database: the next start replays them.
            log.error(
                "results_not_saved",
                matches=[match_id for _, match_id, _ in self.publisher.unsaved],
                replayed="at the next start",
            )
        if self.fairplay is not None:
            await self.fairplay.stop()
        await self.lobby.close()
        await self.publisher.close()
        await self.server.stop(1.0)
        self.store.close()
        log.info("league_stopped", finished=self.publisher.finished_count, interrupted=interrupted)

    # -- what the rooms share ----------------------------------------------------------------

    @property
    def key(self) -> DealKey | None:
        """The league's secret deal key, from its database (made when the league was
        created)."""
        return self.deals.key

    @key.setter
    def key(self, value: DealKey | None) -> None:
        self.deals.key = value

    @property
    def waiting(self) -> str:
        """Why no match can start while none runs (the seating rules), or ""."""
        return self.matchmaker.waiting

    @property
    def queued(self) -> int:
        """Matches of hosted bots waiting for a worker (read once a second)."""
        return self.dispatch.queued

    @property
    def _finished(self) -> int:
        return self.publisher.finished_count

    @_finished.setter
    def _finished(self, value: int) -> None:
        self.publisher.finished_count = value

    async def _publish(self) -> None:
        await self.publisher.publish()

    def _judge(self, match_id: str) -> None:
        """A counted match goes to the fair-play test."""
        try:
            path = self.publisher.record_path(match_id)
        except Refused as exc:  # the database is away: the next start catches up
            log.warning("fairplay_record_unknown", match_id=match_id, error=str(exc))
            return
        if path is not None and self.fairplay is not None:
            self.fairplay.add(match_id, path)

    def _hosted_decided(self, bot: str, seconds: float) -> None:
        """A submission was decided: the playing set may have changed."""
        try:
            self.matchmaker.refresh_playing()
        except StoreError as exc:
            log.error("store_failed", doing="read the playing submissions", error=str(exc))
        playing = bot in self.matchmaker.playing
        self.metrics.submissions.labels("playing" if playing else "refused").inc()
        self.metrics.validation.observe(seconds)
        self.dispatch.retire_warm()
        self.matchmaker.wake()

    def _swept(self, swept: Swept) -> None:
        """The store's size after a sweep (``sticheln_hosted_store_bytes``)."""
        self.metrics.store_bytes.labels("database").set(swept.database_bytes)
        self.metrics.store_bytes.labels("code_dir").set(swept.code_dir_bytes)

    def _owner_of(self, bot: str) -> str:
        """The owner of entry ``bot`` (an entry without one is its own)."""
        entry = self.registry.get(bot)
        return (entry.owner if entry is not None else "") or f"entry {bot}"

    def connected(self, bot: str) -> int:
        """Open streams of ``bot``."""
        return self.lobby.connected(bot)

    def revoked(self, entry: BotEntry) -> None:
        """End the idle streams of a revoked bot (busy ones end after their match), and
        stop its warm processes."""
        self.lobby.revoked(entry)
        self.dispatch.retire_warm()

    # -- what the League service and the pages read ------------------------------------------

    def standings(self) -> league_pb2.StandingsResponse:
        """The published standings."""
        return self.publisher.standings()

    def recent(self, limit: int) -> league_pb2.RecentMatchesResponse:
        """The latest finished matches, newest first, and the running ones."""
        return self.publisher.recent(limit, list(self.dispatch.running))

    def finished_count(self) -> int:
        """Matches finished in this league so far."""
        return self.publisher.finished_count

    def running_seating(self) -> dict[str, tuple[str, ...]]:
        """The running matches' seating, by match id."""
        return self.dispatch.seating()

    def record_path(self, match_id: str) -> Path:
        """A finished match's record file; a running match is refused (its record holds
        the hands)."""
        if match_id in self.dispatch.running:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"match {match_id!r} is still running; watch it with WatchMatch",
            )
        path = self.publisher.record_path(match_id) or self._challenge_record(match_id)
        if path is None:
            path = self.seasons.record_path(match_id)  # a final's match, once it has ended
        if path is None:
            raise Refused(
                grpc.StatusCode.NOT_FOUND, f"no finished match {match_id!r} in this league"
            )
        return path

    def _challenge_record(self, match_id: str) -> Path | None:
        """A finished challenge's record, or None."""
        try:
            return self.challenges.record_path(match_id)
        except StoreError as exc:
            raise Refused(grpc.StatusCode.UNAVAILABLE, str(exc)) from None

    def record(self, match_id: str) -> tuple[league_pb2.MatchSummary, str]:
        """A finished match's summary and record text."""
        return self.publisher.record(match_id, self.record_path(match_id))

    def feed(self, match_id: str) -> MatchFeed:
        """The feed of a running match, or of a finished one replayed from its record."""
        live = self.dispatch.live_feed(match_id)
        if live is not None:
            return live
        path = self._challenge_record(match_id)
        if path is not None:
            try:
                return replay_feed(match_id, list(read_record(path)))
            except (OSError, ReplayError) as exc:
                raise Refused(
                    grpc.StatusCode.DATA_LOSS, f"the record of {match_id!r} cannot be read: {exc}"
                ) from None
        return self.publisher.replayed_feed(match_id)

    def bot_message(
        self, entry: BotEntry, latest: dict[str, Submission] | None = None
    ) -> league_pb2.Bot:
        """The ``Bot`` message of an entry (``latest``: every entry's latest submission,
        read once for a list)."""
        if latest is None:
            latest = self.submissions.latest_by_bot()
        sub = latest.get(entry.name)
        connected = self.connected(entry.name)
        msg = league_pb2.Bot(
            name=entry.name,
            owner=entry.owner,
            description=entry.description,
            previous_version=entry.previous,
            version=entry.version,
            active=entry.active,
            connected_streams=connected,
            registered_at=entry.registered_at,
            matches=self.matchmaker.history.matches.get(entry.name, 0),
            status="connected" if connected else "offline",
        )
        if sub is not None:
            playing = self.matchmaker.playing.get(entry.name)
            msg.hosted = True
            msg.submission = sub.number
            msg.sha256 = sub.sha256
            msg.status = sub.status if entry.active else RETIRED
            msg.refusal = sub.refusal if sub.status == REFUSED else ""
            msg.playing_submission = playing.number if playing is not None else 0
        return msg

    def submission_message(self, s: Submission) -> league_pb2.Submission:
        """The ``Submission`` message of a stored submission, with its own rating as
        last published (NaN while it has none)."""
        rated = next(
            (
                r
                for r in self.publisher.standings().submissions
                if r.bot == s.bot and r.submission == s.number
            ),
            None,
        )
        nan = math.nan
        return league_pb2.Submission(
            rating=rated.rating if rated is not None else nan,
            ci_low=rated.ci_low if rated is not None else nan,
            ci_high=rated.ci_high if rated is not None else nan,
            matches=rated.matches if rated is not None else 0,
            bot=s.bot,
            number=s.number,
            sha256=s.sha256,
            status=s.status,
            refusal=s.refusal,
            report=s.report,
            submitted_at=s.submitted_at,
            decided_at=s.decided_at or 0.0,
            build_sha256=s.build_sha256,
            bot_file=s.bot_file,
        )
