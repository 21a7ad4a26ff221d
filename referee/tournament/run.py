"""Running a tournament: the schedule, ``parallel`` matches at once, resume, exports.

Every seat of a match has its own bot stream, kept between matches by the bot pool and
lent to one match at a time; a bot process has one stream, or up to ``seats`` when its
bot file declares that it plays several matches at once (never two seats of one match).
With ``parallel`` matches on more than two cores, matches are played in referee worker
processes (:mod:`referee.tournament.workers`). Results go to the database as each match finishes; a
tournament killed at any moment and started again with the same command replays only
the matches that had not finished, and ends with the same standings.

Deals come from the tournament's secret deal key (:mod:`referee.match.dealkey`), made when the
tournament is first created and kept in its database; its commitment is in the first log
line, and the key itself is exported (``deal-key.txt``, ``ratings.json``) once the last
match has ended, so that ``referee verify`` can re-derive every deal. In duplicate mode a
deal's seed reaches the bots only at the end of the deal's last seating, which is started
after the deal's other seatings have ended.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from referee.jail import resident
from referee.match.dealkey import DealKey
from referee.match.metrics import RefereeMetrics
from referee.match.runner import MatchResult
from referee.results.embargo import DealSeatings
from referee.results.ratings import BotStats, LiveElo, MatchOutcome, Standing, fit
from referee.results.report import (
    EMBEDDED_MATCHES,
    ReportMatch,
    standings_table,
    write_ratings_csv,
    write_ratings_json,
    write_report_html,
    write_results_csv,
)
from referee.results.stats import bot_stats, outcomes_from
from referee.results.store import (
    ResumeRefused,
    Store,
    StoredResult,
    is_url,
    open_store,
    redact,
)
from referee.runtime import logs
from referee.runtime.private import private_dir
from referee.tournament.config import TournamentConfig
from referee.tournament.schedule import ScheduledMatch, last_seatings, make_schedule
from referee.tournament.workers import (
    MatchJob,
    MatchPlayer,
    WorkerDied,
    default_workers,
    start_player,
)

log = structlog.get_logger("referee.tournament")


def match_id_of(config: TournamentConfig, m: ScheduledMatch) -> str:
    """The deterministic id of a scheduled match: ``<tournament>-<index>``."""
    return f"{config.name}-{m.index:05d}"


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``: the scheduled matches whose index % count == index."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"i/K"`` (0 <= i < K), e.g. a Kubernetes Indexed Job's completion index and its
        completions; raises ValueError with a one-line message."""
        allowed = "allowed: i/K with 0 <= i < K, e.g. 0/4 for the first of four shards"
        head, sep, tail = text.partition("/")
        if not sep or not head.strip().isdigit() or not tail.strip().isdigit():
            raise ValueError(f"--shard {text!r} is not allowed; {allowed}")
        index, count = int(head), int(tail)
        if not 0 <= index < count:
            raise ValueError(f"--shard {text!r} is not allowed; {allowed}")
        return cls(index, count)

    def holds(self, m: ScheduledMatch) -> bool:
        """True when ``m`` is this shard's to play."""
        return m.index % self.count == self.index

    @staticmethod
    def select(shard: Shard | None, schedule: Sequence[ScheduledMatch]) -> list[ScheduledMatch]:
        """The matches of ``schedule`` that ``shard`` plays (all of them without a shard)."""
        return [m for m in schedule if shard is None or shard.holds(m)]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass
