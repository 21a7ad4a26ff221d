"""The tables that the tournament, league, comparison and bot files share, as typed models.

A file type is a model built from these (:mod:`referee.tournament.config`,
:mod:`referee.league.config`, :mod:`referee.compare.config`, :mod:`referee.jail.bots`); its loader
validates the parsed TOML with :func:`validate` and builds the referee's own objects
(:class:`~referee.rules.RuleSet`, :class:`~referee.match.runner.Clock`, ...) from the model. A
model's field docstrings are the descriptions an editor shows from the JSON Schema
(:mod:`referee.config.schema`); what a key allows is written once, in its type.

Every model refuses unknown keys and takes no value of another type (TOML ``"4"`` is not
the number 4, ``true`` is not 1). TOML has no null: a key whose type admits None is one
that may be left out, its default worked out from the rest of the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from referee.config.errors import Allowed, ConfigFileError, one_line
from referee.jail.bots import MAX_SEATS, Limits
from referee.jail.policy import Grants, MaxLimits, never_readable, refuse_never
from referee.match.runner import Clock
from referee.rules import (
    AllZeroTrick,
    Deck,
    FirstLead,
    MatchTies,
    PainCard,
    PainVisibility,
    RuleError,
    RuleSet,
    TrumpRule,
    preset,
)


class Table(BaseModel):
    """A TOML table: unknown keys are refused, values are taken only as their own type."""

    # The fields' docstrings are read where a schema is made (referee.config.schema), not
    # by pydantic's use_attribute_docstrings at every import: parsing each model's source
    # was a tenth of a short command's start.
    #
    # A model's validator is built when it first validates (defer_build), not at import:
    # building every table's took a short command a tenth of its start, and most commands
    # read one kind of file.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    @classmethod
    def defaults(cls) -> Self:
        """The table with every key left out, as a field's default: made without validating,
        since ``Table()`` would build the model's validator at import."""
        return cls.model_construct()


# -- shared field types -------------------------------------------------------------------

#: A name that is also part of file and folder names.
Name = Annotated[
    str,
    Field(pattern=r"^[\w.-]+$"),
    Allowed("letters, digits, '-', '_', '.'"),
]
#: A match seed: an unsigned 64-bit number.
Seed = Annotated[int, Field(ge=0, le=(1 << 64) - 1)]
TableSize = Annotated[int, Field(ge=3, le=8)]
Port = Annotated[int, Field(ge=0, le=65535)]
Positive = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
#: A path; a relative one is read from the folder of the file that gives it.
FilePath = Annotated[str, Field(min_length=1), Allowed("a path (relative to this file's folder)")]
#: A SQLite file path, or a ``postgresql://`` URL.
Database = Annotated[
    str,
    Allowed("a path (relative to this file's folder) or a postgresql:// URL"),
]
Strike = Annotated[int, Field(ge=1)]
Milliseconds = Annotated[int, Allowed("a whole number of milliseconds >= 1"), Field(ge=1)]

#: The rules presets of docs/rules.md (:data:`referee.rules.PRESETS`).
Preset = Literal["sticheln", "amigo", "sore-spot", "french-2-14", "stick-em-secret"]
#: How started bots are confined (:data:`referee.jail.sandbox.MODES`).
SandboxMode = Literal["bubblewrap", "gvisor", "none", "strongest"]


def resolve(base: Path, value: str) -> Path:
    """``value`` as a path, relative ones read from ``base`` (a file's folder)."""
    return (base / value).resolve()


def database_target(base: Path, value: str, default: Path) -> Path | str:
    """A ``database`` key's target: a URL (``postgresql://...``) as given, a path read from
    ``base`` (a file's folder), or ``default`` when the key is empty."""
    if "://" in value:
        return value
    return resolve(base, value) if value else default


def check_name(value: str, where: str, error: type[Exception]) -> str:
    """A name taken from a file's name (when the file gives none) fit for folder names."""
    if not re.fullmatch(r"[\w.-]+", value):
        raise error(
            f"{where}: name = {value!r} (the file's name) is not allowed; allowed: letters, "
            "digits, '-', '_', '.' (give a name)"
        )
    return value


