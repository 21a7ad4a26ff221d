"""A raw HTTP/2 client (the ``h2`` library) that opens gRPC streams and sends each a
length prefix and part of its message, then stops: the cheapest way for a client with
no token to make a gRPC server hold memory for it.

Not a test module: tests/test_intake.py and benchmarks/intake.py use it. It talks only
to a Unix socket or a loopback address, and every wait has a deadline.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events

#: The referee's bot method.
PLAY = "/sticheln.v1.Referee/Play"


@dataclass
class Tally:
    """What the server did with the streams of one :class:`HalfSender`."""

    #: Streams whose headers were sent.
    opened: int = 0
    #: Bytes of message (prefix included) the server's flow control let through.
    sent: int = 0
    #: Streams the server ended (RST_STREAM, or trailers with a status), by reason.
    ended: dict[str, int] = field(default_factory=dict)
    #: The connection was closed by the server (GOAWAY or end of file).
    closed: str = ""

    def end(self, why: str) -> None:
        self.ended[why] = self.ended.get(why, 0) + 1


class HalfSender:
    """One HTTP/2 connection to ``address`` (``unix:PATH`` or ``HOST:PORT`` on loopback)
    that opens ``streams`` gRPC calls of ``path``, each declaring a message of ``length``
    bytes and sending all but its last byte as far as flow control allows; then holds
    them open until :meth:`close`. Runs on a thread of its own.

    ``length`` None opens empty streams (headers only, not a byte of message); ``source``
    is the loopback address to connect from (``127.0.0.2``...: another client for the
    server); ``reopen`` opens a new stream whenever the server ends one."""

    def __init__(
        self,
        address: str,
        streams: int,
        length: int | None,
        path: str = PLAY,
        source: str = "",
        reopen: bool = False,
    ) -> None:
        if address.startswith("unix:"):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(address.removeprefix("unix:"))
            authority = "localhost"
        else:
            host, _, port = address.rpartition(":")
            assert host in ("127.0.0.1", "[::1]", "localhost"), "loopback only"
            assert not source or source.startswith("127."), "loopback only"
            self.sock = socket.create_connection(
                (host.strip("[]"), int(port)),
                timeout=10,
                source_address=(source, 0) if source else None,
            )
            authority = address
        self._reopen = reopen
        #: Streams ended by the server, opened again at the next beat (every 0.2 s).
        self._to_reopen = 0
        # Blocking sends (a full socket buffer waits for the server to read); reads are
        # polled with select, so that the sender never stops on a slow server.
        self.sock.settimeout(30)
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        self.tally = Tally()
        self._streams = streams
        self._length = length
        self._headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
        #: Per open stream: the bytes of its message still to send (all but the last).
        self._left: dict[int, bytes] = {}
        self._stop = threading.Event()
        #: Set when every stream has sent what flow control allowed and no more moves.
        self.settled = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def _open(self, streams: int | None = None) -> None:
        length = self._length
        message = b"" if length is None else bytes([0]) + length.to_bytes(4, "big") + bytes(length)
        for _ in range(self._streams if streams is None else streams):
            stream_id = self.conn.get_next_available_stream_id()
            self.conn.send_headers(stream_id, self._headers)
            self._left[stream_id] = message[:-1]
            self.tally.opened += 1
        self._flush()

    def _ended(self, stream_id: int) -> None:
        if self._left.pop(stream_id, None) is not None and self._reopen:
            self._to_reopen += 1

    def _push(self) -> bool:
        """Send what flow control allows; whether anything was sent."""
        moved = False
        for stream_id, left in list(self._left.items()):
            if not left:
                continue
            try:
                room = min(
                    self.conn.local_flow_control_window(stream_id),
                    self.conn.max_outbound_frame_size,
                    len(left),
                )
            except Exception:  # the stream was closed by the server meanwhile
                self._left.pop(stream_id, None)
                continue
            if room <= 0:
                continue
            self.conn.send_data(stream_id, left[:room])
            self._left[stream_id] = left[room:]
            self.tally.sent += room
            moved = True
        self._flush()
        return moved

    def _run(self) -> None:
        try:
            self.conn.initiate_connection()
            self._flush()
            self._open()
            quiet_since = time.monotonic()
            while not self._stop.is_set():
                moved = self._push()
                readable, _, _ = select.select([self.sock], [], [], 0.2)
                data = self.sock.recv(1 << 16) if readable else None
                if data == b"":
                    self.tally.closed = self.tally.closed or "end of file"
                    break
                if data:
                    for event in self.conn.receive_data(data):
                        self._on(event)
                    self._flush()
                if self._to_reopen and not readable:
                    self._open(self._to_reopen)
                    self._to_reopen = 0
                if moved or data:
                    quiet_since = time.monotonic()
                elif time.monotonic() - quiet_since > 1.0:
                    self.settled.set()
        except OSError as exc:
            self.tally.closed = self.tally.closed or f"{type(exc).__name__}"
        finally:
            self.settled.set()

    def _on(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.StreamReset):
            self.tally.end(f"reset:{event.error_code.name}")
            self._ended(event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived | h2.events.ResponseReceived):
            headers = dict(event.headers)
            status = headers.get("grpc-status")
            if status is not None:
                self.tally.end(f"status:{status}")
                self._ended(event.stream_id)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.tally.closed = f"goaway:{event.error_code}"

    @property
    def open_streams(self) -> int:
        """Streams the server has not ended."""
        return len(self._left)

    def close(self) -> None:
        """Stop and close the connection."""
        self._stop.set()
        self._thread.join(10)
        self.sock.close()


def rss_kib(pid: int) -> int:
    """The resident set size of process ``pid`` (``VmRSS`` in /proc/PID/status), in KiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")