class TournamentOutcome:
    """What a finished (or partly finished) tournament, or a shard of one, produced.

    ``finished`` and ``planned`` count the whole tournament's matches in the database;
    ``shard_finished`` and ``shard_planned`` those this run was given. Exports (and the
    standings) exist only once the whole tournament is finished.
    """

    standings: list[Standing]
    stats: dict[str, BotStats]
    live_elo: dict[str, float]
    finished: int
    planned: int
    table: str
    exports: dict[str, Path]
    referee_cpu_s: float = 0.0
    shard_finished: int = 0
    shard_planned: int = 0
    #: The ids of the matches this run aborted twice (fewer than two seats connected):
    #: not finished, so no standings until a later run plays them.
    aborted: list[str] = field(default_factory=list)
    #: The bots that forfeited every finished match they played (a bot that never
    #: worked), each with how many that is.
    always_forfeited: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every scheduled match of the tournament is finished."""
        return self.finished == self.planned


class Progress:
    """Matches done / planned, ETA and the current leader: a live line on a terminal, the
    same words a line per match when ``plain`` (a piped run at the default level), log
    lines elsewhere.

    On a terminal the line is drawn by rich, which also takes over ``sys.stderr`` while it
    is shown: a warning or any other line written meanwhile appears on its own line above
    it, instead of on the end of the bar. :meth:`close` leaves the last state on screen.
    """

    def __init__(
        self, planned: int, done: int, tty: bool | None = None, plain: bool = False
    ) -> None:
        self.planned = planned
        self.done = done
        self.start_done = done
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.plain = plain and not self.tty
        self._bar: Any = None
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(
                BarColumn(bar_width=30),
                TextColumn("{task.completed}/{task.total} matches  ETA"),
                TimeRemainingColumn(compact=True),
                TextColumn("leader {task.fields[leader]}  running {task.fields[running]}"),
                console=Console(file=sys.stderr),
                # Redrawn at each finished match (and around every line written meanwhile),
                # not by a thread of its own.
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=True,
            )
            self._task = self._bar.add_task(
                "", total=planned, completed=done, leader="-", running=0
            )
            self._bar.start()

    def update(self, done: int, leader: str, leader_elo: float, running: int) -> None:
        """Show the state after a match finished."""
        self.done = done
        if self._bar is not None:
            self._bar.update(
                self._task, completed=done, leader=f"{leader} ({leader_elo:.0f})", running=running
            )
            self._bar.refresh()
            return
        elapsed = time.monotonic() - self.started
        new = done - self.start_done
        eta = elapsed / new * (self.planned - done) if new else float("nan")
        if self.plain:
            left = "-:--" if eta != eta else f"{int(eta) // 60}:{int(eta) % 60:02d}"
            sys.stderr.write(
                f"{done}/{self.planned} matches  ETA {left}  leader {leader} "
                f"({leader_elo:.0f})  running {running}\n"
            )
            sys.stderr.flush()
            return
        log.info(
            "progress",
            done=done,
            planned=self.planned,
            eta_s=None if eta != eta else round(eta, 1),
            leader=leader,
            leader_elo=round(leader_elo, 1),
            running=running,
        )

    def close(self) -> None:
        """Leave the line as it is (on a terminal) and give ``sys.stderr`` back."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


