"""The match runner: seats bots, asks them for decisions, enforces clocks and records faults.

Every message to a seat is built from ``view(state, seat)``: a decision request carries the
seat's whole view, and the events piggybacked on it carry only facts that the same view
holds (cards played, trick results, revealed pain cards, scores). The pain choice is
simultaneous: every seat is asked at once, and nothing about any pick reaches any seat
until all are in (or defaulted). A fault is data: it is recorded with its reason, the
fallback plays for the seat, and a strike is counted; at the strike limit, or on a
disconnect, the seat forfeits and the fallback plays it to the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import os
import secrets
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import structlog

from referee.convert import round_result_to_proto, rules_to_proto, trick_to_proto, view_to_proto
from referee.jail.bots import BotSpec, log_name
from referee.jail.process import BotProcess
from referee.jail.sandbox import SandboxUnavailable
from referee.match.faults import (
    FORFEIT_AT_ONCE,
    NO_STRIKE,
    Fault,
    FaultReason,
    check_decision,
    fallback_action,
)
from referee.match.pool import (
    EXIT_GRACE_S,
    RefereeFault,
    StartFailed,
    await_handshake,
    referee_short,
    start_bot,
)
from referee.match.record import RECORD_VERSION, SEED_DOMAIN, RecordWriter, cards_text
from referee.match.server import Malformed, RefereeServer, SeatSlot, SeatStream
from referee.rules import Action, Match, Phase, Round, RuleSet, Trick, card_str, view
from referee.runtime.private import private_dir
from sticheln.v1 import bot_pb2

log = structlog.get_logger("referee.match")

#: The most fault lines one seat adds to a match record and the log. Later faults still
#: count (strikes, metrics; the one that forfeits the seat is always recorded), and so
#: do a forfeited seat's further messages, but only as one ``faults_dropped`` line per
#: seat at the end of the match: a flooding bot cannot grow the record or the log.
FAULT_LINES_PER_SEAT = 50


def seed_commitment(seed: int, nonce: bytes) -> bytes:
    """SHA-256 over the domain, the seed (u64 big-endian) and the nonce."""
    return hashlib.sha256(SEED_DOMAIN + seed.to_bytes(8, "big") + nonce).digest()


@dataclass(frozen=True)
class Clock:
    """Time limits: per decision, a match time bank drawn on when a decision runs over,
    and the time a started bot has to connect and complete its handshake."""

    decision_ms: int = 1000
    time_bank_ms: int = 0
    startup_ms: int = 10_000

    def __post_init__(self) -> None:
        for name in ("decision_ms", "time_bank_ms", "startup_ms"):
            value = getattr(self, name)
            if type(value) is not int or value < 0 or (name != "time_bank_ms" and value == 0):
                low = 0 if name == "time_bank_ms" else 1
                raise ValueError(
                    f"{name}: {value!r} is not allowed; allowed: a whole number of milliseconds >= {low}"
                )


class MatchObserver(Protocol):
    """Hooks for metrics; every method is optional to implement (see NullObserver)."""

    def decision(self, bot: str, phase: str, think_s: float) -> None: ...
    def fault(self, bot: str, reason: FaultReason) -> None: ...
    def trick(self) -> None: ...
    def round(self) -> None: ...


class LentSeat(Protocol):
    """A bot stream lent to one match by a :class:`SeatPool` (with its process, if any)."""

    @property
    def process(self) -> BotProcess | None: ...
    @property
    def stream(self) -> SeatStream: ...


class SeatPool(Protocol):
    """Lends the match runner attached bot streams, one match at a time each (the
    tournament's :class:`~referee.match.pool.BotPool`, or a league's connected bots)."""

    def serves(self, spec: BotSpec) -> bool:
        """True when the pool seats ``spec`` (else the runner starts it or awaits it)."""
        ...

    async def acquire(
        self, spec: BotSpec, match_id: str = "", deal_seed: int | None = None
    ) -> LentSeat:
        """A stream for one seat of ``spec`` in match ``match_id``, from a process that
        serves no other seat of that match and was never dealt the cards of ``deal_seed``
        (the match's seed: a duplicate deal's seatings share it); raises StartFailed
        saying why not."""
        ...

    def release(self, bot: Any) -> None:
        """The match is over for the stream ``acquire`` returned."""
        ...


class NullObserver:
    """An observer that records nothing."""

    def decision(self, bot: str, phase: str, think_s: float) -> None:
        pass

    def fault(self, bot: str, reason: FaultReason) -> None:
        pass

    def trick(self) -> None:
        pass

    def round(self) -> None:
        pass


@dataclass
class SeatResult:
    """One seat's outcome of a match."""

    seat: int
    bot: str
    total: int
    place: int
    forfeited: bool
    positive_rounds: int
    faults: list[Fault]
    #: Every decision's think time in seconds; a decision that timed out counts at its
    #: limit (the time the seat had), so a bot that never answers in time shows it.
    think_s: list[float]
    #: The strikes the seat's faults cost (a late answer to a request already struck as a
    #: timeout costs none; faults beyond the record's cap still count).
    strikes: int = 0


