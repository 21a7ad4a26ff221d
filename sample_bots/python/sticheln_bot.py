"""A small helper for writing a Sticheln bot in Python: copy this file next to your bot.

It speaks the bot protocol (``proto/sticheln/v1/bot.proto``) through the generated stubs
only, so it is what any outside author would write. Subclass :class:`Bot`, implement
:meth:`Bot.choose_pain` and :meth:`Bot.choose_card`, and call :func:`run`::

    class MyBot(Bot):
        name = "mine"

        def choose_pain(self, view, count):
            return view.hand[:count]          # the pain card(s): `count` cards of the hand

        def choose_card(self, view):
            return view.hand[0]               # any card of the hand is legal

    if __name__ == "__main__":
        run(MyBot())

:func:`run` reads the referee's address from ``STICHELN_REFEREE`` (``host:port``) and
the seat's token from ``STICHELN_TOKEN`` (or ``--referee`` / ``--token``), opens one
``Referee.Play`` stream, says ``Hello``, answers every ``DecisionRequest`` with one
``Decision`` and exits 0 when the referee ends the stream with status OK. A refused
stream (for example ``UNAUTHENTICATED``) is one line on stderr and exit status 1.

To join a league (``referee serve``) pass the bot token the league issued, the
registered name (``--name`` or ``STICHELN_BOT_NAME``) and, to play several matches at
once, ``--seats N`` (or ``STICHELN_SEATS``): the bot then opens N streams, each with its
own copy of the bot object and ``Hello.max_concurrent_matches = N``.

The rest are plain helpers an author needs anyway: card codes (:func:`suit`, :func:`rank`,
:func:`card_text`), :class:`PlainView` (the proto ``View`` as plain Python values, see
:func:`plain_view`), :func:`trick_winner` for both trump rules, and :func:`deck_cards`,
the deck of a rule set (docs/rules.md).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import hashlib
import os
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple


def _grpc_settings() -> None:
    """gRPC's client without its EventEngine (``GRPC_EXPERIMENTS=-event_engine_client``),
    set before grpc is imported (it reads the variable once). With it, each message
    hops between EventEngine threads and the completion-queue poller before asyncio
    sees it: 21 system calls a decision, 5 of them futex wake-ups, against 13 without
    (``strace -f -c`` of this bot over 720 decisions). Every call costs a bot in a
    gVisor sandbox some 20-60 microseconds (docs/hosting.md), so this is most of what a
    hosted Python bot's match costs beyond a dial-in one's. Naming
    ``event_engine_client`` in ``GRPC_EXPERIMENTS`` yourself keeps your choice."""
    names = [n.strip() for n in os.environ.get("GRPC_EXPERIMENTS", "").split(",") if n.strip()]
    if not any(n.lstrip("-") == "event_engine_client" for n in names):
        os.environ["GRPC_EXPERIMENTS"] = ",".join([*names, "-event_engine_client"])


_grpc_settings()

import grpc  # noqa: E402  (after its settings)

from sticheln.v1 import bot_pb2, bot_pb2_grpc, game_pb2  # noqa: E402

PROTOCOL_VERSION = 1
SEED_DOMAIN = b"sticheln/seed/v1"

# -- cards -----------------------------------------------------------------------------------
# A card is an int: suit * 16 + rank. Suits 1..8; a rank-0 card (a zero) never wins a trick.

SUIT_NAMES = (
    "none",
    "clubs",
    "spades",
    "hearts",
    "diamonds",
    "caps",
    "switches",
    "planets",
    "stars",
)
SUIT_LETTERS = "?CSHDKWPR"


def suit(card: int) -> int:
    """The card's suit, 1..8."""
    return card >> 4


def rank(card: int) -> int:
    """The card's rank; 0 is a zero."""
    return card & 15


def card_text(card: int) -> str:
    """Short text of a card, e.g. ``H12`` for rank 12 of hearts (as the referee logs it)."""
    return f"{SUIT_LETTERS[card >> 4] if 0 < card >> 4 < 9 else '?'}{card & 15}"


# -- the view as plain Python values ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rules:
    """A rule set, every option as a lower-case word (the proto enum name without prefix).

    For example ``trump_rule`` is ``"highest"`` or ``"last_suit"`` and ``pain_card`` is
    ``"set_aside"`` or ``"kept_in_hand"``; docs/rules.md explains each option.
    """

    preset: str
    deck: str
    pain_card: str
    pain_cards_per_player: int
    pain_visibility: str
    first_lead: str
    trump_rule: str
    all_zero_trick: str
    rounds: int
    match_ties: str
    long_hands_3p: bool