async def run_tournament(
    config: TournamentConfig,
    *,
    metrics: RefereeMetrics | None = None,
    progress: bool | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    indices: Sequence[int] | None = None,
    workers: int | None = None,
    log_level: str | None = None,
    shard: Shard | None = None,
    deal_key: DealKey | None = None,
    live_records: bool = False,
    plain_progress: bool = False,
    on_open: Callable[[], None] | None = None,
    code: Mapping[str, tuple[int, str]] | None = None,
) -> TournamentOutcome:
    """Play every unfinished match of ``config`` (or of ``indices``, or of ``shard``) and,
    once the whole tournament is finished in the database, export the standings.
    ``on_open`` is called once the database has taken the run (a refused database, shard
    or deal key raises before it), before any bot is started.

    Several shards may run at once on one shared database (PostgreSQL, or one SQLite
    file on one machine): each plans, resets and plays only its own matches. The deal key
    is the database's (made at creation); ``deal_key`` gives it instead, for shards with
    databases of their own, and must equal the stored key when there is one.

    ``code`` names a bot's submission and code hash, for every record's header (a
    league's season final plays its entries' frozen submissions).
    """
    full = make_schedule(config)
    schedule = _select(full, indices, shard)
    metrics = metrics or RefereeMetrics()
    metrics.decision_limit.set(config.clock.decision_ms / 1000)
    store = open_store(config.database)
    bar: Progress | None = None
    try:
        run = _TournamentRun.open(config, store, full, schedule, deal_key, shard, metrics)
        if on_open is not None:
            on_open()
        if (sys.stderr.isatty() if progress is None else progress) or plain_progress:
            # The start's log line is below a terminal's log level: say it here, before
            # the progress line (which would fold it at the terminal's width).
            finished = store.finished_indices(config.name)
            when = (
                f"every match has ended: the key is in {config.out / 'deal-key.txt'}"
                if all(m.index in finished for m in full)
                else "the key is published when the last match has ended"
            )
            sys.stderr.write(
                f"tournament {config.name}: deal key commitment {run.key.commitment()} ({when})\n"
            )
        run.bar = bar = Progress(len(schedule), run.done, progress, plain_progress)
        run.live_records = live_records
        run.code = dict(code or {})
        if config.mode == "duplicate":
            resident.for_replays()  # a later seating must not read what an earlier one left
        player = await start_player(
            _worker_count(config, workers, port, len(run.todo)),
            metrics,
            log_dir=private_dir(config.out / "logs"),
            startup_s=config.clock.startup_ms / 1000,
            # Bot processes are kept between matches (one match at a time each), except
            # in duplicate mode, where every replay starts the bots afresh.
            pooled=config.mode != "duplicate",
            sandbox=config.sandbox,
            host=host,
            port=port,
            log_level=log_level or logs.LEVEL,
        )
        try:
            await run.play_all(player)
        finally:
            await player.close()
        return _finish(config, store, full, schedule, run, player.cpu_seconds())
    finally:
        if bar is not None:  # also when interrupted: what follows starts on a line of its own
            bar.close()
        store.close()


def _select(
    full: Sequence[ScheduledMatch], indices: Sequence[int] | None, shard: Shard | None
) -> list[ScheduledMatch]:
    """The matches of the schedule this run plays: ``indices``, then ``shard``'s."""
    schedule = list(full)
    if indices is not None:
        wanted = set(indices)
        schedule = [m for m in schedule if m.index in wanted]
    return Shard.select(shard, schedule)


