"""Seasons: ``referee league season end`` freezes the entries' code and plays a final.

A league's ladder runs on without end; a season cuts it. Ending season N (the
organiser's ``EndSeason`` call, with the admin token):

1. freezes each active entry's playing submission: which submission, its upload's
   SHA-256 and the code a match unpacks (the build's output, or the upload itself) are
   stored in ``league_season_finalists``, so a later upload or rollback changes nothing in
   the final;
2. creates the final, a tournament of its own in the league's database named
   ``<league>-final-<N>``: a duplicate round robin of the frozen submissions, with the
   league's rules, clock and strike limit, ``deals`` deals per table (every deal played
   once per seat rotation); its secret deal key is made at once and its commitment
   returned (and published by ``Seasons``), the key itself only once every match of the
   final has ended;
3. starts season N+1 at once: the ladder goes on, its ratings unchanged.

The final is played by the tournament's own code (:func:`referee.tournament.run.run_tournament`)
in a process of its own (``python -m referee.league.season``, which dies with the league),
beside the ladder, its bots jailed in the league's hosted tier and started afresh for
every seating, the pages they read kept resident, as ``referee tournament`` plays a
duplicate tournament;
its records and exports (``ratings.json``, ``report.html``, ``deal-key.txt``) go to
``OUT/seasons/N/``, where ``referee verify OUT/seasons/N --commitment C`` audits it.
Its results are in the database as each match ends. A league stopped or killed during its
final plays on at its next start: the matches that finished stay finished, the ones
that were running are played again, and the standings are those of every match once.
When the last match has ended, the final's standings are stored in ``league_seasons``.

A final's match records are served (``GetMatchRecord``, the pages) only once the final
has ended: the seatings of a duplicate deal share their hands.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# First, so that structlog is imported without rich in the final's process
# (``python -m referee.league.season``), as in the ``referee`` command.
from referee.runtime import lean  # noqa: F401

# isort: split
import grpc
import structlog
from google.protobuf import json_format

from referee.jail.bots import BotSpec
from referee.league.submissions import Submission, Submissions
from referee.match.server import Refused
from referee.results.store import Store, StoredResult, StoreError
from referee.rules import RuleError
from referee.runtime import logs
from referee.tournament.config import TournamentConfig
from referee.tournament.schedule import make_schedule
from sticheln.v1 import league_pb2

if TYPE_CHECKING:
    from referee.league.config import LeagueConfig
    from referee.league.hosting import Hosting
    from referee.tournament.run import TournamentOutcome

log = structlog.get_logger("referee.league")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS league_seasons (
    league TEXT NOT NULL,
    season INTEGER NOT NULL,
    started_at {real} NOT NULL,
    ended_at {real} NOT NULL,
    final TEXT NOT NULL,
    deals INTEGER NOT NULL,
    table_size INTEGER NOT NULL,
    max_matches INTEGER NOT NULL,
    parallel INTEGER NOT NULL,
    status TEXT NOT NULL,
    finished_at {real},
    standings TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (league, season)
);
CREATE TABLE IF NOT EXISTS league_season_finalists (
    league TEXT NOT NULL,
    season INTEGER NOT NULL,
    bot TEXT NOT NULL,
    submission INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    code_sha256 TEXT NOT NULL,
    code_format TEXT NOT NULL,
    bot_file TEXT NOT NULL,
    PRIMARY KEY (league, season, bot)
);
"""

#: A final's status: being played, every match ended and its standings stored, or
#: cancelled by the organiser (the matches that had finished kept, no standings).
PLAYING, FINISHED, CANCELLED = "playing", "finished", "cancelled"
#: The statuses of a final that is over: its finished matches and its deal key are shown.
OVER = (FINISHED, CANCELLED)
#: Seconds before a final that failed or left matches aborted is played on.
RETRY_S = 30.0
#: Deals per table of a final unless the organiser gives another number.
DEFAULT_DEALS = 2
#: The most deals per table a final may have.
MAX_DEALS = 100