class Trick(NamedTuple):
    """A completed trick: the cards in play order from ``leader``; ``winner`` -1 = nobody."""

    leader: int
    cards: tuple[int, ...]
    winner: int


@dataclass(frozen=True, slots=True)
class PlainView:
    """One seat's view of the match (the proto ``View``) as plain Python values.

    ``pain[s]`` is seat ``s``'s pain card(s), an empty tuple while this seat may not see
    them. ``phase`` is ``"pain"``, ``"play"`` or ``"round_over"``. ``trick`` holds the
    cards of the trick in progress, the first one played by ``leader``.
    """

    rules: Rules
    players: int
    seat: int
    round_index: int
    rounds_total: int
    dealer: int
    phase: str
    hand: tuple[int, ...]
    pain: tuple[tuple[int, ...], ...]
    set_aside_count: int
    leader: int
    to_play: int
    trick: tuple[int, ...]
    tricks: tuple[Trick, ...]
    totals: tuple[int, ...]
    match_over: bool

    def pain_suits(self, seat: int) -> frozenset[int]:
        """The pain suits of ``seat`` as far as this seat knows them (empty if unknown)."""
        return frozenset(c >> 4 for c in self.pain[seat])

    @property
    def own_pain_suits(self) -> frozenset[int]:
        """This seat's own pain suits (empty before it picked)."""
        return self.pain_suits(self.seat)


def _enum_word(enum: Any, number: int) -> str:
    """``TRUMP_RULE_LAST_SUIT`` -> ``"last_suit"``: the name without its enum's prefix."""
    prefix = enum.Name(0)[: -len("UNSPECIFIED")]
    try:
        return enum.Name(number)[len(prefix) :].lower()
    except ValueError:  # a value newer than these stubs
        return f"unknown_{number}"


def plain_rules(msg: game_pb2.RuleSet) -> Rules:
    """The rule set of a ``RuleSet`` message."""
    return Rules(
        preset=msg.preset,
        deck=_enum_word(game_pb2.Deck, msg.deck),
        pain_card=_enum_word(game_pb2.PainCardRule, msg.pain_card),
        pain_cards_per_player=msg.pain_cards_per_player,
        pain_visibility=_enum_word(game_pb2.PainVisibility, msg.pain_visibility),
        first_lead=_enum_word(game_pb2.FirstLead, msg.first_lead),
        trump_rule=_enum_word(game_pb2.TrumpRule, msg.trump_rule),
        all_zero_trick=_enum_word(game_pb2.AllZeroTrick, msg.all_zero_trick),
        rounds=msg.rounds,
        match_ties=_enum_word(game_pb2.MatchTies, msg.match_ties),
        long_hands_3p=msg.long_hands_3p,
    )


_rules_cache: dict[bytes, Rules] = {}


def plain_view(msg: game_pb2.View) -> PlainView:
    """The plain-Python view of a ``View`` message."""
    key = msg.rules.SerializeToString()
    rules = _rules_cache.get(key)
    if rules is None:  # the same rule set comes with every request: convert it once
        rules = _rules_cache[key] = plain_rules(msg.rules)
    return PlainView(
        rules=rules,
        players=msg.players,
        seat=msg.seat,
        round_index=msg.round_index,
        rounds_total=msg.rounds_total,
        dealer=msg.dealer,
        phase=_enum_word(game_pb2.Phase, msg.phase),
        hand=tuple(msg.hand),
        pain=tuple(tuple(p.cards) for p in msg.pain),
        set_aside_count=msg.set_aside_count,
        leader=msg.leader,
        to_play=msg.to_play,
        trick=tuple(msg.trick),
        tricks=tuple(Trick(t.leader, tuple(t.cards), t.winner) for t in msg.tricks),
        totals=tuple(msg.totals),
        match_over=msg.match_over,
    )


# -- rules an author needs ------------------------------------------------------------------