class _TournamentRun:
    """One run of a tournament (or shard): its matches still to play, and what each
    finished match updates (the store, the live Elo, the metrics, the progress bar)."""

    #: What plays the matches (set by :meth:`play_all`).
    player: MatchPlayer

    def __init__(
        self,
        config: TournamentConfig,
        store: Store,
        full: Sequence[ScheduledMatch],
        todo: Sequence[ScheduledMatch],
        finished: set[int],
        key: DealKey,
        metrics: RefereeMetrics,
    ) -> None:
        self.config = config
        self.store = store
        self.key = key
        self.metrics = metrics
        self.todo = todo
        self.bots = {b.name: b for b in config.bots}
        self.queue = DealQueue(config.mode == "duplicate", full, todo)
        self.finished_before = frozenset(finished)
        self.done = 0
        self.running = 0
        self.aborted: list[str] = []
        self.elo = LiveElo()
        self.bar: Progress | None = None
        #: The duplicate embargo (:mod:`referee.results.embargo`): a seating's outcome
        #: enters the live Elo (its metric, the progress line's leader) only once every
        #: seating of its deal has finished; until then it waits here, by deal.
        self.deals = DealSeatings.of((m.index, m.deal) for m in full)
        self._held: dict[int, list[MatchOutcome]] = {}
        #: Per bot: finished matches played, and of those forfeited.
        self.played: collections.Counter[str] = collections.Counter()
        self.forfeits: collections.Counter[str] = collections.Counter()
        #: Every record line reaches its file at once (a web page watches the matches).
        self.live_records = False
        #: A bot's submission number and code hash, for the records' headers.
        self.code: dict[str, tuple[int, str]] = {}

    @classmethod
    def open(
        cls,
        config: TournamentConfig,
        store: Store,
        full: Sequence[ScheduledMatch],
        schedule: Sequence[ScheduledMatch],
        deal_key: DealKey | None,
        shard: Shard | None,
        metrics: RefereeMetrics,
    ) -> _TournamentRun:
        """Open (or resume) the tournament in the store: plan this run's matches with the
        tournament's deal key, put matches a killed run left running back to planned,
        and replay the finished ones into the live Elo."""
        mine = {m.index for m in schedule}
        resumed = store.open_tournament(
            config.name, config.fingerprint(), config.fingerprint_hash()
        )
        key = tournament_key(store, config.name, deal_key, resumed)
        store.plan(config.name, schedule, lambda m: match_id_of(config, m), key)
        interrupted = store.reset_interrupted(
            config.name, None if len(schedule) == len(full) else mine
        )
        finished = store.finished_indices(config.name)
        todo = [m for m in schedule if m.index not in finished]
        log.info(
            "tournament_start",
            tournament=config.name,
            deal_key_commitment=key.commitment(),
            shard=None if shard is None else str(shard),
            planned=len(schedule),
            finished=len(finished & mine),
            replaying_interrupted=interrupted,
            resumed=resumed,
            sandbox=config.sandbox,
        )
        run = cls(config, store, full, todo, finished, key, metrics)
        for outcome in outcomes_from(store.results(config.name)):
            run._rate(int(outcome.key), outcome)
            run.count(outcome)
        for bot, value in run.elo.ratings().items():
            metrics.elo.labels(bot).set(value)
        metrics.planned.set(len(schedule))
        run.done = len(schedule) - len(todo)
        metrics.finished.set(run.done)
        return run

    async def play_all(self, player: MatchPlayer) -> None:
        """Play the matches still to play, ``parallel`` at once."""
        self.player = player
        lanes = min(self.config.parallel, max(1, len(self.todo)))
        await asyncio.gather(*(self._lane() for _ in range(lanes)))

    async def _lane(self) -> None:
        """Take the queue's next match, play it, keep its result; until the queue is empty."""
        while True:
            m = await self.queue.next()
            if m is None:
                return
            self.running += 1
            self.metrics.running.set(self.running)
            try:
                result = await self._play(m)
            except BaseException:
                self.queue.stop()
                raise
            finally:
                self.running -= 1
                self.metrics.running.set(self.running)
            self._keep(m, result)

    async def _play(self, m: ScheduledMatch) -> MatchResult:
        """Play ``m``: again on a fresh worker when its worker died, and once more at once
        when it was aborted (fewer than two seats connected)."""
        config = self.config
        job = MatchJob(
            index=m.index,
            bots=tuple(self.bots[name] for name in m.seating),
            rules=config.rules,
            seed=self.key.match_seed(m.deal),
            match_id=match_id_of(config, m),
            clock=config.clock,
            strike_limit=config.strike_limit,
            out_dir=config.out,
            deal=m.deal,
            deal_key_commitment=self.key.commitment(),
            seed_withheld=self._withheld(m),
            bot_seeds=self.key.bot_seeds(m.deal, len(m.seating)),
            live=self.live_records,
            code=tuple(self.code.get(name) for name in m.seating) if self.code else (),
        )
        aborts = deaths = voids = 0
        while True:
            try:
                result = await self.player.play(
                    job, lambda path: self.store.mark_running(config.name, m.index, path)
                )
            except WorkerDied as exc:
                deaths += 1
                if deaths > WORKER_RETRIES:
                    raise
                log.warning("match_replayed", match_index=m.index, why=str(exc))
                continue
            if result.void and voids < VOID_RETRIES:
                # The referee's fault (it was short of descriptors): no bot is charged; the
                # match is played again once the referee has had a moment to recover.
                voids += 1
                log.warning("match_void", match_index=m.index, attempt=voids, why=result.void)
                await asyncio.sleep(VOID_PAUSE_S * voids)
                continue
            if not result.aborted or aborts == ABORT_RETRIES:
                return result
            aborts += 1
            log.warning("match_replayed", match_index=m.index, why=result.reason)

    def _withheld(self, m: ScheduledMatch) -> str:
        """Why ``m``'s ``MatchEnd`` may not reveal its seed yet, or "" when it may."""
        if self.config.mode != "duplicate":
            return ""
        if m.index != self.queue.last[m.deal]:
            return (
                f"deal {m.deal} is played again by a later seating of this duplicate "
                "tournament; its seed is revealed at the end of the deal's last seating"
            )
        # This run's other seatings of the deal have ended (the queue held this one
        # back until then); ask the database about the rest (other shards').
        others = [
            i
            for i in self.queue.seatings[m.deal]
            if i != m.index and i not in self.finished_before and i not in self.queue.played
        ]
        if others and self.store.finished_among(self.config.name, others) != set(others):
            return (
                f"deal {m.deal} is still to be played by another seating (another shard's, "
                "or one of this run's that was aborted); its seed follows from the deal key "
                "the tournament publishes when its last match has ended"
            )
        return ""

    def _keep(self, m: ScheduledMatch, result: MatchResult) -> None:
        """Store a finished match's result and update the live Elo, metrics and progress;
        an aborted match is marked as such and rated never."""
        config, metrics = self.config, self.metrics
        if result.aborted:
            self.store.mark_aborted(config.name, m.index, result.record_path)
            self.aborted.append(result.match_id)
            log.warning("match_aborted", match_id=result.match_id, why=result.reason)
            # Its deal's last seating no longer waits for it (it is played on a later run).
            self.queue.gave_up(m)
            return
        self.store.save_result(config.name, m.index, result)
        self.queue.finished(m)
        metrics.matches.inc()
        metrics.match_duration.observe(result.duration_s)
        outcome = MatchOutcome(
            bots=m.seating,
            places=tuple(result.places),
            key=f"{m.index:08d}",
            forfeited=tuple(s.forfeited for s in result.seats),
        )
        self._rate(m.index, outcome)
        self.count(outcome)
        for bot, value in self.elo.ratings().items():
            metrics.elo.labels(bot).set(value)
        self.done += 1
        metrics.finished.set(self.done)
        ratings = self.elo.ratings()
        leader = max(ratings, key=lambda b: ratings[b]) if ratings else "-"
        if self.bar is not None:
            self.bar.update(self.done, leader, ratings.get(leader, math.nan), self.running)

    def _rate(self, index: int, outcome: MatchOutcome) -> None:
        """Count a finished match in the live Elo, or hold it (and the seatings of its
        deal before it) until every seating of its deal has finished."""
        deal = self.deals.deal_of.get(index)
        if deal is None:
            self.elo.update(outcome)
            return
        self._held.setdefault(deal, []).append(outcome)
        if not self.deals.pending(index, self.finished_before | self.queue.played):
            for held in self._held.pop(deal):
                self.elo.update(held)

    def count(self, outcome: MatchOutcome) -> None:
        """Count a finished match in each of its bots' matches and forfeits."""
        flags = outcome.forfeited or (False,) * len(outcome.bots)
        for bot, forfeited in zip(outcome.bots, flags, strict=True):
            self.played[bot] += 1
            self.forfeits[bot] += forfeited

    def always_forfeited(self) -> dict[str, int]:
        """The bots that forfeited every finished match they played, with that count."""
        return {b: n for b, n in self.played.items() if n and self.forfeits[b] == n}