@dataclass
class MatchResult:
    """A finished match: per-seat results, the record's path and the seed."""

    match_id: str
    seats: list[SeatResult]
    record_path: Path
    seed: int
    duration_s: float
    decisions: int
    #: "completed", or "aborted: " and the cause (a match with fewer than two seats
    #: connected is not played: no places, not to be rated or counted).
    reason: str = "completed"
    #: Why the match is void for the referee's own fault (a bot it could not start for
    #: want of descriptors): aborted, charged to no bot, to be played again; "" otherwise.
    void: str = ""

    @property
    def aborted(self) -> bool:
        """The match was not played."""
        return self.reason != "completed"

    @property
    def places(self) -> list[int]:
        """Places by seat."""
        return [s.place for s in self.seats]

    @property
    def totals(self) -> list[int]:
        """Totals by seat."""
        return [s.total for s in self.seats]


@dataclass
class _Seat:
    index: int
    spec: BotSpec
    slot: SeatSlot
    process: BotProcess | None = None
    stream: SeatStream | None = None
    strikes: int = 0
    forfeited: bool = False
    bank_s: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    think: list[float] = field(default_factory=list)
    events: list[tuple[Any, ...]] = field(default_factory=list)
    watcher: asyncio.Task[None] | None = None
    asked: bool = False
    #: Faults not recorded one by one (see :data:`FAULT_LINES_PER_SEAT`), by reason.
    dropped: dict[str, int] = field(default_factory=dict)


_KIND = {Phase.PAIN: bot_pb2.DECISION_KIND_PAIN_CHOICE, Phase.PLAY: bot_pb2.DECISION_KIND_CARD_PLAY}
_FAULT_PROTO = {r: getattr(bot_pb2, f"FAULT_REASON_{r.name}") for r in FaultReason}


def _expire(answer: asyncio.Future[Any]) -> None:
    """The decision's time is up: the awaited answer fails with TimeoutError."""
    if not answer.done():
        answer.set_exception(TimeoutError())


