"""The start check before play: every bot the referee starts is started once and must greet.

A bot whose command does not exist, or that crashes as it starts, would otherwise forfeit
every match it is seated in, one handshake timeout at a time, while the rest of a
tournament plays on. So before the first match, ``referee tournament``, ``match``,
``compare`` and ``check-bot`` start each distinct bot once, exactly as a match starts it
(:func:`~referee.match.pool.start_bot`: the same sandbox, limits and environment), all at
once, and wait for its ``Hello`` within the startup clock. A bot that greets is told so in
its ``Welcome``, its stream ends with status OK, and it is stopped once it has had
:data:`~referee.match.pool.EXIT_GRACE_S` to exit by itself. One that exits or does not
greet is a :class:`StartFailure`: which bot, what happened, and how its own output
(stderr and stdout share its log) ends, in one line.

Its log is ``<log dir>/preflight/<bot>.log``, appended to by every check.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.jail.bots import BotSpec, log_name
from referee.jail.process import BotProcess
from referee.jail.sandbox import Sandbox, SandboxUnavailable
from referee.match.pool import EXIT_GRACE_S, RefereeFault, await_handshake, start_bot
from referee.match.server import RefereeServer, SeatSlot, TlsConfig
from referee.runtime.private import private_dir

#: ``Welcome.message`` of the check's stream.
WELCOME = (
    "start check: the referee makes sure the bot starts and greets before the first "
    "match; this stream ends now with status OK, before any match"
)
#: How many of the last lines of a failed bot's output its line quotes.
TAIL_LINES = 3
#: The most characters of those lines quoted (the end is kept).
TAIL_CHARS = 300


@dataclass(frozen=True)
class StartFailure:
    """A bot that did not start: its name, what happened, and how its output ends."""

    bot: str
    what: str
    output: str
    log_path: Path

    def line(self) -> str:
        """The failure in one line."""
        text = f"bot {self.bot!r} did not start: {self.what}"
        text += f"; its output ends: {self.output}" if self.output else "; it printed nothing"
        return f"{text} (log: {self.log_path})"


def distinct(bots: Sequence[BotSpec]) -> list[BotSpec]:
    """The bots the referee starts, each once (a bot seated twice is one bot)."""
    out: list[BotSpec] = []
    for bot in bots:
        if not bot.external and bot not in out:
            out.append(bot)
    return out


async def check_starts(
    server: RefereeServer, bots: Sequence[BotSpec], startup_s: float, log_dir: Path
) -> list[StartFailure]:
    """Start each distinct started bot of ``bots`` once on ``server`` and wait, all at
    once, for its handshake; the bots that did not complete it, in the order given."""
    folder = private_dir(log_dir / "preflight")
    # Every check ends (and stops its bot) before this returns, even when cancelled:
    # without return_exceptions, gather would return at the first cancelled check.
    results = await asyncio.gather(
        *(_check_one(server, bot, startup_s, folder) for bot in distinct(bots)),
        return_exceptions=True,
    )
    failures = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        if result is not None:
            failures.append(result)
    return failures


async def check_starts_on_own_server(
    bots: Sequence[BotSpec],
    sandbox: Sandbox,
    startup_s: float,
    log_dir: Path,
    host: str = "127.0.0.1",
    tls: TlsConfig | None = None,
) -> list[StartFailure]:
    """:func:`check_starts` on a server of its own (any free port on ``host``), stopped
    before it returns."""
    if not distinct(bots):
        return []
    server = RefereeServer(sandbox=sandbox)
    await server.start(host, 0, tls)
    try:
        return await check_starts(server, bots, startup_s, log_dir)
    finally:
        await server.stop(0)


async def _check_one(
    server: RefereeServer, bot: BotSpec, startup_s: float, folder: Path
) -> StartFailure | None:
    log_path = folder / f"{log_name(bot.name)}.log"
    # Every check appends to the log: quote only what this one wrote.
    offset = log_path.stat().st_size if log_path.exists() else 0
    (slot,) = server.registry.open_seats("preflight", 0, bot.name, 1)
    slot.welcome = WELCOME
    process: BotProcess | None = None
    what = ""
    try:
        try:
            process = await start_bot(server, bot, [slot], log_path)
        except (OSError, SandboxUnavailable, RefereeFault) as exc:
            what = f"cannot start it: {exc}"
        else:
            why = await await_handshake(slot, process, startup_s)
            what = _what(why, process, startup_s) if why else ""
    finally:
        await _end(server, slot, process)
    if not what:
        return None
    # Read once the process has ended: everything it wrote is in the log.
    return StartFailure(bot.name, what, output_tail(log_path, offset), log_path)


def _what(why: str, process: BotProcess, startup_s: float) -> str:
    """What happened: the refusal of its stream if there was one, else how it ended."""
    if not why.startswith("no valid handshake"):
        return why  # its stream was refused: the reason (and its exit, if it exited)
    if process.returncode is not None:
        end = process.describe_exit()  # "exited with status N" or "killed by SIGNAME"
        return f"it {'was ' if end.startswith('killed') else ''}{end} before its handshake"
    return f"no handshake within {startup_s:g} s (it was still running)"


async def _end(server: RefereeServer, slot: SeatSlot, process: BotProcess | None) -> None:
    """End the check's stream with OK, give the process its grace to exit, stop it."""
    if slot.stream is not None:
        slot.stream.end()
    server.registry.close_seat(slot)
    if process is None:
        return
    if process.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.proc.wait()), EXIT_GRACE_S)
    await process.stop()


#: A line that likely names the cause (an error message), in any language's words: Go
#: starts a crash with ``panic: ...``, C++ with ``terminate called ...``.
_CAUSE = re.compile(
    r"error|exception|fatal|failed|cannot|can't|not found|no such|^panic:|terminate called",
    re.I,
)


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character that does not print (but those in ``keep``) written
    as its escape, ``\\x1b`` or ``\\u202e``."""
    return "".join(
        c if c.isprintable() or c in keep else repr(c)[1:-1] if ord(c) < 256 else f"\\u{ord(c):04x}"
        for c in text
    )


def output_tail(log_path: Path, offset: int = 0) -> str:
    """How the output written to ``log_path`` after ``offset`` ends: its last
    :data:`TAIL_LINES` non-blank lines, stripped and joined with `` / ``, after the last
    line before them that reads like an error when they hold none (Node.js, say, ends a
    crash with its version); at most :data:`TAIL_CHARS` characters."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(offset, f.seek(0, 2) - 64 * 1024))
            data = f.read()
    except OSError:
        return ""
    # What the bot printed reaches the organiser's terminal: its control characters
    # (escape sequences that move the cursor, rewrite lines, set the clipboard) as text.
    # A tab (Go indents a stack frame with one) is a space here, not the text "\t".
    text = printable(data.decode("utf-8", "replace"), keep="\n\t")
    lines = [x.replace("\t", " ").strip() for x in text.splitlines() if x.strip()]
    tail = " / ".join(lines[-TAIL_LINES:])
    cause = ""
    if not any(_CAUSE.search(x) for x in lines[-TAIL_LINES:]):
        cause = next((x for x in reversed(lines[:-TAIL_LINES]) if _CAUSE.search(x)), "")
    if cause:
        cause = cause[: TAIL_CHARS // 2] + " … "
    room = TAIL_CHARS - len(cause)
    return cause + (tail if len(tail) <= room else "…" + tail[-(room - 1) :])