def _finish(
    config: TournamentConfig,
    store: Store,
    full: Sequence[ScheduledMatch],
    schedule: Sequence[ScheduledMatch],
    run: _TournamentRun,
    referee_cpu_s: float,
) -> TournamentOutcome:
    """Export the standings when every scheduled match is finished in the store (this
    run's and other shards'); otherwise say why not."""
    finished = store.finished_indices(config.name)
    if all(m.index in finished for m in full):
        exported = export(config, store)
        for bot, value in exported.live_elo.items():  # as exported: in schedule order
            run.metrics.elo.labels(bot).set(value)
    else:
        exported = TournamentOutcome(
            [], {}, {}, len(finished & {m.index for m in full}), len(full), "", {}
        )
        log.info(
            "tournament_incomplete",
            tournament=config.name,
            finished=exported.finished,
            planned=exported.planned,
            why="matches were aborted; no exports"
            if run.aborted
            else "other shards' matches are not finished yet; no exports",
        )
    exported.aborted = sorted(run.aborted)
    exported.always_forfeited = run.always_forfeited()
    exported.referee_cpu_s = referee_cpu_s
    exported.shard_planned = len(schedule)
    exported.shard_finished = len(finished & {m.index for m in schedule})
    return exported


WORKER_RETRIES = 2
#: How often a match that was aborted (fewer than two seats connected) is played again
#: at once, with the same deal; then it stays aborted until the tournament runs again.
ABORT_RETRIES = 1
#: How often a match void for the referee's own fault is played again, waiting
#: VOID_PAUSE_S seconds more each time, before it counts as aborted.
VOID_RETRIES = 8
VOID_PAUSE_S = 0.5