class MatchRunner:
    """Plays one match between bots connected to ``server``."""

    def __init__(
        self,
        server: RefereeServer,
        bots: Sequence[BotSpec],
        rules: RuleSet,
        *,
        seed: int | None = None,
        match_id: str | None = None,
        clock: Clock | None = None,
        strike_limit: int = 3,
        out_dir: Path = Path("results"),
        observer: MatchObserver | None = None,
        pool: SeatPool | None = None,
        on_record: Callable[[dict[str, Any]], None] | None = None,
        seed_withheld: str = "",
        deal: int | None = None,
        deal_key_commitment: str = "",
        bot_seeds: Sequence[int] = (),
        untimed: Collection[int] = (),
        code: Sequence[tuple[int, str] | None] = (),
        challenge: str = "",
    ) -> None:
        rules.check_players(len(bots))
        if code and len(code) != len(bots):
            raise ValueError(f"code: {len(code)} entries for {len(bots)} seats")
        if bot_seeds and len(bot_seeds) != len(bots):
            raise ValueError(f"bot_seeds: {len(bot_seeds)} seeds for {len(bots)} seats")
        if strike_limit < 1:
            raise ValueError(f"strike_limit: {strike_limit} is not allowed; allowed: 1 or more")
        self.server = server
        self.rules = rules
        self.seed = secrets.randbits(64) if seed is None else seed
        self.nonce = os.urandom(16)
        self.match_id = match_id or datetime.now(UTC).strftime(
            "%Y%m%dT%H%M%S-"
        ) + secrets.token_hex(3)
        #: The match's id as its bots are told it (``MatchStart.match_id``, the welcome):
        #: random, unrelated to ``match_id``, which numbers a tournament's matches and so
        #: names a duplicate deal and its seating. The record's header keeps both.
        self.bot_match_id = secrets.token_hex(8)
        self.clock = clock or Clock()
        self.strike_limit = strike_limit
        self.out_dir = out_dir
        self.observer: MatchObserver = observer or NullObserver()
        self.match = Match(rules, len(bots), self.seed)
        self.seats = [
            _Seat(
                i, spec, server.registry.open_seat(self.match_id, i, spec.name, spec.token or None)
            )
            for i, spec in enumerate(bots)
        ]
        for seat in self.seats:
            seat.slot.shown_id = self.bot_match_id
        self.pool = pool
        #: Called with every record line as it is written (a league's spectators).
        self.on_record = on_record
        #: Why ``MatchEnd`` does not reveal the seed ("" reveals it): a later match plays
        #: the same deal (duplicate mode). The record's end line always holds the seed.
        self.seed_withheld = seed_withheld
        #: The tournament's deal number and its deal key's commitment, for the header.
        self.deal = deal
        self.deal_key_commitment = deal_key_commitment
        #: Per seat, the hosted submission and the hash of the code it runs (None: a bot
        #: that dials in, or one started from a bot file), for the header.
        self.code = list(code)
        #: A league's match on demand, unrated: the entry that asked for it ("": not one).
        self.challenge = challenge
        #: Per seat whose process the runner started or borrowed: its log file and where
        #: this match's part of it begins (a league keeps it for the bot's owner).
        self.log_spans: dict[int, tuple[Path, int]] = {}
        #: Per warm seat, where its process's start-up output ends in its log.
        self.log_heads: dict[int, int] = {}
        #: ``MatchStart.bot_seed`` per seat: the deal key's for the deal and seat, or fresh
        #: random numbers for a match that belongs to no deal key.
        self.bot_seeds = list(bot_seeds) or [secrets.randbits(64) for _ in bots]
        #: Seats the clock does not apply to: they wait for their answers as long as it
        #: takes (``check-bot``'s own house seats, which judge only the bot under test).
        self.untimed = frozenset(untimed)
        self._lent: dict[int, LentSeat] = {}
        #: Why the match is void for the referee's fault ("" while it is not).
        self._void = ""
        #: Some seat was granted the "events" capability.
        self._live = False
        self._decisions = 0
        self._record: RecordWriter | None = None
        self._log = log.bind(match_id=self.match_id)

    @property
    def record_path(self) -> Path:
        """Where the match record is written."""
        return self.out_dir / "matches" / f"{self.match_id}.jsonl"

    # -- the match ------------------------------------------------------------------------

    async def run(self) -> MatchResult:
        """Start the bots, play every round, end the match; always cleans up."""
        started = time.perf_counter()
        self._record = RecordWriter(self.record_path)
        try:
            # The header first: a handshake that fails while seating is already a fault line.
            self._write_header()
            await self._seat_bots()
            if self._void:
                # A seat the referee failed is no one's fault: nothing is dealt or charged.
                result = self._abort(
                    f"void, the referee's fault: {self._void}", time.perf_counter() - started
                )
                result.void = self._void
                return result
            connected = sum(s.stream is not None for s in self.seats)
            if connected < 2:
                # No match to speak of: nothing is dealt, sent, rated or ranked.
                return self._abort(
                    f"fewer than two seats connected ({connected} of {len(self.seats)})",
                    time.perf_counter() - started,
                )
            self._log.info(
                "match_start",
                seating=[s.spec.name for s in self.seats],
                rules=self.rules.preset,
                seed_commitment=seed_commitment(self.seed, self.nonce).hex(),
            )
            await self._send_match_start()
            while not self.match.is_over:
                await self._play_round(self.match.round)
            return await self._finish(time.perf_counter() - started)
        finally:
            await self._cleanup()

    async def _seat_bots(self) -> None:
        logs = self.out_dir / "logs"

        async def start(seat: _Seat) -> None:
            try:
                await seat_one(seat)
            except RefereeFault as exc:
                self._void = self._void or f"seat {seat.index} ({seat.spec.name}): {exc}"

        async def seat_one(seat: _Seat) -> None:
            if self.pool is not None and self.pool.serves(seat.spec):
                try:
                    bot = await self.pool.acquire(seat.spec, self.match_id, self.seed)
                except StartFailed as exc:
                    self._fault(seat, FaultReason.HANDSHAKE_FAILED, str(exc), 0)
                    return
                self._lent[seat.index] = bot
                if bot.process is not None:
                    # A warm process's log goes on from earlier matches: this one's from here,
                    # after its start-up output (before any match), its owner's to read too.
                    path = bot.process.log_path
                    if bot.process.startup_end < 0:
                        bot.process.startup_end = _size(path)
                    self.log_spans[seat.index] = (path, _size(path))
                    self.log_heads[seat.index] = bot.process.startup_end
                seat.process, seat.stream = bot.process, bot.stream
                seat.stream.on_fault = lambda reason, detail, rid, seat=seat: self._fault(
                    seat, reason, detail, rid
                )
                seat.watcher = asyncio.ensure_future(self._watch(seat, seat.stream))
                return
            if not seat.spec.external:
                private_dir(logs)
                log_path = logs / f"{self.match_id}-seat{seat.index}-{log_name(seat.spec.name)}.log"
                self.log_spans[seat.index] = (log_path, 0)
                try:
                    seat.process = await start_bot(self.server, seat.spec, [seat.slot], log_path)
                except (OSError, SandboxUnavailable) as exc:
                    self._fault(
                        seat, FaultReason.HANDSHAKE_FAILED, f"cannot start the bot: {exc}", 0
                    )
                    return
            await self._await_handshake(seat)

        await asyncio.gather(*(start(s) for s in self.seats))

    async def _await_handshake(self, seat: _Seat) -> None:
        why = await await_handshake(seat.slot, seat.process, self.clock.startup_ms / 1000)
        if why and (fault := referee_short(why)) is not None:
            raise fault
        if not why and seat.slot.stream is not None:
            seat.stream = seat.slot.stream
            seat.stream.on_fault = lambda reason, detail, rid, seat=seat: self._fault(
                seat, reason, detail, rid
            )
            seat.watcher = asyncio.ensure_future(self._watch(seat, seat.stream))
            return
        self._fault(seat, FaultReason.HANDSHAKE_FAILED, why, 0)

    async def _watch(self, seat: _Seat, stream: SeatStream) -> None:
        """Forfeit a seat as soon as its stream ends during the match."""
        await stream.closed.wait()
        if self.match.is_over or seat.forfeited:
            return
        reason, detail = FaultReason.DISCONNECT, stream.close_detail
        if seat.process is not None:
            # A stream that ends because its process died is a crash, not a disconnect.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(seat.process.proc.wait()), 1.0)
            # A bot that closed its stream and then exited normally did not crash.
            if seat.process.returncode not in (None, 0):
                reason, detail = (
                    FaultReason.CRASH,
                    f"the bot process {seat.process.describe_exit()}",
                )
        if not self.match.is_over and not seat.forfeited:
            self._fault(seat, reason, detail, 0)

    async def _send_match_start(self) -> None:
        self._live = any(s.stream is not None and s.stream.live_events for s in self.seats)
        clock = bot_pb2.Clock(
            decision_ms=self.clock.decision_ms,
            time_bank_ms=self.clock.time_bank_ms,
            startup_ms=self.clock.startup_ms,
        )
        rules = rules_to_proto(self.rules)
        commitment = seed_commitment(self.seed, self.nonce)
        seating = [s.spec.name for s in self.seats]
        for seat in self.seats:
            seat.bank_s = self.clock.time_bank_ms / 1000
            msg = bot_pb2.RefereeMessage(
                match_start=bot_pb2.MatchStart(
                    match_id=self.bot_match_id,
                    seat=seat.index,
                    seating=seating,
                    rules=rules,
                    clock=clock,
                    seed_commitment=commitment,
                    rounds_total=self.match.rounds_total,
                    strike_limit=self.strike_limit,
                    bot_seed=self.bot_seeds[seat.index],
                )
            )
            await self._send(seat, msg)

    async def _play_round(self, rnd: Round) -> None:
        record = self._write
        record(
            {
                "type": "round_start",
                "round": rnd.round_index,
                "dealer": rnd.dealer,
                "hands": [cards_text(h) for h in rnd.hands],
                "set_aside": cards_text(rnd.set_aside),
            }
        )
        for seat in self.seats:
            seat.events.append(
                ("start", rnd.round_index, rnd.dealer, tuple(view(rnd, seat.index).hand))
            )
        # Pain choice: everyone is asked at once, from views built before any pick is in.
        requests = [self._prepare(seat) for seat in self.seats]
        answers = await asyncio.gather(
            *(self._ask(seat, req) for seat, req in zip(self.seats, requests, strict=True))
        )
        for seat, (action, think, fallback) in zip(self.seats, answers, strict=True):
            rnd.apply(seat.index, action)
            record(
                {
                    "type": "pain",
                    "round": rnd.round_index,
                    "seat": seat.index,
                    "cards": cards_text(action if isinstance(action, tuple) else (action,)),
                    "think_us": round(think * 1e6),
                    "fallback": fallback,
                }
            )
        record(
            {
                "type": "reveal",
                "round": rnd.round_index,
                "pain": [cards_text(p or ()) for p in rnd.pain],
            }
        )
        for seat in self.seats:
            seat.events.append(("reveal", view(rnd, seat.index).pain))
        await self._push_events()
        # Tricks.
        assert self._record is not None
        write_line = self._record.write_line
        match = self.match
        tricks_seen = 0
        while rnd.phase is Phase.PLAY:
            seat = self.seats[rnd.to_play]
            action, think, fallback = await self._ask(seat, self._prepare(seat))
            assert isinstance(action, int)
            match.apply(seat.index, action)
            # The most frequent record line, formatted directly: the same JSON as write().
            write_line(
                f'{{"type":"play","round":{rnd.round_index},"seat":{seat.index},'
                f'"card":"{card_str(action)}","think_us":{round(think * 1e6)},'
                f'"fallback":{"true" if fallback else "false"}}}\n'
            )
            if self.on_record is not None:
                self.on_record(
                    {
                        "type": "play",
                        "round": rnd.round_index,
                        "seat": seat.index,
                        "card": card_str(action),
                        "think_us": round(think * 1e6),
                        "fallback": fallback,
                    }
                )
            for other in self.seats:
                if other is not seat:
                    other.events.append(("card", seat.index, action))
            if len(rnd.tricks) > tricks_seen:
                tricks_seen = len(rnd.tricks)
                self._trick_done(rnd.tricks[-1], rnd.round_index)
            if self._live:
                await self._push_events()
        self._round_done(rnd)
        await self._push_events()

    def _trick_done(self, trick: Trick, round_index: int) -> None:
        self._write(
            {
                "type": "trick",
                "round": round_index,
                "leader": trick.leader,
                "cards": cards_text(trick.cards),
                "winner": trick.winner,
                "reason": trick.reason.value,
                "tie": trick.tie,
            }
        )
        for seat in self.seats:
            seat.events.append(("trick", trick))
        self.observer.trick()

    def _round_done(self, rnd: Round) -> None:
        result = self.match.results[-1]
        self._write(
            {
                "type": "round_end",
                "round": rnd.round_index,
                "scores": list(result.scores),
                "totals": list(self.match.totals),
            }
        )
        assert self._record is not None
        self._record.flush()
        totals = tuple(self.match.totals)
        for seat in self.seats:
            # Once scored, every pick is public (also under secret visibility).
            seat.events.append(("reveal", view(rnd, seat.index).pain))
            seat.events.append(("scores", result, totals))
        self.observer.round()

    # -- one decision -----------------------------------------------------------------------

    def _prepare(self, seat: _Seat) -> bot_pb2.RefereeMessage | None:
        """The request for ``seat``'s decision, built from its view (None: no one to ask)."""
        if seat.forfeited or seat.stream is None:
            return None
        rnd = self.match.round
        request_id = seat.stream.next_request_id()
        msg = bot_pb2.RefereeMessage()
        self._flush_events(seat, msg)
        req = msg.request
        req.request_id = request_id
        req.kind = _KIND[rnd.phase]
        req.count = self.rules.pain_cards_per_player if rnd.phase is Phase.PAIN else 1
        req.timeout_ms = self.clock.decision_ms
        if not seat.asked:
            # The startup time is added to the seat's first decision (bot.proto, Clock).
            req.timeout_ms += self.clock.startup_ms
            seat.asked = True
        req.time_bank_ms = int(seat.bank_s * 1000)
        view_to_proto(view(self.match, seat.index), req.view)
        return msg

    async def _ask(
        self, seat: _Seat, msg: bot_pb2.RefereeMessage | None
    ) -> tuple[Action, float, bool]:
        """The seat's action for the current decision: (action, think time, was fallback)."""
        rnd = self.match.round
        stream = seat.stream
        if msg is None or stream is None or seat.forfeited:
            return fallback_action(rnd, seat.index), 0.0, True
        rid = msg.request.request_id
        allowed = msg.request.timeout_ms / 1000
        limit = math.inf if seat.index in self.untimed else allowed + seat.bank_s
        answer = stream.expect(rid, limit)
        try:
            await stream.write(msg)
        except asyncio.CancelledError:
            stream.settle()  # nothing awaits the answer now: no exception is to be set on it
            raise
        except Exception:
            stream.close(FaultReason.DISCONNECT, "the stream broke while sending a request")
        sent = time.perf_counter()
        # A timer on the answer itself: cheaper than a timeout scope around the await.
        timer = (
            None
            if limit == math.inf
            else asyncio.get_running_loop().call_later(limit, _expire, answer)
        )
        try:
            message, arrived = await answer
            if arrived - sent > limit:
                # A busy event loop ran the timer after the answer came: it is late all the same.
                raise TimeoutError
        except TimeoutError:
            stream.settle()
            seat.bank_s = 0.0 if self.clock.time_bank_ms else seat.bank_s
            self._fault(
                seat,
                FaultReason.TIMEOUT,
                f"no answer within {limit * 1000:.0f} ms",
                rid,
            )
            seat.think.append(limit)
            return fallback_action(rnd, seat.index), limit, True
        except ConnectionError:
            stream.settle()
            if seat.watcher is not None:
                await seat.watcher
            return fallback_action(rnd, seat.index), 0.0, True
        finally:
            if timer is not None:
                timer.cancel()
        stream.settle()
        think = max(0.0, arrived - sent)
        over = think - allowed
        if over > 0:
            seat.bank_s = max(0.0, seat.bank_s - over)
        seat.think.append(think)
        self._decisions += 1
        self.observer.decision(seat.spec.name, rnd.phase.value, think)
        if isinstance(message, Malformed):
            self._fault(seat, FaultReason.MALFORMED_MESSAGE, message.detail, rid)
            return fallback_action(rnd, seat.index), think, True
        action, reason, detail = check_decision(rnd, seat.index, message.decision.cards)
        if action is None:
            assert reason is not None
            self._fault(seat, reason, detail, rid)
            return fallback_action(rnd, seat.index), think, True
        return action, think, False

    # -- faults, events, messages -------------------------------------------------------------

    def _fault(self, seat: _Seat, reason: FaultReason, detail: str, request_id: int) -> None:
        if seat.forfeited or len(seat.faults) >= FAULT_LINES_PER_SEAT:
            # A forfeited seat's further messages, and a seat's faults beyond the cap, are
            # counted for one summary line at the end instead of a line each.
            forfeits = reason in FORFEIT_AT_ONCE or (
                reason not in NO_STRIKE and seat.strikes + 1 >= self.strike_limit
            )
            if seat.forfeited or not forfeits:
                if not seat.forfeited and reason not in NO_STRIKE:
                    seat.strikes += 1
                seat.dropped[reason.value] = seat.dropped.get(reason.value, 0) + 1
                self.observer.fault(seat.spec.name, reason)
                return
        if reason not in NO_STRIKE:
            seat.strikes += 1
        newly_forfeited = not seat.forfeited and (
            reason in FORFEIT_AT_ONCE or seat.strikes >= self.strike_limit
        )
        if newly_forfeited:
            seat.forfeited = True
        fault = Fault(
            seat.index,
            reason,
            detail,
            self.match.round_index,
            request_id,
            seat.strikes,
            seat.forfeited,
        )
        seat.faults.append(fault)
        self._write(
            {
                "type": "fault",
                "round": fault.round_index,
                "seat": seat.index,
                "bot": seat.spec.name,
                "request_id": request_id,
                "reason": reason.value,
                "detail": detail,
                "strikes": seat.strikes,
                "forfeited": seat.forfeited,
            }
        )
        seat.events.append(("fault", fault))
        self._log.warning(
            "fault",
            seat=seat.index,
            bot=seat.spec.name,
            reason=reason.value,
            detail=detail,
            strikes=seat.strikes,
            forfeited=seat.forfeited,
        )
        self.observer.fault(seat.spec.name, reason)

    def _flush_events(self, seat: _Seat, msg: bot_pb2.RefereeMessage) -> None:
        events = msg.events
        for ev in seat.events:
            kind = ev[0]
            if kind == "card":
                played = events.add().card_played
                played.seat = ev[1]
                played.card = ev[2]
            elif kind == "trick":
                events.add().trick_result.trick.CopyFrom(trick_to_proto(ev[1]))
            elif kind == "start":
                start = events.add().round_start
                start.round_index, start.dealer = ev[1], ev[2]
                start.hand.extend(ev[3])
            elif kind == "reveal":
                reveal = events.add().pain_reveal
                for pick in ev[1]:
                    reveal.pain.add().cards.extend(pick or ())
            elif kind == "scores":
                scores = events.add().round_scores
                scores.result.CopyFrom(round_result_to_proto(ev[1]))
                scores.totals.extend(ev[2])
            elif kind == "fault":
                f: Fault = ev[1]
                if f.seat != seat.index:
                    continue  # a seat hears of its own faults only
                notice = events.add().fault
                notice.request_id, notice.reason, notice.detail = (
                    f.request_id,
                    _FAULT_PROTO[f.reason],
                    f.detail,
                )
                notice.strikes, notice.forfeited, notice.seat = f.strikes, f.forfeited, f.seat
        seat.events.clear()

    async def _push_events(self) -> None:
        """Send pending events now to the seats granted the "events" capability."""
        if not self._live:
            return
        sends = []
        for seat in self.seats:
            stream = seat.stream
            if seat.events and stream is not None and stream.live_events:
                msg = bot_pb2.RefereeMessage()
                self._flush_events(seat, msg)
                if msg.events:
                    sends.append(self._send(seat, msg))
        if sends:
            await asyncio.gather(*sends)

    async def _send(self, seat: _Seat, msg: bot_pb2.RefereeMessage) -> None:
        if seat.stream is None or seat.stream.closed.is_set():
            return
        try:
            await seat.stream.write(msg)
        except Exception:
            seat.stream.close(FaultReason.DISCONNECT, "the stream broke while sending")

    def _write(self, obj: dict[str, Any]) -> None:
        assert self._record is not None
        self._record.write(obj)
        if self.on_record is not None:
            self.on_record(obj)

    def _write_header(self) -> None:
        # The seed is not in the header: the record is written while the match runs, and
        # the seed opens every hand. It goes into the end line (see _finish).
        header: dict[str, Any] = {
            "type": "header",
            "version": RECORD_VERSION,
            "match_id": self.match_id,
            "bot_match_id": self.bot_match_id,
            "rules": self.rules.to_table(),
            "players": len(self.seats),
            "seating": [s.spec.name for s in self.seats],
            "commitment": seed_commitment(self.seed, self.nonce).hex(),
        }
        if self.deal is not None:
            header["deal"] = self.deal
        if self.deal_key_commitment:
            header["deal_key_commitment"] = self.deal_key_commitment
        if any(c is not None for c in self.code):
            header["code"] = [
                None if c is None else {"submission": c[0], "sha256": c[1]} for c in self.code
            ]
        if self.challenge:
            header["challenge"] = self.challenge
        header.update(
            {
                "clock": {
                    "decision_ms": self.clock.decision_ms,
                    "time_bank_ms": self.clock.time_bank_ms,
                    "startup_ms": self.clock.startup_ms,
                },
                "strike_limit": self.strike_limit,
                "sandbox": self.server.sandbox.mode,
                "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )
        self._write(header)

    # -- the end ------------------------------------------------------------------------------

    def _write_dropped(self) -> None:
        """One line per seat that had faults not recorded one by one, with their counts."""
        for seat in self.seats:
            if seat.dropped:
                counts = dict(sorted(seat.dropped.items()))
                total = sum(counts.values())
                self._write(
                    {
                        "type": "faults_dropped",
                        "seat": seat.index,
                        "bot": seat.spec.name,
                        "total": total,
                        "counts": counts,
                    }
                )
                self._log.warning(
                    "faults_dropped",
                    seat=seat.index,
                    bot=seat.spec.name,
                    total=total,
                    counts=counts,
                )

    def _abort(self, cause: str, duration: float) -> MatchResult:
        """End a match that cannot be played, before anything is dealt or sent."""
        reason = f"aborted: {cause}"
        absent = [s.index for s in self.seats if s.stream is None]
        self._write(
            {
                "type": "end",
                "reason": reason,
                "totals": [],
                "places": [],
                "forfeited": absent,
                "decisions": 0,
                "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )
        assert self._record is not None
        self._record.close()
        self._log.warning("match_aborted", why=cause)
        return MatchResult(
            match_id=self.match_id,
            seats=[
                SeatResult(s.index, s.spec.name, 0, 0, s.stream is None, 0, s.faults, [], s.strikes)
                for s in self.seats
            ],
            record_path=self.record_path,
            seed=self.seed,
            duration_s=duration,
            decisions=0,
            reason=reason,
        )

    async def _finish(self, duration: float) -> MatchResult:
        match = self.match
        for seat in self.seats:
            if seat.stream is not None:
                seat.stream.on_fault = None  # what comes after the end is not recorded
        self._write_dropped()
        forfeited = {s.index for s in self.seats if s.forfeited}
        places = match.places(forfeited)
        positive = match.positive_rounds()
        end_line: dict[str, Any] = {
            "type": "end",
            "reason": "completed",
            "totals": list(match.totals),
            "places": places,
            "forfeited": sorted(forfeited),
            "decisions": self._decisions,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "seed": str(self.seed),
            "nonce": self.nonce.hex(),
            "bot_seeds": [str(s) for s in self.bot_seeds],
        }
        if self.seed_withheld:
            end_line["seed_withheld"] = self.seed_withheld
        self._write(end_line)
        assert self._record is not None
        self._record.close()
        for seat in self.seats:
            msg = bot_pb2.RefereeMessage()
            self._flush_events(seat, msg)
            end = msg.match_end
            end.totals.extend(match.totals)
            end.places.extend(places)
            for round_result in match.results:
                end.rounds.add().CopyFrom(round_result_to_proto(round_result))
            if self.seed_withheld:
                end.seed_withheld = self.seed_withheld
            else:
                end.seed = self.seed
                end.seed_nonce = self.nonce
            end.forfeited_seats.extend(sorted(forfeited))
            end.reason = "completed"
            await self._send(seat, msg)
        result = MatchResult(
            match_id=self.match_id,
            seats=[
                SeatResult(
                    s.index,
                    s.spec.name,
                    match.totals[s.index],
                    places[s.index],
                    s.forfeited,
                    positive[s.index],
                    s.faults,
                    s.think,
                    s.strikes,
                )
                for s in self.seats
            ],
            record_path=self.record_path,
            seed=self.seed,
            duration_s=duration,
            decisions=self._decisions,
        )
        self._log.info(
            "match_end",
            totals=list(match.totals),
            places=places,
            forfeited=sorted(forfeited),
            duration_s=round(duration, 3),
        )
        return result

    @staticmethod
    def _stop_watching(seat: _Seat) -> None:
        """Cancel the seat's stream watcher and let go of it. A cancelled task keeps its
        CancelledError, whose traceback holds the watcher's frame and so this runner: kept
        on the seat, that is a reference cycle, and the whole finished match (its record
        lines, engine state and feed) would wait for the cyclic collector instead of being
        freed as the match ends."""
        if seat.watcher is not None:
            seat.watcher.cancel()
            seat.watcher = None

    async def _cleanup(self) -> None:
        if self.pool is not None:
            # Pooled bots go back to the pool, their streams open for the next match.
            for seat in self.seats:
                self._stop_watching(seat)
                bot = self._lent.pop(seat.index, None)
                if bot is not None:
                    self.pool.release(bot)
                    seat.process = None
                    seat.stream = None
        # A bot that was sent MatchEnd exits by itself when its stream ends; it gets a
        # moment to read it before the signals come.
        exits = [
            asyncio.ensure_future(s.process.proc.wait())
            for s in self.seats
            if self.match.is_over
            and s.process is not None
            and s.process.returncode is None
            and s.stream is not None
            and not s.stream.closed.is_set()
        ]
        for seat in self.seats:
            # Also a stream that attached only after its handshake had failed.
            stream = seat.stream or seat.slot.stream
            if stream is not None:
                stream.end()
            self._stop_watching(seat)
            self.server.registry.close_seat(seat.slot)
        if exits:
            await asyncio.wait(exits, timeout=EXIT_GRACE_S)
            for waiter in exits:
                waiter.cancel()
        await asyncio.gather(
            *(s.process.stop() for s in self.seats if s.process is not None), return_exceptions=True
        )
        if self._record is not None:
            self._record.close()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
