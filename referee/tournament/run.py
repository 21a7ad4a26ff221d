"""Running a tournament: the schedule, ``parallel`` matches at once, resume, exports.

Every seat of a match has its own bot stream, kept between matches by the bot pool and
lent to one match at a time; a bot process has one stream, or up to ``seats`` when its
bot file declares that it plays several matches at once (never two seats of one match).
With ``parallel`` matches on more than two cores, matches are played in referee worker
processes (:mod:`referee.tournament.workers`). Results go to the database as each match finishes; a
tournament killed at any moment and started again with the same command replays only
the matches that had not finished, and ends with the same standings.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from referee import logs
from referee.metrics import RefereeMetrics
from referee.ratings import BotStats, LiveElo, MatchOutcome, Standing, fit, quantile
from referee.report import (
    standings_table,
    write_ratings_csv,
    write_ratings_json,
    write_report_html,
    write_results_csv,
)
from referee.runner import MatchResult
from referee.tournament.config import TournamentConfig
from referee.tournament.schedule import ScheduledMatch, make_schedule
from referee.tournament.storage import Store, StoredResult, is_url, open_store, redact
from referee.tournament.workers import (
    InProcess,
    MatchJob,
    MatchPlayer,
    WorkerDied,
    WorkerProcesses,
    default_workers,
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

    @property
    def complete(self) -> bool:
        """Every scheduled match of the tournament is finished."""
        return self.finished == self.planned


class Progress:
    """Matches done / planned, ETA and the current leader: a bar on a terminal, log lines elsewhere."""

    def __init__(self, planned: int, done: int, tty: bool | None = None) -> None:
        self.planned = planned
        self.done = done
        self.start_done = done
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty() if tty is None else tty

    def update(self, done: int, leader: str, leader_elo: float, running: int) -> None:
        """Show the state after a match finished."""
        self.done = done
        elapsed = time.monotonic() - self.started
        new = done - self.start_done
        eta = elapsed / new * (self.planned - done) if new else float("nan")
        if self.tty:
            width = 30
            filled = int(width * done / max(1, self.planned))
            eta_text = "?" if eta != eta else f"{int(eta // 60)}m{int(eta % 60):02d}s"
            line = f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.planned} matches  ETA {eta_text}  leader {leader} ({leader_elo:.0f})  running {running}"
            sys.stderr.write(line)
            if done >= self.planned:
                sys.stderr.write("\n")
            sys.stderr.flush()
        else:
            log.info(
                "progress",
                done=done,
                planned=self.planned,
                eta_s=None if eta != eta else round(eta, 1),
                leader=leader,
                leader_elo=round(leader_elo, 1),
                running=running,
            )


def outcomes_from(results: Sequence[StoredResult]) -> list[MatchOutcome]:
    """Group stored seat rows into match outcomes, in finishing order."""
    by_match: dict[int, list[StoredResult]] = {}
    for r in results:
        by_match.setdefault(r.idx, []).append(r)
    out = []
    for idx, rows in by_match.items():
        rows.sort(key=lambda r: r.seat)
        out.append(
            MatchOutcome(
                bots=tuple(r.bot for r in rows),
                places=tuple(r.place for r in rows),
                key=f"{idx:08d}",
                forfeited=tuple(r.forfeited for r in rows),
            )
        )
    return out


def bot_stats(results: Sequence[StoredResult]) -> dict[str, BotStats]:
    """Per bot: matches, mean score and place, faults, think-time p50/p99."""
    acc: dict[str, list[StoredResult]] = {}
    for r in results:
        acc.setdefault(r.bot, []).append(r)
    stats = {}
    for bot, rows in acc.items():
        think = [t / 1000 for r in rows for t in r.think_us]
        stats[bot] = BotStats(
            bot=bot,
            matches=len(rows),
            mean_score=sum(r.total for r in rows) / len(rows),
            mean_place=sum(r.place for r in rows) / len(rows),
            faults=sum(r.faults for r in rows),
            think_p50_ms=quantile(think, 0.5) if think else 0.0,
            think_p99_ms=quantile(think, 0.99) if think else 0.0,
        )
    return stats


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
) -> TournamentOutcome:
    """Play every unfinished match of ``config`` (or of ``indices``, or of ``shard``) and,
    once the whole tournament is finished in the database, export the standings.

    Several shards may run at once on one shared database (PostgreSQL, or one SQLite
    file on one machine): each plans, resets and plays only its own matches.
    """
    full = make_schedule(config)
    schedule = full
    if indices is not None:
        wanted = set(indices)
        schedule = [m for m in schedule if m.index in wanted]
    schedule = Shard.select(shard, schedule)
    mine = {m.index for m in schedule}
    metrics = metrics or RefereeMetrics()
    metrics.decision_limit.set(config.clock.decision_ms / 1000)
    store = open_store(config.database)
    try:
        resumed = store.open_tournament(
            config.name, config.fingerprint(), config.fingerprint_hash()
        )
        store.plan(config.name, schedule, lambda m: match_id_of(config, m))
        interrupted = store.reset_interrupted(
            config.name, None if len(schedule) == len(full) else mine
        )
        finished = store.finished_indices(config.name)
        todo = [m for m in schedule if m.index not in finished]
        log.info(
            "tournament_start",
            tournament=config.name,
            shard=None if shard is None else str(shard),
            planned=len(schedule),
            finished=len(finished & mine),
            replaying_interrupted=interrupted,
            resumed=resumed,
        )
        elo = LiveElo()
        for outcome in outcomes_from(store.results(config.name)):
            elo.update(outcome)
        for bot, value in elo.ratings().items():
            metrics.elo.labels(bot).set(value)
        metrics.planned.set(len(schedule))
        done = len(schedule) - len(todo)
        metrics.finished.set(done)
        bar = Progress(len(schedule), done, progress)
        bots = {b.name: b for b in config.bots}
        # Bot processes are kept between matches (one match at a time each), except in
        # duplicate mode, where every replay starts the bots afresh.
        pooled = config.mode != "duplicate"
        log_dir = config.out / "logs"
        startup_s = config.clock.startup_ms / 1000
        count = _worker_count(config, workers, port, len(todo))
        player: MatchPlayer
        if count > 1:
            processes = WorkerProcesses(
                count,
                metrics,
                log_dir=log_dir,
                startup_s=startup_s,
                pooled=pooled,
                host=host,
                log_level=log_level or logs.LEVEL,
            )
            player = processes
            await processes.start()
        else:
            here = InProcess(metrics, log_dir, startup_s, pooled)
            player = here
            await here.start(host, port)
        queue: asyncio.Queue[ScheduledMatch] = asyncio.Queue()
        for m in todo:
            queue.put_nowait(m)

        running = 0

        async def play(m: ScheduledMatch) -> MatchResult:
            job = MatchJob(
                index=m.index,
                bots=tuple(bots[name] for name in m.seating),
                rules=config.rules,
                seed=m.seed,
                match_id=match_id_of(config, m),
                clock=config.clock,
                strike_limit=config.strike_limit,
                out_dir=config.out,
            )
            for attempt in range(1, WORKER_RETRIES + 2):
                try:
                    return await player.play(
                        job, lambda path: store.mark_running(config.name, m.index, path)
                    )
                except WorkerDied as exc:
                    if attempt > WORKER_RETRIES:
                        raise
                    log.warning("match_replayed", match_index=m.index, why=str(exc))
            raise AssertionError("unreachable")

        async def worker() -> None:
            nonlocal done, running
            while True:
                try:
                    m = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                running += 1
                metrics.running.set(running)
                try:
                    result = await play(m)
                finally:
                    running -= 1
                    metrics.running.set(running)
                store.save_result(config.name, m.index, result)
                metrics.matches.inc()
                metrics.match_duration.observe(result.duration_s)
                elo.update(
                    MatchOutcome(
                        bots=m.seating,
                        places=tuple(result.places),
                        key=f"{m.index:08d}",
                        forfeited=tuple(s.forfeited for s in result.seats),
                    )
                )
                for bot, value in elo.ratings().items():
                    metrics.elo.labels(bot).set(value)
                done += 1
                metrics.finished.set(done)
                ratings = elo.ratings()
                leader = max(ratings, key=lambda b: ratings[b])
                bar.update(done, leader, ratings[leader], running)

        try:
            await asyncio.gather(
                *(worker() for _ in range(min(config.parallel, max(1, len(todo)))))
            )
        finally:
            await player.close()
            referee_cpu_s = player.cpu_seconds()
        finished = store.finished_indices(config.name)
        if all(m.index in finished for m in full):
            exported = export(config, store)
            for bot, value in exported.live_elo.items():  # as exported: in schedule order
                metrics.elo.labels(bot).set(value)
        else:
            exported = TournamentOutcome(
                [], {}, {}, len(finished & {m.index for m in full}), len(full), "", {}
            )
            log.info(
                "tournament_incomplete",
                tournament=config.name,
                finished=exported.finished,
                planned=exported.planned,
                why="other shards' matches are not finished yet; no exports",
            )
        exported.referee_cpu_s = referee_cpu_s
        exported.shard_planned = len(schedule)
        exported.shard_finished = len(finished & mine)
        return exported
    finally:
        store.close()


WORKER_RETRIES = 2


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
    """
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
    # Written beside, then renamed: shards finishing at once never leave a torn file.
    tmp = {name: out / f".{name}.{os.getpid()}.tmp" for name in exports}
    write_ratings_json(tmp["ratings.json"], standings, stats, live, warnings=warnings)
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
    write_report_html(
        tmp["report.html"],
        f"Tournament {config.name}",
        standings,
        stats,
        store.faults_by_reason(config.name),
        think,
        warnings=warnings,
        min_matches=config.min_matches,
    )
    for name, path in exports.items():
        os.replace(tmp[name], path)
    rows = store.match_rows(config.name)
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
