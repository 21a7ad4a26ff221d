"""Running a comparison: the deal pairs, their matches, the store, the test, the exports.

Deal pair ``d`` is two matches on one deal: match ``2d`` with the candidate and match
``2d + 1`` with the baseline, in the same seat, against the same opponents in the same
seats. The deal's match seed is ``key.match_seed(d)`` under the comparison's secret deal
key (:mod:`referee.match.dealkey`), made when the comparison is created and kept in its
database; the public ``seed`` draws the opponents of each deal and nothing else, and the
candidate's seat rotates over the deals (deal ``d``: seat ``d mod k``). So a comparison is
a function of its seed and key, apart from the bots themselves.

Every seat of every match gets a bot process of its own that serves that match only: an
opponent process that played the candidate's match of a deal could otherwise remember the
deal in the baseline's. The processes are started ahead (a fresh one replaces each one
taken), so a match does not wait for its bots to boot. Every seat gets the deal key's bot
seed for its deal and seat (``MatchStart.bot_seed``), the same in both matches of a pair:
bots that draw their random choices from it face the same luck with the candidate and with
the baseline (common random numbers), unless ``common_seeds`` is off.

Only real pairs count: a match that was aborted, or in which a seat failed its handshake
(the bot never got to play the deal), is void. Its record moves to ``void/``, it is played
again on the same deal with fresh processes, and it never enters the test; after
:data:`VOID_LIMIT` void attempts of one match the comparison stops (exit status 3). A pair
compares like with like: when an opponent forfeited (a crash, a disconnect, too many
strikes) in one match of a pair and not in the other, the match it forfeited in is void
too (:func:`unlike`), and played again the same way.

The test reads the pairs in deal order and stops at the first deal pair where the
evidence crosses a bound. With matches in parallel, pairs finish out of order; a pair
counts once it and every pair before it are finished, so the verdict does not depend on
the order matches finish in. Pairs played after the verdict (they were running when it
came) are kept in the records but not counted.

Each finished match is stored in one transaction; a comparison killed at any moment and
started again with the same settings replays only the unfinished matches.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import random
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from referee.compare.config import CompareConfig, finite
from referee.compare.sprt import (
    CHECKED_FROM,
    H0,
    H1,
    LONGEST,
    SPRT,
    STEEP_SKEW,
    Z95,
    State,
    first_verdict,
    outlook,
    state,
)
from referee.jail import resident
from referee.match.dealkey import DealKey
from referee.match.faults import FaultReason
from referee.match.metrics import RefereeMetrics
from referee.match.runner import MatchResult
from referee.results.store import describe_changes
from referee.runtime import logs
from referee.runtime.private import private_dir
from referee.tournament.workers import (
    MatchJob,
    WorkerDied,
    default_workers,
    start_player,
)

log = structlog.get_logger("referee.compare")

CANDIDATE = "candidate"
BASELINE = "baseline"
#: Exit statuses of ``referee compare``.
EXIT_H1, EXIT_H0, EXIT_UNDECIDED = 0, 1, 2
#: Times a match is replayed after its referee worker died.
WORKER_RETRIES = 2
#: Void attempts of one match (aborted, or a seat never completed its handshake) before
#: the comparison gives up: a bot that cannot start is not a matter of luck.
VOID_LIMIT = 3
#: Deal numbers of the baseline's bot seeds when common random numbers are off: far from
#: any deal a comparison plays, so they are independent of the candidate's.
INDEPENDENT_SEEDS = 1 << 62


class CompareRefused(ValueError):
    """The comparison cannot use its store (it cannot be opened, or it holds this
    comparison with other settings), or cannot be played (a match stayed void); the message
    is one line."""


# -- the schedule ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PairPlan:
    """Deal pair ``deal``: its match seed, the seat of the compared bot and the opponents
    in the other seats, in seat order."""

    deal: int
    seed: int
    seat: int
    opponents: tuple[str, ...]

    def seating(self, bot: str) -> tuple[str, ...]:
        """The bot names by seat with ``bot`` in the compared seat."""
        seats = list(self.opponents)
        seats.insert(self.seat, bot)
        return tuple(seats)


def plan_pair(config: CompareConfig, key: DealKey, deal: int) -> PairPlan:
    """The plan of deal pair ``deal``: opponents drawn by the public seed, the seed by the key."""
    rng = random.Random(f"sticheln/compare/v1/{config.seed}/{deal}")
    names = [b.name for b in config.opponents]
    opponents = tuple(rng.sample(names, config.table_size - 1))
    return PairPlan(deal, key.match_seed(deal), deal % config.table_size, opponents)


def match_id(config: CompareConfig, deal: int, role: str) -> str:
    """``<name>-<deal>-c`` for the candidate's match, ``-b`` for the baseline's."""
    return f"{config.name}-{deal:05d}-{role[0]}"


# -- the store ---------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS compare_runs (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    fingerprint_hash TEXT NOT NULL,
    deal_key TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS compare_matches (
    name TEXT NOT NULL,
    idx INTEGER NOT NULL,
    deal INTEGER NOT NULL,
    role TEXT NOT NULL,
    match_id TEXT NOT NULL,
    seating TEXT NOT NULL,
    status TEXT NOT NULL,
    record_path TEXT,
    duration_s REAL,
    finished_at REAL,
    PRIMARY KEY (name, idx)
);
CREATE TABLE IF NOT EXISTS compare_void (
    name TEXT NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    match_id TEXT NOT NULL,
    why TEXT NOT NULL,
    record_path TEXT NOT NULL,
    PRIMARY KEY (name, idx, attempt)
);
CREATE TABLE IF NOT EXISTS compare_results (
    name TEXT NOT NULL,
    idx INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    total INTEGER NOT NULL,
    place INTEGER NOT NULL,
    forfeited INTEGER NOT NULL,
    faults INTEGER NOT NULL,
    PRIMARY KEY (name, idx, seat)
);
"""