def trick_winner(cards: Sequence[int], trump_rule: str = "highest") -> int:
    """The position (0 = the first card) of the card winning ``cards`` so far; -1 if none.

    docs/rules.md rule 6: the first card's suit is the lead suit (even a zero); zeros never
    win; if a non-zero card of another suit was played, the highest such card wins
    (``"highest"``), or under ``"last_suit"`` the highest card of the off-suit played most
    recently; otherwise the highest lead-suit card. Equal ranks: the earlier card wins.
    Works for a trick in progress too: the position of the card winning it now.
    """
    if not cards:
        return -1
    lead = cards[0] >> 4
    off = [i for i, c in enumerate(cards) if c & 15 and c >> 4 != lead]
    if off:
        if trump_rule == "last_suit":
            latest = cards[off[-1]] >> 4
            off = [i for i in off if cards[i] >> 4 == latest]
        candidates = off
    else:
        candidates = [i for i, c in enumerate(cards) if c & 15]
    if not candidates:
        return -1
    # max() keeps the first of equal keys: the earlier card wins a tie.
    return max(candidates, key=lambda i: cards[i] & 15)


def winning_seat(view: PlainView) -> int:
    """The seat winning the trick in progress so far, or -1 (no card yet, or only zeros)."""
    position = trick_winner(view.trick, view.rules.trump_rule)
    return -1 if position < 0 else (view.leader + position) % view.players


def score_of(cards: Sequence[int], pain_suits: frozenset[int] | set[int]) -> int:
    """docs/rules.md rule 8: a card of a pain suit costs its rank, any other card is worth +1."""
    return sum(-(c & 15) if c >> 4 in pain_suits else 1 for c in cards)


_FRENCH_ZERO_ACE = (0, *range(2, 14))


def deck_cards(rules: Rules, players: int) -> tuple[tuple[int, ...], int]:
    """The deck (ascending card codes) and the hand size for the rule set (docs/rules.md)."""

    def cards(suits: Sequence[int], ranks: Sequence[int]) -> list[int]:
        return [s * 16 + r for s in suits for r in ranks]

    if rules.deck == "amigo":
        top = {3: 9, 4: 12}.get(players, 15)
        deck = cards(range(1, 7 if players >= 6 else 6), range(top))
    elif rules.deck == "french_zero_ace":
        if players == 3:
            deck = cards(
                range(1, 5),
                [r for r in _FRENCH_ZERO_ACE if r <= (12 if rules.long_hands_3p else 9)],
            )
        else:
            deck = cards(range(1, 5), _FRENCH_ZERO_ACE)
            if players == 5:
                deck = [c for c in deck if c not in (1 * 16 + 2, 2 * 16 + 2)]
            elif players >= 6:
                deck = [c for c in deck if c & 15 != 2]
    elif rules.deck == "french_2_14":
        deck = cards(range(1, 5), range(2, 15))
    else:  # suits_per_player
        deck = cards(range(1, players + 1), range(15))
    return tuple(sorted(deck)), len(deck) // players


def unseen_cards(view: PlainView) -> list[int]:
    """The cards this seat has not seen: in other hands, or set aside at the deal.

    The deck minus the own hand, every card played this round and every pain card lying
    face up (under ``kept_in_hand`` another seat's revealed pain card is still unseen:
    it is in that seat's hand until played).
    """
    deck, _ = deck_cards(view.rules, view.players)
    seen = set(view.hand)
    seen.update(view.trick)
    for trick in view.tricks:
        seen.update(trick.cards)
    if view.rules.pain_card == "set_aside":
        for pick in view.pain:
            seen.update(pick)
    else:
        seen.update(view.pain[view.seat])
    return [c for c in deck if c not in seen]


# -- the bot and the protocol loop ----------------------------------------------------------


