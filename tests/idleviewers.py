"""Idle web viewers: many connections that ask for a live stream (or nothing at all), then
never read, and come back whenever the server closes them.

Not a test module: tests/test_viewers.py and benchmarks/viewers.py use it. It talks only
to a loopback address, from loopback source addresses (``127.0.0.2`` ...: one client per
address for the server), and every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Tally:
    """What the server did with the viewers' connections."""

    #: Connections accepted and open now (the server has not closed them).
    open: int = 0
    #: Connections made, in all.
    made: int = 0
    #: Connections that could not be made (refused, reset, timed out), in all.
    failed: int = 0
    #: Answers read on closed connections, by status line ("HTTP/1.1 503 ...").
    answers: dict[str, int] = field(default_factory=dict)
    #: A 503's body, the last one read.
    refusal: str = ""


class IdleViewers:
    """``count`` connections to ``host:port``, spread over ``sources`` (loopback source
    addresses), each sending one GET of ``path`` ("" sends nothing) and then idling;
    reopened ``reopen_s`` after the server closes one. Runs on a thread of its own."""

    def __init__(
        self,
        host: str,
        port: int,
        count: int,
        sources: list[str],
        path: str = "/api/updates",
        reopen_s: float = 1.0,
    ) -> None:
        assert host == "127.0.0.1" and all(s.startswith("127.") for s in sources)
        self.address = (host, port)
        self.count = count
        self.sources = sources
        self.path = path
        self.reopen_s = reopen_s
        self.tally = Tally()
        self._stop = threading.Event()
        self._sel = selectors.DefaultSelector()
        #: Per connection: its source, and the bytes read from it so far.
        self._conns: dict[socket.socket, tuple[str, bytearray]] = {}
        self._due: list[tuple[float, str]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _open(self, source: str) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((source, 0))
            sock.settimeout(5)
            sock.connect(self.address)
            if self.path:
                sock.sendall(
                    f"GET {self.path} HTTP/1.1\r\nHost: viewer\r\n"
                    "Accept: text/event-stream\r\n\r\n".encode()
                )
            sock.setblocking(False)
        except OSError:
            sock.close()
            self.tally.failed += 1
            self._due.append((time.monotonic() + self.reopen_s, source))
            return
        self.tally.made += 1
        self.tally.open += 1
        self._conns[sock] = (source, bytearray())
        self._sel.register(sock, selectors.EVENT_READ)

    def _closed(self, sock: socket.socket, reset: bool = False) -> None:
        source, got = self._conns.pop(sock)
        self._sel.unregister(sock)
        sock.close()
        self.tally.open -= 1
        head, _, body = bytes(got).partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0].decode(errors="replace") if head else "nothing"
        if reset:
            status += " (reset)"
        self.tally.answers[status] = self.tally.answers.get(status, 0) + 1
        if " 503 " in status:
            self.tally.refusal = body.decode(errors="replace")
        self._due.append((time.monotonic() + self.reopen_s, source))

    def _run(self) -> None:
        for i in range(self.count):
            if self._stop.is_set():
                return
            self._open(self.sources[i % len(self.sources)])
        while not self._stop.is_set():
            now = time.monotonic()
            due = [d for d in self._due if d[0] <= now]
            self._due = [d for d in self._due if d[0] > now]
            for _, source in due:
                self._open(source)
            for key, _ in self._sel.select(0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    self._closed(sock, reset=True)
                    continue
                if not data:
                    self._closed(sock)
                else:
                    got = self._conns[sock][1]
                    # An idle viewer keeps what it reads only to tell a refusal from a
                    # stream (it never reads the stream's events).
                    if len(got) < 4096:
                        got += data

    def close(self) -> None:
        """Stop and close every connection."""
        self._stop.set()
        self._thread.join(10)
        for sock in list(self._conns):
            with contextlib.suppress(OSError):
                sock.close()
        self._sel.close()


def ask(host: str, port: int, source: str, path: str = "/") -> tuple[str, str]:
    """One new viewer from ``source``: the status line and the body it got."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((source, 0))
        sock.settimeout(10)
        sock.connect((host, port))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: viewer\r\nConnection: close\r\n\r\n".encode())
        got = bytearray()
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                got += chunk
    head, _, body = bytes(got).partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0].decode(errors="replace"), body.decode(errors="replace")
