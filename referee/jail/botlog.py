"""A started bot's stdout and stderr: a pipe the referee reads into the bot's log file,
up to a cap per match.

A bot never holds the log file itself: it could write without end (hundreds of MiB in
seconds), or reserve the disk with ``fallocate``, which a pipe refuses. The referee reads
the pipe from its event loop without ever blocking on it, writes up to the cap (a bot's
``[limits] log_mb`` for each match the process plays) and then one line saying the rest was left out. Past the cap it still
empties the pipe, so that a bot writing a little too much keeps running, but at most
:data:`DRAIN_BYTES` every :data:`DRAIN_INTERVAL_S`: a bot flooding its output slows itself,
not the referee. Once the bot has ended, :meth:`BotLog.finish` reads what is left in the
pipe, so the end of the log (what a fault message points to) is never lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from pathlib import Path

#: One read from the pipe.
READ_BYTES = 1 << 20
#: Past the cap, at most this much is read (and dropped) ...
DRAIN_BYTES = 1 << 16
#: ... every this many seconds.
DRAIN_INTERVAL_S = 0.01
#: Linux's ``F_SETPIPE_SZ``: fewer wake-ups for a bot that writes much.
_F_SETPIPE_SZ = 1031


def truncation_line(cap_bytes: int) -> bytes:
    """The line that ends a log cut at ``cap_bytes``."""
    return (
        f"\n[referee] log truncated: the bot wrote more than its {cap_bytes >> 20} MiB "
        "(limits log_mb); the rest of its output was dropped\n"
    ).encode()


class BotLog:
    """The read end of one bot's output pipe, copied into its log file up to a cap."""

    def __init__(self, path: Path, cap_bytes: int) -> None:
        self.path = path
        #: How much may be written to the log (grows with every match of a pooled bot).
        self.cap_bytes = cap_bytes
        self._per_match = cap_bytes
        self._matches = 0
        #: Bytes written to the log (the truncation line left out).
        self.written = 0
        #: Bytes the bot wrote that were dropped past the cap.
        self.dropped = 0
        #: The truncation line has been written.
        self.truncated = False
        read_end, self.write_end = os.pipe2(os.O_CLOEXEC)
        with contextlib.suppress(OSError):
            fcntl.fcntl(read_end, _F_SETPIPE_SZ, READ_BYTES)
        os.set_blocking(read_end, False)
        self._read_end: int | None = read_end
        self._file = open(path, "ab")  # noqa: SIM115 - open for the bot's lifetime
        self._loop: asyncio.AbstractEventLoop | None = None
        self._eof = asyncio.Event()
        self._later: asyncio.TimerHandle | None = None

    def another_match(self) -> None:
        """The process is lent to a match (a pooled bot plays many): the first is covered
        by the cap it started with, each later one adds as much again, and output dropped
        before is not made up for."""
        self._matches += 1
        if self._matches > 1:
            self.cap_bytes = self.written + self._per_match
            self.truncated = False

    def start(self) -> None:
        """Start reading (once the bot holds the write end, which the referee closes)."""
        os.close(self.write_end)
        self._loop = asyncio.get_running_loop()
        self._watch()

    def _watch(self) -> None:
        self._later = None
        if self._loop is not None and self._read_end is not None:
            self._loop.add_reader(self._read_end, self._readable)

    def _readable(self) -> None:
        full = self.written >= self.cap_bytes
        self._read(DRAIN_BYTES if full else READ_BYTES)
        if full and self._read_end is not None and self._loop is not None:
            # Past the cap: pause, so that a flood costs the referee next to nothing.
            self._loop.remove_reader(self._read_end)
            self._later = self._loop.call_later(DRAIN_INTERVAL_S, self._watch)

    def _read(self, size: int) -> bool:
        """Read once; False at end of file or when nothing is there."""
        if self._read_end is None:
            return False
        try:
            data = os.read(self._read_end, size)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self._close_pipe()
            return False
        kept = data[: max(self.cap_bytes - self.written, 0)]
        self._file.write(kept)
        self.written += len(kept)
        if len(kept) < len(data) and not self.truncated:
            self._file.write(truncation_line(self._per_match))
            self.truncated = True
        self._file.flush()
        self.dropped += len(data) - len(kept)
        return True

    def _close_pipe(self) -> None:
        if self._read_end is None:
            return
        if self._loop is not None:
            self._loop.remove_reader(self._read_end)
        if self._later is not None:
            self._later.cancel()
            self._later = None
        os.close(self._read_end)
        self._read_end = None
        self._eof.set()

    async def finish(self, timeout_s: float = 2.0) -> None:
        """Once the bot has ended: read what it left in the pipe and close the log. A
        process of the bot still holding the pipe gets ``timeout_s`` to let go."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._eof.wait(), timeout_s)
        if self._read_end is not None:
            # Still open: take what is buffered now, within the cap, and stop there.
            while self.written < self.cap_bytes and self._read(READ_BYTES):
                pass
            self._close_pipe()
        self._file.close()

    def abandon(self) -> None:
        """Close both ends without reading (the bot could not be started)."""
        with contextlib.suppress(OSError):
            os.close(self.write_end)
        self._close_pipe()
        self._file.close()