@dataclass(frozen=True, slots=True)
class SeatRow:
    """One seat of one finished match, as stored."""

    idx: int
    seat: int
    bot: str
    total: int
    place: int
    forfeited: bool
    faults: int


class CompareStore:
    """A comparison's SQLite database: its settings and deal key, the matches, the results.

    The file holds the secret deal key, so it is made readable by its owner only.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
            os.close(fd)
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise CompareRefused(f"cannot open the comparison's database {path}: {exc}") from None

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def open_run(self, config: CompareConfig) -> tuple[bool, DealKey]:
        """Register the comparison with a fresh deal key, or check a resume; returns
        (resumed, the deal key). Raises :class:`CompareRefused` naming what changed."""
        fingerprint = config.fingerprint()
        key = DealKey.new()
        cur = self.db.execute(
            "INSERT INTO compare_runs VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                config.name,
                json.dumps(fingerprint, sort_keys=True),
                config.fingerprint_hash(),
                key.hex(),
                time.time(),
            ),
        )
        if cur.rowcount == 1:
            return False, key
        stored, stored_hash, stored_key = self.db.execute(
            "SELECT fingerprint, fingerprint_hash, deal_key FROM compare_runs WHERE name = ?",
            (config.name,),
        ).fetchone()
        if stored_hash != config.fingerprint_hash():
            changes = "; ".join(describe_changes(json.loads(stored), fingerprint))
            raise CompareRefused(
                f"comparison {config.name!r} in {self.path} was started with other settings "
                f"({changes or 'details differ'}); restore them, or use a new name or --out"
            )
        return True, DealKey.from_hex(stored_key)

    def reset_running(self, name: str) -> int:
        """Matches left running by a killed run are forgotten (they are played again)."""
        return int(
            self.db.execute(
                "DELETE FROM compare_matches WHERE name = ? AND status = 'running'", (name,)
            ).rowcount
        )

    def mark_running(
        self, name: str, idx: int, deal: int, role: str, mid: str, seating: tuple[str, ...]
    ) -> None:
        """A match has started."""
        self.db.execute(
            "INSERT INTO compare_matches (name, idx, deal, role, match_id, seating, status) "
            "VALUES (?, ?, ?, ?, ?, ?, 'running') ON CONFLICT (name, idx) DO UPDATE SET "
            "status = 'running'",
            (name, idx, deal, role, mid, json.dumps(seating)),
        )

    def save(self, name: str, idx: int, result: MatchResult) -> None:
        """Store a finished match, all of it in one transaction."""
        with self._transaction():
            self.db.execute("DELETE FROM compare_results WHERE name = ? AND idx = ?", (name, idx))
            self.db.executemany(
                "INSERT INTO compare_results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (name, idx, s.seat, s.bot, s.total, s.place, int(s.forfeited), len(s.faults))
                    for s in result.seats
                ],
            )
            self.db.execute(
                "UPDATE compare_matches SET status = 'finished', record_path = ?, duration_s = ?, "
                "finished_at = ? WHERE name = ? AND idx = ?",
                (str(result.record_path), result.duration_s, time.time(), name, idx),
            )

    def void_attempts(self, name: str, idx: int) -> int:
        """How many attempts of match ``idx`` were void."""
        (count,) = self.db.execute(
            "SELECT COUNT(*) FROM compare_void WHERE name = ? AND idx = ?", (name, idx)
        ).fetchone()
        return int(count)

    def void(self, name: str, idx: int, attempt: int, mid: str, why: str, record: Path) -> None:
        """Attempt ``attempt`` of match ``idx`` was void: it is forgotten (and played again)."""
        with self._transaction():
            self.db.execute(
                "INSERT INTO compare_void VALUES (?, ?, ?, ?, ?, ?)",
                (name, idx, attempt, mid, why, str(record)),
            )
            self.db.execute("DELETE FROM compare_matches WHERE name = ? AND idx = ?", (name, idx))

    def voided(self, name: str) -> list[dict[str, Any]]:
        """Every void attempt: match index, attempt, match id, why, where its record is."""
        cur = self.db.execute(
            "SELECT idx, attempt, match_id, why, record_path FROM compare_void WHERE name = ? "
            "ORDER BY idx, attempt",
            (name,),
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def record_path(self, name: str, idx: int) -> Path | None:
        """Where finished match ``idx``'s record is, or None."""
        row = self.db.execute(
            "SELECT record_path FROM compare_matches WHERE name = ? AND idx = ? "
            "AND status = 'finished'",
            (name, idx),
        ).fetchone()
        return None if row is None or row[0] is None else Path(row[0])

    def finished(self, name: str) -> dict[int, list[SeatRow]]:
        """Every finished match's seats, by match index."""
        rows = self.db.execute(
            "SELECT r.idx, r.seat, r.bot, r.total, r.place, r.forfeited, r.faults "
            "FROM compare_results r JOIN compare_matches m ON m.name = r.name AND m.idx = r.idx "
            "WHERE r.name = ? AND m.status = 'finished' ORDER BY r.idx, r.seat",
            (name,),
        )
        out: dict[int, list[SeatRow]] = {}
        for idx, seat, bot, total, place, forfeited, faults in rows:
            out.setdefault(idx, []).append(
                SeatRow(idx, seat, bot, total, place, bool(forfeited), faults)
            )
        return out

    def matches(self, name: str) -> dict[int, dict[str, Any]]:
        """Every finished match's id, deal, role and record path, by match index."""
        cur = self.db.execute(
            "SELECT idx, match_id, deal, role, record_path, duration_s FROM compare_matches "
            "WHERE name = ? AND status = 'finished' ORDER BY idx",
            (name,),
        )
        cols = [d[0] for d in cur.description]
        return {row[0]: dict(zip(cols, row, strict=True)) for row in cur.fetchall()}


