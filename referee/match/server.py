"""The referee's gRPC server: one port for every bot stream, health and reflection.

A sandboxed bot has no network: it reaches the referee through a Unix socket made for its
one process (:meth:`RefereeServer.open_bot_socket`), served by a small gRPC server of its
own that shares the servicer, the seat registry and the event loop. A token opens its
seat only where it was given: on the socket of its process, or on the TCP port for a bot
that dials in by itself or runs without a sandbox.

The servicer is thin. It checks a stream's handshake, finds the seat its token opens in
the :class:`SeatRegistry`, and from then on only moves messages: decisions go to the
seat's :class:`SeatStream`, which the match runner awaits; the runner writes requests
back through the same object. Domain errors map to gRPC status codes in one place
(:func:`_refuse`).

What the server takes in before it knows who is speaking is bounded (:class:`Intake`): the
size of a message, the streams of one connection, and the streams still waiting for their
handshake, per connection (per bot socket), per client address and in all, so that clients
with no token cannot make the referee hold more than a few MiB for them, nor one client
keep the others out: a stream on the port that has sent nothing is ended after a few
seconds, and room is kept for clients that have presented a valid token.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import ipaddress
import itertools
import math
import os
import secrets
import shutil
import socket
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from referee import __version__
from referee.jail import watchdog
from referee.jail.bots import MAX_SEATS
from referee.jail.policy import SOCKET_FOLDER_BYTES, SOCKET_ROOT_PREFIX, socket_parent
from referee.jail.sandbox import Sandbox
from referee.match.faults import FaultReason
from referee.match.peers import blame
from referee.runtime import descriptors
from sticheln.v1 import bot_pb2

PROTOCOL_VERSION = 1
SERVICE_NAME = "sticheln.v1.Referee"
_EOF: Any = grpc.aio.EOF  # type: ignore[attr-defined]  # the end of a stream, from context.read()


class Malformed:
    """Stands for a message from a bot that could not be parsed."""

    __slots__ = ("detail",)

    def __init__(self, detail: str) -> None:
        self.detail = detail


class Oversized:
    """Stands for a message from a bot over :data:`MESSAGE_LIMIT` bytes."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    @property
    def detail(self) -> str:
        """What was wrong, in words."""
        return (
            f"the bot sent a message of {self.size:,} bytes, over the "
            f"{MESSAGE_LIMIT >> 10} KiB limit ({MESSAGE_LIMIT:,} bytes)"
        )


#: The largest message a bot may send (bot.proto): a larger one ends its stream with
#: RESOURCE_EXHAUSTED. Some 250 times the largest a bot has reason to send: a sample bot's
#: Hello is 67 bytes (name, version, a 32-character token, a capability), a Decision 17.
MESSAGE_LIMIT = 16 << 10
#: The largest message gRPC itself accepts, and so the most it holds for one stream while
#: the message arrives. Between the two the referee sees the message and can say how big
#: it was; above this gRPC ends the call at the message's length prefix, before the
#: referee sees anything, exactly as when the bot cancels its call or its connection breaks.
TRANSPORT_LIMIT = 64 << 10
#: How long the end of a bot's stream waits for gRPC to cancel the call: a bot that
#: closed its side is not cancelled; a cancelled call, a broken connection or a message
#: over :data:`TRANSPORT_LIMIT` is, right after the same end of stream.
_EOF_SETTLE_S = 0.1
_CANCELLED = (
    "the stream was cancelled (the bot cancelled its call, its connection broke, or it "
    f"sent a message over {TRANSPORT_LIMIT >> 10} KiB, which gRPC refuses unseen)"
)


