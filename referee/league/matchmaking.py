"""The league's matchmaking: whenever ``table_size`` different bots can be seated, a match
is planned and handed to dispatch.

Who can be seated: every dial-in bot with an idle stream (:mod:`referee.league.lobby`) and
every active hosted entry with a playing submission. The table is chosen by
:func:`~referee.league.scheduler.choose_table` under the league's seating rules; a match
interrupted by a stop (or voided with its worker) is replayed first, with a new deal, as
soon as its bots can all be seated. The match is planned in the database (its number and
deal) before dispatch plays or queues it (:mod:`referee.league.dispatch`).

Its interface: :meth:`Matchmaker.wake` (something changed: look again),
:meth:`Matchmaker.replay` (a match to play again), :meth:`Matchmaker.retry_later` (the
database refused something: look again in :data:`STORE_RETRY_S`), and the hosted entries'
playing submissions (:attr:`Matchmaker.playing`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from referee.league.config import LeagueConfig
from referee.league.lobby import LeagueStream, StreamLobby
from referee.league.registry import BotRegistry
from referee.league.scheduler import History, Marks, can_seat, choose_table
from referee.league.submissions import Submission, Submissions
from referee.match.dealkey import DealKey
from referee.results.store import Store, StoreError
from referee.tournament.schedule import ScheduledMatch

if TYPE_CHECKING:
    from referee.league.challenge import Challenges
    from referee.league.dispatch import Dispatch
    from referee.league.publishing import Publisher

log = structlog.get_logger("referee.league")

#: While the database is away, how often the league tries again to store what it could not.
STORE_RETRY_S = 5.0


def match_id_of(league: str, index: int) -> str:
    """The id of the league's match number ``index``: ``<league>-<index>``."""
    return f"{league}-{index:06d}"


@dataclass
class Deals:
    """The league's secret deal key and the numbers of the next match and deal."""

    #: From the league's database (made when the league was created); None before start.
    key: DealKey | None = None
    next_index: int = 0
    #: The deal number of the next match (a replayed match takes a new one too).
    next_deal: int = 0

    def take(self) -> int:
        """A deal number no match has used."""
        deal = self.next_deal
        self.next_deal += 1
        return deal

    def known(self) -> DealKey:
        assert self.key is not None, "the league's deal key is read at its start"
        return self.key