class DealQueue:
    """The matches still to play, in schedule order; in duplicate mode a deal's last
    seating waits until this run's other seatings of the deal have finished, so that its
    ``MatchEnd`` may reveal the seed while no seating of the deal is still being played."""

    def __init__(
        self, duplicate: bool, full: Sequence[ScheduledMatch], todo: Sequence[ScheduledMatch]
    ) -> None:
        self.duplicate = duplicate
        #: Per deal: the index of its last seating, and the indices of all its seatings.
        self.last = last_seatings(full)
        self.seatings: dict[int, list[int]] = {}
        for m in full:
            self.seatings.setdefault(m.deal, []).append(m.index)
        self._queue = collections.deque(todo)
        todo_indices = {m.index for m in todo}
        #: Per deal: this run's seatings of it, other than the last, not finished yet.
        self._waiting = {
            deal: {i for i in indices if i != self.last[deal] and i in todo_indices}
            for deal, indices in self.seatings.items()
        }
        self._held: dict[int, ScheduledMatch] = {}
        #: The matches this run has finished.
        self.played: set[int] = set()
        self._changed = asyncio.Event()
        self._stopped = False

    async def next(self) -> ScheduledMatch | None:
        """The next match to play, or None when there is none left (or the run failed)."""
        while not self._stopped:
            while self._queue:
                m = self._queue.popleft()
                if self.duplicate and m.index == self.last[m.deal] and self._waiting[m.deal]:
                    self._held[m.deal] = m
                    continue
                return m
            if not self._held:
                return None
            self._changed.clear()
            await self._changed.wait()
        return None

    def finished(self, m: ScheduledMatch) -> None:
        """``m`` has finished: a deal's last seating may now be due."""
        self.played.add(m.index)
        self._release(m)

    def gave_up(self, m: ScheduledMatch) -> None:
        """``m`` ended unplayed (aborted): a deal's last seating waits for it no longer,
        or a run whose seatings are refused again and again would hold that seating, and
        itself, for ever. The last seating then keeps the deal's seed (see
        :meth:`_TournamentRun._withheld`), since ``m`` is still to be played."""
        self._release(m)

    def _release(self, m: ScheduledMatch) -> None:
        waiting = self._waiting[m.deal]
        waiting.discard(m.index)
        if not waiting and m.deal in self._held:
            self._queue.appendleft(self._held.pop(m.deal))
        self._changed.set()

    def stop(self) -> None:
        """A match failed: hand out no more."""
        self._stopped = True
        self._changed.set()


