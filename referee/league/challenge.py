"""Matches on demand (``referee league challenge``, docs/league.md): an entry asks for a
few unrated matches against opponents it names.

A challenge is queued here (``league_challenges`` in the league's database) and seated by
the league's matchmaker as it seats its own matches, before them, as soon as every one of
its bots can sit: a dial-in bot on one of its idle streams, a hosted entry with its
playing submission. The league process plays it (hosted bots from its warm pool), with
the league's rules and clock and a fresh random deal that belongs to no deal key. Its
record is kept in ``out/matches/`` with ``challenge`` in its header, it is watched live
and replayed like any other match, and each hosted bot's stderr in it is kept with its
logs; but nothing of it enters the ``matches`` and ``results`` tables, so it never
changes ratings, standings or fair-play figures.

An entry may ask for ``[league] challenges_per_day`` matches per rolling 24 hours
(:mod:`referee.league.allowances`, kind ``challenge``); a refusal is one line that says
why, and when the allowance frees up. A challenge still queued after
:data:`WAIT_S` (an opponent's streams stayed busy or went away) is dropped as
``expired``; one interrupted by a stop is played again at the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import structlog

from referee.jail.bots import BotSpec
from referee.league.allowances import Allowance, when
from referee.league.config import LeagueConfig
from referee.league.feed import MatchFeed
from referee.league.lobby import LeagueStream, StreamLobby
from referee.league.registry import BotRegistry
from referee.league.submissions import Submission
from referee.league.worker import hosted_spec
from referee.match.runner import MatchRunner
from referee.match.server import Refused
from referee.results.store import Store, StoreError

if TYPE_CHECKING:
    from referee.league.dispatch import Dispatch

log = structlog.get_logger("referee.league")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS league_challenges (
    tournament TEXT NOT NULL,
    number INTEGER NOT NULL,
    match_id TEXT NOT NULL,
    bot TEXT NOT NULL,
    seating TEXT NOT NULL,
    status TEXT NOT NULL,
    record_path TEXT NOT NULL DEFAULT '',
    asked_at {real} NOT NULL,
    PRIMARY KEY (tournament, number)
);
"""

#: A challenge's statuses.
QUEUED, RUNNING, FINISHED, ABORTED, EXPIRED = "queued", "running", "finished", "aborted", "expired"
#: The most matches one ask may queue.
MAX_MATCHES = 5
#: A challenge not seated within this many seconds of its ask is dropped (``expired``).
WAIT_S = 600.0
#: The allowance's kind in ``league_usage``.
KIND = "challenge"


def challenge_id(league: str, number: int) -> str:
    """The id of the league's challenge number ``number``: ``<league>-challenge-<number>``."""
    return f"{league}-challenge-{number}"


@dataclass
class Challenge:
    """One match on demand."""

    number: int
    match_id: str
    #: The entry that asked for it.
    by: str
    seating: tuple[str, ...]
    asked_at: float


@dataclass(frozen=True)
class Asked:
    """What an ask queued, and the asker's allowance after it."""

    match_ids: list[str]
    left: int
    resets_at: float