# -- [rules] ------------------------------------------------------------------------------


# The engine's own enums: the file gives their values (strings).
DeckOption = Annotated[Deck | None, Field(strict=False)]
PainCardOption = Annotated[PainCard | None, Field(strict=False)]
PainVisibilityOption = Annotated[PainVisibility | None, Field(strict=False)]
FirstLeadOption = Annotated[FirstLead | None, Field(strict=False)]
TrumpRuleOption = Annotated[TrumpRule | None, Field(strict=False)]
AllZeroTrickOption = Annotated[AllZeroTrick | None, Field(strict=False)]
MatchTiesOption = Annotated[MatchTies | None, Field(strict=False)]


class RulesTable(Table):
    """``[rules]``: a preset of docs/rules.md, and any options that differ from it."""

    preset: Preset = "sticheln"
    """The rules preset the options below change."""
    deck: DeckOption = None
    """Which cards are dealt (default: the preset's)."""
    pain_card: PainCardOption = None
    """What happens to a pain card after the reveal."""
    pain_cards_per_player: Literal[1, 2] | None = None
    """Pain cards each player chooses per round."""
    pain_visibility: PainVisibilityOption = None
    """When the others learn a player's pain card(s)."""
    first_lead: FirstLeadOption = None
    """Who leads the first trick of a round."""
    trump_rule: TrumpRuleOption = None
    """How a trick holding cards of several non-lead suits is won."""
    all_zero_trick: AllZeroTrickOption = None
    """What happens to a trick in which every card is a zero."""
    rounds: Literal["players"] | Positive | None = None
    """Rounds per match: "players" (as many as players) or a number."""
    match_ties: MatchTiesOption = None
    """How equal match totals are ranked."""
    long_hands_3p: bool | None = None
    """Three players with the French zero-ace deck use A..Q of four suits, 16 cards each
    (instead of A..9, 12 each)."""

    @model_validator(mode="after")
    def _fits_together(self) -> RulesTable:
        try:
            self.rule_set()
        except RuleError as exc:
            raise ValueError(str(exc)) from None
        return self

    def rule_set(self) -> RuleSet:
        """The rule set: the preset with the options given."""
        options = self.model_dump(exclude_none=True, exclude={"preset"})
        return preset(self.preset, **options)


# -- [clock] ------------------------------------------------------------------------------


class ClockTable(Table):
    """``[clock]``: how long bots have to decide and to start."""

    decision_ms: Milliseconds = 1000
    """Time for one decision, in milliseconds."""
    time_bank_ms: Annotated[int, Allowed("a whole number of milliseconds >= 0"), Field(ge=0)] = 0
    """A match's time bank per bot, drawn on when a decision runs over."""
    startup_ms: Milliseconds = 10_000
    """Time a started bot has to connect and complete its handshake."""

    def clock(self) -> Clock:
        """The clock the match runner keeps."""
        return Clock(self.decision_ms, self.time_bank_ms, self.startup_ms)


# -- [sandbox] ----------------------------------------------------------------------------


#: Read-only paths (relative to the folder of the file that gives them).
ReadPaths = Annotated[list[Annotated[str, Field(min_length=1)]], Allowed("a list of paths")]


class MaxLimitsTable(Table):
    """``[sandbox.max_limits]``: the most a bot file's ``[limits]`` may ask for (a bot
    file that asks for more is refused)."""

    cpu_seconds: Positive = MaxLimits.cpu_seconds
    """The most CPU seconds a bot file may ask for."""
    memory_mb: Positive = MaxLimits.memory_mb
    """The most MiB of memory a bot file may ask for."""
    processes: Positive = MaxLimits.processes
    """The most processes and threads a bot file may ask for."""
    cpus: Annotated[float, Allowed("a number of CPUs >= 0 (0: no quota)"), Field(ge=0, le=1024)] = (
        MaxLimits.cpus
    )
    """The most CPUs of quota a bot file may ask for (0: any, no quota included)."""
    log_mb: Positive = MaxLimits.log_mb
    """The most MiB of log per process a bot file may ask for."""

    def max_limits(self) -> MaxLimits:
        """The maxima as the policy holds them."""
        return MaxLimits(**self.model_dump())