class Bot:
    """A bot: override :meth:`choose_pain` and :meth:`choose_card`; the hooks are optional.

    While a decision is asked, :attr:`request` is the ``DecisionRequest`` (its
    ``timeout_ms`` and ``time_bank_ms`` say how long the bot may think) and
    :attr:`received_at` the ``time.perf_counter()`` of its arrival.
    """

    name = "bot"
    version = "0.1"

    def __init__(self) -> None:
        self.seat = -1
        self.match_start: bot_pb2.MatchStart | None = None
        self.request: bot_pb2.DecisionRequest | None = None
        self.received_at = 0.0

    def convert_view(self, msg: game_pb2.View) -> Any:
        """The view handed to the choose methods; by default a :class:`PlainView`."""
        return plain_view(msg)

    def choose_pain(self, view: Any, count: int) -> Sequence[int]:
        """The pain card(s): ``count`` cards of ``view.hand`` (two of different suits)."""
        raise NotImplementedError

    def choose_card(self, view: Any) -> int:
        """The card to play: any card of ``view.hand``."""
        raise NotImplementedError

    def on_match_start(self, start: bot_pb2.MatchStart) -> None:
        """Called with ``MatchStart`` (seat, seating, rules, clock, seed commitment)."""

    def on_event(self, event: bot_pb2.Event) -> None:
        """Called with every event (card played, trick result, scores, faults, ...)."""

    def on_match_end(self, end: bot_pb2.MatchEnd) -> None:
        """Called with ``MatchEnd`` (totals, places, the revealed seed)."""

    def decide(self, request: bot_pb2.DecisionRequest) -> list[int]:
        """The card codes answering ``request``; a failing bot answers the lowest card(s).

        A bot that raises would otherwise time out on every request; a traceback on stderr
        and a legal answer keep the match going while its author looks.
        """
        self.request = request
        view = request.view
        try:
            if request.kind == bot_pb2.DECISION_KIND_PAIN_CHOICE:
                chosen = self.choose_pain(self.convert_view(view), request.count)
                cards = [chosen] if isinstance(chosen, int) else [int(c) for c in chosen]
            else:
                cards = [int(self.choose_card(self.convert_view(view)))]
        except Exception:
            traceback.print_exc()
            cards = _lowest_cards(list(view.hand), max(1, request.count))
        finally:
            self.request = None
        return cards


def _lowest_cards(hand: list[int], count: int) -> list[int]:
    hand = sorted(hand)
    if count == 1 or len(hand) < 2:
        return hand[:count]
    other = [c for c in hand if c >> 4 != hand[0] >> 4]
    return [hand[0], other[0] if other else hand[1]]


def seed_matches(commitment: bytes, seed: int, nonce: bytes) -> bool:
    """True when the revealed ``seed`` and ``nonce`` are the ones ``MatchStart`` committed to."""
    return hashlib.sha256(SEED_DOMAIN + seed.to_bytes(8, "big") + nonce).digest() == commitment


