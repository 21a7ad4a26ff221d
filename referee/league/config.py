"""League files (``referee serve --config league.toml``): validated into a :class:`LeagueConfig`.

A league file has a ``[league]`` table, a ``[seating]`` table (who may sit at one table)
and the tournament file's ``[rules]``, ``[clock]`` and ``[sandbox]`` tables (a league's bots dial in by themselves; ``[sandbox] mode`` is for
any bot the league starts, and is reported with its matches); examples/league-service.toml is a commented example. Every error
is one line naming the file, the key and what is allowed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from referee.config.errors import read_toml
from referee.config.tables import (
    ClockTable,
    Count,
    Database,
    FilePath,
    Name,
    Port,
    RulesTable,
    SandboxTable,
    Seed,
    Strike,
    Table,
    TableSize,
    check_name,
    database_target,
    resolve,
    validate,
)
from referee.jail import tier_for
from referee.jail.policy import check_run, never_readable, refuse_never
from referee.jail.sandbox import DEFAULT_MODE
from referee.league.scheduler import SeatingRules
from referee.match.runner import Clock
from referee.results.ratings import MIN_MATCHES
from referee.rules import RuleError, RuleSet
from referee.tournament.config import ConfigError


@dataclass(frozen=True)
class HostingConfig:
    """``[hosting]``: bots uploaded to the league and run by it (docs/hosting.md)."""

    enabled: bool = False
    #: An upload larger than this is refused before a byte of it is read.
    max_archive_mb: int = 64
    #: Files (and folders) an archive may hold.
    max_files: int = 10_000
    #: What an archive may unpack to, and what a build may leave, in all.
    max_unpacked_mb: int = 256
    #: Seconds a build step gets, jailed and without network.
    build_timeout_s: float = 600.0
    #: Memory of a build step (its processes and its /tmp), in MiB.
    build_memory_mb: int = 2048
    #: Submissions one bot entry may make per 24 hours.
    submissions_per_day: int = 20
    #: Match workers this process starts; 0: external workers only.
    workers: int = 2
    #: Where uploaded code is unpacked and built, by hash (readable by the bots' uids).
    code_dir: Path = Path("hosted-code")
    #: Rounds of each validation scenario (``referee check-bot``).
    validation_rounds: int = 1
    #: Submissions validated at once (one per owner), and the check-bot scenario
    #: families they play side by side, all of them together.
    validation_jobs: int = 3
    #: Seconds an upload may take, header to last chunk.
    upload_timeout_s: float = 300.0
    #: Uploads under way at once: in all, per owner, per client address (one per entry).
    uploads_at_once: int = 16
    uploads_per_owner: int = 2
    uploads_per_address: int = 4
    #: The least average rate of an upload once its first seconds are over, KiB/s.
    upload_min_kib_s: float = 32.0
    #: Uploads an entry may start per 24 hours (each counts as it starts).
    upload_attempts_per_day: int = 60
    #: Seconds of builds each owner's submissions may run per 24 hours.
    build_seconds_per_day: float = 3600.0
    #: Days the archives and folders of refused and retired submissions are kept.
    retention_days: float = 7.0
    #: Hosted bot processes kept warm between matches (this process's pool), at most.
    warm_bots: int = 64
    #: Their memory together (their cgroups'), at most, in MiB.
    warm_memory_mb: int = 4096
    #: A warm process without a match for this long stops, in seconds (None: the tier's
    #: default, :func:`referee.match.pool.default_idle_s`).
    warm_idle_s: float | None = None
    #: A hosted bot's log of one ranked match, kept for its owner, in KiB (its end).
    log_kb: int = 64
    #: Days a hosted bot's match logs are kept.
    log_retention_days: int = 14


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
    #: The league's SQLite file (resolved), or a ``postgresql://`` URL as given.
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
    #: Every spectator door (web, its live streams, gRPC WatchMatch) stays this many rounds
    #: behind a running match at least.
    web_delay_rounds: int = 0
    #: How bots the league starts are confined: "bubblewrap" (default) or "none".
    sandbox: str = DEFAULT_MODE
    #: Bots with fewer matches are listed apart in the standings as provisional.
    min_matches: int = MIN_MATCHES
    #: Who may sit at one table ([seating]): by default no two bots of one family or owner.
    seating: SeatingRules = field(default_factory=SeatingRules)
    #: Hosted submissions ([hosting], docs/hosting.md): off unless enabled.
    hosting: HostingConfig = field(default_factory=HostingConfig)
    #: The fair-play test judges each finished match (docs/fairplay.md): on by default.
    fairplay: bool = True
    #: Unrated matches on demand (``referee league challenge``) an entry may ask for per
    #: 24 hours; 0: none.
    challenges_per_day: int = 10
    #: New ladder matches started per minute at most (0: as fast as tables free up).
    ladder_matches_per_minute: float = 0.0


Seconds = Annotated[float, Field(ge=0.0)]


class LeagueTable(Table):
    """``[league]``: the service, its schedule and where its data goes."""

    name: Name | None = None
    """The league's name (default: the file's name without .toml)."""
    seed: Seed = 1
    """Breaks the scheduler's ties; the deals come from the league's secret deal key."""
    table_size: TableSize | None = None
    """Players per match (default: 4, or what the rules allow)."""
    parallel: Annotated[int, Field(ge=1, le=1024)] = 4
    """Matches played at once."""
    strike_limit: Strike = 3
    """A bot's faults in a match before it forfeits it."""
    out: FilePath | None = None
    """The results folder (default: results/NAME, relative to this file's folder)."""
    database: Database = ""
    """The league's SQLite file, or a postgresql:// URL (default: OUT/league.db)."""
    database_env: str = ""
    """An environment variable that holds the database (a URL with its password)."""
    host: str = "127.0.0.1"
    """The address bots dial."""
    port: Port = 0
    """The port bots dial (0: any free port)."""
    admin_token_env: str = "STICHELN_ADMIN_TOKEN"
    """The environment variable that holds the admin token (16 characters or more)."""
    metrics_port: Port | None = None
    """The Prometheus metrics port (default: no metrics)."""
    metrics_host: str = "127.0.0.1"
    """The metrics address."""
    shutdown_grace_s: Seconds = 10.0
    """Seconds running matches have to finish on shutdown."""
    publish_interval_s: Seconds = 10.0
    """Seconds between standings publications."""
    bootstrap: Annotated[int, Field(ge=0, le=10_000)] = 200
    """Bootstrap resamples of the ratings' intervals."""
    min_matches: Count = MIN_MATCHES
    """Bots with fewer matches are listed apart in the standings as provisional."""
    max_seats_per_bot: Annotated[int, Field(ge=1, le=1024)] = 16
    """The most streams one bot may have open."""
    handshake_timeout_s: Annotated[float, Field(ge=0.1)] = 10.0
    """Seconds a connecting bot has to complete its handshake."""
    tls_cert: FilePath | None = None
    """The server's TLS certificate (PEM; with tls_key)."""
    tls_key: FilePath | None = None
    """The server's TLS private key (PEM; with tls_cert)."""
    web_port: Port | None = None
    """The web pages' port (default: no web pages)."""
    web_host: str = "127.0.0.1"
    """The web pages' address."""
    web_delay_rounds: Annotated[int, Field(ge=0, le=1000)] = 0
    """Every spectator (web pages, live streams, gRPC WatchMatch) stays at least this many rounds behind a running match."""
    fairplay: bool = True
    """Judge each finished match with the fair-play test (docs/fairplay.md); false: never."""
    challenges_per_day: Annotated[int, Field(ge=0, le=10_000)] = 10
    """Unrated matches on demand (referee league challenge) one entry may ask for per 24 hours (0: none)."""
    ladder_matches_per_minute: Annotated[float, Field(ge=0, le=100_000)] = 0.0
    """New ladder matches started per minute at most, whatever `parallel` allows (0: a match starts whenever a table can be filled). Challenges, finals and replays of interrupted matches are not held back."""

    @model_validator(mode="after")
    def _pairs(self) -> LeagueTable:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together; give both or neither")
        if self.database and self.database_env:
            raise ValueError("give database or database_env, not both")
        return self