@dataclass(frozen=True)
class Intake:
    """What the referee takes in from clients, most of all from those not yet known:
    bounds as data, applied in one place each (the gRPC options of :meth:`options`, the
    concurrent calls of a bot's socket, and the streams in their handshake counted by
    :class:`Handshakes`).

    Before its handshake a stream costs at most :attr:`message_bytes` (gRPC holds one
    message at a time and refuses a longer one at its length prefix); a connection (a bot's
    socket) holds at most :attr:`handshaking_per_connection` such streams, one client
    address on the TCP port at most :attr:`handshaking_per_address`, the port at most
    :attr:`handshaking_total`: 4 MiB per connection and 16 MiB in all by default.
    What a stream may take is bounded by time as well: the handshake deadline
    (``handshake_timeout``), and on the port :attr:`silent_s` for its first message.

    One client cannot keep the others out (a league's registered bots): it holds at most
    its address's share, a stream that sends nothing holds it only seconds, and
    :attr:`reserved_for_known` of the port's room is kept for addresses that have
    presented a valid token before (a bot that reconnects)."""

    #: The largest message gRPC accepts (the length prefix says more: refused unread).
    message_bytes: int = TRANSPORT_LIMIT
    #: HTTP/2 streams open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS): a
    #: bot with ``seats`` opens one per seat, over one connection.
    streams_per_connection: int = MAX_SEATS + 36
    #: Streams of one connection (on a bot's socket: of the socket) waiting for their
    #: handshake; more are refused at once with RESOURCE_EXHAUSTED.
    handshaking_per_connection: int = MAX_SEATS
    #: Streams on the TCP port waiting for their handshake, all connections together.
    handshaking_total: int = 256
    #: Streams on the TCP port waiting for their handshake from one client address (an
    #: IPv6 client: its /64), all its connections together: a bot with the most seats
    #: opens them all at once.
    handshaking_per_address: int = MAX_SEATS
    #: Of :attr:`handshaking_total`, the room only addresses that have presented a valid
    #: token may take (the last :data:`KNOWN_ADDRESSES` such addresses).
    reserved_for_known: int = 64
    #: Seconds a stream on the TCP port may wait for its first message (the Hello a bot
    #: sends as soon as the stream is open), when that is less than the handshake deadline.
    silent_s: float = 5.0
    #: Calls at once on one bot's private socket, whatever their state (a process has at
    #: most ``seats`` streams; a few more for a stream being replaced).
    socket_calls: int = MAX_SEATS + 8
    #: Connections at once to one bot's private socket (a connection per seat at most,
    #: and a few more for one being replaced). Each costs the referee a descriptor, and
    #: gRPC accepts them without bound: a bot holding 19,800 of them took every descriptor
    #: the referee had. A socket found over it is closed with all its connections
    #: (:meth:`RefereeServer.guard_sockets`, every :attr:`socket_check_s` seconds).
    socket_connections: int = MAX_SEATS + 24
    #: How often the connections of the bots' sockets are counted, in seconds.
    socket_check_s: float = 0.25

    def options(self) -> list[tuple[str, int]]:
        """The gRPC server options that carry these bounds."""
        return [
            ("grpc.max_receive_message_length", self.message_bytes),
            ("grpc.max_concurrent_streams", self.streams_per_connection),
        ]


#: How many client addresses that presented a valid token are remembered (the latest).
KNOWN_ADDRESSES = 4096


def client_address(peer: str) -> str:
    """The client of a gRPC peer string: the IPv4 address of ``ipv4:A:PORT``, the /64
    of ``ipv6:[A]:PORT`` (one host usually has a whole /64), the peer itself otherwise."""
    kind, _, rest = peer.partition(":")
    host = urllib.parse.unquote(rest).rpartition(":")[0].strip("[]")
    try:
        if kind == "ipv4":
            return str(ipaddress.IPv4Address(host))
        if kind == "ipv6":
            address = ipaddress.IPv6Address(host)
            if address.ipv4_mapped is not None:
                return str(address.ipv4_mapped)
            return str(ipaddress.IPv6Network(f"{host}/64", strict=False))
    except ValueError:
        pass
    return peer


class Handshakes:
    """The streams waiting for their handshake, by connection (a bot socket's path, or the
    peer address of a TCP connection) and, on the port, by client address, held to an
    :class:`Intake`."""

    def __init__(self, intake: Intake) -> None:
        self.intake = intake
        self._by_connection: dict[str, int] = {}
        self._by_address: dict[str, int] = {}
        #: Addresses that presented a valid token, the latest last.
        self._known: collections.OrderedDict[str, None] = collections.OrderedDict()
        #: Streams waiting on the TCP port, all connections together.
        self.on_port = 0

    def enter(self, connection: str, on_port: bool) -> str:
        """Count a new stream on ``connection``; "" when it may wait for its Hello, else
        why not (it is not counted then)."""
        intake = self.intake
        waiting = self._by_connection.get(connection, 0)
        if waiting >= intake.handshaking_per_connection:
            return (
                f"{waiting} streams of this connection are already waiting for their "
                f"handshake (at most {intake.handshaking_per_connection}); send each "
                "stream's Hello at once"
            )
        address = client_address(connection)
        if on_port:
            mine = self._by_address.get(address, 0)
            if mine >= intake.handshaking_per_address:
                return (
                    f"{mine} streams from your address are already waiting for their "
                    f"handshake (at most {intake.handshaking_per_address}); send each "
                    "stream's Hello at once"
                )
            room = intake.handshaking_total
            if address not in self._known:
                room -= intake.reserved_for_known
            if self.on_port >= room:
                return (
                    f"{self.on_port} streams are already waiting for their handshake on this "
                    "port; try again shortly"
                )
            self._by_address[address] = mine + 1
        self._by_connection[connection] = waiting + 1
        self.on_port += on_port
        return ""

    def leave(self, connection: str, on_port: bool) -> None:
        """A stream counted by :meth:`enter` has its first message, or has ended."""
        _drop(self._by_connection, connection)
        if on_port:
            _drop(self._by_address, client_address(connection))
        self.on_port -= on_port

    def vouch(self, connection: str) -> None:
        """A stream of ``connection`` on the port presented a valid token: its address may
        take the room kept for known clients from now on."""
        address = client_address(connection)
        self._known[address] = None
        self._known.move_to_end(address)
        while len(self._known) > KNOWN_ADDRESSES:
            self._known.popitem(last=False)

    def deadline(self, on_port: bool, handshake_timeout: float) -> float:
        """How long a new stream may wait for its first message."""
        return min(handshake_timeout, self.intake.silent_s) if on_port else handshake_timeout

    def waiting(self, connection: str) -> int:
        """Streams of ``connection`` waiting for their handshake."""
        return self._by_connection.get(connection, 0)