class Matchmaker:
    """Seats matches as bots become free; one loop, woken by whatever may free a seat."""

    def __init__(
        self,
        config: LeagueConfig,
        store: Store,
        registry: BotRegistry,
        submissions: Submissions,
        lobby: StreamLobby,
        dispatch: Dispatch,
        publisher: Publisher,
        deals: Deals,
        history: History,
    ) -> None:
        self.config = config
        self.store = store
        self.registry = registry
        self.submissions = submissions
        self.lobby = lobby
        self.dispatch = dispatch
        self.publisher = publisher
        self.deals = deals
        self.history = history
        #: The playing submission of each hosted entry (from the database).
        self.playing: dict[str, Submission] = {}
        #: Interrupted or voided matches, played again as soon as their bots can sit.
        self.replays: list[ScheduledMatch] = []
        self._store_retry: asyncio.TimerHandle | None = None
        #: When the next new ladder match may start (the loop's clock), and the timer that
        #: wakes the loop then (``ladder_matches_per_minute``).
        self._next_ladder = 0.0
        self._paced: asyncio.TimerHandle | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._loop: asyncio.Task[None] | None = None
        self._rng = random.Random(config.seed)
        #: The idle bots last said to be unable to fill a table ("" when not waiting).
        self._waiting_for = ""
        #: Why no match can start while none runs (the seating rules), or "".
        self.waiting = ""
        #: Matches on demand, seated before the league's own (set by the league).
        self.challenges: Challenges | None = None

    def wake(self) -> None:
        """Something changed (a stream is free, a match ended): look for a table again."""
        self._wake.set()

    def refresh_playing(self) -> None:
        """Read the hosted entries' playing submissions again."""
        self.playing = self.submissions.playing_by_bot()

    def start(self) -> None:
        self._loop = asyncio.ensure_future(self._schedule_loop())

    async def stop(self) -> None:
        """Start no more matches."""
        self._stopping = True
        self._wake.set()
        if self._loop is not None:
            await self._loop
        for timer in (self._store_retry, self._paced):
            if timer is not None:
                timer.cancel()
        self._store_retry = self._paced = None

    def replay(self, m: ScheduledMatch, new_deal: bool = False) -> None:
        """Play ``m`` again as soon as its bots can be seated (``new_deal``: its bots saw
        part of its deal; it gets a new one, stored with it)."""
        if new_deal:
            deal = self.deals.take()
            key = self.deals.known()
            try:
                self.store.reset_interrupted(self.config.name, [m.index])
                self.store.set_deal(self.config.name, m.index, deal, key.match_seed(deal))
            except StoreError:
                pass
            m = dataclasses.replace(m, deal=deal)
        self.replays.append(m)
        self._wake.set()

    def retry_later(self) -> None:
        """Wake the scheduler in :data:`STORE_RETRY_S` to try the database again."""
        if self._store_retry is None and not self._stopping:
            self._store_retry = asyncio.get_running_loop().call_later(
                STORE_RETRY_S, self._store_retry_due
            )

    def _store_retry_due(self) -> None:
        self._store_retry = None
        self._wake.set()

    def _held_back(self) -> bool:
        """Whether a new ladder match must wait for ``ladder_matches_per_minute`` (the loop
        is then woken when it may start); if not, the next one's time is set."""
        rate = self.config.ladder_matches_per_minute
        if rate <= 0:
            return False
        loop = asyncio.get_running_loop()
        now = loop.time()
        if now < self._next_ladder:
            if self._paced is None:
                self._paced = loop.call_later(self._next_ladder - now, self._pace_due)
            return True
        self._next_ladder = now + 60.0 / rate
        return False

    def _pace_due(self) -> None:
        self._paced = None
        self._wake.set()

    # -- the loop ----------------------------------------------------------------------------

    def _idle(self) -> dict[str, list[LeagueStream]]:
        """The bots that may be seated now: those with an idle stream, and every hosted
        entry that plays (its processes are started per match; an empty list)."""
        idle = self.lobby.idle(self.playing)
        for bot in self.playing:
            entry = self.registry.get(bot)
            if entry is not None and entry.active:
                idle[bot] = []
        return idle

    async def _schedule_loop(self) -> None:
        while not self._stopping:
            self._start_matches()
            await self._wake.wait()
            self._wake.clear()

    def _start_matches(self) -> None:
        if not self.publisher.save_unsaved():
            return  # the database is away: no match starts before the finished ones are in
        size = self.config.table_size
        parallel = self.config.parallel
        dispatch = self.dispatch
        while not self._stopping and dispatch.played_here() < parallel:
            idle = self._idle()
            if dispatch.running_count() - dispatch.played_here() >= parallel:
                # As many matches of hosted bots wait for a worker (or play on one in
                # another process) as the league plays at once: no hosted bot is seated
                # until one of them ends, and the dial-in bots play on meanwhile.
                idle = {b: streams for b, streams in idle.items() if b not in self.playing}
            if self.challenges is not None and self.challenges.seat(idle):
                continue
            replay = next((m for m in self.replays if all(b in idle for b in m.seating)), None)
            if replay is not None:
                self.replays.remove(replay)
                self._launch(replay, idle, replayed=True)
                continue
            if len(idle) < size:
                return
            marks = self._marks(idle)
            if not can_seat(list(idle), size, marks):
                # Nothing to do until another bot connects or a stream is free again (the
                # loop waits for that). With nothing running nothing will free up: the
                # league is waiting for bots, and says why once.
                if not dispatch.running_count():
                    self._waiting(idle)
                return
            self._waiting_for = self.waiting = ""
            if self._held_back():
                return
            seating = choose_table(list(idle), size, self.history, self._rng, marks)
            index = self.deals.next_index
            self.deals.next_index += 1
            m = ScheduledMatch(index, tuple(sorted(seating)), seating, self.deals.take())
            try:
                self.store.plan(
                    self.config.name,
                    [m],
                    lambda m: match_id_of(self.config.name, m.index),
                    self.deals.known(),
                )
            except StoreError as exc:
                # Its number is not used again: the plan may have been stored all the same
                # (a commit whose acknowledgement was lost); a next start replays it then.
                log.error("store_failed", doing=f"plan match {index}", error=str(exc))
                self.retry_later()
                return
            self._launch(m, idle, replayed=False)

    def _launch(
        self, m: ScheduledMatch, idle: dict[str, list[LeagueStream]], replayed: bool
    ) -> None:
        hosted = {bot: self.playing[bot] for bot in m.seating if bot in self.playing}
        streams = {bot: idle[bot].pop(0) for bot in m.seating if bot not in hosted}
        if not self.dispatch.launch(m, streams, hosted, replayed):
            self.replays.append(m)
            self.retry_later()

    def _marks(self, idle: dict[str, list[LeagueStream]]) -> dict[str, Marks]:
        """Each idle bot's family and owner marks under the league's seating rules."""
        rules = self.config.seating
        out: dict[str, Marks] = {}
        for bot in idle:
            entry = self.registry.get(bot)
            family, owner = (entry.family, entry.owner) if entry is not None else (bot, "")
            out[bot] = rules.marks(bot, family, owner)
        return out

    def _waiting(self, idle: dict[str, list[LeagueStream]]) -> None:
        """Log, once per set of idle bots, why they cannot fill a table while no match
        runs."""
        names = ", ".join(sorted(idle))
        if names == self._waiting_for:
            return
        self._waiting_for = names
        rules = self.config.seating
        kept = [
            what
            for what, relaxed in (("family", rules.same_family), ("owner", rules.same_owner))
            if not relaxed
        ]
        self.waiting = (
            f"the idle bots cannot fill a table of {self.config.table_size} without two "
            f"of one {' or one '.join(kept)} ([seating] in the league file); matches start "
            "when more bots connect"
        )
        log.info(
            "league_waiting",
            idle=sorted(idle),
            table_size=self.config.table_size,
            why=self.waiting,
        )