class SandboxTable(Table):
    """``[sandbox]`` of a tournament, league or comparison: how the bots it starts are
    confined, and what the organiser grants them beyond their bot files."""

    mode: SandboxMode | None = None
    """"bubblewrap" (each bot in its own sandbox on the host's kernel), "gvisor" (each on an
    application kernel of its own: runsc, a root referee), "strongest" (gvisor where it
    runs, else bubblewrap) or "none" (trusted bots only). Default: "strongest" for
    duplicate tournaments, comparisons and leagues, "bubblewrap" for a round robin
    (docs/security.md)."""
    read: ReadPaths = []
    """More read-only paths for every bot started (relative to this file); bot files may
    name paths inside them too. Never /proc, /sys, /dev, /run, the output folder or the
    database."""
    max_limits: MaxLimitsTable = MaxLimitsTable.defaults()
    """The most a bot file's [limits] may ask for."""

    def grants(
        self, base: Path, where: str, error: type[Exception]
    ) -> tuple[Grants, list[tuple[str, Path]]]:
        """The organiser's grants (paths read from ``base``), and each granted path with
        its key, for :func:`referee.jail.policy.check_run`; ``error`` in one line for a
        path that does not exist or that no bot may ever read."""
        granted = granted_paths(self.read, base, "[sandbox] read", where, error)
        grants = Grants(
            read=tuple(p for _, p in granted),
            max_limits=self.max_limits.max_limits(),
            source=where,
            max_how=f"[sandbox.max_limits] in {where}",
            sandboxed=self.mode != "none",
        )
        return grants, granted


def granted_paths(
    values: Sequence[str], base: Path, key: str, where: str, error: type[Exception]
) -> list[tuple[str, Path]]:
    """Paths the organiser grants, read from ``base``: each must exist and be one a bot may
    ever read (not the host's /proc, /sys, /dev or /run, nor a folder holding them)."""
    granted = [(key, resolve(base, value)) for value in values]
    refuse_never(granted, where, never_readable(), error)
    missing = next((p for _, p in granted if not p.exists()), None)
    if missing is not None:
        said = f"{key} {str(missing)!r}" if key.startswith("--") else f"{key} = {str(missing)!r}"
        raise error(f"{where}: {said} does not exist" if where else f"{said} does not exist")
    return granted


# -- a bot --------------------------------------------------------------------------------


class LimitsTable(Table):
    """A started bot's resource limits."""

    cpu_seconds: Positive = Limits.cpu_seconds
    """CPU time of each bot process (RLIMIT_CPU), in seconds."""
    memory_mb: Positive = Limits.memory_mb
    """Memory of the whole bot, its children and /tmp included (its cgroup), and the
    address space of each process (RLIMIT_AS), in MiB."""
    processes: Positive = Limits.processes
    """Processes and threads the bot may have at once (its cgroup's pids.max)."""
    cpus: Annotated[float, Allowed("a number of CPUs >= 0 (0: no quota)"), Field(ge=0, le=1024)] = (
        Limits.cpus
    )
    """CPU time per second of wall time, at most (its cgroup's CPU quota), in CPUs; 0 (the
    default): no quota, an equal share with the scheduler."""
    log_mb: Positive = Limits.log_mb
    """How much of the bot's stdout and stderr is kept in its log, in MiB per process."""


class BotSandboxTable(Table):
    """A bot's ``[sandbox]``: what else it may read inside its sandbox."""

    read: ReadPaths = []
    """More read-only paths (relative to this file's folder). In a bot file: only inside
    its own folder, or inside what the organiser grants."""


def _printable(value: str) -> str:
    """``value`` when every character prints (no escape sequences, no bidirectional
    overrides); a ValueError otherwise."""
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        raise ValueError(f"{value!r} holds the control character {bad!r}")
    return value


