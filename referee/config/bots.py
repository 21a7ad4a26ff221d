"""Bot files (``--bot FILE``, ``[[bots]] file = FILE``) read into a
:class:`~referee.jail.bots.BotSpec`, the declaration the match machinery starts or admits.

A bot file is its author's: what it may read beyond its own folder, and how far its
``[limits]`` may go, is the organiser's to say (:mod:`referee.jail.policy`)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from referee.config.errors import read_toml
from referee.config.tables import BotTable, resolve, validate
from referee.jail.bots import BotConfigError, BotSpec, Limits
from referee.jail.policy import Grants, confine_bot_file


def load_bot(path: str | Path, grants: Grants | None = None) -> BotSpec:
    """Read a bot file, held to the organiser's ``grants`` (default: none, and the default
    maxima); raise :class:`BotConfigError` with a one-line reason."""
    path = Path(path)
    data = read_toml(path, "bot file", BotConfigError)
    # The folder the organiser put the file in (a link to the file itself is not
    # followed: the bot's folder is where it was placed).
    folder = path.absolute().parent.resolve()
    model = validate(BotTable, data, str(path), BotConfigError)
    spec = bot_from_model(model, folder, str(path))
    asked = [("workdir", model.workdir), *(("[sandbox] read", p) for p in model.sandbox.read)]
    limits = model.limits.model_fields_set if "limits" in model.model_fields_set else set()
    return confine_bot_file(spec, folder, asked, grants or Grants(), limits)


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
        owner=bot.owner.strip(),
        runtime=bot.runtime or "",
    )