class Refused(Exception):
    """The referee refused or broke the stream, or could not be reached."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code


async def play(bot: Bot, address: str, token: str, ca_file: str = "", seats: int = 1) -> None:
    """Play every match the referee seats this stream in; return when it ends with OK, or
    when it had ended as an answer was being sent (grpcio then hides its status).

    ``seats`` is the number of streams this bot keeps open at once (sent as
    ``Hello.max_concurrent_matches``). Raises :class:`Refused` when the referee refuses or
    breaks the stream.
    """
    if ca_file:
        with open(ca_file, "rb") as f:
            channel = grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(f.read()))
    else:
        channel = grpc.aio.insecure_channel(address)
    async with channel:
        call = bot_pb2_grpc.RefereeStub(channel).Play()
        hello = bot_pb2.Hello(
            bot_name=bot.name,
            bot_version=bot.version,
            protocol_version=PROTOCOL_VERSION,
            token=token,
            max_concurrent_matches=seats,
        )
        try:
            await call.write(bot_pb2.BotMessage(hello=hello))
            if await _serve(bot, call):
                return  # its status is lost (see _write_met_the_end)
        except grpc.aio.AioRpcError as exc:
            # An answer written just as the referee ends the stream fails; the stream's
            # status says how it ended.
            if await call.code() == grpc.StatusCode.OK:
                return
            raise Refused(exc.code(), exc.details() or "") from None
        code = await call.code()
        if code != grpc.StatusCode.OK:
            raise Refused(code, await call.details())


async def _serve(bot: Bot, call: Any) -> bool:
    """Answer and follow the stream until it ends; True when it had ended as an answer
    was being sent."""
    eof = grpc.aio.EOF
    clock = time.perf_counter
    read = call.read
    while True:
        msg = await read()
        if msg is eof:
            return False
        received = clock()
        for event in msg.events:
            bot.on_event(event)
        kind = msg.WhichOneof("kind")
        if kind == "request":
            # The hot path: answer first, everything else can wait.
            request = msg.request
            bot.received_at = received
            answer = bot_pb2.BotMessage()
            answer.decision.request_id = request.request_id
            answer.decision.cards.extend(bot.decide(request))
            try:
                await call.write(answer)
            except grpc.aio.AioRpcError as exc:
                if not _write_met_the_end(exc):
                    raise
                # The referee had ended the stream (at the end of the matches, or as the
                # answer came too late). grpcio's asyncio client then reports INTERNAL in
                # place of the status the referee sent: the stream's end, not a failure.
                print(
                    f"{bot.name}: the referee had ended the stream when the answer to "
                    f"request {request.request_id} was sent; it was not counted",
                    file=sys.stderr,
                )
                return True
        elif kind == "match_start":
            bot.seat = msg.match_start.seat
            bot.match_start = msg.match_start
            bot.on_match_start(msg.match_start)
        elif kind == "match_end":
            end = msg.match_end
            start = bot.match_start
            if end.seed_withheld:
                # A later match plays the same deal (duplicate mode): the seed stays
                # secret until then, so there is nothing to check yet.
                print(
                    f"{bot.name}: the seed of match {start.match_id if start else '?'} is "
                    f"withheld, commitment not checked: {end.seed_withheld}",
                    file=sys.stderr,
                )
            elif start is not None and not seed_matches(
                start.seed_commitment, end.seed, end.seed_nonce
            ):
                print(
                    f"{bot.name}: warning: the revealed seed {end.seed} does not match the "
                    f"seed commitment of match {start.match_id}",
                    file=sys.stderr,
                )
            bot.on_match_end(end)
            # The stream may carry the next MatchStart; the referee ends it when done.


def _write_met_the_end(exc: grpc.aio.AioRpcError) -> bool:
    """A write that failed because the server had already ended the stream: grpcio's
    asyncio client turns that into INTERNAL "Internal error from Core" (grpc/grpc#36066),
    whatever status the server sent."""
    return exc.code() == grpc.StatusCode.INTERNAL and "execute_batch" in (
        exc.debug_error_string() or ""
    )


def arg_parser(bot_name: str) -> argparse.ArgumentParser:
    """The command line every bot takes; add your bot's own options to it."""
    parser = argparse.ArgumentParser(description=f"Sticheln bot {bot_name!r}.")
    parser.add_argument(
        "--referee",
        default=os.environ.get("STICHELN_REFEREE", ""),
        help="referee address host:port (default: $STICHELN_REFEREE)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("STICHELN_TOKEN", ""),
        help="the seat's token (default: $STICHELN_TOKEN)",
    )
    parser.add_argument(
        "--name",
        default=os.environ.get("STICHELN_BOT_NAME", ""),
        help="the name to send in Hello, e.g. the name registered in a league "
        "(default: $STICHELN_BOT_NAME, else the bot's own name)",
    )
    parser.add_argument(
        "--seats",
        type=int,
        default=int(os.environ.get("STICHELN_SEATS", "1") or "1"),
        help="streams to open at once, each serving one match at a time (default: "
        "$STICHELN_SEATS, else 1)",
    )
    parser.add_argument(
        "--tls-ca",
        default=os.environ.get("STICHELN_TLS_CA", ""),
        metavar="PEM",
        help="connect with TLS, trusting this CA certificate (default: $STICHELN_TLS_CA)",
    )
    return parser


def _event_loop_run(main: Any) -> None:
    """Run ``main`` on uvloop when it is installed (less CPU per message), else asyncio."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    uvloop.run(main)


def run(
    bot: Bot, argv: Sequence[str] | None = None, args: argparse.Namespace | None = None
) -> None:
    """The bot's entry point: parse the command line (or take ``args``), play, exit.

    Exit status 0 when the referee ends the stream with OK (or had ended it when an answer
    was sent, which grpcio reports without its status), 1 when it refuses the stream or
    cannot be reached (one line on stderr says why), 2 for a usage error.
    """
    if args is None:
        args = arg_parser(bot.name).parse_args(argv)
    if not args.referee:
        print(
            f"{bot.name}: no referee address: set STICHELN_REFEREE or pass --referee host:port",
            file=sys.stderr,
        )
        sys.exit(2)
    seats = getattr(args, "seats", 1)
    if not 1 <= seats <= 1024:
        print(f"{bot.name}: --seats {seats} is not allowed; allowed: 1 to 1024", file=sys.stderr)
        sys.exit(2)
    if getattr(args, "name", ""):
        bot.name = args.name
    # One bot object per stream: a bot keeps per-match state (its seat, MatchStart).
    bots = [bot] + [copy.deepcopy(bot) for _ in range(seats - 1)]

    async def streams() -> None:
        await asyncio.gather(*(play(b, args.referee, args.token, args.tls_ca, seats) for b in bots))

    try:
        _event_loop_run(streams())
    except Refused as exc:
        if exc.code == grpc.StatusCode.UNAVAILABLE:
            what = f"cannot reach the referee at {args.referee}"
        else:
            what = f"the referee at {args.referee} refused the stream"
        print(f"{bot.name}: {what}: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