def _drop(counts: dict[str, int], key: str) -> None:
    left = counts.get(key, 0) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


def _parse_bot_message(data: bytes) -> bot_pb2.BotMessage | Malformed | Oversized:
    # A tolerant deserializer: garbage becomes a recorded fault, not a dead stream.
    if len(data) > MESSAGE_LIMIT:
        return Oversized(len(data))
    try:
        return bot_pb2.BotMessage.FromString(data)
    except Exception as exc:  # the protobuf runtime raises DecodeError or RuntimeWarning
        return Malformed(f"{len(data)} bytes that are not a BotMessage ({type(exc).__name__})")


#: The ``Hello.capabilities`` this referee knows and grants.
CAPABILITIES = frozenset({"events"})

#: A request id is ``stream serial << SEQUENCE_BITS | n`` for the stream's n-th request
#: (n from 1): unique in the process, increasing on each stream, and telling by itself
#: which stream it was sent on and whether it was sent yet.
SEQUENCE_BITS = 32
_SEQUENCE_MASK = (1 << SEQUENCE_BITS) - 1
_STREAM_SERIALS = itertools.count(1)
#: Messages a stream may send between two requests that answer none (a late answer to a
#: request that timed out, a second answer, one naming no request): a bot has use for one
#: or two. Each costs the referee a parse and a fault on the event loop every seat shares,
#: and a late answer costs its bot no strike: a bot sending them without end made honest
#: seats at its table time out. One more ends the stream (the seat is disconnected).
UNSOLICITED_LIMIT = 16