class Challenges:
    """The league's challenges: asked for, queued, seated by the matchmaker, played here."""

    def __init__(
        self,
        config: LeagueConfig,
        store: Store,
        registry: BotRegistry,
        lobby: StreamLobby,
        dispatch: Dispatch,
        playing: Callable[[], dict[str, Submission]],
        wake: Callable[[], None],
    ) -> None:
        self.config = config
        self.store = store
        self.registry = registry
        self.lobby = lobby
        self.dispatch = dispatch
        #: The hosted entries' playing submissions (the matchmaker's).
        self._playing = playing
        #: Called when a challenge is queued (the matchmaker looks for a table).
        self._wake = wake
        store.create_tables(_SCHEMA)
        self.allowance = Allowance(store, KIND, config.challenges_per_day)
        #: Queued challenges, oldest first.
        self.queued: list[Challenge] = []

    # -- the database ------------------------------------------------------------------------

    def load(self) -> None:
        """Queue the challenges a former run left queued or running (those played again)."""
        name = self.config.name
        self.store.execute(
            "UPDATE league_challenges SET status = ? WHERE tournament = ? AND status = ?",
            (QUEUED, name, RUNNING),
        )
        rows = self.store.execute(
            "SELECT number, match_id, bot, seating, asked_at FROM league_challenges "
            "WHERE tournament = ? AND status = ? ORDER BY number",
            (name, QUEUED),
        ).fetchall()
        self.queued = [
            Challenge(int(n), str(m), str(b), tuple(json.loads(s)), float(at))
            for n, m, b, s, at in rows
        ]

    def _mark(self, c: Challenge, status: str, record: Path | None = None) -> None:
        self.store.execute(
            "UPDATE league_challenges SET status = ?, record_path = ? "
            "WHERE tournament = ? AND number = ?",
            (status, str(record or ""), self.config.name, c.number),
        )

    def record_path(self, match_id: str) -> Path | None:
        """A finished challenge's record (None: no finished challenge by that id)."""
        number = match_id.rpartition("-")[2]
        if not number.isdigit() or match_id != challenge_id(self.config.name, int(number)):
            return None
        row = self.store.execute(
            "SELECT status, record_path FROM league_challenges WHERE tournament = ? AND number = ?",
            (self.config.name, int(number)),
        ).fetchone()
        if row is None or row[0] != FINISHED or not row[1]:
            return None
        return Path(row[1])

    # -- asking ------------------------------------------------------------------------------

    def _refuse_unplaying(self, bot: str, playing: dict[str, Submission]) -> None:
        """Refused unless ``bot`` can be seated by the matchmaker (it plays now)."""
        entry = self.registry.get(bot)
        if entry is None:
            raise Refused(
                grpc.StatusCode.NOT_FOUND, f"no bot named {bot!r} is registered in this league"
            )
        if not entry.active:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION, f"{bot!r} is not playing: it was revoked"
            )
        if bot not in playing and not self.lobby.connected(bot):
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{bot!r} is not playing: no stream of it is connected and it has no playing "
                "submission",
            )

    def ask(self, name: str, opponents: list[str], matches: int) -> Asked:
        """Queue ``matches`` unrated matches of ``name`` against ``opponents`` (the seating
        turns by one seat each match); Refused, in one line, when they cannot be had."""
        c = self.config
        if c.challenges_per_day == 0:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this league plays no challenges ([league] challenges_per_day = 0)",
            )
        if not 1 <= matches <= MAX_MATCHES:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"matches: {matches} is not allowed; allowed: 1 to {MAX_MATCHES}",
            )
        seating = [name, *opponents]
        if not opponents or len(set(seating)) != len(seating):
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                "name each opponent once, and not your own entry",
            )
        try:
            c.rules.check_players(len(seating))
        except ValueError as exc:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{len(seating)} players (you and {len(opponents)} opponents): {exc}",
            ) from None
        playing = self._playing()
        for bot in seating:
            self._refuse_unplaying(bot, playing)
        now = time.time()
        limit = c.challenges_per_day
        left = int(self.allowance.left(name, now))
        if matches > left:
            frees = self.allowance.resets_at(name, matches, now)
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{name!r} has {left} of its {limit} challenge matches per 24 hours left "
                f"(challenges_per_day), {matches} asked; {matches} more may be asked at "
                f"{when(frees)}",
            )
        turns = [tuple(seating[i:] + seating[:i]) for i in range(matches)]

        def write() -> list[Challenge]:
            row = self.store.execute(
                "SELECT COALESCE(MAX(number), 0) FROM league_challenges WHERE tournament = ?",
                (c.name,),
            ).fetchone()
            made = []
            for i, turn in enumerate(turns, int(row[0]) + 1):
                made.append(Challenge(i, challenge_id(c.name, i), name, turn, now))
                self.store.execute(
                    "INSERT INTO league_challenges (tournament, number, match_id, bot, "
                    "seating, status, asked_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (c.name, i, made[-1].match_id, name, json.dumps(list(turn)), QUEUED, now),
                )
            self.allowance.charge(name, matches, now)
            return made

        try:
            made = self.store.atomically(write)
        except StoreError as exc:
            raise Refused(grpc.StatusCode.UNAVAILABLE, str(exc)) from None
        self.queued.extend(made)
        log.info(
            "challenge_asked", bot=name, opponents=opponents, matches=[m.match_id for m in made]
        )
        self._wake()
        return Asked(
            [m.match_id for m in made],
            int(self.allowance.left(name, now)),
            self.allowance.resets_at(name, limit, now),
        )

    # -- seating (the matchmaker) ------------------------------------------------------------

    def seat(self, idle: dict[str, list[LeagueStream]]) -> bool:
        """Start the oldest queued challenge whose bots can all sit now (``idle``: the
        matchmaker's seatable bots; the streams it takes are removed); False if none can."""
        now = time.time()
        for c in list(self.queued):
            if now - c.asked_at > WAIT_S:
                self.queued.remove(c)
                with contextlib.suppress(StoreError):
                    self._mark(c, EXPIRED)
                log.warning("challenge_expired", match_id=c.match_id, seating=list(c.seating))
                continue
            if not all(bot in idle for bot in c.seating):
                continue
            try:
                self._mark(c, RUNNING)
            except StoreError as exc:
                log.error("store_failed", doing=f"start {c.match_id}", error=str(exc))
                return False
            self.queued.remove(c)
            playing = self._playing()
            hosted = {bot: playing[bot] for bot in c.seating if bot in playing}
            streams = {bot: idle[bot].pop(0) for bot in c.seating if bot not in hosted}
            for s in streams.values():
                s.busy = True
            self.dispatch.play_unrated(
                c.match_id, c.seating, partial(self._play, c, streams, hosted)
            )
            return True
        return False

    # -- playing -----------------------------------------------------------------------------

    async def _play(
        self,
        c: Challenge,
        streams: dict[str, LeagueStream],
        hosted: dict[str, Submission],
        feed: MatchFeed,
    ) -> None:
        config = self.config
        dispatch = self.dispatch
        specs = []
        for bot in c.seating:
            spec = BotSpec(name=bot)
            if bot in hosted and dispatch.hosting is not None:
                sub = hosted[bot]
                try:
                    spec = hosted_spec(await dispatch.hosting.prepare(sub), bot, sub.number)
                except Exception as exc:  # its code cannot be unpacked here: the seat faults
                    log.error("hosted_code_failed", bot=bot, error=repr(exc))
                    spec = BotSpec(name=bot, command=("/nonexistent/hosted-code-missing",))
            specs.append(spec)
        runner = MatchRunner(
            dispatch.server,
            specs,
            config.rules,
            match_id=c.match_id,
            clock=config.clock,
            strike_limit=config.strike_limit,
            out_dir=config.out,
            pool=dispatch.table(streams),
            on_record=feed.append,
            code=[
                (hosted[bot].number, hosted[bot].sha256) if bot in hosted else None
                for bot in c.seating
            ],
            challenge=c.by,
        )
        log.info("challenge_started", match_id=c.match_id, seating=list(c.seating))
        try:
            result = await runner.run()
        except asyncio.CancelledError:  # the league stops: played again at its next start
            feed.interrupt()
            raise
        except Exception as exc:
            feed.interrupt()
            log.error("challenge_failed", match_id=c.match_id, error=repr(exc))
            with contextlib.suppress(StoreError):
                self._mark(c, ABORTED, runner.record_path)
            return
        finally:
            for s in streams.values():
                if s.busy:  # the runner did not get to lend it (a failure while seating)
                    self.lobby.release(s)
        if result.aborted:
            feed.interrupt()
        else:
            feed.finish()
        try:
            self._mark(c, ABORTED if result.aborted else FINISHED, result.record_path)
        except StoreError as exc:
            log.error("store_failed", doing=f"store {c.match_id}'s end", error=str(exc))
        if hosted and not result.aborted:
            dispatch.keep_logs(c.match_id, c.seating, hosted, runner.log_spans, runner.log_heads)
        log.info("challenge_played", match_id=c.match_id, aborted=result.aborted)
