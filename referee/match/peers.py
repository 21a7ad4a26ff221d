"""Which started bot opened a stream: a refused stream's reason, told to its process.

A stream refused before its handshake completes names no seat (a first message that is
not a ``Hello`` carries no token), so the seat's record could only say that no valid
handshake came in time. For a bot the referee started, the stream's TCP peer tells which
process opened it: on Linux, the peer's port is a socket in ``/proc/net/tcp`` whose
inode is open in exactly one process. The refusal is noted on that :class:`BotProcess`
(``refusal``), and the seat's handshake fault then says what was refused and why.
A sandboxed bot dials a Unix socket made for its process alone, and the socket names
the process. Elsewhere (another system, a bot that is not the referee's child) nothing
is noted and the fault keeps its general wording.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from referee.jail.process import BotProcess, live_bots

_PROC = Path("/proc")


def peer_port(peer: str) -> int | None:
    """The port of a gRPC peer string (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000``)."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    _, _, port = rest.rpartition(":")
    return int(port) if port.isdigit() else None


def _socket_inodes(port: int) -> set[str]:
    """The inodes of this network namespace's TCP sockets bound to local ``port``."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and int(fields[1].rpartition(":")[2], 16) == port:
                inodes.add(fields[9])
    inodes.discard("0")
    return inodes


def _children() -> dict[int, list[int]]:
    """Every process's children, from ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields follow the last ')'.
        parent = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    return children


def _holds(pid: int, targets: set[str]) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in targets:
            return True
    return False


def owner(peer: str, bots: Iterable[BotProcess]) -> BotProcess | None:
    """The bot of ``bots`` whose process (or a process it started) holds the socket of
    ``peer``, when that can be told."""
    port = peer_port(peer)
    candidates = [b for b in bots if b.returncode is None]
    if port is None or not candidates or not _PROC.joinpath("net", "tcp").exists():
        return None
    inodes = _socket_inodes(port)
    if not inodes:
        return None
    children = _children()
    for bot in candidates:
        todo = [bot.proc.pid]
        while todo:
            pid = todo.pop()
            if _holds(pid, inodes):
                return bot
            todo.extend(children.get(pid, ()))
    return None


def blame(peer: str, reason: str, origin: str = "") -> None:
    """Note ``reason`` (why a stream was refused) on the started bot that opened it: the
    one whose own Unix socket ``origin`` is, or else the one holding the TCP ``peer``."""
    bots = live_bots()
    if not bots:
        return
    if origin:
        for started in bots:
            if started.origin == origin:
                started.refusal = reason
        return
    try:
        bot = owner(peer, bots)
    except (OSError, ValueError, IndexError):
        return  # /proc changed under us: the fault keeps its general wording
    if bot is not None:
        bot.refusal = reason
