"""The tournament file (``league.toml``): parsed, validated, and fingerprinted for resume.

Every mistake is refused before any bot is contacted, with one line that names the file,
the key and what is allowed (see examples/league.toml for a commented example).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.match.bots import BotConfigError, BotSpec, bot_from_table, load_bot
from referee.match.runner import Clock
from referee.match.sandbox import DEFAULT_MODE
from referee.match.sandbox import MODES as SANDBOX_MODES
from referee.results.ratings import MIN_MATCHES
from referee.results.store import is_url
from referee.rules import RuleError, RuleSet, from_table


class ConfigError(ValueError):
    """A tournament file that cannot be used; the message is one line."""


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
            "bots": [
                {
                    "name": b.name,
                    "command": list(b.command),
                    "workdir": str(b.workdir),
                    "env": b.env,
                    "limits": {
                        "cpu_seconds": b.limits.cpu_seconds,
                        "memory_mb": b.limits.memory_mb,
                    },
                }
                for b in self.bots
            ],
        }

    def fingerprint_hash(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`fingerprint`."""
        text = json.dumps(self.fingerprint(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _int(
    table: dict[str, Any], key: str, default: int, low: int, where: str, high: int | None = None
) -> int:
    value = table.get(key, default)
    if type(value) is not int or value < low or (high is not None and value > high):
        allowed = (
            f"a whole number from {low} to {high}"
            if high is not None
            else f"a whole number >= {low}"
        )
        raise ConfigError(f"{where}: {key} = {value!r} is not allowed; allowed: {allowed}")
    return value


def sandbox_mode(table: Any, where: str) -> str:
    """The ``[sandbox]`` table of a tournament or league file: its ``mode``."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [sandbox] must be a table")
    extra = sorted(set(table) - {"mode"})
    if extra:
        raise ConfigError(f"{where}: [sandbox] has unknown key {extra[0]!r}; allowed: mode")
    mode = table.get("mode", DEFAULT_MODE)
    if mode not in SANDBOX_MODES:
        raise ConfigError(
            f"{where}: [sandbox] mode = {mode!r} is not allowed; allowed: "
            f"{', '.join(map(repr, SANDBOX_MODES))}"
        )
    return str(mode)


def load_config(path: str | Path) -> TournamentConfig:
    """Read and validate a tournament file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: tournament file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return config_from_table(data, base=path.parent, source=path)


def config_from_table(data: dict[str, Any], base: Path, source: Path) -> TournamentConfig:
    """Validate a parsed tournament file."""
    where = str(source)
    unknown = sorted(set(data) - {"tournament", "rules", "clock", "bots", "sandbox"})
    if unknown:
        raise ConfigError(
            f"{where}: unknown table [{unknown[0]}]; allowed: [tournament], [rules], [clock], "
            "[sandbox], [[bots]]"
        )
    sandbox = sandbox_mode(data.get("sandbox", {}), where)
    t = data.get("tournament", {})
    if not isinstance(t, dict):
        raise ConfigError(f"{where}: [tournament] must be a table")
    known = {
        "name",
        "seed",
        "table_size",
        "matches_per_table",
        "mode",
        "max_matches",
        "parallel",
        "strike_limit",
        "out",
        "database",
        "anchor",
        "min_matches",
    }
    extra = sorted(set(t) - known)
    if extra:
        raise ConfigError(
            f"{where}: [tournament] has unknown key {extra[0]!r}; allowed: {', '.join(sorted(known))}"
        )
    name = t.get("name", source.stem)
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise ConfigError(
            f"{where}: [tournament] name = {name!r} is not allowed; allowed: letters, digits, '-', '_', '.'"
        )
    seed = _int(t, "seed", 1, 0, where, (1 << 64) - 1)
    mode = t.get("mode", "round_robin")
    if mode not in MODES:
        raise ConfigError(
            f"{where}: [tournament] mode = {mode!r} is not allowed; allowed: {', '.join(map(repr, MODES))}"
        )
    try:
        rules = from_table(data.get("rules", {}))
    except RuleError as exc:
        raise ConfigError(f"{where}: [rules] {exc}") from None
    clock_table = data.get("clock", {})
    if not isinstance(clock_table, dict):
        raise ConfigError(f"{where}: [clock] must be a table")
    extra = sorted(set(clock_table) - {"decision_ms", "time_bank_ms", "startup_ms"})
    if extra:
        raise ConfigError(
            f"{where}: [clock] has unknown key {extra[0]!r}; allowed: decision_ms, time_bank_ms, startup_ms"
        )
    try:
        clock = Clock(**clock_table)
    except ValueError as exc:
        raise ConfigError(f"{where}: [clock] {exc}") from None
    bots_table = data.get("bots", [])
    if not isinstance(bots_table, list) or not bots_table:
        raise ConfigError(f"{where}: no [[bots]]; declare at least {rules.player_range()[0]} bots")
    bots: list[BotSpec] = []
    for i, entry in enumerate(bots_table):
        try:
            if isinstance(entry, dict) and set(entry) == {"file"}:
                bot = load_bot(base / str(entry["file"]))
            elif isinstance(entry, dict) and "file" in entry:
                raise ConfigError(
                    f"{where}: [[bots]] entry {i + 1}: give either 'file' or an inline bot, not both"
                )
            elif isinstance(entry, dict):
                bot = bot_from_table(entry, base=base, source=f"{where} [[bots]] entry {i + 1}")
            else:
                raise ConfigError(f"{where}: [[bots]] entry {i + 1} must be a table")
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
    table_size = _int(t, "table_size", min(max(len(bots), lo), hi), 3, where, 8)
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
    matches_per_table = _int(t, "matches_per_table", table_size, 1, where)
    if mode == "duplicate" and matches_per_table % table_size:
        raise ConfigError(
            f"{where}: [tournament] matches_per_table = {matches_per_table} is not allowed in duplicate mode; "
            f"allowed: a multiple of table_size ({table_size}), one match per rotation of each deal"
        )
    max_matches = _int(t, "max_matches", 0, 0, where)
    if 0 < max_matches < matches_per_table:
        raise ConfigError(
            f"{where}: [tournament] max_matches = {max_matches} is smaller than matches_per_table = {matches_per_table}"
        )
    parallel = _int(t, "parallel", 1, 1, where, 64)
    strike_limit = _int(t, "strike_limit", 3, 1, where)
    out = t.get("out", f"results/{name}")
    database = t.get("database", "")
    anchor = t.get("anchor", "")
    for key, value in (("out", out), ("database", database), ("anchor", anchor)):
        if not isinstance(value, str):
            raise ConfigError(f"{where}: [tournament] {key} must be a string")
    if anchor and anchor not in names:
        raise ConfigError(
            f"{where}: [tournament] anchor = {anchor!r} is not one of the bots: {', '.join(names)}"
        )
    out_path = (base / out).resolve()
    if is_url(database):
        db_target = database
    else:
        db_target = str((base / database).resolve() if database else out_path / "tournament.db")
    return TournamentConfig(
        name=name,
        seed=seed,
        table_size=table_size,
        matches_per_table=matches_per_table,
        mode=mode,
        max_matches=max_matches,
        parallel=parallel,
        strike_limit=strike_limit,
        rules=rules,
        clock=clock,
        bots=tuple(bots),
        out=out_path,
        database=db_target,
        anchor=anchor,
        source=source,
        sandbox=sandbox,
        min_matches=_int(t, "min_matches", MIN_MATCHES, 0, where),
    )
