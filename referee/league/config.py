"""League files (``referee serve --config league.toml``): validated into a :class:`LeagueConfig`.

A league file has a ``[league]`` table and the tournament file's ``[rules]``, ``[clock]``
and ``[sandbox]`` tables (a league's bots dial in by themselves; ``[sandbox] mode`` is for
any bot the league starts, and is reported with its matches); examples/league-service.toml is a commented example. Every error
is one line naming the file, the key and what is allowed.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.match.runner import Clock
from referee.match.sandbox import DEFAULT_MODE
from referee.results.ratings import MIN_MATCHES
from referee.results.store import is_url
from referee.rules import RuleError, RuleSet, from_table
from referee.tournament.config import ConfigError, _int, sandbox_mode

_KEYS = {
    "name",
    "seed",
    "table_size",
    "parallel",
    "strike_limit",
    "out",
    "database",
    "database_env",
    "host",
    "port",
    "admin_token_env",
    "metrics_port",
    "metrics_host",
    "shutdown_grace_s",
    "publish_interval_s",
    "bootstrap",
    "min_matches",
    "max_seats_per_bot",
    "handshake_timeout_s",
    "tls_cert",
    "tls_key",
    "web_port",
    "web_host",
    "web_delay_rounds",
}


@dataclass(frozen=True)
class LeagueConfig:
    """A validated league file."""

    name: str
    seed: int
    table_size: int
    parallel: int
    strike_limit: int
    rules: RuleSet
    clock: Clock
    out: Path
    #: A SQLite file, or a ``postgresql://`` URL kept as given (never resolved as a path).
    database: Path | str
    host: str
    port: int
    admin_token: str
    admin_token_env: str
    metrics_port: int | None
    metrics_host: str
    shutdown_grace_s: float
    publish_interval_s: float
    bootstrap: int
    max_seats_per_bot: int
    handshake_timeout_s: float
    tls_cert: Path | None
    tls_key: Path | None
    #: The web pages and JSON API (docs/web.md): off unless a port is given.
    web_port: int | None = None
    web_host: str = "127.0.0.1"
    #: Spectators on the web stay this many rounds behind a running match.
    web_delay_rounds: int = 0
    #: How bots the league starts are confined: "bubblewrap" (default) or "none".
    sandbox: str = DEFAULT_MODE
    #: Bots with fewer matches are listed apart in the standings as provisional.
    min_matches: int = MIN_MATCHES


def _float(table: dict[str, Any], key: str, default: float, low: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < low:
        raise ConfigError(
            f"{where}: {key} = {value!r} is not allowed; allowed: a number >= {low:g}"
        )
    return float(value)


def _str(table: dict[str, Any], key: str, default: str, where: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: [league] {key} must be a string")
    return value


def load_league_config(path: str | Path, environ: dict[str, str] | None = None) -> LeagueConfig:
    """Read and validate a league file; the admin token is read from the environment."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: league file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return league_from_table(data, path.parent, path, os.environ if environ is None else environ)


def league_from_table(data: dict[str, Any], base: Path, source: Path, environ: Any) -> LeagueConfig:
    """Validate a parsed league file."""
    where = str(source)
    unknown = sorted(set(data) - {"league", "rules", "clock", "sandbox"})
    if unknown:
        raise ConfigError(
            f"{where}: unknown table [{unknown[0]}]; allowed: [league], [rules], [clock], [sandbox]"
        )
    sandbox = sandbox_mode(data.get("sandbox", {}), where)
    t = data.get("league", {})
    if not isinstance(t, dict):
        raise ConfigError(f"{where}: [league] must be a table")
    extra = sorted(set(t) - _KEYS)
    if extra:
        raise ConfigError(
            f"{where}: [league] has unknown key {extra[0]!r}; allowed: {', '.join(sorted(_KEYS))}"
        )
    name = t.get("name", source.stem)
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise ConfigError(
            f"{where}: [league] name = {name!r} is not allowed; allowed: letters, digits, '-', '_', '.'"
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
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: [clock] {exc}") from None
    lo, hi = rules.player_range()
    table_size = _int(t, "table_size", max(lo, min(4, hi)), 3, where, 8)
    try:
        rules.check_players(table_size)
    except RuleError as exc:
        raise ConfigError(
            f"{where}: [league] table_size = {table_size} does not fit the rules: {exc}"
        ) from None
    env_name = _str(t, "admin_token_env", "STICHELN_ADMIN_TOKEN", where)
    admin_token = environ.get(env_name, "") if env_name else ""
    if len(admin_token) < 16:
        raise ConfigError(
            f"{where}: the admin token is read from ${env_name} (admin_token_env), which is "
            f"{'unset' if not admin_token else 'shorter than 16 characters'}; set it to a long random secret"
        )
    metrics_port = t.get("metrics_port")
    if metrics_port is not None:
        metrics_port = _int(t, "metrics_port", 0, 0, where, 65535)
    web_port = t.get("web_port")
    if web_port is not None:
        web_port = _int(t, "web_port", 0, 0, where, 65535)
    out = _str(t, "out", f"results/{name}", where)
    database = _str(t, "database", "", where)
    database_env = _str(t, "database_env", "", where)
    if database_env:
        # The URL holds the database's password: it comes from the environment (a
        # Kubernetes Secret), not from the league file.
        if database:
            raise ConfigError(f"{where}: [league] give database or database_env, not both")
        database = environ.get(database_env, "")
        if not database:
            raise ConfigError(
                f"{where}: the database is read from ${database_env} (database_env), which "
                "is unset; set it to a postgresql:// URL or a file path"
            )
    out_path = (base / out).resolve()
    if is_url(database):
        db_target: Path | str = database
    else:
        db_target = (base / database).resolve() if database else out_path / "league.db"
    tls_cert = _str(t, "tls_cert", "", where)
    tls_key = _str(t, "tls_key", "", where)
    if bool(tls_cert) != bool(tls_key):
        raise ConfigError(
            f"{where}: [league] tls_cert and tls_key go together; give both or neither"
        )
    return LeagueConfig(
        name=name,
        seed=_int(t, "seed", 1, 0, where, (1 << 64) - 1),
        table_size=table_size,
        parallel=_int(t, "parallel", 4, 1, where, 1024),
        strike_limit=_int(t, "strike_limit", 3, 1, where),
        rules=rules,
        clock=clock,
        out=out_path,
        database=db_target,
        host=_str(t, "host", "127.0.0.1", where),
        port=_int(t, "port", 0, 0, where, 65535),
        admin_token=admin_token,
        admin_token_env=env_name,
        metrics_port=metrics_port,
        metrics_host=_str(t, "metrics_host", "127.0.0.1", where),
        shutdown_grace_s=_float(t, "shutdown_grace_s", 10.0, 0.0, where),
        publish_interval_s=_float(t, "publish_interval_s", 10.0, 0.0, where),
        bootstrap=_int(t, "bootstrap", 200, 0, where, 10_000),
        max_seats_per_bot=_int(t, "max_seats_per_bot", 16, 1, where, 1024),
        handshake_timeout_s=_float(t, "handshake_timeout_s", 10.0, 0.1, where),
        tls_cert=(base / tls_cert).resolve() if tls_cert else None,
        tls_key=(base / tls_key).resolve() if tls_key else None,
        web_port=web_port,
        web_host=_str(t, "web_host", "127.0.0.1", where),
        web_delay_rounds=_int(t, "web_delay_rounds", 0, 0, where, 1000),
        sandbox=sandbox,
        min_matches=_int(t, "min_matches", MIN_MATCHES, 0, where),
    )