class SeatStream:
    """An attached bot stream for one seat: the runner's handle to write and await."""

    def __init__(self, context: grpc.aio.ServicerContext[Any, Any], hello: bot_pb2.Hello) -> None:
        self.context = context
        self.hello = hello
        #: The capabilities granted on this stream (of those the bot asked for).
        self.capabilities = [c for c in hello.capabilities if c in CAPABILITIES]
        #: Events are sent as they happen ("events" capability).
        self.live_events = "events" in self.capabilities
        self.closed = asyncio.Event()
        self.close_reason = FaultReason.DISCONNECT
        self.close_detail = ""
        self.finished = asyncio.Event()
        self._pending_id = 0
        self._pending: asyncio.Future[tuple[bot_pb2.BotMessage | Malformed, float]] | None = None
        #: This stream's part of its request ids (see :data:`SEQUENCE_BITS`).
        self.serial = next(_STREAM_SERIALS)
        # The requests sent on this stream so far. The ids sent are exactly those of this
        # serial with a sequence number from 1 to ``_sent``: an answer to one of them is
        # stale, to any other id (say another seat's or another stream's) unknown. Two
        # integers, however many matches the stream serves.
        self._sent = 0
        # Set while the bot owes no answer: from the first message after a request (or the
        # end of the stream) until the next request; and when that request's time is up.
        self._answered = asyncio.Event()
        self._answered.set()
        self._answer_due = 0.0
        #: The bot's side of the stream has ended (its last message was read).
        self.ending = False
        #: The message over :data:`MESSAGE_LIMIT` that ended the stream, if one did.
        self.oversized: Oversized | None = None
        #: Called with (reason, detail, request_id) for faults outside a pending request.
        self.on_fault: Callable[[FaultReason, str, int], None] | None = None
        # Messages since the last request that answered no request (UNSOLICITED_LIMIT).
        self._unsolicited = 0

    async def write(self, message: bot_pb2.RefereeMessage) -> None:
        """Send one message to the bot."""
        await self.context.write(message)

    def next_request_id(self) -> int:
        """The id of the next request to send on this stream (the same until it is armed
        with :meth:`expect`: a request prepared and never sent uses up no id)."""
        return self.serial << SEQUENCE_BITS | (self._sent + 1)

    def was_sent(self, request_id: int) -> bool:
        """Whether ``request_id`` is the id of a request armed on this stream."""
        return (
            request_id >> SEQUENCE_BITS == self.serial
            and 0 < request_id & _SEQUENCE_MASK <= self._sent
        )

    def expect(
        self, request_id: int, limit_s: float = math.inf
    ) -> asyncio.Future[tuple[bot_pb2.BotMessage | Malformed, float]]:
        """Arm the answer for ``request_id`` (:meth:`next_request_id`), due within
        ``limit_s`` seconds; the future gets (message, arrival time)."""
        if request_id != self.next_request_id():
            raise ValueError(
                f"request {request_id} is not the next request of this stream "
                f"({self.next_request_id()})"
            )
        fut: asyncio.Future[tuple[bot_pb2.BotMessage | Malformed, float]] = (
            asyncio.get_running_loop().create_future()
        )
        if self.closed.is_set():
            fut.set_exception(ConnectionError(self.close_detail or "stream closed"))
        self._pending = fut
        self._pending_id = request_id
        self._sent += 1
        self._unsolicited = 0
        self._answered.clear()
        self._answer_due = time.monotonic() + limit_s
        return fut

    def settle(self) -> None:
        """The pending request is over (answered or timed out): later answers are stale."""
        self._pending = None
        self._pending_id = 0

    async def answered(self, cap: float) -> None:
        """Wait until the bot has answered the last request sent on this stream, at most
        until that request's time is up and at most ``cap`` seconds.

        A stream should end only when the bot owes no answer: a bot that is writing its
        answer as the stream ends sees the write fail, and gRPC clients (Python's among
        them) then report the call as ``INTERNAL`` instead of the status the referee sent.
        """
        wait = min(cap, self._answer_due - time.monotonic())
        if not self._answered.is_set() and wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._answered.wait(), wait)

    def deliver(self, message: bot_pb2.BotMessage | Malformed, arrived: float) -> None:
        """Route one message from the bot."""
        self._answered.set()
        pending = self._pending
        if (pending is None or pending.done()) and self._unsolicited_over_limit():
            return
        if isinstance(message, Malformed):
            if pending is not None and not pending.done():
                pending.set_result((message, arrived))
            elif self.on_fault:
                self.on_fault(FaultReason.MALFORMED_MESSAGE, message.detail, 0)
            return
        kind = message.WhichOneof("kind")
        if kind != "decision":
            detail = (
                "a Hello after the handshake" if kind == "hello" else "a message with no kind set"
            )
            if pending is not None and not pending.done():
                pending.set_result((Malformed(detail), arrived))
            elif self.on_fault:
                self.on_fault(FaultReason.MALFORMED_MESSAGE, detail, 0)
            return
        rid = message.decision.request_id
        if pending is not None and rid == self._pending_id and not pending.done():
            pending.set_result((message, arrived))
            return
        # An old or unknown answer while a request waits answers no request either: a
        # flood kept behind each of the bot's own answers is counted as well.
        if pending is not None and not pending.done() and self._unsolicited_over_limit():
            return
        if self.on_fault:
            if self.was_sent(rid):
                self.on_fault(
                    FaultReason.STALE_REQUEST_ID, f"answer to old request {rid} dropped", rid
                )
            else:
                self.on_fault(
                    FaultReason.UNKNOWN_REQUEST_ID,
                    f"answer names request {rid}, which was never sent",
                    rid,
                )

    def _unsolicited_over_limit(self) -> bool:
        """Count one more message answering no request; past :data:`UNSOLICITED_LIMIT`
        since the last request, close the stream and say True."""
        self._unsolicited += 1
        if self._unsolicited <= UNSOLICITED_LIMIT:
            return False
        self.close(
            FaultReason.DISCONNECT,
            f"it sent more than {UNSOLICITED_LIMIT} messages answering no request since its "
            "last request; the stream was closed",
        )
        return True

    def close(self, reason: FaultReason, detail: str) -> None:
        """The stream has ended; a pending request fails at once."""
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.close_detail = detail
        self.closed.set()
        self._answered.set()
        if self._pending is not None and not self._pending.done():
            self._pending.set_exception(ConnectionError(detail))

    def end(self) -> None:
        """The referee is done with this stream: the RPC ends with status OK."""
        self.finished.set()


@dataclass
class SeatSlot:
    """One seat of one match, waiting for the stream whose Hello carries its token."""

    match_id: str
    seat: int
    bot_name: str
    token: str
    attached: asyncio.Event = field(default_factory=asyncio.Event)
    stream: SeatStream | None = None
    handshake_error: str = ""
    #: ``Welcome.message`` for the stream (default: which seat of which match it is).
    welcome: str = ""
    #: Where the token is accepted: "" for the TCP port, else the path of the one Unix
    #: socket made for the bot process that was given the token.
    origin: str = ""
    #: The match's id as the bot is told it (``MatchStart.match_id``): random, so that it
    #: says nothing of the tournament's match numbers, deals or seatings ("" names the
    #: registry's own key, as for a pooled process's seats before a match).
    shown_id: str = ""