# -- the pairs and the test ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pair:
    """One finished deal pair: the candidate's and the baseline's score and place."""

    deal: int
    candidate_total: int
    baseline_total: int
    candidate_place: int
    baseline_place: int
    #: The share of the opponents each placed below (a shared place counts half).
    candidate_share: float = 0.0
    baseline_share: float = 0.0

    @property
    def score_diff(self) -> int:
        """Candidate − baseline, in points."""
        return self.candidate_total - self.baseline_total

    @property
    def place_diff(self) -> int:
        """Candidate − baseline, in places (negative: the candidate placed better)."""
        return self.candidate_place - self.baseline_place

    @property
    def share_diff(self) -> float:
        """Candidate − baseline, in the share of opponents beaten."""
        return self.candidate_share - self.baseline_share

    def sample(self, metric: str) -> float:
        """The pair's sample for the test: the score or the share difference."""
        return float(self.score_diff) if metric == "score" else self.share_diff


def share_beaten(rows: list[SeatRow], bot: str) -> float:
    """The share of the other seats ``bot`` placed below, a shared place counting half;
    forfeited seats share the last place."""
    n = len(rows)
    gone = sum(r.forfeited for r in rows)
    place = {r.seat: (n - gone + 1 if r.forfeited else r.place) for r in rows}
    mine = next(r.seat for r in rows if r.bot == bot)
    won = sum(
        1.0 if place[mine] < place[r.seat] else 0.5 if place[mine] == place[r.seat] else 0.0
        for r in rows
        if r.seat != mine
    )
    return won / (n - 1)


def unlike(config: CompareConfig, c: list[SeatRow], b: list[SeatRow]) -> tuple[str, str]:
    """Why the candidate's match ``c`` and the baseline's match ``b`` of one deal do not
    compare like with like, one reason per match ("" for a match that does): an opponent
    that forfeited in it and not in the other. Its forfeit would enter the pair's
    difference as the compared bot's gain or loss (the forfeiting seat's points go, and
    every place moves). The compared bots' own forfeits are their doing and count."""
    compared = {config.candidate.name, config.baseline.name}
    other_c = {r.seat: r for r in c}
    other_b = {r.seat: r for r in b}
    why = ["", ""]
    for k, (mine, theirs, role) in enumerate(
        ((other_c, other_b, BASELINE), (other_b, other_c, CANDIDATE))
    ):
        gone = [
            f"seat {seat} ({row.bot}) forfeited here and not in the {role}'s match of the deal"
            for seat, row in sorted(mine.items())
            if row.bot not in compared and row.forfeited and not theirs[seat].forfeited
        ]
        why[k] = "; ".join(gone)
    return why[0], why[1]


