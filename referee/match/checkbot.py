"""``referee check-bot``: play one bot through scripted scenarios and report what it got wrong.

Each scenario is one real match on a real referee server: the bot under test takes one
seat, the other seats are played by the referee's own house bots (in-process gRPC
clients that always play the lowest card(s), the fallback's choice). Only the bot under
test is judged: the clock applies to its seat alone (a house seat waits for its answer
however busy the machine is), and a fault of a house seat, which would be the referee's
own, is reported as a note without failing the scenario. The scenarios cover
every preset, the smallest and the largest table, secret pain suits, two pain cards, a
pain card kept in the hand and a short clock. Every fault of the bot's seat in the
match result is one non-conforming answer; the report names the scenario, the request,
what the bot sent (recorded off its stream) and what was expected (the legal set, from
the request's view).

A bot file that declares ``seats = N`` is also played as a tournament plays it: one
process started with ``STICHELN_SEATS=N`` opens N streams, and two matches run at once on
two of them (the ``seats`` scenario). A started bot must exit by itself once the referee
has ended its stream (or every stream of its process) with status OK; one still running
:data:`LINGER_S` seconds later, or exiting with a failure status, fails the scenario.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from referee import __version__
from referee.jail.bots import BotSpec, log_name
from referee.jail.process import BotProcess
from referee.jail.sandbox import Sandbox, SandboxUnavailable
from referee.match.faults import Fault, FaultReason
from referee.match.pool import EXIT_GRACE_S, RefereeFault, await_handshake, start_bot
from referee.match.runner import Clock, MatchResult, MatchRunner
from referee.match.server import Malformed, RefereeServer, SeatRegistry, SeatSlot, SeatStream
from referee.rules import PRESETS, RuleSet, card_str, cards_str, preset
from sticheln.v1 import bot_pb2, bot_pb2_grpc

HOUSE_NAME = "house-lowest"
#: The name of the scenario that plays two matches at once on one process's streams.
SEATS_SCENARIO = "seats"
#: Seconds a started bot may take to exit after the referee ended its stream with OK (the
#: grace every match gives it).
LINGER_S = EXIT_GRACE_S


@dataclass(frozen=True)
class Scenario:
    """One scripted match: rules, table size, clock and the seat of the bot under test."""

    name: str
    about: str
    rules: RuleSet
    players: int
    seat: int
    clock: Clock = field(default_factory=Clock)
    #: Matches played at once on streams of one bot process (the ``seats`` scenario).
    parallel: int = 1
    #: Scenarios that test one thing in several ways (presets, table sizes, pain cards):
    #: once the bot timed out in one, the rest of its family is not played (another
    #: timeout there would only take the time the clock allows, again).
    family: str = ""
    #: Played with no other scenario at once when scenarios run side by side (its clock
    #: is short, or it starts many streams): what it judges must not depend on them.
    alone: bool = False


def scenarios(rounds: int = 2, seats: int = 1) -> list[Scenario]:
    """Every scenario, in the order they are played; ``rounds`` rounds per match.

    ``seats`` is what the bot file declares: above 1 the ``seats`` scenario comes last.
    """

    def rules(name: str, **overrides: object) -> RuleSet:
        return preset(name, rounds=rounds, **overrides)

    out = [
        Scenario(
            f"preset-{name}", f"preset {name}, 4 players", rules(name), 4, i % 4, family="presets"
        )
        for i, name in enumerate(PRESETS)
    ]
    out += [
        Scenario("players-3", "sticheln, 3 players", rules("sticheln"), 3, 2, family="players"),
        Scenario("players-8", "sticheln, 8 players", rules("sticheln"), 8, 5, family="players"),
        Scenario(
            "secret-pain",
            "pain suits secret until the round is scored, 5 players",
            rules("sticheln", pain_visibility="secret"),
            5,
            1,
            family="pain",
        ),
        Scenario(
            "two-pain-cards",
            "two pain cards of two suits each, 4 players",
            rules("sticheln", pain_cards_per_player=2),
            4,
            3,
            family="pain",
        ),
        Scenario(
            "pain-kept-in-hand",
            "the pain card stays in the hand and is played, 4 players",
            rules("sticheln", pain_card="kept_in_hand"),
            4,
            0,
            family="pain",
        ),
        Scenario(
            "two-pain-cards-kept-secret",
            "two pain cards kept in the hand, secret, 3 players",
            rules(
                "sticheln",
                pain_cards_per_player=2,
                pain_card="kept_in_hand",
                pain_visibility="secret",
            ),
            3,
            1,
            family="pain",
        ),
        Scenario(
            "short-clock",
            "150 ms per decision and a 1 s time bank, 4 players",
            rules("sticheln"),
            4,
            2,
            Clock(decision_ms=150, time_bank_ms=1000),
            alone=True,
        ),
    ]
    if seats > 1:
        out.append(
            Scenario(
                SEATS_SCENARIO,
                f"two matches at once on two of the {seats} streams of one process "
                f"(STICHELN_SEATS={seats}), 4 players",
                rules("sticheln"),
                4,
                1,
                parallel=2,
                alone=True,
            )
        )
    return out


@dataclass
class Finding:
    """One non-conforming answer (or other fault) of the bot in one scenario."""

    fault: Fault
    sent: str
    expected: str
    #: The decision in words (round, trick, the card's place in it), from the request.
    where: str = ""

    def line(self) -> str:
        """The finding as one report line: the decision in words a person can find in the
        match record (round, trick, which card), never the stream's internal request id."""
        f = self.fault
        where = self.where or f"round {f.round_index + 1}"
        text = f"{where}: {f.reason.value}: {_DETAIL.get(f.reason, f.detail)}"
        if self.sent:
            text += f"; sent {self.sent}"
        if self.expected:
            text += f"; expected {self.expected}"
        if f.forfeited:
            text += " (seat forfeited)"
        return text