def tournament_key(store: Store, name: str, given: DealKey | None, resumed: bool) -> DealKey:
    """The tournament's deal key: stored at creation (the first shard to store one wins),
    or ``given`` (checked against the stored one). Refuses a tournament created before
    deal keys existed whose finished matches were dealt from its public seed."""
    if resumed and store.stored_deal_key(name) is None and store.finished_indices(name):
        raise ResumeRefused(
            f"tournament {name!r} in {redact(store.where)} was started by an older referee that "
            "dealt from the public seed; finish it with that referee, or start it anew under a "
            "new name or database"
        )
    return store.deal_key(name, given)


def _worker_count(config: TournamentConfig, workers: int | None, port: int, todo: int) -> int:
    """Referee processes to use: ``workers`` if given, else one per core but one when the matches
    run in parallel and every bot is started by the referee (an external bot dials one
    fixed port, which only this process serves)."""
    if any(b.external for b in config.bots) or port != 0:
        return 1
    wanted = default_workers(config.parallel) if workers is None else workers
    return max(1, min(wanted, config.parallel, todo))


def export(config: TournamentConfig, store: Store) -> TournamentOutcome:
    """Fit the published standings from the database and write every export.

    Everything exported depends on the set of finished matches alone, not on the order
    they finished in (parallel matches, shards): the live Elo column is replayed in
    schedule order, and the Bradley–Terry fit and its bootstrap are order-independent.

    The tournament is over, so the deal key is published with the exports: in
    ``deal-key.txt`` and ``ratings.json``, beside its commitment (``referee verify``).
    """
    key = store.stored_deal_key(config.name)
    deal = {} if key is None else {"deal_key_commitment": key.commitment(), "deal_key": key.hex()}
    results = sorted(store.results(config.name), key=lambda r: (r.idx, r.seat))
    outcomes = outcomes_from(results)
    elo = LiveElo()
    for outcome in outcomes:
        elo.update(outcome)
    stats = bot_stats(results)
    fitted = fit(outcomes, anchor=config.anchor or None, min_matches=config.min_matches)
    standings, warnings = fitted.standings, fitted.warnings
    live = elo.ratings()
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    exports = {
        "ratings.json": out / "ratings.json",
        "ratings.csv": out / "ratings.csv",
        "results.csv": out / "results.csv",
        "report.html": out / "report.html",
    }
    if key is not None:
        exports["deal-key.txt"] = out / "deal-key.txt"
    # Written beside, then renamed: shards finishing at once never leave a torn file.
    tmp = {name: out / f".{name}.{os.getpid()}.tmp" for name in exports}
    write_ratings_json(
        tmp["ratings.json"],
        standings,
        stats,
        live,
        meta={"tournament": config.name, **deal},
        warnings=warnings,
    )
    if key is not None:
        tmp["deal-key.txt"].write_text(key.hex() + "\n", encoding="ascii")
    write_ratings_csv(tmp["ratings.csv"], standings, stats, live)
    write_results_csv(
        tmp["results.csv"],
        [
            {
                "tournament": config.name,
                "match_index": r.idx,
                "match_id": r.match_id,
                "seat": r.seat,
                "bot": r.bot,
                "total": r.total,
                "place": r.place,
                "forfeited": r.forfeited,
                "faults": r.faults,
            }
            for r in results
        ],
    )
    think = {bot: (s.think_p50_ms, s.think_p99_ms) for bot, s in stats.items()}
    rows = store.match_rows(config.name)
    write_report_html(
        tmp["report.html"],
        f"Tournament {config.name}",
        standings,
        stats,
        store.faults_by_reason(config.name),
        think,
        deal=deal,
        live_elo=live,
        matches=report_matches(results, rows, out),
        sandbox=config.sandbox,
        warnings=warnings,
        min_matches=config.min_matches,
    )
    for name, path in exports.items():
        os.replace(tmp[name], path)
    finished = sum(1 for r in rows if r["status"] == "finished")
    return TournamentOutcome(
        standings,
        stats,
        live,
        finished,
        len(rows),
        standings_table(standings, stats, live, warnings, config.min_matches),
        exports,
    )


