"""Bot files (``--bot FILE``, ``[[bots]] file = FILE``) read into a
:class:`~referee.match.bots.BotSpec`, the declaration the match machinery starts or admits."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from referee.config.errors import read_toml
from referee.config.tables import BotTable, resolve, validate
from referee.match.bots import BotConfigError, BotSpec, Limits


def load_bot(path: str | Path) -> BotSpec:
    """Read a bot file; raise :class:`BotConfigError` with a one-line reason."""
    path = Path(path)
    data = read_toml(path, "bot file", BotConfigError)
    return bot_from_table(data, base=path.parent, source=str(path))


def bot_from_table(data: dict[str, Any], base: Path = Path("."), source: str = "bot") -> BotSpec:
    """A bot from a TOML table (a bot file's contents, or a table in a tournament file)."""
    return bot_from_model(validate(BotTable, data, source, BotConfigError), base, source)


def bot_from_model(bot: BotTable, base: Path, source: str) -> BotSpec:
    """The bot a validated bot table declares; relative paths are read from ``base``."""
    command = tuple(shlex.split(bot.command) if isinstance(bot.command, str) else bot.command)
    read = tuple(resolve(base, p) for p in bot.sandbox.read)
    missing = next((p for p in read if not p.exists()), None)
    if missing is not None and command:
        raise BotConfigError(f"{source}: [sandbox] read = {str(missing)!r} does not exist")
    return BotSpec(
        name=bot.name.strip(),
        command=command,
        workdir=resolve(base, bot.workdir),
        env=dict(bot.env),
        token=bot.token,
        limits=Limits(**bot.limits.model_dump()),
        source=source,
        seats=bot.seats,
        read=read,
    )