class SeatingTable(Table):
    """``[seating]``: who may sit at one table. By default two bots that could play as one
    are kept apart: versions of one bot, and bots of one owner."""

    same_family: bool = False
    """Let two versions of one bot (one family: alpha, alpha@v2) sit at one table."""
    same_owner: bool = False
    """Let two bots of one owner sit at one table (bots registered without an owner always may)."""


class HostingTable(Table):
    """``[hosting]``: bot authors upload code (``referee league submit``); the league
    builds it, checks it and plays it, jailed (docs/hosting.md)."""

    enabled: bool = False
    """Accept uploads (League.Submit) and seat hosted bots."""
    max_archive_mb: Annotated[int, Field(ge=1, le=1024)] = 64
    """An upload larger than this is refused."""
    max_files: Annotated[int, Field(ge=1, le=1_000_000)] = 10_000
    """Files and folders an upload may hold."""
    max_unpacked_mb: Annotated[int, Field(ge=1, le=16_384)] = 256
    """What an upload may unpack to (and a build leave), in MiB."""
    build_timeout_s: Annotated[float, Field(gt=0, le=86_400)] = 600.0
    """Seconds a build step gets, jailed, without network."""
    build_memory_mb: Annotated[int, Field(ge=64, le=65_536)] = 2048
    """Memory of a build step, its /tmp included, in MiB."""
    submissions_per_day: Annotated[int, Field(ge=1, le=10_000)] = 20
    """Submissions per bot entry per 24 hours."""
    workers: Annotated[int, Field(ge=0, le=256)] = 2
    """Match workers this process starts; 0 = external workers only."""
    code_dir: FilePath | None = None
    """Where uploads are unpacked and built, by hash (default: OUT-code beside the
    results folder; its files are readable by the bots' uids)."""
    validation_rounds: Annotated[int, Field(ge=1, le=20)] = 1
    """Rounds of each check-bot scenario a submission is validated with."""
    validation_jobs: Annotated[int, Field(ge=1, le=16)] = 3
    """Submissions validated at once (one per owner, the owner waiting longest first),
    and check-bot scenario families played side by side by all of them together (the
    short-clock and many-stream scenarios are still played alone)."""
    upload_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 300.0
    """Seconds an upload may take, header to last chunk (a slower one is refused)."""
    uploads_at_once: Annotated[int, Field(ge=1, le=1024)] = 16
    """Uploads under way at once, all entries together (one per entry at a time)."""
    uploads_per_owner: Annotated[int, Field(ge=1, le=1024)] = 2
    """Uploads under way at once of one owner's entries."""
    uploads_per_address: Annotated[int, Field(ge=1, le=1024)] = 4
    """Uploads under way at once from one client address."""
    upload_min_kib_s: Annotated[float, Field(ge=0, le=1_048_576)] = 32.0
    """The least average rate of an upload once its first 10 s are over, in KiB/s (a
    slower one is refused); 0: no least rate."""
    upload_attempts_per_day: Annotated[int, Field(ge=1, le=100_000)] = 60
    """Uploads a bot entry may start per 24 hours: each counts as it starts, stored,
    refused or cut."""
    build_seconds_per_day: Annotated[float, Field(gt=0, le=864_000)] = 3600.0
    """Seconds the builds of one owner's submissions may run per 24 hours (a build gets
    at most what is left)."""
    retention_days: Annotated[float, Field(ge=0, le=3650)] = 7.0
    """Days the archive and unpacked folder of a refused or retired submission are kept
    (its record, hash and report stay)."""
    warm_bots: Annotated[int, Field(ge=1, le=100_000)] = 64
    """Hosted bot processes this process keeps warm between matches, at most (the least
    recently used idle ones stop first; `referee league worker --max-bots`)."""
    warm_memory_mb: Annotated[int, Field(ge=64, le=1_048_576)] = 4096
    """The memory of the warm bot processes together (their cgroups'), at most, in MiB."""
    warm_idle_s: Annotated[float, Field(ge=1, le=86_400)] | None = None
    """A warm bot process without a match for this long stops, in seconds. Unset: 60 in
    the gVisor tier (an idle sandbox costs 20-50 ms of CPU a second there, a fresh start
    about 1.1 s) and 600 in bubblewrap."""
    log_kb: Annotated[int, Field(ge=1, le=4096)] = 64
    """A hosted bot's stderr of one ranked match kept for its owner (referee league
    logs), in KiB: the end of it when it wrote more."""
    log_retention_days: Annotated[int, Field(ge=1, le=3650)] = 14
    """Days a hosted bot's match logs are kept (older ones are deleted)."""