def report_matches(
    results: Sequence[StoredResult], rows: Sequence[dict[str, Any]], out: Path
) -> list[ReportMatch]:
    """The report's matches, newest first; the latest ones with their record embedded."""
    from referee.match.record import ReplayError, read_record
    from referee.results.documents import RecordShapeError, viewer_document

    paths = {r["idx"]: r["record_path"] for r in rows}
    by_idx: dict[int, list[StoredResult]] = {}
    for r in results:
        by_idx.setdefault(r.idx, []).append(r)
    found: list[ReportMatch] = []
    for idx in sorted(by_idx, reverse=True):
        seats = sorted(by_idx[idx], key=lambda r: r.seat)
        path = Path(paths.get(idx) or out / "matches" / f"{seats[0].match_id}.jsonl")
        viewer = None
        if len(found) < EMBEDDED_MATCHES:
            with contextlib.suppress(OSError, ReplayError, RecordShapeError):
                viewer = viewer_document(list(read_record(path)))
        record = os.path.relpath(path, out) if path.is_absolute() else str(path)
        found.append(
            ReportMatch(
                seats[0].match_id,
                [r.bot for r in seats],
                [r.total for r in seats],
                [r.place for r in seats],
                record,
                viewer,
            )
        )
    return found


class MergeRefused(ValueError):
    """A shard's database does not hold this tournament, or holds another configuration."""


@dataclass
class MergeOutcome:
    """What ``referee merge`` did: matches copied from shard databases, what is missing."""

    copied: int
    already: int
    missing: list[str]
    outcome: TournamentOutcome | None


def merge_shards(config: TournamentConfig, sources: Sequence[str]) -> MergeOutcome:
    """Copy the finished matches of shard databases ``sources`` into the tournament's
    database and, when every scheduled match is finished there, export the standings.

    A match already finished in the tournament's database is never copied again, so a
    merge can be repeated (after a missing shard has run) without duplicating anything.
    """
    full = make_schedule(config)
    store = open_store(config.database)
    copied = already = 0
    try:
        store.open_tournament(config.name, config.fingerprint(), config.fingerprint_hash())
        key = store.stored_deal_key(config.name)
        keyed_by = redact(config.database)
        for source in sources:
            if (
                not is_url(source)
                and not is_url(config.database)
                and Path(source).resolve() == Path(config.database).resolve()
            ):
                continue
            shard = open_store(source)
            try:
                changes = shard.changes(
                    config.name, config.fingerprint(), config.fingerprint_hash()
                )
                if changes is None:
                    raise MergeRefused(
                        f"{redact(source)} holds no tournament {config.name!r}; is it a shard of another tournament?"
                    )
                if changes:
                    raise MergeRefused(
                        f"{redact(source)} holds tournament {config.name!r} with a different configuration "
                        f"({changes}); merge only shards of this configuration"
                    )
                shard_key = shard.stored_deal_key(config.name)
                if shard_key is None:
                    raise MergeRefused(
                        f"{redact(source)} holds no deal key for tournament {config.name!r}; "
                        "it was played by an older referee and cannot be merged"
                    )
                if key is None:
                    key, keyed_by = store.deal_key(config.name, shard_key), redact(source)
                elif shard_key != key:
                    raise MergeRefused(
                        f"{redact(source)} was dealt with the deal key of commitment "
                        f"{shard_key.commitment()}, {keyed_by} with {key.commitment()}; "
                        "merge only shards played with one key"
                    )
                for found in shard.finished_matches(config.name):
                    if store.import_finished(config.name, found):
                        copied += 1
                    else:
                        already += 1
            finally:
                shard.close()
        finished = store.finished_indices(config.name)
        missing = [match_id_of(config, m) for m in full if m.index not in finished]
        outcome = None if missing else export(config, store)
        return MergeOutcome(copied, already, missing, outcome)
    finally:
        store.close()