class SeatRegistry:
    """Tokens to seats. A token opens exactly one seat of one match, once at a time; a
    token opened for several seats (:meth:`open_seats`: one bot process with several
    streams) opens each of them once, in turn."""

    def __init__(self) -> None:
        self._slots: dict[str, list[SeatSlot]] = {}

    def open_seat(
        self, match_id: str, seat: int, bot_name: str, token: str | None = None
    ) -> SeatSlot:
        """Make a seat claimable by ``token`` (a fresh random one when not given)."""
        token = token or secrets.token_urlsafe(24)
        if token in self._slots:
            raise ValueError(
                f"token for seat {seat} of match {match_id} is already in use by another seat"
            )
        slot = SeatSlot(match_id, seat, bot_name, token)
        self._slots[token] = [slot]
        return slot

    def open_seats(self, match_id: str, seat: int, bot_name: str, count: int) -> list[SeatSlot]:
        """``count`` seats claimable by one fresh token, one stream each."""
        first = self.open_seat(match_id, seat, bot_name)
        slots = [first] + [
            SeatSlot(match_id, seat, bot_name, first.token) for _ in range(count - 1)
        ]
        self._slots[first.token] = list(slots)
        return slots

    def close_seat(self, slot: SeatSlot) -> None:
        """Forget a seat: its token opens nothing any more (nor this seat)."""
        slots = self._slots.get(slot.token)
        if slots is not None and any(s is slot for s in slots):
            slots[:] = [s for s in slots if s is not slot]
            if not slots:
                del self._slots[slot.token]

    def find(self, token: str) -> SeatSlot | None:
        """The seat ``token`` opens, if any (constant-time comparison per candidate): of
        several, the first one no stream has claimed yet."""
        slots = self._slots.get(token)
        if not slots or not secrets.compare_digest(slots[0].token, token):
            return None
        return next((s for s in slots if s.stream is None), slots[0])