@dataclass
class Outcome:
    """The result of one scenario."""

    scenario: Scenario
    findings: list[Finding]
    decisions: int = 0
    slowest_ms: float = 0.0
    error: str = ""
    #: The match's record (None when no match was played).
    record_path: Path | None = None
    #: What went wrong on the referee's side (a house seat's fault): said, not held
    #: against the bot.
    notes: list[str] = field(default_factory=list)
    #: Why the scenario was not played (the bot timed out in one of its family), or "".
    skipped: str = ""

    @property
    def passed(self) -> bool:
        """True when the bot answered every request as the rules ask."""
        return not self.findings and not self.error and not self.skipped

    @property
    def timed_out(self) -> bool:
        """True when the bot did not answer a request in time."""
        return any(f.fault.reason is FaultReason.TIMEOUT for f in self.findings)

    def lines(self) -> list[str]:
        """The report of this scenario: a PASS, FAIL or SKIP line, then one line per finding."""
        s = self.scenario
        if self.skipped:
            return [f"SKIP {s.name} ({s.about}; seat {s.seat}): {self.skipped}"]
        head = f"{'PASS' if self.passed else 'FAIL'} {s.name} ({s.about}; seat {s.seat})"
        if self.passed:
            head += f": {self.decisions} decisions, slowest {self.slowest_ms:.0f} ms"
        # The bot's own answers first: an exit that follows from them (a late answer that
        # met the stream's end) comes after the timeouts it follows from.
        out = [head]
        out.extend(f"    {f.line()}" for f in self.findings)
        if self.error:
            out.append(f"    {self.error}")
        out.extend(f"    note: {n}" for n in self.notes)
        return out


# -- what the bot sent, recorded off its stream ----------------------------------------------


