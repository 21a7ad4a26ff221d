"""The tournament file (``league.toml``): parsed, validated, and fingerprinted for resume.

Every mistake is refused before any bot is contacted, with one line that names the file,
the key and what is allowed (see examples/league.toml for a commented example).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from referee.config.bots import bot_from_model, load_bot
from referee.config.errors import ConfigFileError, read_toml
from referee.config.tables import (
    BotEntry,
    BotFileRef,
    ClockTable,
    Count,
    Database,
    FilePath,
    Name,
    Positive,
    RulesTable,
    SandboxTable,
    Seed,
    Strike,
    Table,
    TableSize,
    check_name,
    database_target,
    granted_paths,
    resolve,
    validate,
)
from referee.jail import tier_for
from referee.jail.bots import BotConfigError, BotSpec
from referee.jail.policy import check_run, never_readable, with_grants
from referee.jail.sandbox import DEFAULT_MODE
from referee.match.runner import Clock
from referee.results.ratings import MIN_MATCHES
from referee.rules import RuleError, RuleSet


class ConfigError(ConfigFileError):
    """A tournament or league file that cannot be used; the message is one line."""


MODES = ("round_robin", "duplicate")


@dataclass(frozen=True)
class TournamentConfig:
    """A validated tournament."""

    name: str
    seed: int
    table_size: int
    matches_per_table: int
    mode: str
    max_matches: int
    parallel: int
    strike_limit: int
    rules: RuleSet
    clock: Clock
    bots: tuple[BotSpec, ...]
    out: Path
    #: A SQLite file path (resolved) or a ``postgresql://`` URL (see :func:`open_store`).
    database: str
    anchor: str
    source: Path
    #: How started bots are confined: "bubblewrap" (the default) or "none" ([sandbox] mode).
    sandbox: str = DEFAULT_MODE
    #: Bots with fewer matches are listed apart as provisional (exports only).
    min_matches: int = MIN_MATCHES
    #: The paths the organiser granted, with their keys (for :meth:`check_reads`).
    granted: tuple[tuple[str, Path], ...] = ()

    def check_reads(self, deal_key_file: Path | None = None) -> None:
        """Refuse in one line a grant or a bot's path that no bot may read with this output
        folder, database and deal key file (:func:`referee.jail.policy.check_run`)."""
        rules = never_readable(self.out, self.database, deal_key_file)
        sandboxed = self.sandbox != "none"
        check_run(self.bots, self.granted, rules, str(self.source), ConfigError, sandboxed)

    def fingerprint(self) -> dict[str, Any]:
        """What decides the schedule and the results: a changed value refuses a resume.

        ``parallel``, ``out`` and the database path may change between runs.
        """
        return {
            "name": self.name,
            "seed": self.seed,
            "table_size": self.table_size,
            "matches_per_table": self.matches_per_table,
            "mode": self.mode,
            "max_matches": self.max_matches,
            "strike_limit": self.strike_limit,
            "rules": self.rules.to_table(),
            "clock": {
                "decision_ms": self.clock.decision_ms,
                "time_bank_ms": self.clock.time_bank_ms,
                "startup_ms": self.clock.startup_ms,
            },
            "bots": [_bot_fingerprint(b) for b in self.bots],
        }

    def fingerprint_hash(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`fingerprint`."""
        text = json.dumps(self.fingerprint(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _bot_fingerprint(bot: BotSpec) -> dict[str, Any]:
    """What of a bot decides its results: what it runs, where, with what, and what it
    may read. ``seats`` and ``read`` are there only when set, so that a tournament begun
    before they were fingerprinted still resumes."""
    entry: dict[str, Any] = {
        "name": bot.name,
        "command": list(bot.command),
        "workdir": str(bot.workdir),
        "env": bot.env,
        "limits": bot.limits.fingerprint(),
    }
    if bot.seats != 1:
        entry["seats"] = bot.seats
    if bot.read:
        entry["read"] = [str(p) for p in bot.read]
    return entry


def load_config(path: str | Path) -> TournamentConfig:
    """Read and validate a tournament file."""
    path = Path(path)
    data = read_toml(path, "tournament file", ConfigError)
    return config_from_table(data, base=path.parent, source=path)


class TournamentTable(Table):
    """``[tournament]``: the schedule, and where the results go."""

    name: Name | None = None
    """The tournament's name (default: the file's name without .toml)."""
    seed: Seed = 1
    """Decides the schedule and the seating; the deals come from the tournament's secret deal key."""
    table_size: TableSize | None = None
    """Players per match (default: as many bots as the rules allow, up to all of them)."""
    matches_per_table: Positive | None = None
    """Matches each table (set of bots) plays (default: table_size)."""
    mode: Literal["round_robin", "duplicate"] = "round_robin"
    """"round_robin", or "duplicate": every deal is played once per seat rotation."""
    max_matches: Count = 0
    """At most this many matches, the tables sampled (0: every table)."""
    parallel: Annotated[int, Field(ge=1, le=64)] = 1
    """Matches played at once."""
    strike_limit: Strike = 3
    """A bot's faults before it forfeits the rest of the tournament."""
    out: FilePath | None = None
    """The results folder (default: results/NAME, relative to this file's folder)."""
    database: Database = ""
    """A SQLite file, or a postgresql:// URL shared by shards (default: OUT/tournament.db)."""
    anchor: str = ""
    """The bot whose rating is fixed at 1500 (default: the mean is 1500)."""
    min_matches: Count = MIN_MATCHES
    """Bots with fewer matches are listed apart as provisional."""


class TournamentFile(Table):
    """A tournament file (``referee tournament FILE``)."""

    tournament: TournamentTable = TournamentTable.defaults()
    rules: RulesTable = RulesTable.defaults()
    clock: ClockTable = ClockTable.defaults()
    sandbox: SandboxTable = SandboxTable.defaults()
    bots: list[BotEntry] = Field(default_factory=list)
    """The bots: ``file = "bot.toml"``, or a bot's keys inline."""


def config_from_table(data: dict[str, Any], base: Path, source: Path) -> TournamentConfig:
    """Validate a parsed tournament file."""
    where = str(source)
    model = validate(TournamentFile, data, where, ConfigError)
    t = model.tournament
    rules = model.rules.rule_set()
    if not model.bots:
        raise ConfigError(f"{where}: no [[bots]]; declare at least {rules.player_range()[0]} bots")
    grants, granted = model.sandbox.grants(base, where, ConfigError)
    bots: list[BotSpec] = []
    for i, entry in enumerate(model.bots):
        try:
            if isinstance(entry, BotFileRef):
                # The organiser's grant for this bot alone; its file may name paths in it.
                own = granted_paths(
                    entry.sandbox.read,
                    base,
                    f"[[bots]] entry {i + 1} [sandbox] read",
                    where,
                    ConfigError,
                )
                granted += own
                bot = load_bot(resolve(base, entry.file), grants.plus([p for _, p in own]))
            else:
                bot = with_grants(
                    bot_from_model(entry, base, f"{where} [[bots]] entry {i + 1}"), grants
                )
        except BotConfigError as exc:
            raise ConfigError(str(exc)) from None
        if bot.external:
            raise ConfigError(
                f"{bot.source}: bot {bot.name!r} has no command; a tournament starts its bots itself"
            )
        bots.append(bot)
    names = [b.name for b in bots]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(
            f"{where}: bot name {dupes[0]!r} is declared twice; bot names must be unique"
        )
    lo, hi = rules.player_range()
    table_size = t.table_size if t.table_size is not None else min(max(len(bots), lo), hi)
    if table_size > len(bots):
        raise ConfigError(
            f"{where}: [tournament] table_size = {table_size} is larger than the {len(bots)} bots declared"
        )
    try:
        rules.check_players(table_size)
    except RuleError as exc:
        raise ConfigError(
            f"{where}: [tournament] table_size = {table_size} does not fit the rules: {exc}"
        ) from None
    matches_per_table = t.matches_per_table or table_size
    if t.mode == "duplicate" and matches_per_table % table_size:
        raise ConfigError(
            f"{where}: [tournament] matches_per_table = {matches_per_table} is not allowed in duplicate mode; "
            f"allowed: a multiple of table_size ({table_size}), one match per rotation of each deal"
        )
    if 0 < t.max_matches < matches_per_table:
        raise ConfigError(
            f"{where}: [tournament] max_matches = {t.max_matches} is smaller than matches_per_table = {matches_per_table}"
        )
    if t.anchor and t.anchor not in names:
        raise ConfigError(
            f"{where}: [tournament] anchor = {t.anchor!r} is not one of the bots: {', '.join(names)}"
        )
    name = t.name if t.name is not None else check_name(source.stem, where, ConfigError)
    out = resolve(base, t.out if t.out is not None else f"results/{name}")
    database = str(database_target(base, t.database, out / "tournament.db"))
    config = TournamentConfig(
        name=name,
        seed=t.seed,
        table_size=table_size,
        matches_per_table=matches_per_table,
        mode=t.mode,
        max_matches=t.max_matches,
        parallel=t.parallel,
        strike_limit=t.strike_limit,
        rules=rules,
        clock=model.clock.clock(),
        bots=tuple(bots),
        out=out,
        database=database,
        anchor=t.anchor,
        source=source,
        sandbox=model.sandbox.mode or tier_for(t.mode),
        min_matches=t.min_matches,
        granted=tuple(granted),
    )
    config.check_reads()
    return config