@dataclass(frozen=True)
class Finalist:
    """An entry's frozen submission."""

    bot: str
    submission: int
    sha256: str
    code_sha256: str
    code_format: str
    bot_file: str

    def as_submission(self) -> Submission:
        """The frozen code as the hosting room's :class:`Submission` (to unpack it)."""
        build = self.code_sha256 if self.code_sha256 != self.sha256 else ""
        fmt = "tar.gz" if build else self.code_format
        return Submission(
            self.bot, self.submission, self.sha256, fmt, self.bot_file, "", "", "", build, 0, None
        )


@dataclass(frozen=True)
class Season:
    """An ended season and its final."""

    number: int
    started_at: float
    ended_at: float
    final: str
    deals: int
    table_size: int
    max_matches: int
    parallel: int
    status: str
    finished_at: float | None
    #: The final's standings (a ``StandingsResponse`` as JSON), once it has ended.
    standings: str
    finalists: tuple[Finalist, ...]


def final_name(league: str, season: int) -> str:
    """The final's tournament name; its match ids are ``<name>-<index>``, which no
    match id of the ladder (``<league>-<6 digits>``) is."""
    return f"{league}-final-{season}"


def frozen_hashes(store: Store) -> set[str]:
    """The code of every final still being played (retention keeps it)."""
    store.create_tables(_SCHEMA)
    rows = store.execute(
        "SELECT f.sha256, f.code_sha256 FROM league_season_finalists f JOIN league_seasons s "
        "ON s.league = f.league AND s.season = f.season WHERE s.status = ?",
        (PLAYING,),
    ).fetchall()
    return {h for row in rows for h in row if h}


class SeasonRefused(Exception):
    """A season cannot end now; the message says why, in one line."""