class _Tap:
    """Every request sent to one seat and the bot's answers, by request id."""

    def __init__(self) -> None:
        self.requests: dict[int, bot_pb2.DecisionRequest] = {}
        self.answers: dict[int, list[int]] = {}
        #: When the referee ended the stream while it was open (status OK), else None.
        self.ended_ok_at: float | None = None

    def attach(self, stream: SeatStream) -> None:
        write, deliver, end = stream.write, stream.deliver, stream.end

        async def tapped_write(message: bot_pb2.RefereeMessage) -> None:
            if message.WhichOneof("kind") == "request":
                self.requests[message.request.request_id] = message.request
            await write(message)

        def tapped_deliver(message: bot_pb2.BotMessage | Malformed, arrived: float) -> None:
            if not isinstance(message, Malformed) and message.WhichOneof("kind") == "decision":
                self.answers.setdefault(message.decision.request_id, list(message.decision.cards))
            deliver(message, arrived)

        def tapped_end() -> None:
            if self.ended_ok_at is None and not stream.closed.is_set():
                self.ended_ok_at = asyncio.get_running_loop().time()
            end()

        setattr(stream, "write", tapped_write)  # noqa: B010  (an instance override)
        setattr(stream, "deliver", tapped_deliver)  # noqa: B010
        setattr(stream, "end", tapped_end)  # noqa: B010


class _TappingRegistry(SeatRegistry):
    """A seat registry that taps the stream of the seats it is told to watch."""

    def __init__(self) -> None:
        super().__init__()
        self.taps: dict[tuple[str, int], _Tap] = {}
        self._arming: set[asyncio.Task[None]] = set()

    def find(self, token: str) -> SeatSlot | None:
        slot = super().find(token)
        tap = None if slot is None else self.taps.get((slot.match_id, slot.seat))
        if slot is not None and tap is not None and slot.stream is None:
            # The servicer attaches the stream right after this lookup; no request can be
            # written to it before the match has started, long after it is tapped.
            task = asyncio.ensure_future(_arm(slot, tap))
            self._arming.add(task)
            task.add_done_callback(self._arming.discard)
        return slot

    async def disarm(self) -> None:
        """Stop waiting for streams that never completed their handshake."""
        for task in list(self._arming):
            task.cancel()
        await asyncio.gather(*self._arming, return_exceptions=True)


async def _arm(slot: SeatSlot, tap: _Tap) -> None:
    await slot.attached.wait()
    if slot.stream is not None:
        tap.attach(slot.stream)


# -- the house bots ---------------------------------------------------------------------------


def lowest_cards(hand: Sequence[int], count: int) -> list[int]:
    """The fallback's choice: the lowest card, plus the lowest card of another suit."""
    ordered = sorted(hand)
    if count == 1 or len(ordered) < 2:
        return ordered[:count]
    other = next((c for c in ordered if c >> 4 != ordered[0] >> 4), ordered[1])
    return [ordered[0], other]