class BotTable(Table):
    """A bot: a command the referee starts, or an external bot that dials in with a token."""

    name: Annotated[
        str,
        Field(pattern=r"\S"),
        AfterValidator(_printable),
        Allowed("a non-empty string of printable characters"),
    ]
    """The bot's name in schedules, records and standings (printed on the organiser's
    terminal: no control characters, which could move its cursor or rewrite its lines)."""
    command: str | list[str] = []
    """The command that starts the bot: a list, or one string split like a shell would."""
    workdir: FilePath = "."
    """The folder the command runs in (relative to this file's folder)."""
    env: dict[str, str] = {}
    """More environment variables for the bot."""
    token: str = ""
    """An external bot's token (a bot without a command dials in with it)."""
    owner: str = ""
    """Who wrote the bot (a person or a team): a tournament that seats two bots of one owner
    at a table warns, since two seats of one author can pass each other information."""
    limits: LimitsTable = LimitsTable.defaults()
    """Resource limits of the bot process."""
    seats: Annotated[int, Field(ge=1, le=MAX_SEATS)] = 1
    """Matches one process plays at once (one stream each)."""
    sandbox: BotSandboxTable = BotSandboxTable.defaults()
    """What the bot may read besides its own folder."""
    runtime: Literal["python3", "node", "native", "jvm"] | None = None
    """What the bot runs on, and so what of the host it may read: the referee's Python
    with its packages, Node, a native executable's libraries, or a Java installation
    (default: the one its command names; docs/bot-protocol.md)."""
    build: str | list[str] = []
    """A league hosting the bot runs this once in its folder, jailed and without network,
    before it validates it (docs/hosting.md); nothing else runs it."""

    @model_validator(mode="after")
    def _started_or_external(self) -> BotTable:
        taken = sorted(k for k in self.env if k.startswith("STICHELN_"))
        if taken:
            raise ValueError(
                f"[env] {taken[0]} is not allowed: the STICHELN_* variables are the referee's "
                "to set (a bot file's would never reach the bot); give yours another name"
            )
        if not self.command and not self.token:
            raise ValueError("give a 'command' to start, or a 'token' for an external bot")
        if self.seats > 1 and not self.command:
            raise ValueError(
                "'seats' is for a bot the referee starts (with a 'command'); an external bot "
                "opens as many streams as it likes"
            )
        return self


class BotGrantTable(Table):
    """``[bots.sandbox]`` of a ``file`` entry: what the organiser grants that bot."""

    read: ReadPaths = []
    """More read-only paths for this bot (relative to this file); its bot file may name
    paths inside them too."""


class BotFileRef(Table):
    """A bot declared in a file of its own."""

    file: FilePath
    """The bot file (relative to this file's folder)."""
    sandbox: BotGrantTable = BotGrantTable.defaults()
    """What the organiser grants this bot beyond its bot file."""

    @model_validator(mode="before")
    @classmethod
    def _file_alone(cls, data: Any) -> Any:
        if isinstance(data, dict) and set(data) - {"file", "sandbox"}:
            raise ValueError("give either 'file' or an inline bot, not both")
        return data


def _bot_kind(value: Any) -> str:
    return "file" if isinstance(value, dict) and "file" in value else "bot"


#: A ``[[bots]]`` entry: ``file = "bot.toml"``, or the bot's keys inline.
BotEntry = Annotated[
    Annotated[BotFileRef, Tag("file")] | Annotated[BotTable, Tag("bot")],
    Discriminator(_bot_kind),
]


# -- loading ------------------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)


def validate(
    model: type[M],
    data: Mapping[str, Any],
    where: str,
    error: type[Exception] = ConfigFileError,
    flags: Mapping[tuple[str, ...], str] | None = None,
) -> M:
    """``data`` (a parsed file) as ``model``; ``error`` with one line naming ``where``, the
    table, the key, the value given and what is allowed. ``flags`` names the command-line
    flag that gave a value (by its key's path), for a message that names the flag."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(one_line(exc, model, data, where, flags or {})) from None