class Seasons:
    """The league's seasons: ending one, playing its final, and what the pages read."""

    def __init__(
        self,
        config: LeagueConfig,
        store: Store,
        submissions: Submissions,
        hosting: Hosting | None,
        active: Callable[[str], bool],
    ) -> None:
        self.config = config
        self.store = store
        self.submissions = submissions
        self.hosting = hosting
        #: Whether an entry may play (its token not revoked).
        self.active = active
        store.create_tables(_SCHEMA)
        #: The final being played, by season.
        self._finals: dict[int, asyncio.Task[None]] = {}
        self._ending = False
        #: Matches of a final just started, by season (before they are planned in the store).
        self._planned: dict[int, int] = {}
        #: Called when a final has ended, with its season.
        self.on_finished: list[Callable[[Season], None]] = []
        #: The seasons as last read (read again once a season or a final has ended).
        self._known: list[Season] | None = None
        #: The finished matches of each final that is over, by season (they never change).
        self._shown: dict[int, tuple[int, list[list[StoredResult]]]] = {}

    # -- what is stored -----------------------------------------------------------------

    def all(self) -> list[Season]:
        """Every ended season, the newest first."""
        league = self.config.name
        rows = self.store.execute(
            "SELECT season, started_at, ended_at, final, deals, table_size, max_matches, "
            "parallel, status, finished_at, standings FROM league_seasons WHERE league = ? "
            "ORDER BY season DESC",
            (league,),
        ).fetchall()
        finalists: dict[int, list[Finalist]] = {}
        for row in self.store.execute(
            "SELECT season, bot, submission, sha256, code_sha256, code_format, bot_file "
            "FROM league_season_finalists WHERE league = ? ORDER BY season, bot",
            (league,),
        ).fetchall():
            finalists.setdefault(int(row[0]), []).append(
                Finalist(row[1], int(row[2]), row[3], row[4], row[5], row[6])
            )
        return [
            Season(
                int(r[0]),
                float(r[1]),
                float(r[2]),
                r[3],
                int(r[4]),
                int(r[5]),
                int(r[6]),
                int(r[7]),
                r[8],
                None if r[9] is None else float(r[9]),
                r[10],
                tuple(finalists.get(int(r[0]), ())),
            )
            for r in rows
        ]

    def known(self) -> list[Season]:
        """Every ended season as last read, the newest first (what the lists ask often)."""
        if self._known is None:
            self._known = self.all()
        return self._known

    def changed(self) -> None:
        """A season or a final has ended: read them again when next asked."""
        self._known = None

    def final_lists(self) -> list[tuple[Season, int, int, list[list[StoredResult]]]]:
        """Each ended season's final as the matches lists show it, the newest first: the
        season, the final's finished and planned matches, and its finished matches' seat
        rows (in schedule order) once the final has ended; none while it is played (their
        records are refused then, and so is their place in a list)."""
        out: list[tuple[Season, int, int, list[list[StoredResult]]]] = []
        for s in self.known():
            if s.status == PLAYING:
                row = self.store.execute(
                    "SELECT COUNT(*), COALESCE(SUM(CASE WHEN status = 'finished' THEN 1 "
                    "ELSE 0 END), 0) FROM matches WHERE tournament = ?",
                    (s.final,),
                ).fetchone()
                planned = max(int(row[0]), self._planned.get(s.number, 0))
                out.append((s, int(row[1]), planned, []))
                continue
            if s.number not in self._shown:
                by_idx: dict[int, list[StoredResult]] = {}
                for seat in self.store.results(s.final, think=False):
                    by_idx.setdefault(seat.idx, []).append(seat)
                planned = len(self.store.match_rows(s.final))
                matches = [sorted(by_idx[i], key=lambda r: r.seat) for i in sorted(by_idx)]
                self._shown[s.number] = (planned, matches)
            planned, matches = self._shown[s.number]
            out.append((s, len(matches), planned, matches))
        return out

    def current(self, seasons: list[Season] | None = None) -> tuple[int, float]:
        """The season being played on the ladder now, and when it began."""
        seasons = self.all() if seasons is None else seasons
        if seasons:
            return seasons[0].number + 1, seasons[0].ended_at
        row = self.store.execute(
            "SELECT created_at FROM tournaments WHERE name = ?", (self.config.name,)
        ).fetchone()
        return 1, float(row[0]) if row is not None else 0.0

    def _season_of_match(self, match_id: str) -> tuple[Season, int] | None:
        """The season whose final ``match_id`` is, and the match's index in it."""
        head, _, number = match_id.rpartition("-")
        prefix = f"{self.config.name}-final-"
        if not number.isdigit() or not head.startswith(prefix):
            return None
        wanted = head[len(prefix) :]
        if not wanted.isdigit():
            return None
        season = next((s for s in self.all() if s.number == int(wanted)), None)
        if season is None or head != season.final:
            return None
        return season, int(number)

    def record_path(self, match_id: str) -> Path | None:
        """The record of a final's finished match, once the final has ended; None when
        ``match_id`` is no final's match."""
        found = self._season_of_match(match_id)
        if found is None:
            return None
        season, idx = found
        if season.status not in OVER:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"match {match_id!r} belongs to the final of season {season.number}, still "
                "being played; its records are shown once the final has ended (the seatings "
                "of a duplicate deal share their hands)",
            )
        return self.store.record_path(season.final, idx)

    # -- ending a season ----------------------------------------------------------------

    async def end(self, deals: int, max_matches: int = 0, parallel: int = 0) -> Season:
        """End the current season: freeze each active entry's playing submission, store
        the final and its deal key, start playing it; the season as stored."""
        if self.hosting is None:
            raise SeasonRefused(
                "this league hosts no bots ([hosting] enabled = false): a season's final plays "
                "the entries' uploaded code"
            )
        if not 1 <= deals <= MAX_DEALS:
            raise SeasonRefused(f"deals = {deals} is not allowed; allowed: 1 to {MAX_DEALS}")
        if max_matches < 0:
            raise SeasonRefused(f"max_matches = {max_matches} is not allowed; allowed: 0 or more")
        if self._ending:
            raise SeasonRefused("the season is being ended by another call")
        self._ending = True
        try:
            return await self._end(deals, max_matches, parallel)
        finally:
            self._ending = False

    async def _end(self, deals: int, max_matches: int, parallel: int) -> Season:
        assert self.hosting is not None
        seasons = self.all()
        running = [s for s in seasons if s.status == PLAYING]
        if running:
            s = running[0]
            done = len(self.store.finished_indices(s.final))
            planned = len(self.store.match_rows(s.final))
            raise SeasonRefused(
                f"the final of season {s.number} is still being played ({done} of {planned} "
                "matches); end the next season when it has ended"
            )
        number, started_at = self.current(seasons)
        playing = self.submissions.playing_by_bot()
        frozen = sorted((s for b, s in playing.items() if self.active(b)), key=lambda s: s.bot)
        rules = self.config.rules
        lo, hi = rules.player_range()
        table_size = min(self.config.table_size, len(frozen))
        try:
            rules.check_players(table_size)
        except RuleError:
            raise SeasonRefused(
                f"a final needs at least {lo} entries with a playing submission; "
                f"{len(frozen)} {'has' if len(frozen) == 1 else 'have'} one"
            ) from None
        table_size = min(table_size, hi)
        matches_per_table = deals * table_size
        if 0 < max_matches < matches_per_table:
            raise SeasonRefused(
                f"max_matches = {max_matches} is smaller than one table's {matches_per_table} "
                f"matches ({deals} deals x {table_size} seat rotations)"
            )
        finalists = [
            Finalist(s.bot, s.number, s.sha256, s.code_sha256, s.code_format, s.bot_file)
            for s in frozen
        ]
        # The code is unpacked (and checked) before anything is stored: a final never
        # starts with code the league cannot run.
        for f in finalists:
            await self.hosting.prepare(f.as_submission())
        season = Season(
            number=number,
            started_at=started_at,
            ended_at=time.time(),
            final=final_name(self.config.name, number),
            deals=deals,
            table_size=table_size,
            max_matches=max_matches,
            parallel=max(1, min(parallel or self.config.parallel, 64)),
            status=PLAYING,
            finished_at=None,
            standings="",
            finalists=tuple(finalists),
        )
        config = await self._final_config(season)
        league = self.config.name

        def store() -> None:
            self.store.execute(
                "INSERT INTO league_seasons (league, season, started_at, ended_at, final, "
                "deals, table_size, max_matches, parallel, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    league,
                    season.number,
                    season.started_at,
                    season.ended_at,
                    season.final,
                    deals,
                    table_size,
                    max_matches,
                    season.parallel,
                    PLAYING,
                ),
            )
            for f in finalists:
                self.store.execute(
                    "INSERT INTO league_season_finalists VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        league,
                        season.number,
                        f.bot,
                        f.submission,
                        f.sha256,
                        f.code_sha256,
                        f.code_format,
                        f.bot_file,
                    ),
                )
            # The final's deal key, made now: its commitment is published from this moment.
            self.store.open_tournament(config.name, config.fingerprint(), config.fingerprint_hash())
            self.store.deal_key(config.name)

        self.store.atomically(store)
        self.changed()
        self._planned[number] = len(make_schedule(config))
        key = self.store.stored_deal_key(config.name)
        log.info(
            "season_ended",
            league=league,
            season=number,
            final=season.final,
            finalists=[f"{f.bot}#{f.submission}" for f in finalists],
            deal_key_commitment=key.commitment() if key is not None else None,
        )
        self._start(season)
        return season

    async def cancel(self) -> Season:
        """Cancel the final being played: its status is ``cancelled`` at once (so neither
        this league nor its next start plays it on), its process is stopped (the matches
        it was playing are not finished), and the matches that had finished stay, shown
        with its deal key; another season may end afterwards. The season as stored."""
        running = [s for s in self.all() if s.status == PLAYING]
        if not running:
            raise SeasonRefused(
                "no final is being played; `referee league season list` shows the seasons"
            )
        season = running[0]
        now = time.time()
        # Before the process is stopped (no await in between): a final that ends meanwhile
        # is not stored as finished over the cancellation, nor one cancelled as finished.
        done = self.store.execute(
            "UPDATE league_seasons SET status = ?, finished_at = ? "
            "WHERE league = ? AND season = ? AND status = ?",
            (CANCELLED, now, self.config.name, season.number, PLAYING),
        )
        if done.rowcount != 1:
            raise SeasonRefused(
                f"the final of season {season.number} has just ended; it was not cancelled"
            )
        self.changed()
        task = self._finals.get(season.number)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._shown.pop(season.number, None)  # a match that finished meanwhile is shown
        self.changed()
        try:
            config = await self._final_config(season)
            await asyncio.to_thread(close_cancelled, config)
        except Exception as exc:  # the folder stays as the process left it
            log.warning(
                "season_final_exports_failed",
                league=self.config.name,
                season=season.number,
                error=str(exc) or type(exc).__name__,
            )
        finished = len(self.store.finished_indices(season.final))
        log.info(
            "season_final_cancelled",
            league=self.config.name,
            season=season.number,
            final=season.final,
            finished=finished,
            planned=max(
                len(self.store.match_rows(season.final)), self._planned.get(season.number, 0)
            ),
        )
        return dataclasses.replace(season, status=CANCELLED, finished_at=now)

    # -- playing finals -----------------------------------------------------------------

    def resume(self) -> int:
        """Play on every final a stopped league left unfinished; how many."""
        unfinished = [s for s in self.all() if s.status == PLAYING]
        for season in unfinished:
            log.info("season_final_resumed", league=self.config.name, season=season.number)
            self._start(season)
        return len(unfinished)

    def _start(self, season: Season) -> None:
        task = asyncio.ensure_future(self._play(season))
        self._finals[season.number] = task
        task.add_done_callback(lambda _: self._finals.pop(season.number, None))

    async def stop(self) -> None:
        """Stop the finals being played (their finished matches stay; the next start
        plays the rest)."""
        tasks = list(self._finals.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _final_config(self, season: Season) -> TournamentConfig:
        """The final as a tournament: the frozen code, the league's rules and clock."""
        from referee.league.hosting import hosted_mode

        assert self.hosting is not None
        c = self.config
        bots: list[BotSpec] = []
        for f in season.finalists:
            folder = await self.hosting.folder_async(f.code_sha256, f.as_submission().format)
            bots.append(finalist_spec(f.bot, folder / f.bot_file))
        out = c.out / "seasons" / str(season.number)
        return TournamentConfig(
            name=season.final,
            seed=season.number,
            table_size=season.table_size,
            matches_per_table=season.deals * season.table_size,
            mode="duplicate",
            max_matches=season.max_matches,
            parallel=season.parallel,
            strike_limit=c.strike_limit,
            rules=c.rules,
            clock=c.clock,
            bots=tuple(bots),
            out=out,
            database=str(c.database),
            anchor="",
            source=out / "final.toml",
            sandbox=hosted_mode(c.sandbox),
            # Every finalist plays as many matches: each is ranked.
            min_matches=0,
        )

    async def _play(self, season: Season) -> None:
        """Play the final until every match has ended (a failure is tried again)."""
        while True:
            try:
                config = await self._final_config(season)
                standings = await play_in_child(config, season)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database away, code gone, a match failed
                log.error(
                    "season_final_failed",
                    league=self.config.name,
                    season=season.number,
                    error=str(exc) or type(exc).__name__,
                    again_in_s=RETRY_S,
                )
                await asyncio.sleep(RETRY_S)
                continue
            if standings is not None:
                break
            log.warning(
                "season_final_incomplete",
                league=self.config.name,
                season=season.number,
                why="matches were aborted",
                again_in_s=RETRY_S,
            )
            await asyncio.sleep(RETRY_S)
        text = json_format.MessageToJson(standings, indent=None)
        finished_at = time.time()
        while True:
            try:
                # Not over a cancellation (CancelFinal marks it before it stops this task).
                self.store.execute(
                    "UPDATE league_seasons SET status = ?, finished_at = ?, standings = ? "
                    "WHERE league = ? AND season = ? AND status = ?",
                    (FINISHED, finished_at, text, self.config.name, season.number, PLAYING),
                )
                break
            except StoreError as exc:
                log.error("store_failed", doing="store a final's standings", error=str(exc))
                await asyncio.sleep(RETRY_S)
        self.changed()
        done = dataclasses.replace(season, status=FINISHED, finished_at=finished_at, standings=text)
        log.info(
            "season_final_finished",
            league=self.config.name,
            season=season.number,
            matches=standings.matches,
            winner=standings.standings[0].bot if standings.standings else None,
        )
        for fn in self.on_finished:
            fn(done)

    # -- what the League service and the pages read ------------------------------------

    def response(self) -> league_pb2.SeasonsResponse:
        """Every season: the current one, and each ended one with its final."""
        seasons = self.all()
        current, since = self.current(seasons)
        reply = league_pb2.SeasonsResponse(current=current, current_since=since)
        for s in seasons:
            reply.seasons.append(self.message(s))
        return reply

    def message(self, s: Season) -> league_pb2.Season:
        """One ended season as the ``Season`` message."""
        key = self.store.stored_deal_key(s.final)
        rows = self.store.match_rows(s.final)
        msg = league_pb2.Season(
            number=s.number,
            started_at=s.started_at,
            ended_at=s.ended_at,
            final=s.final,
            status=s.status,
            deals=s.deals,
            table_size=s.table_size,
            planned=max(len(rows), self._planned.get(s.number, 0)),
            finished=sum(1 for r in rows if r["status"] == "finished"),
            finished_at=s.finished_at or 0.0,
            deal_key_commitment=key.commitment() if key is not None else "",
        )
        for f in s.finalists:
            msg.finalists.add(bot=f.bot, submission=f.submission, sha256=f.sha256)
        if s.status in OVER:
            # The final has ended or was cancelled: its key and its matches are public now.
            msg.deal_key = key.hex() if key is not None else ""
            if s.standings:
                msg.standings.CopyFrom(
                    json_format.Parse(s.standings, league_pb2.StandingsResponse())
                )
            by_idx: dict[int, list[tuple[int, str, float, int]]] = {}
            for seat in self.store.results(s.final, think=False):
                by_idx.setdefault(seat.idx, []).append(
                    (seat.seat, seat.bot, seat.total, seat.place)
                )
            for row in rows:
                if row["status"] != "finished":  # a cancelled final's unplayed match
                    continue
                seats = sorted(by_idx.get(row["idx"], []))
                msg.matches.add(
                    match_id=row["match_id"],
                    seating=[b for _, b, _, _ in seats],
                    totals=[int(t) for _, _, t, _ in seats],
                    places=[p for _, _, _, p in seats],
                )
        return msg


def standings_message(outcome: TournamentOutcome) -> league_pb2.StandingsResponse:
    """A finished final's standings (as its ``ratings.json`` has them) as the league's
    ``StandingsResponse``."""
    response = league_pb2.StandingsResponse(matches=outcome.finished, published_at=time.time())
    for s in outcome.standings:
        st = outcome.stats[s.bot]
        response.standings.add(
            bot=s.bot,
            rating=s.rating,
            ci_low=s.ci_low,
            ci_high=s.ci_high,
            games=s.games,
            live_elo=outcome.live_elo.get(s.bot, math.nan),
            matches=st.matches,
            mean_place=st.mean_place,
            mean_score=st.mean_score,
            faults=st.faults,
            provisional=s.provisional,
            group=s.group,
            ci_low_open=s.low_open,
            ci_high_open=s.high_open,
            anchor=s.anchor,
            unidentified=s.unidentified,
            cut_share=s.cut_share,
        )
    return response


def close_cancelled(config: TournamentConfig) -> None:
    """The folder of a cancelled final (``config``), once its process has stopped: the
    records of the matches it was playing move to ``unfinished/`` (never finished, never
    shown), and the exports of the matches that finished are written with the deal key
    (``deal-key.txt``, ``ratings.json``, ``results.csv``…), so that ``referee verify``
    audits them. Run in a thread of its own, on a store connection of its own."""
    from referee.results.store import open_store
    from referee.tournament.run import export

    store = open_store(config.database)
    try:
        finished = {
            str(row["match_id"])
            for row in store.match_rows(config.name)
            if row["status"] == "finished"
        }
        unfinished = config.out / "unfinished"
        for path in sorted((config.out / "matches").glob("*.jsonl")):
            if path.stem not in finished:
                unfinished.mkdir(parents=True, exist_ok=True)
                path.replace(unfinished / path.name)
        export(config, store)
    finally:
        store.close()


def finalist_spec(bot: str, bot_file: Path) -> BotSpec:
    """The bot a finalist's frozen code starts, named as its entry (as the hosting room's
    :meth:`~referee.league.hosting.Hosting.spec`)."""
    from referee.config.bots import load_bot

    return dataclasses.replace(load_bot(bot_file), name=bot)


#: The final's process exit status when matches were aborted (played again later).
INCOMPLETE = 3


async def play_in_child(
    config: TournamentConfig, season: Season
) -> league_pb2.StandingsResponse | None:
    """Play ``config`` (a final) in a process of its own, as ``referee tournament`` plays a
    duplicate tournament: its own event loop, its bots' pages kept resident for the replayed
    deals (:mod:`referee.jail.resident`) there and not in the league. Its log lines go to
    the league's stderr. The final's standings once every match has ended; None when
    matches were aborted. A cancelled call (the league stops) kills the process: the
    final's finished matches are in the database, the next start plays the rest."""
    document = {
        "parent": os.getpid(),
        "log_level": logs.LEVEL,
        "name": config.name,
        "seed": config.seed,
        "table_size": config.table_size,
        "matches_per_table": config.matches_per_table,
        "max_matches": config.max_matches,
        "parallel": config.parallel,
        "strike_limit": config.strike_limit,
        "rules": config.rules.to_table(),
        "clock": dataclasses.asdict(config.clock),
        "out": str(config.out),
        "database": config.database,
        "sandbox": config.sandbox,
        "bots": [{"name": b.name, "file": b.source} for b in config.bots],
        "code": {f.bot: [f.submission, f.sha256] for f in season.finalists},
    }
    # On a plain pipe, written in full before the child starts (the database's URL may
    # hold a password: not in the process list).
    read_end, write_end = os.pipe()
    try:
        data = json.dumps(document).encode()
        with open(write_end, "wb", closefd=True) as pipe:
            pipe.write(data)  # far below a pipe's buffer
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "referee.league.season",
            stdin=read_end,
            stdout=asyncio.subprocess.PIPE,
        )
    finally:
        os.close(read_end)
    try:
        out, _ = await proc.communicate()
    except BaseException:  # cancelled: the league stops
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if proc.returncode == INCOMPLETE:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"the final's process exited with status {proc.returncode}")
    return league_pb2.StandingsResponse.FromString(out)