def pairs_from(config: CompareConfig, finished: dict[int, list[SeatRow]]) -> list[Pair]:
    """The finished deal pairs in deal order, up to the first pair not finished (or not
    like with like: its forfeited match is played again, :func:`unlike`)."""
    out = []
    for deal in range(config.max_pairs):
        c, b = finished.get(2 * deal), finished.get(2 * deal + 1)
        if c is None or b is None or any(unlike(config, c, b)):
            break
        mine = next(r for r in c if r.bot == config.candidate.name)
        theirs = next(r for r in b if r.bot == config.baseline.name)
        out.append(
            Pair(
                deal,
                mine.total,
                theirs.total,
                mine.place,
                theirs.place,
                share_beaten(c, config.candidate.name),
                share_beaten(b, config.baseline.name),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where the comparison stands: the test over the counted pairs and its decision.

    ``decision`` is ``"H1"``, ``"H0"`` or None (undecided) for a sequential test, and
    ``"better"``, ``"worse"`` or ``"no difference"`` for a fixed-size comparison once all
    its pairs are in (None before).
    """

    pairs: int
    score: State
    decision: str | None
    finished: bool


def judge(config: CompareConfig, pairs: list[Pair]) -> Verdict:
    """The test over ``pairs`` (in deal order): the first verdict, or where it stands."""
    diffs = [p.sample(config.metric) for p in pairs]
    if config.sprt is not None:
        decision, at = first_verdict(config.sprt, diffs)
        counted = at if decision is not None else len(diffs)
        score = state(config.sprt, diffs[:counted], config.max_pairs)
        done = decision is not None or counted >= config.max_pairs
        return Verdict(counted, score, decision, done)
    counted = min(len(diffs), config.max_pairs)
    data = np.asarray(diffs[:counted], dtype=np.float64)
    mean = float(data.mean()) if counted else math.nan
    sd = float(data.std(ddof=1)) if counted >= 2 else math.nan
    ci = Z95 * sd / math.sqrt(counted) if counted >= 2 else math.nan
    score = State(counted, mean, sd, ci, math.nan, math.nan, None, config.max_pairs - counted)
    done = counted >= config.max_pairs
    decision = None
    if done:
        decision = "better" if mean - ci > 0 else "worse" if mean + ci < 0 else "no difference"
    return Verdict(counted, score, decision, done)


def void_reason(result: MatchResult) -> str:
    """Why a finished match is void, or "" when it is a real match: aborted, or a seat
    never completed its handshake (its bot did not play the deal at all)."""
    if result.aborted:
        return result.reason
    for seat in result.seats:
        for fault in seat.faults:
            if fault.reason is FaultReason.HANDSHAKE_FAILED:
                return f"seat {seat.seat} ({seat.bot}) failed its handshake: {fault.detail}"
    return ""


def bot_seeds(config: CompareConfig, key: DealKey, deal: int, role: str) -> tuple[int, ...]:
    """``MatchStart.bot_seed`` per seat: the deal's in both matches of a pair (common
    random numbers), or for the baseline's match a deal number of its own when
    ``common_seeds`` is off."""
    number = deal if config.common_seeds or role == CANDIDATE else INDEPENDENT_SEEDS + deal
    return key.bot_seeds(number, config.table_size)


def exit_status(verdict: Verdict) -> int:
    """0 when the candidate is better (H1, or a fixed-size interval above 0), 1 when it is
    not (H0, or an interval below 0), 2 when undecided."""
    if verdict.decision in (H1, "better"):
        return EXIT_H1
    if verdict.decision in (H0, "worse"):
        return EXIT_H0
    return EXIT_UNDECIDED


# -- running -------------------------------------------------------------------------------------


@dataclass
class CompareOutcome:
    """What a comparison produced: its verdict, the summary written to compare.json (see
    :func:`summary`), the terminal report and the export paths."""

    verdict: Verdict
    summary: dict[str, Any]
    text: str
    exports: dict[str, Path]
    played_now: int

    @property
    def exit_status(self) -> int:
        """The command's exit status (:func:`exit_status`)."""
        return exit_status(self.verdict)


Progress = Callable[[Verdict, int], None]
#: Told once, when the pilot's pairs are in: the expected length and any warning.
Notice = Callable[[str], None]


async def run_compare(
    config: CompareConfig,
    *,
    on_progress: Progress | None = None,
    on_notice: Notice | None = None,
    host: str = "127.0.0.1",
    workers: int | None = None,
    log_level: str | None = None,
    metrics: RefereeMetrics | None = None,
) -> CompareOutcome:
    """Play deal pairs until the test decides or ``matches`` are played, then export.

    ``on_progress(verdict, matches finished)`` is called after each match that adds a
    counted pair. A comparison already decided in its store plays nothing.
    """
    metrics = metrics or RefereeMetrics()
    store = CompareStore(config.database)
    try:
        resumed, key = store.open_run(config)
        replay = store.reset_running(config.name)
        finished = store.finished(config.name)
        verdict = judge(config, pairs_from(config, finished))
        log.info(
            "compare_start",
            comparison=config.name,
            resumed=resumed,
            finished_matches=len(finished),
            replaying_interrupted=replay,
            counted_pairs=verdict.pairs,
        )
        played = 0
        if not verdict.finished:
            for note in (fixed_size_note(config), min_pairs_note(config)):
                if note is not None and on_notice is not None:
                    on_notice(note)
            played = await _play(
                config,
                key,
                store,
                finished,
                on_progress,
                on_notice,
                host,
                workers,
                log_level,
                metrics,
            )
            verdict = judge(config, pairs_from(config, finished))
        return _export(config, store, verdict, played, key.commitment())
    finally:
        store.close()


async def _play(
    config: CompareConfig,
    key: DealKey,
    store: CompareStore,
    finished: dict[int, list[SeatRow]],
    on_progress: Progress | None,
    on_notice: Notice | None,
    host: str,
    workers: int | None,
    log_level: str | None,
    metrics: RefereeMetrics,
) -> int:
    bots = {b.name: b for b in (config.candidate, config.baseline, *config.opponents)}
    decided = False
    counted = judge(config, pairs_from(config, finished)).pairs
    told = config.sprt is None or counted >= config.sprt.min_pairs

    def jobs() -> Iterator[tuple[int, PairPlan, str]]:
        for deal in range(config.max_pairs):
            plan: PairPlan | None = None
            for idx, role in ((2 * deal, CANDIDATE), (2 * deal + 1, BASELINE)):
                if idx not in finished:
                    plan = plan or plan_pair(config, key, deal)
                    yield idx, plan, role

    queue = jobs()
    #: Matches voided after they finished (a pair not like with like), to play again.
    again: deque[int] = deque()

    def next_job() -> tuple[int, PairPlan, str] | None:
        while again:
            idx = again.popleft()
            if idx not in finished:
                role = CANDIDATE if idx % 2 == 0 else BASELINE
                return idx, plan_pair(config, key, idx // 2), role
        return next(queue, None)

    def void(idx: int, mid: str, record: Path | None, why: str) -> None:
        """Move a void attempt's record to void/, note it in the store, and stop the
        comparison at the VOID_LIMIT-th attempt of one match."""
        attempt = store.void_attempts(config.name, idx) + 1
        moved = config.out / "void" / f"{mid}.void{attempt}.jsonl"
        moved.parent.mkdir(parents=True, exist_ok=True)
        if record is not None:
            with contextlib.suppress(FileNotFoundError):
                os.replace(record, moved)
        store.void(config.name, idx, attempt, mid, why, moved)
        log.warning("match_void", match_id=mid, attempt=attempt, why=why)
        if attempt >= VOID_LIMIT:
            raise CompareRefused(
                f"match {mid} was void {attempt} times (the last: {why}); "
                f"see the bots' logs in {config.out / 'logs'}"
            )

    def void_unlike(deal: int) -> None:
        """Void the match of deal pair ``deal`` an opponent forfeited in alone, once
        both are finished, and have it played again."""
        c, b = finished.get(2 * deal), finished.get(2 * deal + 1)
        if c is None or b is None:
            return
        for idx, role, why in zip(
            (2 * deal, 2 * deal + 1), (CANDIDATE, BASELINE), unlike(config, c, b), strict=True
        ):
            if why:
                record = store.record_path(config.name, idx)
                del finished[idx]
                void(idx, match_id(config, deal, role), record, why)
                again.append(idx)

    for deal in sorted({idx // 2 for idx in finished}):
        void_unlike(deal)  # a run killed between a match and its partner's check
    todo_max = 2 * config.max_pairs - len(finished)
    wanted = default_workers(config.parallel) if workers is None else workers
    count = max(1, min(wanted, config.parallel, todo_max))
    resident.for_replays()  # a pair's second match must not read what its first left
    player = await start_player(
        count,
        metrics,
        log_dir=private_dir(config.out / "logs"),
        startup_s=config.clock.startup_ms / 1000,
        pooled=False,
        single_use=True,
        sandbox=config.sandbox,
        host=host,
        log_level=log_level or logs.LEVEL,
    )
    played = 0

    async def play(idx: int, plan: PairPlan, role: str) -> MatchResult:
        while True:
            result = await play_once(idx, plan, role)
            why = void_reason(result)
            if not why:
                return result
            void(idx, result.match_id, result.record_path, why)

    async def play_once(idx: int, plan: PairPlan, role: str) -> MatchResult:
        bot = config.candidate if role == CANDIDATE else config.baseline
        seating = plan.seating(bot.name)
        mid = match_id(config, plan.deal, role)
        job = MatchJob(
            index=idx,
            bots=tuple(bots[name] for name in seating),
            rules=config.rules,
            seed=plan.seed,
            match_id=mid,
            clock=config.clock,
            strike_limit=config.strike_limit,
            out_dir=config.out,
            deal=plan.deal,
            deal_key_commitment=key.commitment(),
            seed_withheld="a comparison plays every deal twice, and its deal key stays secret",
            bot_seeds=bot_seeds(config, key, plan.deal, role),
        )
        for attempt in range(1, WORKER_RETRIES + 2):
            try:
                return await player.play(
                    job,
                    lambda _path: store.mark_running(
                        config.name, idx, plan.deal, role, mid, seating
                    ),
                )
            except WorkerDied as exc:
                if attempt > WORKER_RETRIES:
                    raise
                log.warning("match_replayed", match_id=mid, why=str(exc))
        raise AssertionError("unreachable")

    async def worker() -> None:
        nonlocal decided, counted, played, told
        while not decided:
            job = next_job()
            if job is None:
                return
            result = await play(*job)
            store.save(config.name, job[0], result)
            finished[job[0]] = [
                SeatRow(job[0], s.seat, s.bot, s.total, s.place, s.forfeited, len(s.faults))
                for s in result.seats
            ]
            played += 1
            void_unlike(job[0] // 2)
            pairs = pairs_from(config, finished)
            verdict = judge(config, pairs)
            if not told and not verdict.finished:
                plan = pilot(config, pairs)
                if plan is not None:
                    told = True
                    log.info("compare_pilot", **plan)
                    if on_notice is not None:
                        on_notice(pilot_text(config, plan))
            if verdict.pairs != counted or (verdict.finished and not decided):
                counted = verdict.pairs
                decided = verdict.finished
                if on_progress is not None:
                    on_progress(verdict, len(finished))

    try:
        await asyncio.gather(*(worker() for _ in range(config.parallel)))
    finally:
        await player.close()
    return played


# -- the exports ---------------------------------------------------------------------------------


def pilot(config: CompareConfig, pairs: list[Pair]) -> dict[str, Any] | None:
    """What the first ``min_pairs`` pairs (the pilot) say about the test's length: their
    spread, and about how many pairs the test takes if the truth is ``lower``, ``upper``
    or the pilot's own mean; ``likely_undecided`` when one of those exceeds the cap."""
    sprt = config.sprt
    if sprt is None or len(pairs) < sprt.min_pairs:
        return None
    sample = np.array([p.sample(config.metric) for p in pairs[: sprt.min_pairs]])
    mean, sd = float(sample.mean()), float(sample.std(ddof=1))
    if not sd > 0:
        return {
            "pairs": sprt.min_pairs,
            "mean": mean,
            "sd": sd,
            "skewness": None,
            "expected_pairs": None,
            "likely_undecided": False,
            "cap_short_near_bounds": False,
            "skew_beyond_checked": False,
        }
    centred = sample - mean
    skewness = float((centred**3).mean() / (centred**2).mean() ** 1.5)
    # The test itself, run on the pilot's pairs drawn again, moved to each mean: its
    # corrections and the pilot's shape count as they will in the run.
    horizon = min(config.max_pairs, LONGEST)
    none = np.zeros(0)
    ahead = {
        "at_lower": outlook(sprt, none, sample, sprt.lower, horizon),
        "at_upper": outlook(sprt, none, sample, sprt.upper, horizon),
        "at_pilot_mean": outlook(sprt, none, sample, mean, horizon),
    }
    # Half of the tests or more still undecided at the cap: "more than the cap allows".
    expected = {k: None if v is None or v.undecided >= 0.5 else v.pairs for k, v in ahead.items()}
    near = [expected["at_lower"], expected["at_upper"]]
    likely = expected["at_pilot_mean"]
    return {
        "pairs": sprt.min_pairs,
        "mean": mean,
        "sd": sd,
        "skewness": skewness,
        "expected_pairs": {k: None if v is None else round(v) for k, v in expected.items()},
        # At the pilot's own mean (the likeliest truth) the cap comes first.
        "likely_undecided": likely is None or likely > config.max_pairs,
        # Were the truth at a bound, the cap would come first.
        "cap_short_near_bounds": any(v is None or v > config.max_pairs for v in near),
        # The default test's skew correction is held beyond this (|g|·δ/s > 1), and its
        # error rates were checked on few such shapes.
        "skew_beyond_checked": sprt.method == SPRT and abs(skewness) * sprt.delta / sd > STEEP_SKEW,
    }


def pilot_text(config: CompareConfig, p: dict[str, Any]) -> str:
    """The pilot's lines for the terminal: expected pairs, and a warning when the cap is
    likely to end the test undecided."""
    e = p["expected_pairs"]
    digits = 1 if config.metric == "score" else 3
    if e is None:
        return f"pilot: the first {p['pairs']} pairs are all equal: no spread to plan with"

    def n(v: int | None, unit: str = "") -> str:
        if v is not None:
            return f"about {v}{unit}"
        if config.max_pairs <= LONGEST:
            return f"more{unit} than the cap allows"
        return f"more than {LONGEST}{unit}"

    assert config.sprt is not None
    text = (
        f"pilot of {p['pairs']} pairs: mean {p['mean']:+.{digits}f}, sd {p['sd']:.{digits}f}; "
        f"the test needs {n(e['at_lower'], ' pairs')} if the truth is lower "
        f"({config.sprt.lower:g}), {n(e['at_upper'])} if it is upper ({config.sprt.upper:g}), "
        f"{n(e['at_pilot_mean'])} at the pilot's mean; the cap is {config.max_pairs} pairs"
    )
    if p["likely_undecided"]:
        text += (
            "\nwarning: the cap is likely to end this test undecided; raise --matches, or "
            "widen the bounds (upper further from lower)"
        )
    elif p["cap_short_near_bounds"]:
        text += (
            "\nnote: should the true difference lie near a bound, the cap would likely end "
            "the test undecided"
        )
    if p["skew_beyond_checked"]:
        steep = abs(p["skewness"]) * config.sprt.delta / p["sd"]
        text += (
            f"\nnote: the pilot's differences are skewed ({p['skewness']:+.1f}) against bounds "
            f"{config.sprt.delta / p['sd']:.2f} sd apart (|skewness| × (upper − lower) / sd = "
            f"{steep:.1f}, above {STEEP_SKEW:g}): the test's error rates were checked on few "
            "such shapes (--sprt method=betting holds for every shape)"
        )
    return text


def fixed_size_note(config: CompareConfig) -> str | None:
    """A note for the start of a run that ``matches`` without a test made a fixed-size
    comparison, or None."""
    if not config.fixed_by_matches:
        return None
    return (
        f"note: matches = {config.matches} without a test (--sprt or [compare.sprt]): a "
        f"fixed-size comparison of exactly {config.matches} matches ({config.max_pairs} deal "
        "pairs), no sequential test and no early stop; give --sprt to test with this cap"
    )


def min_pairs_note(config: CompareConfig) -> str | None:
    """A note for the start of a run whose ``min_pairs`` is below what the default test's
    error rates were checked from, or None."""
    sprt = config.sprt
    if sprt is None or sprt.method != SPRT or sprt.min_pairs >= CHECKED_FROM:
        return None
    return (
        f"note: min_pairs = {sprt.min_pairs} is below the {CHECKED_FROM} pairs the test's "
        "error rates were checked from; so few pairs' spread can mislead it (--sprt "
        "method=betting holds at any min_pairs)"
    )


def _interval(x: Any) -> dict[str, Any]:
    """Mean and 95% half-width; ``degenerate`` when every value is equal (the zero width
    then says nothing about the uncertainty), ``ci95`` None below two values."""
    if x.size < 2:
        mean = finite(float(x.mean())) if x.size else None
        return {"mean": mean, "ci95": None, "degenerate": False}
    sd = float(x.std(ddof=1))
    return {
        "mean": float(x.mean()),
        "ci95": Z95 * sd / math.sqrt(x.size),
        "degenerate": not sd > 0,
    }


def pair_statistics(config: CompareConfig, pairs: list[Pair]) -> list[tuple[float, float]]:
    """The test's two evidences (ln Λ₁, ln Λ₀; ln W₁, ln W₀ for ``betting``) after each pair
    in deal order; NaN without a sequential test."""
    if config.sprt is None or not pairs:
        return [(math.nan, math.nan)] * len(pairs)
    w1, w0 = config.sprt.wealth(np.array([p.sample(config.metric) for p in pairs]))
    return list(zip(w1.tolist(), w0.tolist(), strict=True))


def summary(
    config: CompareConfig,
    verdict: Verdict,
    pairs: list[Pair],
    matches: int,
    void: list[dict[str, Any]] | None = None,
    commitment: str = "",
) -> dict[str, Any]:
    """Everything compare.json says (format version 2, docs/compare.md): settings,
    verdict, differences, counts."""
    counted = pairs[: verdict.pairs]
    n = len(counted)
    score = np.array([p.score_diff for p in counted], dtype=np.float64)
    place = np.array([p.place_diff for p in counted], dtype=np.float64)
    share = np.array([p.share_diff for p in counted], dtype=np.float64)
    cand = np.array([p.candidate_total for p in counted], dtype=np.float64)
    base = np.array([p.baseline_total for p in counted], dtype=np.float64)
    won = int((score > 0).sum())
    drew = int((score == 0).sum())
    sprt = config.sprt
    paired_var = float(score.var(ddof=1)) if n >= 2 else None
    unpaired_var = float(cand.var(ddof=1) + base.var(ddof=1)) if n >= 2 else None
    if config.metric == "share":
        cs = np.array([p.candidate_share for p in counted], dtype=np.float64)
        bs = np.array([p.baseline_share for p in counted], dtype=np.float64)
        paired_var = float(share.var(ddof=1)) if n >= 2 else None
        unpaired_var = float(cs.var(ddof=1) + bs.var(ddof=1)) if n >= 2 else None
    void = void or []
    return {
        "version": 2,
        "comparison": config.name,
        "candidate": config.candidate.name,
        "baseline": config.baseline.name,
        "opponents": [b.name for b in config.opponents],
        "table_size": config.table_size,
        "rules": config.rules.preset,
        "seed": config.seed,
        "deal_key_commitment": commitment,
        "common_seeds": config.common_seeds,
        "metric": config.metric,
        "test": None
        if sprt is None
        else {
            "statistic": sprt.method,
            "lower": sprt.lower,
            "upper": sprt.upper,
            "alpha": sprt.alpha,
            "beta": sprt.beta,
            "min_pairs": sprt.min_pairs,
            "low": sprt.low,
            "high": sprt.high,
            "elo0": None if config.elo is None else config.elo[0],
            "elo1": None if config.elo is None else config.elo[1],
            "log_h1": verdict.score.log_h1,
            "log_h0": verdict.score.log_h0,
            "llr": finite(verdict.score.llr),
            "accept_h1_at": sprt.accept_h1_at,
            "accept_h0_at": sprt.accept_h0_at,
            "bound_reached": {H1: "upper", H0: "lower"}.get(verdict.decision or ""),
            "pilot": pilot(config, pairs),
        },
        "verdict": verdict.decision or "undecided",
        "exit_status": exit_status(verdict),
        "pairs": n,
        "pairs_finished": len(pairs),
        "pairs_after_verdict": len(pairs) - n,
        "max_pairs": config.max_pairs,
        "matches": matches,
        "matches_void": len(void),
        "void": void,
        "score_diff": _interval(score),
        "place_diff": _interval(place),
        "share_diff": _interval(share),
        "candidate_score": _interval(cand),
        "baseline_score": _interval(base),
        "deals_won": won,
        "deals_drawn": drew,
        "deals_lost": n - won - drew,
        "share_won": won / n if n else None,
        "variance_paired": paired_var,
        "variance_unpaired": unpaired_var,
    }


def report_text(s: dict[str, Any]) -> str:
    """The terminal report of a summary (no trailing newline)."""

    def pm(x: dict[str, Any], digits: int = 1) -> str:
        if x["mean"] is None:
            return "–"
        ci = "" if x["ci95"] is None else f" ± {x['ci95']:.{digits}f}"
        if x.get("degenerate"):
            ci += " (every pair equal: no spread to measure, the interval is not known)"
        return f"{x['mean']:+.{digits}f}{ci}"

    t = s["test"]
    elo = t is not None and t["elo1"] is not None
    if not t:
        gain = low = ""
    elif elo:
        gain, low = f"{t['elo1']:g} Elo", f"{t['elo0']:g} Elo"
    else:
        gain, low = f"{t['upper']:g} points per match", f"{t['lower']:g}"
    n = s["pairs"]
    verdicts = {
        H1: f"H1 accepted after {n} pairs (the upper bound was reached): {s['candidate']} is "
        f"better by at least {gain}",
        H0: f"H0 accepted after {n} pairs (the lower bound was reached): {s['candidate']} is "
        f"not better by {gain} (at most {low})",
        "undecided": f"undecided: the cap of {s['max_pairs']} pairs came before either bound",
        "better": f"{s['candidate']} scores more (the 95% interval lies above 0)",
        "worse": f"{s['candidate']} scores less (the 95% interval lies below 0)",
        "no difference": "no significant difference (the 95% interval contains 0)",
    }
    unit = "points per match" if s["metric"] == "score" else "share of opponents beaten"
    main = s["score_diff"] if s["metric"] == "score" else s["share_diff"]
    lines = [
        f"comparison {s['comparison']}: {s['candidate']} (candidate) vs {s['baseline']} "
        f"(baseline), {s['table_size']} seats, opponents {', '.join(s['opponents'])}",
        f"verdict: {verdicts[s['verdict']]}",
        f"mean difference (candidate − baseline): {pm(main, 1 if s['metric'] == 'score' else 3)}"
        f" {unit} (95% CI)",
        f"deal pairs counted: {n}"
        + (
            f"; {s['pairs_after_verdict']} more finished after the verdict, not counted"
            if s["pairs_after_verdict"]
            else ""
        )
        + f"; matches played: {s['matches']} (in matches/)"
        + (f"; void and played again: {s['matches_void']} (in void/)" if s["matches_void"] else ""),
        f"score difference per match (candidate − baseline): {pm(s['score_diff'])}  (95% CI)",
        f"place difference per match (candidate − baseline): {pm(s['place_diff'], 2)}",
        f"share of opponents beaten (candidate − baseline): {pm(s['share_diff'], 3)}",
        f"deals won / drawn / lost by the candidate: {s['deals_won']} / {s['deals_drawn']} / "
        f"{s['deals_lost']}"
        + ("" if s["share_won"] is None else f"  ({100 * s['share_won']:.0f}% won)"),
    ]
    if t:
        bounds = (
            f"H0 {t['elo0']:g} Elo = {t['lower']:+.4f}, H1 {t['elo1']:g} Elo = "
            f"{t['upper']:+.4f} in share of opponents beaten"
            if elo
            else f"H0 {t['lower']:g}, H1 {t['upper']:g} points"
        )
        lines.append(
            f"evidence: {t['log_h1']:.2f} of {t['accept_h1_at']:.2f} for H1, "
            f"{t['log_h0']:.2f} of {t['accept_h0_at']:.2f} for H0 ({bounds}, alpha "
            f"{t['alpha']:g}, beta {t['beta']:g}, test {t['statistic']})"
        )
    if s["variance_paired"] is not None and s["variance_paired"] > 0:
        ratio = s["variance_unpaired"] / s["variance_paired"]
        what = "share" if s["metric"] == "share" else "score"
        lines.append(
            f"variance of a pair's {what} difference: paired {s['variance_paired']:.4g}, "
            f"unpaired {s['variance_unpaired']:.4g} ({ratio:.1f} times smaller paired)"
        )
    return "\n".join(lines)


def _export(
    config: CompareConfig, store: CompareStore, verdict: Verdict, played: int, commitment: str
) -> CompareOutcome:
    from referee.compare.report import write_compare_html
    from referee.results.report import write_results_csv

    finished = store.finished(config.name)
    pairs = pairs_from(config, finished)
    s = summary(config, verdict, pairs, len(finished), store.voided(config.name), commitment)
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    exports = {
        "compare.json": out / "compare.json",
        "pairs.csv": out / "pairs.csv",
        "results.csv": out / "results.csv",
        "report.html": out / "report.html",
    }
    tmp = {name: out / f".{name}.{os.getpid()}.tmp" for name in exports}
    text = json.dumps(s, ensure_ascii=False, indent=2, allow_nan=False)
    tmp["compare.json"].write_text(text + "\n", encoding="utf-8")
    lines = [
        "deal,seat,candidate_match,baseline_match,candidate_total,baseline_total,score_diff,"
        "candidate_place,baseline_place,share_diff,log_h1,log_h0,counted"
    ]

    def num(x: float) -> str:
        return "" if math.isnan(x) else f"{x:.6g}"

    lines += [
        f"{p.deal},{p.deal % config.table_size},{match_id(config, p.deal, CANDIDATE)},"
        f"{match_id(config, p.deal, BASELINE)},{p.candidate_total},{p.baseline_total},"
        f"{p.score_diff},{p.candidate_place},{p.baseline_place},{p.share_diff:.6g},"
        f"{num(w1)},{num(w0)},{'true' if p.deal < verdict.pairs else 'false'}"
        for p, (w1, w0) in zip(pairs, pair_statistics(config, pairs), strict=True)
    ]
    tmp["pairs.csv"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    info = store.matches(config.name)
    write_results_csv(
        tmp["results.csv"],
        [
            {
                "tournament": config.name,
                "match_index": r.idx,
                "match_id": info[r.idx]["match_id"],
                "seat": r.seat,
                "bot": r.bot,
                "total": r.total,
                "place": r.place,
                "forfeited": r.forfeited,
                "faults": r.faults,
            }
            for idx in sorted(finished)
            for r in finished[idx]
        ],
    )
    write_compare_html(tmp["report.html"], s, pairs[: verdict.pairs])
    for name, path in exports.items():
        os.replace(tmp[name], path)
    return CompareOutcome(verdict, s, report_text(s), exports, played)


def progress_line(config: CompareConfig, verdict: Verdict, matches: int) -> str:
    """The live line: pairs, mean difference ± 95% CI, LLR and bounds, pairs to go."""
    s = verdict.score
    digits = 1 if config.metric == "score" else 3
    diff = "–" if math.isnan(s.mean) else f"{s.mean:+.{digits}f}"
    if not math.isnan(s.ci95):
        diff += f" ± {s.ci95:.{digits}f}"
    parts = [f"pairs {verdict.pairs}", f"matches {matches}", f"diff {diff}"]
    if config.sprt is not None:
        parts.append(
            f"H1 {s.log_h1:.2f}/{config.sprt.accept_h1_at:.2f}  "
            f"H0 {s.log_h0:.2f}/{config.sprt.accept_h0_at:.2f}"
        )
    togo = s.pairs_to_go
    parts.append("to go ?" if togo is None else f"~{togo} pairs to go")
    return "  ".join(parts)


def progress_record(config: CompareConfig, verdict: Verdict, matches: int) -> dict[str, Any]:
    """The live state as one JSON line's fields."""
    s = verdict.score
    record: dict[str, Any] = {
        "event": "compare_progress",
        "pairs": verdict.pairs,
        "matches": matches,
        "mean_diff": finite(s.mean),
        "ci95": finite(s.ci95),
        "pairs_to_go": s.pairs_to_go,
    }
    if config.sprt is not None:
        record["log_h1"] = finite(s.log_h1)
        record["log_h0"] = finite(s.log_h0)
        record["bounds"] = [config.sprt.accept_h1_at, config.sprt.accept_h0_at]
    if verdict.finished:
        record["verdict"] = verdict.decision or "undecided"
    return record