async def house_bot(address: str, token: str) -> None:
    """A referee-internal seat: dials ``address`` and plays the lowest card(s) at once."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = bot_pb2_grpc.RefereeStub(channel)  # type: ignore[no-untyped-call]
        call = stub.Play()
        hello = bot_pb2.Hello(
            bot_name=HOUSE_NAME,
            bot_version=__version__,
            protocol_version=bot_pb2.PROTOCOL_VERSION_1,
            token=token,
        )
        await call.write(bot_pb2.BotMessage(hello=hello))
        with contextlib.suppress(grpc.aio.AioRpcError):
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:  # type: ignore[attr-defined]
                    return
                if message.WhichOneof("kind") == "request":
                    request = message.request
                    answer = bot_pb2.BotMessage()
                    answer.decision.request_id = request.request_id
                    answer.decision.cards.extend(lowest_cards(request.view.hand, request.count))
                    await call.write(answer)


# -- playing the scenarios --------------------------------------------------------------------


def expected_text(request: bot_pb2.DecisionRequest) -> str:
    """The legal answers to ``request`` in words, from its view."""
    hand = sorted(request.view.hand)
    shown = cards_str(hand)
    if request.kind == bot_pb2.DECISION_KIND_PAIN_CHOICE and request.count == 2:
        if len({c >> 4 for c in hand}) > 1:
            return f"2 different cards of two suits from the hand {shown}"
        return f"2 different cards of the hand {shown}"
    what = "pain card" if request.kind == bot_pb2.DECISION_KIND_PAIN_CHOICE else "card to play"
    return f"1 {what} from the hand {shown} (any of them)"


def sent_text(cards: Sequence[int]) -> str:
    """Card codes as the bot sent them, each with its name when it is a card."""
    if not cards:
        return "no cards"
    return "[" + ", ".join(_card_name(c) for c in cards) + "]"


def _card_name(code: int) -> str:
    return f"{card_str(code)} (code {code})" if 16 <= code < 144 else f"code {code}"


def findings_of(faults: Sequence[Fault], tap: _Tap) -> list[Finding]:
    """Each fault of the seat with what it sent and what was expected."""
    out = []
    for fault in faults:
        request = tap.requests.get(fault.request_id)
        sent = ""
        if fault.reason is FaultReason.TIMEOUT:
            sent = "nothing in time"
        elif fault.request_id in tap.answers:
            sent = sent_text(tap.answers[fault.request_id])
        # A late answer is reported for what it held; what was expected is on its timeout.
        late = fault.reason is FaultReason.STALE_REQUEST_ID
        expected = expected_text(request) if request is not None and not late else ""
        where = decision_words(request) if request is not None else ""
        if late and where:
            where = f"{where} (answered late)"
        out.append(Finding(fault, sent, expected, where))
    return out


#: A fault's detail in words for the report, where the referee's own names an internal id.
_DETAIL = {
    FaultReason.STALE_REQUEST_ID: "its answer came after the time allowed and was dropped",
    FaultReason.UNKNOWN_REQUEST_ID: (
        "its answer named a request that was never sent (a Decision echoes the "
        "request_id of the request it answers)"
    ),
}


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def decision_words(request: bot_pb2.DecisionRequest) -> str:
    """Which decision ``request`` asked for, in words: the round, and the trick and the
    card's place in it (or the pain card choice)."""
    view = request.view
    where = f"round {view.round_index + 1}"
    if request.kind == bot_pb2.DECISION_KIND_PAIN_CHOICE:
        return f"{where}, choosing the pain card{'s' if request.count > 1 else ''}"
    played = len(view.trick)
    place = "leading it" if played == 0 else f"playing its {_ordinal(played + 1)} card"
    return f"{where}, trick {len(view.tricks) + 1}, {place}"


class _ExitWatch:
    """Whether a started bot exited by itself after the referee ended its stream with OK."""

    def __init__(self) -> None:
        self.problem = ""

    async def judge(self, process: BotProcess, ended_ok_at: float | None) -> None:
        """Wait until :data:`LINGER_S` after the stream's end for the process to exit."""
        if ended_ok_at is None:
            return  # the stream ended some other way (a forfeit, a crash): reported as such
        remaining = LINGER_S - (asyncio.get_running_loop().time() - ended_ok_at)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.proc.wait()), max(remaining, 0.0))
        if process.returncode is None:
            self.problem = (
                f"the bot process was still running {LINGER_S:g} s after the referee ended "
                "its stream with status OK (it was stopped with SIGTERM): a bot should exit "
                "by itself when the referee ends its last stream"
            )
        elif process.returncode != 0:
            self.problem = (
                f"the bot process {process.describe_exit()} after the referee ended its "
                "stream with status OK; expected exit status 0"
            )


async def _judge_on_stop(runner: MatchRunner, seat: int, tap: _Tap, watch: _ExitWatch) -> None:
    """Once the bot's stream is attached, make the runner's stop of its process wait for
    the exit verdict first (the runner stops the process when the match is over)."""
    slot = runner.seats[seat].slot
    await slot.attached.wait()
    process = runner.seats[seat].process
    if process is None:
        return  # a bot that dials in by itself: no process to watch
    stop = process.stop

    async def judged_stop(grace: float = 2.0) -> None:
        await watch.judge(process, tap.ended_ok_at)
        await stop(grace)

    setattr(process, "stop", judged_stop)  # noqa: B010  (an instance override)


@dataclass
class _Lent:
    """One stream of the bot process, lent to one match."""

    process: BotProcess | None
    stream: SeatStream