def main() -> int:
    """``python -m referee.league.season``: play a final described on stdin (JSON, from
    :func:`play_in_child`); its standings (a serialized ``StandingsResponse``) on stdout."""
    from referee.match.runner import Clock
    from referee.rules.ruleset import from_table
    from referee.runtime import eventloop
    from referee.runtime.parent import die_with
    from referee.tournament.run import run_tournament

    doc = json.loads(sys.stdin.buffer.read())
    if not die_with(int(doc["parent"])):
        return 1  # the league is gone already
    logs.configure(doc["log_level"])
    out = Path(doc["out"])
    config = TournamentConfig(
        name=doc["name"],
        seed=int(doc["seed"]),
        table_size=int(doc["table_size"]),
        matches_per_table=int(doc["matches_per_table"]),
        mode="duplicate",
        max_matches=int(doc["max_matches"]),
        parallel=int(doc["parallel"]),
        strike_limit=int(doc["strike_limit"]),
        rules=from_table(doc["rules"]),
        clock=Clock(**doc["clock"]),
        bots=tuple(finalist_spec(b["name"], Path(b["file"])) for b in doc["bots"]),
        out=out,
        database=doc["database"],
        anchor="",
        source=out / "final.toml",
        sandbox=doc["sandbox"],
        min_matches=0,
    )
    code = {bot: (int(n), str(sha)) for bot, (n, sha) in doc["code"].items()}
    outcome = eventloop.run(run_tournament(config, progress=False, workers=1, code=code))
    if not outcome.complete:
        return INCOMPLETE
    sys.stdout.buffer.write(standings_message(outcome).SerializeToString())
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
