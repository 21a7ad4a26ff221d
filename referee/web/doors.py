"""How many web connections the referee takes, from one client and in all.

An idle viewer costs nothing to send and a descriptor to keep; a thousand of them once
took every descriptor a tournament had, and its bots could not start. So the web server
counts its connections as they are accepted, before a byte is read: at most
:attr:`DoorLimits.per_client` from one client address (an IPv6 client: its /64), at most
a total that leaves most of the referee's descriptors to its matches, and none while fewer
than :data:`referee.runtime.descriptors.RESERVE` are free. A connection over a bound is
answered ``503 Service Unavailable`` with a one-line reason and closed; it never reaches
the application. A connection that sends no request is closed by aiohttp's keep-alive
timeout, and a live stream ends after :attr:`referee.web.server.WebOptions.stream_s` (the
browser reconnects by itself, where the stream left off).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from referee.runtime import descriptors

#: How long a refused connection is kept, at most, for its request to come in: closed with
#: its request unread, the connection would be reset, and the client might lose the answer.
_LINGER_S = 0.5
#: Refused connections kept at once, at most (each holds a descriptor); beyond, they are
#: closed at once.
_LINGERING = 32
#: How often the free descriptors are counted again while connections arrive.
_COUNT_EVERY_S = 0.05


@dataclass(frozen=True)
class DoorLimits:
    """The web server's connection bounds."""

    #: Connections from one client address at once.
    per_client: int = 32
    #: Connections at once in all, at most (see :meth:`total_now`).
    total: int = 512

    def total_now(self) -> int:
        """The total for this process now: :attr:`total`, or less where the descriptor
        limit is low, so that at least half of the descriptors not in use now stay the
        matches'."""
        spare = descriptors.limit() - descriptors.open_count() - descriptors.RESERVE
        return min(self.total, max(8, spare // 2))


def client_of(host: str) -> str:
    """The client an address belongs to: itself for IPv4, its /64 for IPv6."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
    return str(address)


class Doorman:
    """Counts the open connections by client and refuses those over the bounds."""

    def __init__(self, limits: DoorLimits) -> None:
        self.limits = limits
        self.total = limits.total_now()
        self._by_client: dict[str, int] = {}
        self.open = 0
        #: Connections refused so far.
        self.refused = 0
        #: Refused connections waiting for their request before they are closed.
        self.lingering = 0
        self._counted_at = -1e9
        self._spare = 0

    def enter(self, client: str) -> str:
        """Count a new connection of ``client``: "" when it is taken, else why not."""
        mine = self._by_client.get(client, 0)
        if mine >= self.limits.per_client:
            return (
                f"{mine} connections from your address are open, the most this server "
                "takes from one client; close one or try again later"
            )
        if self.open >= self.total:
            return (
                f"this server has {self.open} viewers, the most it takes at once; try again later"
            )
        if self._free() < descriptors.RESERVE:
            return "this server keeps its last file descriptors for its matches; try again later"
        self._by_client[client] = mine + 1
        self.open += 1
        return ""

    def _free(self) -> int:
        # Counting the descriptors lists them: at most once per beat, however many knock.
        now = asyncio.get_running_loop().time()
        if now - self._counted_at > _COUNT_EVERY_S:
            self._counted_at, self._spare = now, descriptors.free()
        return self._spare

    def leave(self, client: str) -> None:
        """A connection counted by :meth:`enter` has closed."""
        left = self._by_client.get(client, 0) - 1
        if left > 0:
            self._by_client[client] = left
        else:
            self._by_client.pop(client, None)
        self.open -= 1

    def protocol(self, inner: Callable[[], asyncio.BaseProtocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory that lets a connection reach ``inner``'s protocol (aiohttp's
        request handler) only when :meth:`enter` takes it."""
        return lambda: _Door(self, inner)


def refusal(why: str) -> bytes:
    """A ``503`` answer with ``why`` as its one-line body."""
    body = (why + "\n").encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Retry-After: 10\r\n"
        "Cache-Control: no-store\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


class _Door(asyncio.Protocol):
    """One accepted connection: handed to the application's protocol, or refused."""

    def __init__(self, doorman: Doorman, inner: Callable[[], asyncio.BaseProtocol]) -> None:
        self.doorman = doorman
        self.make_inner = inner
        self.inner: asyncio.Protocol | None = None
        self.client = ""
        self.transport: asyncio.Transport | None = None
        #: Refused and still open.
        self.refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio's classes, but have their methods.
        self.transport = transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.client = client_of(str(peer[0])) if isinstance(peer, tuple) and peer else ""
        why = self.doorman.enter(self.client)
        if why:
            doorman = self.doorman
            doorman.refused += 1
            transport.write(refusal(why))
            if doorman.lingering >= _LINGERING:
                transport.close()
                return
            # Closed once its request is read (or after a moment), so that it ends with
            # the answer, not a reset.
            doorman.lingering += 1
            self.refused = True
            asyncio.get_running_loop().call_later(_LINGER_S, transport.close)
            return
        inner = cast(asyncio.Protocol, self.make_inner())
        self.inner = inner
        inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)
        elif self.transport is not None:
            self.transport.close()  # a refused one's request: read, so the close is clean

    def eof_received(self) -> bool | None:
        if self.inner is not None:
            return self.inner.eof_received()
        if self.transport is not None:
            self.transport.close()
        return None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.refused:
            self.refused = False
            self.doorman.lingering -= 1
        if self.inner is not None:
            self.doorman.leave(self.client)
            self.inner.connection_lost(exc)
            self.inner = None
