"""Two bots of one author at one table: the pairs a tournament seats together that share an
owner or their code.

Two seats of one table can pass each other information through what the referee does
between their turns: a seat that delays its answers moves the time at which the next seat
is asked (docs/security.md measures about 177 bit/s under bubblewrap). Only an author who
controls both seats can use it, so a league never seats two bots of one owner together; a
tournament file is written by a person, who may. ``referee tournament`` says so, one line a
pair, before it starts.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from referee.jail.bots import BotSpec

#: What the warning says the pair can do, and how fast (docs/security.md, the turn order).
CHANNEL = (
    "two seats of one author at a table can pass each other information through the "
    "timing of their turns (about 177 bit/s; docs/security.md)"
)


def code_hash(bot: BotSpec, folders: dict[Path, bytes] | None = None) -> str:
    """SHA-256 of what a started bot runs: its command, and the name, kind and contents of
    every file in its folder (links are hashed as their targets' names, never followed).
    An external bot, which dials in, has no code here: "". ``folders`` keeps each folder's
    digest, for bots that share a folder."""
    if bot.external:
        return ""
    folder = Path(bot.workdir)
    known = {} if folders is None else folders
    if folder not in known:
        known[folder] = _folder_digest(folder)
    digest = hashlib.sha256()
    digest.update("\0".join(bot.command).encode("utf-8", "surrogatepass") + b"\0\0")
    digest.update(known[folder])
    return digest.hexdigest()


def _folder_digest(folder: Path) -> bytes:
    digest = hashlib.sha256()
    for path in sorted(_files(folder)):
        name = os.fsencode(path.relative_to(folder))
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"L" + name + b"\0" + os.fsencode(os.readlink(path)) + b"\0")
            continue
        digest.update(b"F" + name + b"\0" + str(info.st_size).encode() + b"\0")
        try:
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
        except OSError:  # unreadable here: its name and size stand for it
            digest.update(b"?")
    return digest.digest()


def _files(folder: Path) -> Iterable[Path]:
    """Every file and link under ``folder``, without entering linked folders."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        here = Path(root)
        yield from (here / name for name in files)
        yield from (here / name for name in dirs if (here / name).is_symlink())


def shared_authors(bots: Sequence[BotSpec], pairs: Collection[tuple[str, str]]) -> list[str]:
    """One warning line for each pair of ``bots`` that shares a table (``pairs``, by name)
    and an owner or its code; [] when there is none."""
    by_name = {bot.name: bot for bot in bots}
    folders: dict[Path, bytes] = {}
    hashes = {bot.name: code_hash(bot, folders) for bot in bots}
    lines = []
    for a, b in sorted(pairs):
        first, second = by_name.get(a), by_name.get(b)
        if first is None or second is None:
            continue
        shared = []
        if first.owner and first.owner == second.owner:
            shared.append(f"an owner ({first.owner})")
        if hashes[a] and hashes[a] == hashes[b]:
            shared.append(f"their code (sha256 {hashes[a][:12]})")
        if shared:
            lines.append(
                f"warning: bots {a} and {b} share {' and '.join(shared)} and meet at a "
                f"table: {CHANNEL}"
            )
    return lines