class _OneProcess:
    """Lends the streams of one started bot process to matches, one match each, as a
    tournament's bot pool does with a bot that declares ``seats``."""

    def __init__(self, spec: BotSpec, process: BotProcess, streams: Sequence[SeatStream]) -> None:
        self.spec = spec
        self.process = process
        self.free = list(streams)

    def serves(self, spec: BotSpec) -> bool:
        return spec is self.spec

    async def acquire(
        self, spec: BotSpec, match_id: str = "", deal_seed: int | None = None
    ) -> _Lent:
        return _Lent(self.process, self.free.pop(0))

    def release(self, bot: Any) -> None:
        pass


def _clock(scenario: Scenario, startup_ms: int | None) -> Clock:
    clock = scenario.clock
    if startup_ms is not None:
        clock = Clock(clock.decision_ms, clock.time_bank_ms, startup_ms)
    return clock


async def run_scenario(
    server: RefereeServer,
    registry: _TappingRegistry,
    bot: BotSpec,
    scenario: Scenario,
    *,
    seed: int,
    out_dir: Path,
    strike_limit: int = 3,
    startup_ms: int | None = None,
    pool: _OneProcess | None = None,
    tap: _Tap | None = None,
    seat: int | None = None,
    bot_seeds: Sequence[int] = (),
) -> Outcome:
    """Play one match of a scenario; the bot's faults become findings.

    With ``pool`` the bot's seat is a stream of an already started process (``tap`` is
    attached to it) and ``seat`` may move the bot to another seat than the scenario's.
    ``bot_seeds`` are the seats' ``MatchStart.bot_seed`` (default: fresh random ones).
    """
    clock = _clock(scenario, startup_ms)
    seat = scenario.seat if seat is None else seat
    house = [
        BotSpec(name=f"{HOUSE_NAME}-{i}", token=secrets.token_urlsafe(24))
        for i in range(scenario.players)
    ]
    specs = [bot if i == seat else house[i] for i in range(scenario.players)]
    match_id = f"check-{scenario.name}-{secrets.token_hex(3)}"
    watch = _ExitWatch()
    if tap is None:
        tap = _Tap()
        registry.taps[(match_id, seat)] = tap
    runner = MatchRunner(
        server,
        specs,
        scenario.rules,
        seed=seed,
        match_id=match_id,
        clock=clock,
        strike_limit=strike_limit,
        out_dir=out_dir,
        pool=pool,
        bot_seeds=bot_seeds,
        # The clock judges the bot under test alone: a house seat is never late.
        untimed=[i for i in range(scenario.players) if i != seat],
    )
    tasks = [
        asyncio.ensure_future(house_bot(server.address, house[i].token))
        for i in range(scenario.players)
        if i != seat
    ]
    judging = (
        None
        if pool is not None
        else asyncio.ensure_future(_judge_on_stop(runner, seat, tap, watch))
    )
    try:
        result: MatchResult = await runner.run()
    finally:
        registry.taps.pop((match_id, seat), None)
        if judging is not None:
            judging.cancel()
        done, pending = await asyncio.wait(tasks, timeout=5) if tasks else (set(), set())
        for task in pending:
            task.cancel()
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise RuntimeError(f"a house bot failed: {task.exception()!r}")
    own = result.seats[seat]
    findings = findings_of(own.faults, tap)
    # The house bots only ever play legal cards: a fault of theirs is the referee's, not
    # the bot's.
    house_faults = [f for s in result.seats if s.seat != seat for f in s.faults]
    notes = (
        [f"a house seat faulted (not held against the bot): {house_faults[0].detail}"]
        if house_faults
        else []
    )
    return Outcome(
        scenario,
        findings,
        decisions=len(own.think_s),
        slowest_ms=max(own.think_s, default=0.0) * 1000,
        error=watch.problem,
        record_path=result.record_path,
        notes=notes,
    )