class LeagueFile(Table):
    """A league file (``referee serve --config FILE``)."""

    league: LeagueTable = LeagueTable.defaults()
    rules: RulesTable = RulesTable.defaults()
    clock: ClockTable = ClockTable.defaults()
    sandbox: SandboxTable = SandboxTable.defaults()
    seating: SeatingTable = SeatingTable.defaults()
    hosting: HostingTable = HostingTable.defaults()


def load_league_config(path: str | Path, environ: dict[str, str] | None = None) -> LeagueConfig:
    """Read and validate a league file; the admin token is read from the environment."""
    path = Path(path)
    data = read_toml(path, "league file", ConfigError)
    return league_from_table(data, path.parent, path, os.environ if environ is None else environ)


def league_from_table(data: dict[str, Any], base: Path, source: Path, environ: Any) -> LeagueConfig:
    """Validate a parsed league file."""
    where = str(source)
    model = validate(LeagueFile, data, where, ConfigError)
    t = model.league
    rules = model.rules.rule_set()
    lo, hi = rules.player_range()
    table_size = t.table_size if t.table_size is not None else max(lo, min(4, hi))
    try:
        rules.check_players(table_size)
    except RuleError as exc:
        raise ConfigError(
            f"{where}: [league] table_size = {table_size} does not fit the rules: {exc}"
        ) from None
    env_name = t.admin_token_env
    admin_token = environ.get(env_name, "") if env_name else ""
    if len(admin_token) < 16:
        raise ConfigError(
            f"{where}: the admin token is read from ${env_name} (admin_token_env), which is "
            f"{'unset' if not admin_token else 'shorter than 16 characters'}; set it to a long random secret"
        )
    name = t.name if t.name is not None else check_name(source.stem, where, ConfigError)
    out = resolve(base, t.out if t.out is not None else f"results/{name}")
    given = t.database
    if t.database_env:
        # The URL holds the database's password: it comes from the environment (a
        # Kubernetes Secret), not from the league file.
        given = environ.get(t.database_env, "")
        if not given:
            raise ConfigError(
                f"{where}: the database is read from ${t.database_env} (database_env), which "
                "is unset; set it to a postgresql:// URL or a file path"
            )
    database = database_target(base, given, out / "league.db")
    # The league's bots dial in; what it would grant a bot it starts is held to the same
    # policy as a tournament's.
    _, granted = model.sandbox.grants(base, where, ConfigError)
    check_run((), granted, never_readable(out, database), where, ConfigError)
    h = model.hosting
    code_dir = (
        resolve(base, h.code_dir) if h.code_dir is not None else out.with_name(out.name + "-code")
    )
    if h.enabled:
        if model.sandbox.mode == "none":
            raise ConfigError(
                f"{where}: [hosting] enabled = true needs a sandbox: uploaded code always runs "
                'jailed; remove [sandbox] mode = "none"'
            )
        refuse_never(
            [("[hosting] code_dir", code_dir.resolve())],
            where,
            never_readable(out, database),
            ConfigError,
        )
    hosting = HostingConfig(
        enabled=h.enabled,
        max_archive_mb=h.max_archive_mb,
        max_files=h.max_files,
        max_unpacked_mb=h.max_unpacked_mb,
        build_timeout_s=h.build_timeout_s,
        build_memory_mb=h.build_memory_mb,
        submissions_per_day=h.submissions_per_day,
        workers=h.workers,
        code_dir=code_dir,
        validation_rounds=h.validation_rounds,
        validation_jobs=h.validation_jobs,
        upload_timeout_s=h.upload_timeout_s,
        uploads_at_once=h.uploads_at_once,
        uploads_per_owner=h.uploads_per_owner,
        uploads_per_address=h.uploads_per_address,
        upload_min_kib_s=h.upload_min_kib_s,
        upload_attempts_per_day=h.upload_attempts_per_day,
        build_seconds_per_day=h.build_seconds_per_day,
        retention_days=h.retention_days,
        warm_bots=h.warm_bots,
        warm_memory_mb=h.warm_memory_mb,
        warm_idle_s=h.warm_idle_s,
        log_kb=h.log_kb,
        log_retention_days=h.log_retention_days,
    )
    return LeagueConfig(
        name=name,
        seed=t.seed,
        table_size=table_size,
        parallel=t.parallel,
        strike_limit=t.strike_limit,
        rules=rules,
        clock=model.clock.clock(),
        out=out,
        database=database,
        host=t.host,
        port=t.port,
        admin_token=admin_token,
        admin_token_env=env_name,
        metrics_port=t.metrics_port,
        metrics_host=t.metrics_host,
        shutdown_grace_s=t.shutdown_grace_s,
        publish_interval_s=t.publish_interval_s,
        ladder_matches_per_minute=t.ladder_matches_per_minute,
        bootstrap=t.bootstrap,
        max_seats_per_bot=t.max_seats_per_bot,
        handshake_timeout_s=t.handshake_timeout_s,
        tls_cert=None if t.tls_cert is None else resolve(base, t.tls_cert),
        tls_key=None if t.tls_key is None else resolve(base, t.tls_key),
        web_port=t.web_port,
        web_host=t.web_host,
        web_delay_rounds=t.web_delay_rounds,
        sandbox=model.sandbox.mode or tier_for("league"),
        min_matches=t.min_matches,
        seating=SeatingRules(model.seating.same_family, model.seating.same_owner),
        hosting=hosting,
        fairplay=t.fairplay,
        challenges_per_day=t.challenges_per_day,
    )