class Refused(Exception):
    """A stream or call refused with a gRPC status and a message saying what to fix."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Lobby(Protocol):
    """Admits streams whose token opens no seat of the :class:`SeatRegistry`: a league
    seats such streams in matches of its own choosing, one match at a time each."""

    def admit(self, hello: bot_pb2.Hello) -> SeatSlot:
        """A slot for the stream, or :class:`Refused` (wrong token, too many streams)."""
        ...

    def joined(self, slot: SeatSlot) -> None:
        """The admitted stream completed its handshake (``slot.stream`` is set)."""
        ...

    def left(self, slot: SeatSlot) -> None:
        """The admitted stream ended (also after a handshake refused after admission)."""
        ...


class StreamObserver(Protocol):
    """Told when a bot stream completes its handshake and when it ends (metrics)."""

    def stream_attached(self) -> None: ...
    def stream_closed(self) -> None: ...


class RefereeServicer:
    """``sticheln.v1.Referee``: handshake, then message moving."""

    def __init__(
        self,
        registry: SeatRegistry,
        handshake_timeout: float = 10.0,
        observer: StreamObserver | None = None,
        lobby: Lobby | None = None,
        intake: Intake | None = None,
    ) -> None:
        self.registry = registry
        self.handshake_timeout = handshake_timeout
        self.observer = observer
        self.lobby = lobby
        #: The streams waiting for their handshake, held to the intake's bounds.
        self.handshakes = Handshakes(intake or Intake())

    async def Play(
        self,
        requests: object,
        context: grpc.aio.ServicerContext[Any, Any],
        origin: str = "",
    ) -> None:
        """One bot stream for one seat, opened on the TCP port (``origin`` "") or on the
        Unix socket ``origin`` of one started bot process."""
        refuse = functools.partial(_refuse, origin=origin)
        # Until its Hello has arrived a stream is no one's: counted by connection, and
        # refused at once beyond the intake's bounds, before gRPC holds a message for it.
        connection = origin or context.peer()
        crowded = self.handshakes.enter(connection, on_port=not origin)
        if crowded:
            await refuse(context, grpc.StatusCode.RESOURCE_EXHAUSTED, crowded)
            return
        deadline = self.handshakes.deadline(not origin, self.handshake_timeout)
        try:
            first = await asyncio.wait_for(context.read(), deadline)
        except TimeoutError:
            first = None
        finally:
            self.handshakes.leave(connection, on_port=not origin)
        if first is None:
            await refuse(
                context,
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"no Hello within {deadline:g} s of opening the stream",
            )
            return
        if first is _EOF:
            return
        if isinstance(first, Oversized):
            await refuse(context, grpc.StatusCode.RESOURCE_EXHAUSTED, first.detail)
            return
        if isinstance(first, Malformed) or first.WhichOneof("kind") != "hello":
            await refuse(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                "the first message on a stream must be a Hello",
            )
            return
        hello = first.hello
        slot = self.registry.find(hello.token)
        if slot is not None and slot.origin != origin:
            # A token is good only where it was given: another process's socket, or the
            # TCP port for a sandboxed bot's token, opens nothing.
            slot = None
        if slot is None and self.lobby is not None and not origin:
            try:
                slot = self.lobby.admit(hello)
            except Refused as exc:
                await refuse(context, exc.code, exc.message)
                return
            self.handshakes.vouch(connection)
            try:
                await self._serve(slot, hello, context, self.lobby)
            finally:
                self.lobby.left(slot)
            return
        if slot is None:
            what = "no token" if not hello.token else "the token is not valid"
            await refuse(
                context,
                grpc.StatusCode.UNAUTHENTICATED,
                f"{what}: send the token the referee gave this seat (STICHELN_TOKEN) in Hello.token",
            )
            return
        if not origin:
            self.handshakes.vouch(connection)
        await self._serve(slot, hello, context)

    async def _serve(
        self,
        slot: SeatSlot,
        hello: bot_pb2.Hello,
        context: grpc.aio.ServicerContext[Any, Any],
        lobby: Lobby | None = None,
    ) -> None:
        """The rest of the handshake for ``slot``, then message moving until the end;
        ``lobby`` is told when the stream has joined."""
        if hello.protocol_version != PROTOCOL_VERSION:
            if slot.stream is None:  # not a seat another stream already holds
                slot.handshake_error = f"protocol version {hello.protocol_version} is not supported"
            await _refuse(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"protocol version {hello.protocol_version} is not supported: this referee speaks "
                f"version {PROTOCOL_VERSION} (sticheln.v1); set Hello.protocol_version = {PROTOCOL_VERSION}",
                origin=slot.origin,
            )
            return
        if slot.stream is not None:
            await _refuse(
                context,
                grpc.StatusCode.ALREADY_EXISTS,
                f"seat {slot.seat} of match {slot.shown_id or slot.match_id} already has a stream; "
                "one stream per seat",
                origin=slot.origin,
            )
            return
        stream = SeatStream(context, hello)
        slot.stream = stream
        await context.write(
            bot_pb2.RefereeMessage(
                welcome=bot_pb2.Welcome(
                    protocol_version=PROTOCOL_VERSION,
                    referee_version=__version__,
                    message=slot.welcome
                    or f"seated as seat {slot.seat} of match {slot.shown_id or slot.match_id}",
                    capabilities=stream.capabilities,
                )
            )
        )
        slot.attached.set()
        if lobby is not None:
            lobby.joined(slot)
        if self.observer is not None:
            self.observer.stream_attached()
        reader = asyncio.ensure_future(self._read(stream, context))
        done = asyncio.ensure_future(stream.finished.wait())
        try:
            await asyncio.wait((reader, done), return_when=asyncio.FIRST_COMPLETED)
        finally:
            reader.cancel()
            done.cancel()
            stream.close(
                FaultReason.DISCONNECT, _CANCELLED if stream.ending else "the stream ended"
            )
            if self.observer is not None:
                self.observer.stream_closed()
        if stream.oversized is not None:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, stream.oversized.detail)

    async def _read(self, stream: SeatStream, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        clock = time.perf_counter
        try:
            while True:
                message = await context.read()
                if message is _EOF:
                    stream.ending = True
                    await asyncio.sleep(_EOF_SETTLE_S)  # cancelled here if gRPC ended the call
                    stream.close(FaultReason.DISCONNECT, "the bot closed its stream")
                    return
                if isinstance(message, Oversized):
                    stream.oversized = message
                    stream.close(FaultReason.DISCONNECT, message.detail)
                    return
                stream.deliver(message, clock())
                if stream.closed.is_set():
                    return  # closed for what it sent: nothing more of it is read
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            stream.close(FaultReason.DISCONNECT, f"the stream broke: {exc}")


async def _refuse(
    context: grpc.aio.ServicerContext[Any, Any],
    code: grpc.StatusCode,
    message: str,
    origin: str = "",
) -> None:
    """End a stream with a status the bot author can act on; a bot the referee started
    has the reason noted, for its seat's handshake fault (``origin``: the Unix socket of
    the one process the stream came from, or "" for the TCP port)."""
    blame(context.peer(), f"the stream was refused with {code.name}: {message}", origin)
    await context.abort(code, message)


@dataclass
class TlsConfig:
    """Certificate and key files for serving TLS."""

    cert_file: Path
    key_file: Path


_SERVER_OPTIONS = [
    ("grpc.so_reuseport", 0),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
]


def _play_handler(
    play: Callable[[object, grpc.aio.ServicerContext[Any, Any]], Any],
) -> grpc.GenericRpcHandler[Any, Any]:
    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "Play": grpc.stream_stream_rpc_method_handler(
                play,
                request_deserializer=_parse_bot_message,
                response_serializer=bot_pb2.RefereeMessage.SerializeToString,
            )
        },
    )


class BotSocket:
    """A Unix socket made for one started bot process, with its own small gRPC server
    (``Referee.Play`` only) sharing the referee's servicer and event loop."""

    def __init__(self, folder: Path, server: grpc.aio.Server) -> None:
        #: The private folder holding the socket (bound into the bot's sandbox).
        self.folder = folder
        self.path = folder / SOCKET_NAME
        self._server: grpc.aio.Server | None = server
        #: Why the referee closed it while its bot ran ("" while it has not).
        self.cut = ""

    @property
    def origin(self) -> str:
        """The :attr:`SeatSlot.origin` of the seats this socket opens."""
        return str(self.path)

    async def close(self) -> None:
        """Stop its server at once and remove the socket and its folder."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop(0)
            shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def closed(self) -> bool:
        """Its server has stopped."""
        return self._server is None


def unix_connections(paths: set[str], folder: str = "/proc/self/fd") -> dict[str, int]:
    """How many connections this process holds that were accepted on each listening Unix
    socket of ``paths`` (an accepted socket carries its listener's address). Counted on
    the process's own descriptors: a sandboxed bot's connection belongs to its network
    namespace, and the kernel's table of this one (``/proc/net/unix``) does not show it."""
    counts = dict.fromkeys(paths, 0)
    try:
        names = os.listdir(folder)
    except OSError:
        return counts
    for name in names:
        try:
            if not os.readlink(f"{folder}/{name}").startswith("socket:"):
                continue
            held = socket.socket(fileno=int(name))
        except (OSError, ValueError):
            continue
        try:
            listening = held.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
            unix = held.family == socket.AF_UNIX and not listening
            address = held.getsockname() if unix else ""
        except OSError:
            address = ""
        finally:
            held.detach()  # the descriptor stays its owner's
        if isinstance(address, str) and address in counts:
            counts[address] += 1
    return counts


#: The socket's name in its folder (the folder is bound at /run/sticheln in the sandbox).
SOCKET_NAME = "referee.sock"

_log = structlog.get_logger("referee.server")
#: The referee's open descriptors below which the bots' sockets are not counted: so few
#: cost nothing, and counting costs a system call or two per descriptor.
SCAN_ABOVE = 256


class RefereeServer:
    """The gRPC server with the referee service, health checking and reflection."""

    def __init__(
        self,
        registry: SeatRegistry | None = None,
        handshake_timeout: float = 10.0,
        observer: StreamObserver | None = None,
        lobby: Lobby | None = None,
        services: Sequence[tuple[str, grpc.GenericRpcHandler[Any, Any]]] = (),
        sandbox: Sandbox | None = None,
        intake: Intake | None = None,
    ) -> None:
        self.registry = registry or SeatRegistry()
        #: What the server takes in from clients it does not know yet (:class:`Intake`).
        self.intake = intake or Intake()
        #: How the bots started for this server's seats are confined (default: bubblewrap).
        self.sandbox = sandbox or Sandbox()
        #: The certificate served on the TCP port, if any (its path is given to bots that
        #: dial the port as ``STICHELN_TLS_CA``).
        self.tls: TlsConfig | None = None
        self._socket_root: Path | None = None
        #: The bots' sockets still open, by path, and the task that counts their
        #: connections (:meth:`guard_sockets`).
        self._bot_sockets: dict[str, BotSocket] = {}
        self._guard: asyncio.Task[None] | None = None
        self.servicer = RefereeServicer(
            self.registry, handshake_timeout, observer, lobby, self.intake
        )
        #: More services on the same port: (full service name, handler), e.g. the league's.
        self.services = tuple(services)
        self.health = (
            health.aio.HealthServicer() if hasattr(health, "aio") else health.HealthServicer()
        )
        self._server: grpc.aio.Server | None = None
        self.port = 0
        self.host = ""

    @property
    def address(self) -> str:
        """``host:port`` for bots to dial."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    async def start(
        self, host: str = "127.0.0.1", port: int = 0, tls: TlsConfig | None = None
    ) -> None:
        """Bind (port 0 picks a free port; see :attr:`port`) and start serving."""
        server = grpc.aio.server(options=[*_SERVER_OPTIONS, *self.intake.options()])
        handler = _play_handler(self.servicer.Play)
        server.add_generic_rpc_handlers((handler, *(h for _, h in self.services)))
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            (
                SERVICE_NAME,
                *(name for name, _ in self.services),
                health.SERVICE_NAME,
                reflection.SERVICE_NAME,
            ),
            server,
        )
        bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if tls is None:
            self.port = server.add_insecure_port(bind)
        else:
            creds = grpc.ssl_server_credentials(
                [(tls.key_file.read_bytes(), tls.cert_file.read_bytes())]
            )
            self.port = server.add_secure_port(bind, creds)
        self.host = host
        self.tls = tls
        self._server = server
        try:
            await _whole(server.start())
            await _set_health(self.health, health_pb2.HealthCheckResponse.SERVING, self._names())
        except BaseException:
            await self.stop(0)  # a server left running holds the process at exit
            raise

    async def open_bot_socket(self, owner: tuple[int, int] | None = None) -> BotSocket:
        """A fresh Unix socket for one bot process, in its own folder inside a private
        (0700) folder of the referee; ``owner`` (uid, gid) gets the folder and the socket
        (the user a sandboxed bot runs as). Give its :attr:`BotSocket.origin` to the
        process's seats, and close it when the process has ended."""
        if self._socket_root is None:
            self._socket_root = Path(
                tempfile.mkdtemp(prefix=SOCKET_ROOT_PREFIX, dir=socket_parent())
            )
            watchdog.remove_on_exit(self._socket_root)
        # A short name: a socket's path has at most 107 bytes, and TMPDIR may be long. A
        # random one: the bot sees its socket's folder (/proc/self/mountinfo), and a count
        # would tell it how many bot processes this referee has started.
        while True:
            folder = self._socket_root / secrets.token_hex(SOCKET_FOLDER_BYTES)
            try:
                folder.mkdir(mode=0o700)
                break
            except FileExistsError:
                continue
        path = folder / SOCKET_NAME
        # Only the bot's own process can reach its socket: it may hold as many calls as a
        # process has seats (and a few), any more are refused before they are read.
        server = grpc.aio.server(
            options=[*_SERVER_OPTIONS, *self.intake.options()],
            maximum_concurrent_rpcs=self.intake.socket_calls,
        )
        origin = str(path)

        async def play(requests: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
            await self.servicer.Play(requests, context, origin)

        server.add_generic_rpc_handlers((_play_handler(play),))
        try:
            try:
                bound = server.add_insecure_port(f"unix:{path}")
            except RuntimeError:  # gRPC's "Failed to bind", which says no more
                bound = 0
            if not bound:
                raise OSError(f"cannot listen on the bot's socket {path}")
            await _whole(server.start())
            os.chmod(path, 0o600)
            if owner is not None:
                for item in (folder, path):
                    os.chown(item, *owner)
        except BaseException:
            try:
                await _whole(server.stop(0))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        made = BotSocket(folder, server)
        self._bot_sockets[made.origin] = made
        if self._guard is None or self._guard.done():
            self._guard = asyncio.get_running_loop().create_task(self.guard_sockets())
        return made

    async def guard_sockets(self) -> None:
        """Count the connections of the bots' open sockets every
        :attr:`Intake.socket_check_s` and close a socket that holds more than
        :attr:`Intake.socket_connections` (its bot's streams end with it): a bot must not
        take the referee's descriptors, which every other seat's start needs. Ends when no
        bot socket is left."""
        intake = self.intake
        while self._bot_sockets:
            await asyncio.sleep(intake.socket_check_s)
            for path in [p for p, s in self._bot_sockets.items() if s.closed]:
                del self._bot_sockets[path]
            if descriptors.open_count() < SCAN_ABOVE:
                continue  # too few descriptors for any socket to hold too many
            counts = unix_connections(set(self._bot_sockets))
            for path, count in counts.items():
                held = self._bot_sockets.get(path)
                if held is None or count <= intake.socket_connections:
                    continue
                held.cut = (
                    f"its bot opened {count} connections to its socket (at most "
                    f"{intake.socket_connections}); the socket was closed"
                )
                _log.warning("bot_socket_closed", socket=path, connections=count)
                del self._bot_sockets[path]
                await held.close()

    async def set_serving(self, service: str, serving: bool) -> None:
        """Report ``service`` (``""``: the whole server) as SERVING or NOT_SERVING."""
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        result = self.health.set(service, status)
        if asyncio.iscoroutine(result):
            await result

    def _names(self) -> tuple[str, ...]:
        return (SERVICE_NAME, *(name for name, _ in self.services))

    async def stop(self, grace: float = 2.0) -> None:
        """Stop serving; streams still open get ``grace`` seconds to finish. Cancelled
        meanwhile (a second Ctrl-C), it still stops the server and removes the sockets."""
        server, self._server = self._server, None
        try:
            if server is not None:
                try:
                    await _set_health(
                        self.health, health_pb2.HealthCheckResponse.NOT_SERVING, self._names()
                    )
                finally:
                    await _whole(server.stop(grace))
        finally:
            if self._guard is not None:
                self._guard.cancel()
                self._guard = None
            self._bot_sockets.clear()
            if self._socket_root is not None:
                shutil.rmtree(self._socket_root, ignore_errors=True)
                watchdog.forget(self._socket_root)
                self._socket_root = None


T = TypeVar("T")


async def _whole(work: Coroutine[Any, Any, T]) -> T:
    """Await ``work`` to its end even when cancelled meanwhile (once or again: SIGTERM,
    then Ctrl-C), then raise the cancellation. For gRPC's server start and stop: a start
    cut half-way leaves a server whose stop raises InvalidStateError, so that nobody can
    stop it, and a server left running holds the process at exit."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return task.result()


async def _set_health(servicer: object, status: int, names: Sequence[str]) -> None:
    for name in ("", *names):
        result = servicer.set(name, status)  # type: ignore[attr-defined]
        if asyncio.iscoroutine(result):
            await result