async def run_seats_scenario(
    server: RefereeServer,
    registry: _TappingRegistry,
    bot: BotSpec,
    scenario: Scenario,
    *,
    seed: int,
    out_dir: Path,
    strike_limit: int = 3,
    startup_ms: int | None = None,
) -> Outcome:
    """Start one process of ``bot`` with ``STICHELN_SEATS`` and play ``scenario.parallel``
    matches at once on its streams; then end every stream with OK and watch it exit."""
    clock = _clock(scenario, startup_ms)
    slots = registry.open_seats(
        f"check-{scenario.name}-{secrets.token_hex(3)}", 0, bot.name, bot.seats
    )
    log_path = out_dir / "logs" / f"{slots[0].match_id}-{log_name(bot.name)}.log"
    process: BotProcess | None = None
    try:
        try:
            process = await start_bot(
                server, bot, slots, log_path, {"STICHELN_SEATS": str(bot.seats)}
            )
        except (OSError, SandboxUnavailable, RefereeFault) as exc:
            return Outcome(scenario, [], error=f"cannot start the bot: {exc}")
        whys = await asyncio.gather(
            *(await_handshake(slot, process, clock.startup_ms / 1000) for slot in slots)
        )
        streams = [slot.stream for slot in slots if slot.stream is not None]
        if len(streams) < len(slots):
            why = next((w for w in whys if w), "a stream did not complete its handshake")
            return Outcome(
                scenario,
                [],
                error=f"{len(streams)} of the {len(slots)} streams the bot file declares "
                f"(seats = {bot.seats}) completed the handshake: {why}",
            )
        taps = [_Tap() for _ in range(scenario.parallel)]
        for tap, stream in zip(taps, streams, strict=False):
            tap.attach(stream)
        lender = _OneProcess(bot, process, streams[: scenario.parallel])
        outcomes = await asyncio.gather(
            *(
                run_scenario(
                    server,
                    registry,
                    bot,
                    scenario,
                    seed=seed + i,
                    out_dir=out_dir,
                    strike_limit=strike_limit,
                    startup_ms=startup_ms,
                    pool=lender,
                    tap=taps[i],
                    seat=(scenario.seat + i) % scenario.players,
                )
                for i in range(scenario.parallel)
            )
        )
        # The tournament is over: every stream of the process ends with OK.
        watch = _ExitWatch()
        open_streams = all(not stream.closed.is_set() for stream in streams)
        for stream in streams:
            stream.end()
        ended = asyncio.get_running_loop().time() if open_streams else None
        await watch.judge(process, ended)
        errors = [o.error for o in outcomes if o.error] + ([watch.problem] if watch.problem else [])
        return Outcome(
            scenario,
            [f for o in outcomes for f in o.findings],
            decisions=sum(o.decisions for o in outcomes),
            slowest_ms=max(o.slowest_ms for o in outcomes),
            error="; ".join(errors),
            notes=[n for o in outcomes for n in o.notes],
        )
    finally:
        for slot in slots:
            if slot.stream is not None:
                slot.stream.end()
            registry.close_seat(slot)
        if process is not None:
            await process.stop()


class Places:
    """``n`` places shared by check-bot runs played at once: a family of scenarios takes
    one, the scenarios that must play alone (a short clock, many streams) take them all."""

    def __init__(self, n: int) -> None:
        self.n = max(1, n)
        self._free = asyncio.Semaphore(self.n)
        self._whole = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def one(self) -> AsyncIterator[None]:
        async with self._free:
            yield

    @contextlib.asynccontextmanager
    async def every(self) -> AsyncIterator[None]:
        # One taker of every place at a time: two could each hold a part and wait forever.
        async with self._whole:
            taken = 0
            try:
                for _ in range(self.n):
                    await self._free.acquire()
                    taken += 1
                yield
            finally:
                for _ in range(taken):
                    self._free.release()


