"""The league's publishing: finished matches stored and counted, the standings fitted and
published, and the records of finished matches read back.

A finished match is stored in one transaction (:meth:`Publisher.finished`); while the
database is away it is kept in memory, oldest first, and stored as soon as the database
is back (:meth:`Publisher.save_unsaved`, which the matchmaker calls before it seats a
new match). A stored match counts: the scheduler's history, the live Elo ratings and
their metrics, the recent matches (``RecentMatches``), and a fresh fit of the standings
at most every ``publish_interval_s`` (:meth:`Publisher.publish`, fitted in a process of
its own by :func:`~referee.league.standings.fit_in_child`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import structlog

from referee.league.config import LeagueConfig
from referee.league.feed import MatchFeed, replay_feed
from referee.league.matchmaking import match_id_of
from referee.league.scheduler import History
from referee.league.standings import fit_in_child
from referee.league.submissions import SeatCodes
from referee.match.metrics import RefereeMetrics
from referee.match.record import ReplayError, read_record
from referee.match.runner import MatchResult
from referee.match.server import Refused
from referee.results.ratings import LiveElo, MatchOutcome
from referee.results.store import Store, StoredResult, StoreError
from referee.tournament.schedule import ScheduledMatch
from sticheln.v1 import league_pb2

log = structlog.get_logger("referee.league")

#: At most this many finished matches are kept in memory for ``RecentMatches``.
RECENT = 500


def _summary(
    match_id: str, rows: list[StoredResult], order: int, at: float
) -> league_pb2.MatchSummary:
    rows = sorted(rows, key=lambda r: r.seat)
    return league_pb2.MatchSummary(
        match_id=match_id,
        seating=[r.bot for r in rows],
        totals=[r.total for r in rows],
        places=[r.place for r in rows],
        forfeited_seats=[r.seat for r in rows if r.forfeited],
        finished_at=at,
        finish_order=order,
    )


class Publisher:
    """Finished matches, ratings and standings; the records of finished matches."""

    def __init__(
        self,
        config: LeagueConfig,
        store: Store,
        metrics: RefereeMetrics,
        history: History,
        *,
        retry_later: Callable[[], None],
    ) -> None:
        self.config = config
        self.store = store
        self.metrics = metrics
        self.history = history
        #: Called when the database refused a result (try again a while later).
        self._retry_later = retry_later
        #: Finished matches whose results the database did not take yet, oldest first.
        self.unsaved: list[tuple[ScheduledMatch, str, MatchResult]] = []
        self.elo = LiveElo()
        self._recent: collections.deque[league_pb2.MatchSummary] = collections.deque(maxlen=RECENT)
        #: Matches finished (and stored) in this league so far.
        self.finished_count = 0
        self._response = league_pb2.StandingsResponse()
        self._publishing: asyncio.Task[None] | None = None
        self._last_publish = -math.inf
        self._publish_timer: asyncio.TimerHandle | None = None
        self._stopping = False
        #: Called with each match id once the match is stored and counted.
        self.on_counted: list[Callable[[str], None]] = []
        #: Which submission played each hosted seat (named in the recent matches).
        self.seat_codes = SeatCodes(store, config.name)

    # -- at the start --------------------------------------------------------------------

    def load(self, results: list[StoredResult]) -> None:
        """Count the matches stored by earlier runs of the league."""
        by_match: dict[int, list[StoredResult]] = {}
        for res in results:
            by_match.setdefault(res.idx, []).append(res)
        for order, seat_rows in enumerate(by_match.values(), 1):
            ordered = sorted(seat_rows, key=lambda r: r.seat)
            seating = tuple(r.bot for r in ordered)
            self.history.add(seating)
            self.elo.update(
                MatchOutcome(
                    seating,
                    tuple(r.place for r in ordered),
                    forfeited=tuple(r.forfeited for r in ordered),
                )
            )
            self._recent.appendleft(_summary(seat_rows[0].match_id, seat_rows, order, 0.0))
        self.finished_count = len(by_match)
        self.metrics.finished.set(self.finished_count)
        for bot, value in self.elo.ratings().items():
            self.metrics.elo.labels(bot).set(value)

    def hold(self) -> None:
        """Publish no more (the league is stopping)."""
        self._stopping = True

    async def close(self) -> None:
        """Wait for a publication under way."""
        if self._publish_timer is not None:
            self._publish_timer.cancel()
            self._publish_timer = None
        if self._publishing is not None:
            with contextlib.suppress(Exception):
                await self._publishing

    # -- finished matches --------------------------------------------------------------------

    def finished(self, m: ScheduledMatch, match_id: str, result: MatchResult) -> None:
        """A match played here finished: store it (now, or when the database is back)."""
        self.unsaved.append((m, match_id, result))
        self.save_unsaved()

    def save_unsaved(self) -> bool:
        """Store the finished matches not stored yet, oldest first, and count each one
        stored; False when the database refused one (it is kept, and tried again in
        :data:`~referee.league.matchmaking.STORE_RETRY_S`)."""
        while self.unsaved:
            m, match_id, result = self.unsaved[0]
            try:
                self.store.save_result(self.config.name, m.index, result)
            except StoreError as exc:
                log.error(
                    "result_not_saved",
                    match_id=match_id,
                    unsaved=len(self.unsaved),
                    error=str(exc),
                )
                self._retry_later()
                return False
            self.unsaved.pop(0)
            self.counted(
                m,
                match_id,
                list(result.places),
                [s.forfeited for s in result.seats],
                list(result.totals),
                result.duration_s,
            )
        return True

    def counted(
        self,
        m: ScheduledMatch,
        match_id: str,
        places: list[int],
        forfeited: list[bool],
        totals: list[int],
        duration_s: float,
    ) -> None:
        """A stored match counts: history, ratings, metrics, recent matches, standings."""
        self.finished_count += 1
        self.history.add(m.seating)
        self.elo.update(
            MatchOutcome(m.seating, tuple(places), match_id, forfeited=tuple(forfeited))
        )
        for bot, value in self.elo.ratings().items():
            self.metrics.elo.labels(bot).set(value)
        self.metrics.matches.inc()
        self.metrics.finished.set(self.finished_count)
        self.metrics.match_duration.observe(duration_s)
        summary = league_pb2.MatchSummary(
            match_id=match_id,
            seating=list(m.seating),
            totals=totals,
            places=places,
            forfeited_seats=[i for i, f in enumerate(forfeited) if f],
            finished_at=time.time(),
            finish_order=self.finished_count,
        )
        self._name_code(summary, m.index)
        self._recent.appendleft(summary)
        log.info(
            "match_finished", match_id=match_id, places=places, duration_s=round(duration_s, 3)
        )
        self.request_publish()
        for hook in self.on_counted:
            hook(match_id)

    def _name_code(self, summary: league_pb2.MatchSummary, idx: int) -> None:
        """Name each seat's submission and code hash in ``summary`` (hosted seats)."""
        try:
            code = self.seat_codes.of_match(idx)
        except StoreError:
            return
        if code:
            seats = range(len(summary.seating))
            summary.submissions.extend(code[i].submission if i in code else 0 for i in seats)
            summary.sha256s.extend(code[i].sha256 if i in code else "" for i in seats)

    # -- the standings -----------------------------------------------------------------------

    def request_publish(self) -> None:
        """Publish fresh standings now, or once ``publish_interval_s`` has passed since the
        last publication (one fit at a time; a match finished while fitting asks again)."""
        if self._publishing is not None or self._publish_timer is not None or self._stopping:
            return
        wait = self._last_publish + self.config.publish_interval_s - time.monotonic()
        if wait <= 0:
            self._publishing = asyncio.ensure_future(self.publish())
        else:
            self._publish_timer = asyncio.get_running_loop().call_later(wait, self._publish_due)

    def _publish_due(self) -> None:
        self._publish_timer = None
        self.request_publish()

    async def publish(self) -> None:
        """Fit the standings from the database and publish them. The fit runs in a
        process of its own (:mod:`referee.league.standings`): it needs every match played
        so far, and memory this process used for it, even for a moment, would mostly stay
        with it; the league's process stays the same size however long it runs."""
        try:
            response = await fit_in_child(
                self.config.database,
                self.config.name,
                self.config.bootstrap,
                self.config.min_matches,
            )
        except Exception as exc:
            log.error("standings_failed", error=repr(exc))
            return
        finally:
            self._publishing = None
            self._last_publish = time.monotonic()
        self._response = response
        self.history.set_uncertainty({s.bot: s.ci_high - s.ci_low for s in response.standings})
        if self.finished_count > response.matches:
            # Matches finished while fitting: publish again once the interval is over.
            self.request_publish()

    def standings(self) -> league_pb2.StandingsResponse:
        """The published standings."""
        return self._response

    def recent(self, limit: int, running: list[str]) -> league_pb2.RecentMatchesResponse:
        """The latest finished matches, newest first, and the ``running`` ones."""
        response = league_pb2.RecentMatchesResponse(running=sorted(running))
        for i, summary in enumerate(self._recent):
            if i >= limit:
                break
            response.matches.append(summary)
        return response

    # -- records of finished matches ---------------------------------------------------------

    def record_path(self, match_id: str) -> Path | None:
        """The record of a finished match, from the database: the league keeps nothing
        per finished match in memory (it runs for weeks)."""
        _, _, number = match_id.rpartition("-")
        if not number.isdigit() or match_id != match_id_of(self.config.name, int(number)):
            return None
        try:
            return self.store.record_path(self.config.name, int(number))
        except StoreError as exc:
            raise Refused(grpc.StatusCode.UNAVAILABLE, str(exc)) from None

    def record(self, match_id: str, path: Path) -> tuple[league_pb2.MatchSummary, str]:
        """A finished match's summary and record text (its record at ``path``)."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise Refused(
                grpc.StatusCode.DATA_LOSS, f"the record of {match_id!r} cannot be read: {exc}"
            ) from None
        summary = next((s for s in self._recent if s.match_id == match_id), None)
        if summary is None:
            summary = league_pb2.MatchSummary(match_id=match_id)
            end = text.rstrip("\n").rsplit("\n", 1)[-1]
            header = json.loads(text.split("\n", 1)[0])
            summary.seating.extend(header.get("seating", []))
            summary.challenge = str(header.get("challenge", ""))
            code = header.get("code") or []
            if code:
                summary.submissions.extend((c or {}).get("submission", 0) for c in code)
                summary.sha256s.extend((c or {}).get("sha256", "") for c in code)
            with contextlib.suppress(ValueError):
                last = json.loads(end)
                summary.totals.extend(last.get("totals", []))
                summary.places.extend(last.get("places", []))
                summary.forfeited_seats.extend(last.get("forfeited", []))
        return summary, text

    def replayed_feed(self, match_id: str) -> MatchFeed:
        """The feed of a finished match, replayed from its record."""
        path = self.record_path(match_id)
        if path is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"no match {match_id!r} in this league")
        try:
            return replay_feed(match_id, list(read_record(path)))
        except (OSError, ReplayError) as exc:
            raise Refused(
                grpc.StatusCode.DATA_LOSS, f"the record of {match_id!r} cannot be read: {exc}"
            ) from None