async def check_bot(
    bot: BotSpec,
    chosen: Sequence[Scenario],
    *,
    seed: int = 1,
    out_dir: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    strike_limit: int = 3,
    startup_ms: int | None = None,
    on_ready: Callable[[str], None] | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    sandbox: Sandbox | None = None,
    same_seed: Callable[[str], None] | None = None,
    skip_after_timeout: bool = True,
    stop_after_timeout: bool = False,
    jobs: int = 1,
    turns: Places | None = None,
) -> list[Outcome]:
    """Play ``bot`` through ``chosen`` on one server; ``on_ready`` gets its address. A
    started bot runs in ``sandbox`` (default: bubblewrap). With ``same_seed``, then play
    the same match twice with the same bot seeds and tell it whether the bot played the
    same cards (:mod:`referee.match.sameseed`; information, not a finding).

    With ``skip_after_timeout``, once the bot timed out in a scenario the rest of that
    scenario's family, and the same-seed probe, are not played: a bot that is too slow
    everywhere is told so in seconds, not after every scenario's clock has run out. With
    ``stop_after_timeout`` (a league's validation, which only has to decide), once the bot
    timed out in any scenario no further scenario starts: a bot that does not answer is
    refused in about the time its first scenarios take.

    ``jobs`` above 1 plays up to that many families side by side (a family's scenarios
    still one after another, so the skip above is the same), then the scenarios marked
    ``alone`` one at a time. ``turns``, :class:`Places` shared with other runs, bounds
    the families played side by side across all of them instead, and a scenario marked
    ``alone`` then waits until it has every place. Each scenario keeps its seed
    (``seed`` plus its place in ``chosen``), and ``on_outcome`` still hears the outcomes in
    ``chosen``'s order."""
    registry = _TappingRegistry()
    server = RefereeServer(registry, sandbox=sandbox)
    await server.start(host, port)
    outcomes: dict[int, Outcome] = {}
    told = 0

    def tell() -> None:
        nonlocal told
        while told in outcomes:
            if on_outcome is not None:
                on_outcome(outcomes[told])
            told += 1

    async def play(indices: Sequence[int]) -> None:
        for i in indices:
            scenario = chosen[i]
            slow = next(
                (
                    o.scenario.name
                    for o in outcomes.values()
                    if o.timed_out and scenario.family and o.scenario.family == scenario.family
                ),
                None,
            )
            anywhere = next(
                (o.scenario.name for o in outcomes.values() if o.timed_out and not o.skipped),
                None,
            )
            if stop_after_timeout and anywhere is not None:
                outcome = Outcome(
                    scenario, [], skipped=f"not played: the bot timed out in {anywhere}"
                )
            elif skip_after_timeout and slow is not None:
                outcome = Outcome(
                    scenario,
                    [],
                    skipped=f"not played: the bot timed out in {slow}, of the same family "
                    f"({scenario.family})",
                )
            else:
                run = run_seats_scenario if scenario.parallel > 1 else run_scenario
                outcome = await run(
                    server,
                    registry,
                    bot,
                    scenario,
                    seed=seed + i,
                    out_dir=out_dir,
                    strike_limit=strike_limit,
                    startup_ms=startup_ms,
                )
            outcomes[i] = outcome
            tell()

    try:
        if on_ready is not None:
            on_ready(server.address)
        if jobs <= 1 and turns is None:
            await play(range(len(chosen)))
        else:
            lanes: dict[str, list[int]] = {}
            for i, scenario in enumerate(chosen):
                if not scenario.alone:
                    lanes.setdefault(scenario.family or f"#{i}", []).append(i)
            # Places shared with other runs (a league validating several submissions at
            # once), or this run's own.
            places = turns or Places(jobs)

            async def lane(indices: list[int]) -> None:
                async with places.one():
                    await play(indices)

            async with asyncio.TaskGroup() as group:
                for indices in lanes.values():
                    group.create_task(lane(indices))
            async with places.every():
                await play([i for i, scenario in enumerate(chosen) if scenario.alone])
        slow = next(
            (outcomes[i].scenario.name for i in sorted(outcomes) if outcomes[i].timed_out), None
        )
        if same_seed is not None and skip_after_timeout and slow is not None:
            from referee.match.sameseed import SAME_SEED

            same_seed(f"SKIP {SAME_SEED}: not played: the bot timed out in {slow}")
        elif same_seed is not None:
            from referee.match.sameseed import check_same_seed

            same_seed(
                await check_same_seed(
                    server,
                    registry,
                    bot,
                    seed=seed + len(chosen),
                    out_dir=out_dir,
                    strike_limit=strike_limit,
                    startup_ms=startup_ms,
                )
            )
    finally:
        await registry.disarm()
        await server.stop(0.5)
    return [outcomes[i] for i in range(len(chosen))]
