"""A comparison's settings: a ``[compare]`` TOML file, command-line flags, or both.

The file (examples/compare.toml is a commented example) and the flags name the same
settings; a flag overrides the file's value. Every mistake is refused before any bot is
started, in one line that names the file or flag, the key and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from referee.compare.sprt import Sprt
from referee.config.bots import load_bot
from referee.config.errors import Allowed, ConfigFileError, read_toml
from referee.config.tables import (
    ClockTable,
    FilePath,
    Name,
    RulesTable,
    SandboxTable,
    Seed,
    Table,
    TableSize,
    resolve,
    validate,
)
from referee.jail import tier_for
from referee.jail.bots import BotConfigError, BotSpec
from referee.jail.policy import Grants, check_run, never_readable
from referee.jail.sandbox import DEFAULT_MODE
from referee.match.runner import Clock
from referee.rules import RuleError, RuleSet, deck_for


def difference_range(rules: RuleSet, players: int, metric: str = "score") -> tuple[float, float]:
    """The least and the most a deal pair's difference can be: candidate's match score minus
    the baseline's (``score``; a round scores at least minus the rank sums of the pain
    suits and at most one point per dealt card), or in the share of opponents beaten
    (``share``: −1 to 1). The test's stakes are capped by it (:mod:`referee.compare.sprt`)."""
    if metric == "share":
        return -1.0, 1.0
    deck, hand = deck_for(rules, players)
    suits: dict[int, int] = {}
    for c in deck:
        suits[c >> 4] = suits.get(c >> 4, 0) + (c & 15)
    worst = sum(sorted(suits.values(), reverse=True)[: rules.pain_cards_per_player])
    rounds = rules.rounds_for(players)
    lowest, highest = -worst * rounds, hand * players * rounds
    return float(lowest - highest), float(highest - lowest)


class CompareConfigError(ConfigFileError):
    """Settings that cannot be used; the message is one line."""


#: The most matches a comparison plays unless told otherwise (1000 deal pairs).
DEFAULT_MATCHES = 2000

_SPRT_KEYS = ("lower", "upper", "alpha", "beta", "min_pairs", "method")
#: Bounds in Elo instead of points: the test then runs on the share of opponents beaten.
_ELO_KEYS = ("elo0", "elo1")
#: What each deal pair's sample measures: the match score, or the share of the opponents
#: placed below (a shared place counts half), the quantity the rating model is about.
METRICS = ("score", "share")


def share_for_elo(elo: float) -> float:
    """The expected gain in the share of opponents beaten of a bot ``elo`` points stronger
    than the baseline, against opponents as strong as the baseline (Bradley–Terry on the
    Elo scale): 1 / (1 + 10^(−elo/400)) − ½."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0)) - 0.5


@dataclass(frozen=True)
class CompareConfig:
    """A validated comparison.

    ``sprt`` is the sequential test, or None for a fixed-size comparison of exactly
    ``matches`` matches. Bot names are unique: where the candidate, the baseline and the
    opponents share a name (a bot against a copy of itself), later ones get ``-2``, ``-3``.
    """

    name: str
    seed: int
    table_size: int
    matches: int
    parallel: int
    strike_limit: int
    rules: RuleSet
    clock: Clock
    candidate: BotSpec
    baseline: BotSpec
    opponents: tuple[BotSpec, ...]
    sprt: Sprt | None
    out: Path
    database: Path
    #: The sample of a deal pair: ``"score"`` (points per match) or ``"share"`` (share of
    #: the opponents beaten), the latter when the bounds are given in Elo.
    metric: str = "score"
    #: The bounds as given in Elo (``elo0``, ``elo1``), or None.
    elo: tuple[float, float] | None = None
    #: How started bots are confined: "bubblewrap" (the default) or "none" ([sandbox] mode).
    sandbox: str = DEFAULT_MODE
    #: Both matches of a deal pair hand each seat the same bot seed (common random
    #: numbers); off, the baseline's match gets seeds of its own.
    common_seeds: bool = True
    #: The comparison is of a fixed size because ``matches`` was given without a test
    #: (not because the test was turned off): said at the start of a run.
    fixed_by_matches: bool = False

    @property
    def max_pairs(self) -> int:
        """The most deal pairs: two matches each."""
        return self.matches // 2

    def fingerprint(self) -> dict[str, Any]:
        """What decides the schedule, the results and the verdict: a changed value refuses a
        resume (``parallel`` and ``matches`` may change between runs)."""

        def bot(b: BotSpec) -> dict[str, Any]:
            return {
                "name": b.name,
                "command": list(b.command),
                "workdir": str(b.workdir),
                "env": b.env,
                "limits": b.limits.fingerprint(),
                # Only when set, so that a comparison begun before it was kept resumes.
                **({"read": [str(p) for p in b.read]} if b.read else {}),
            }

        return {
            "name": self.name,
            "seed": self.seed,
            "table_size": self.table_size,
            "strike_limit": self.strike_limit,
            "rules": self.rules.to_table(),
            "clock": {
                "decision_ms": self.clock.decision_ms,
                "time_bank_ms": self.clock.time_bank_ms,
                "startup_ms": self.clock.startup_ms,
            },
            "candidate": bot(self.candidate),
            "baseline": bot(self.baseline),
            "opponents": [bot(b) for b in self.opponents],
            # The method only when not the betting test: a comparison begun when that was
            # the only test resumes with --sprt method=betting.
            "sprt": None
            if self.sprt is None
            else {
                k: getattr(self.sprt, k)
                for k in _SPRT_KEYS
                if k != "method" or self.sprt.method != "betting"
            },
            "metric": self.metric,
            "elo": None if self.elo is None else list(self.elo),
            "common_seeds": self.common_seeds,
        }

    def fingerprint_hash(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`fingerprint`."""
        text = json.dumps(self.fingerprint(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Overrides:
    """Settings given on the command line (None: not given). Paths are as typed (relative
    to the working directory); ``sprt`` is the ``--sprt`` words, e.g. ``["lower=0",
    "upper=5"]``, or ``["off"]``."""

    name: str | None = None
    candidate: str | None = None
    baseline: str | None = None
    opponents: list[str] | None = None
    rules: str | None = None
    table_size: int | None = None
    seed: int | None = None
    matches: int | None = None
    parallel: int | None = None
    common_seeds: bool | None = None
    out: str | None = None
    sprt: list[str] | None = None
    decision_ms: int | None = None
    time_bank_ms: int | None = None
    startup_ms: int | None = None
    #: ``--read`` paths: the organiser's grants, added to the file's ``[sandbox] read``.
    read: list[str] | None = None
    #: ``--sandbox``: the tier, in place of the file's ``[sandbox] mode``.
    sandbox: str | None = None


def parse_sprt_words(words: list[str]) -> dict[str, float | str]:
    """``["lower=0", "upper=5", ...]`` as a table; a one-line error for anything else."""
    table: dict[str, float | str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or key not in _SPRT_KEYS + _ELO_KEYS:
            raise CompareConfigError(
                f"--sprt: {word!r} is not allowed; allowed: off, or KEY=VALUE with KEY one of "
                f"{', '.join(_SPRT_KEYS + _ELO_KEYS)}, e.g. --sprt lower=0 upper=5 alpha=0.05 beta=0.05"
            )
        if key == "method":
            table[key] = value  # checked with the file's keys
            continue
        try:
            number = float(value)
        except ValueError:
            raise CompareConfigError(f"--sprt: {key} = {value!r} is not a number") from None
        table[key] = int(number) if key == "min_pairs" and number.is_integer() else number
    return table


Bound = Annotated[float, Field(allow_inf_nan=False), Allowed("a finite number")]
Elo = Annotated[float, Field(ge=-1000, le=1000)]
ErrorRate = Annotated[float, Field(gt=0, lt=0.5)]


class SprtTable(Table):
    """``[compare.sprt]``: the sequential test that stops a comparison once it can tell."""

    lower: Bound | None = None
    """H0: the candidate's mean gain over the baseline, in points per match (default 0)."""
    upper: Bound | None = None
    """H1: the gain the test should detect, in points per match (default 5)."""
    elo0: Elo | None = None
    """H0 in Elo instead of points (with elo1; the test then runs on the share beaten)."""
    elo1: Elo | None = None
    """H1 in Elo instead of points (with elo0)."""
    alpha: ErrorRate | None = None
    """The chance of accepting H1 when H0 holds (default 0.05)."""
    beta: ErrorRate | None = None
    """The chance of accepting H0 when H1 holds (default 0.05)."""
    min_pairs: Annotated[int, Field(ge=2)] | None = None
    """No decision before this many deal pairs (default 20)."""
    method: Literal["sprt", "betting"] | None = None
    """"sprt" (default: Wald's test, corrected for skew; fewest pairs) or "betting" (error
    rates guaranteed for any distribution of differences; more pairs)."""

    @model_validator(mode="after")
    def _one_scale(self) -> SprtTable:
        elo = (self.elo0, self.elo1)
        if elo != (None, None):
            if (self.lower, self.upper) != (None, None):
                raise ValueError(
                    "give the bounds either as lower/upper (points per match) or as "
                    "elo0/elo1 (Elo), not both"
                )
            if None in elo:
                raise ValueError("give both elo0 and elo1")
        return self


class CompareTable(Table):
    """``[compare]``: the bots, the number of matches and the test."""

    name: Name = "compare"
    """The comparison's name (and its results folder's)."""
    candidate: FilePath | None = None
    """The candidate's bot file."""
    baseline: FilePath | None = None
    """The baseline's bot file."""
    opponents: list[FilePath] = Field(default_factory=list)
    """The opponents' bot files, seated with the candidate and the baseline in turn."""
    table_size: TableSize | None = None
    """Players per match (default: one more than the opponents, as the rules allow)."""
    seed: Seed = 1
    """Draws each deal's opponents; the deals come from the comparison's secret deal key."""
    matches: Annotated[int, Field(ge=2, le=10_000_000)] | None = None
    """The most matches, two per deal pair (given without [compare.sprt]: exactly this many)."""
    parallel: Annotated[int, Field(ge=1, le=64)] | None = None
    """Matches played at once (default: the machine's cores)."""
    common_seeds: bool = True
    """Hand each seat the same bot seed in both matches of a deal pair (common random
    numbers: bots that use it face the same luck with the candidate and the baseline)."""
    strike_limit: Annotated[int, Field(ge=1, le=1000)] = 3
    """A bot's faults before it forfeits the rest of the comparison."""
    out: FilePath | None = None
    """The results folder (default: results/NAME, relative to this file's folder)."""
    sprt: SprtTable | Literal[False] | None = None
    """The sequential test, or false for a fixed number of matches."""


class CompareFile(Table):
    """A comparison file (``referee compare FILE``)."""

    compare: CompareTable = CompareTable.defaults()
    rules: RulesTable = RulesTable.defaults()
    clock: ClockTable = ClockTable.defaults()
    sandbox: SandboxTable = SandboxTable.defaults()


def _apply(data: dict[str, Any], flags: Overrides) -> dict[tuple[str, ...], str]:
    """Put the flags' values into ``data`` (a parsed file) in place; which key each flag set."""
    given: dict[tuple[str, ...], str] = {}
    cwd = Path.cwd()

    def put(keys: tuple[str, ...], value: Any, flag: str) -> None:
        table = data
        for key in keys[:-1]:
            inner = table.setdefault(key, {})
            if not isinstance(inner, dict):
                return  # the file's own error says the table is not a table
            table = inner
        table[keys[-1]] = value
        given[keys] = flag

    for key in ("name", "table_size", "seed", "matches", "parallel", "common_seeds"):
        value = getattr(flags, key)
        if value is not None:
            put(("compare", key), value, f"--{key.replace('_', '-')}")
    for key in ("candidate", "baseline", "out"):
        value = getattr(flags, key)
        if value is not None:
            put(("compare", key), str(cwd / value), f"--{key}")
    if flags.opponents is not None:
        put(("compare", "opponents"), [str(cwd / p) for p in flags.opponents], "--opponent")
    if flags.read:
        sandbox = data.setdefault("sandbox", {})
        if isinstance(sandbox, dict):
            listed = sandbox.get("read", [])
            listed = listed if isinstance(listed, list) else [listed]
            put(("sandbox", "read"), [*listed, *(str(cwd / p) for p in flags.read)], "--read")
    if flags.sandbox is not None:
        put(("sandbox", "mode"), flags.sandbox, "--sandbox")
    if flags.rules is not None:
        data["rules"] = {}
        put(("rules", "preset"), flags.rules, "--rules")
    for key in ("decision_ms", "time_bank_ms", "startup_ms"):
        value = getattr(flags, key)
        if value is not None:
            put(("clock", key), value, f"--{key.replace('_', '-')}")
    if flags.sprt == ["off"]:
        put(("compare", "sprt"), False, "--sprt")
    elif flags.sprt is not None:
        words = parse_sprt_words(flags.sprt)
        compare = data.get("compare")
        if isinstance(compare, dict) and not isinstance(compare.get("sprt"), dict):
            compare["sprt"] = {}
        for key, value in words.items():
            put(("compare", "sprt", key), value, f"--sprt {key}")
    return given


def load_compare(path: str | Path | None, flags: Overrides) -> CompareConfig:
    """Read the file (when given), apply the flags over it, and validate."""
    data: dict[str, Any] = {}
    base = Path.cwd()
    where = "referee compare"
    if path is not None:
        path = Path(path)
        data = read_toml(path, "comparison file", CompareConfigError)
        base = path.parent
        where = str(path)
    file_gives_matches = isinstance(data.get("compare"), dict) and "matches" in data["compare"]
    given = _apply(data, flags)
    model = validate(CompareFile, data, where, CompareConfigError, given)
    return _build(model, base, where, given, file_gives_matches)


def _build(
    model: CompareFile,
    base: Path,
    where: str,
    given: dict[tuple[str, ...], str],
    file_gives_matches: bool,
) -> CompareConfig:
    c = model.compare
    grants, granted = model.sandbox.grants(base, where, CompareConfigError)

    def bot_file(key: str, value: str | None) -> BotSpec:
        if value is None:
            raise CompareConfigError(
                f'{where}: no {key}; give --{key} FILE or [compare] {key} = "FILE"'
            )
        flag = given.get(("compare", key))
        return _load_bot(resolve(base, value), flag or f"{where} [compare] {key}", grants)

    candidate = bot_file("candidate", c.candidate)
    baseline = bot_file("baseline", c.baseline)
    label = given.get(("compare", "opponents")) or f"{where} [compare] opponents"
    opponents = [_load_bot(resolve(base, p), label, grants) for p in c.opponents]
    if not opponents:
        raise CompareConfigError(
            f"{where}: no opponents; give --opponent FILE (once per opponent) or "
            '[compare] opponents = ["FILE", ...]'
        )
    named = _unique_names([candidate, baseline, *opponents])
    candidate, baseline, opponents = named[0], named[1], named[2:]

    rules = model.rules.rule_set()
    lo, hi = rules.player_range()
    table_size = c.table_size if c.table_size is not None else min(max(1 + len(opponents), lo), hi)
    if table_size - 1 > len(opponents):
        raise CompareConfigError(
            f"{where}: table_size = {table_size} needs {table_size - 1} opponents at each "
            f"table, but {len(opponents)} are given; give more opponents or a smaller table"
        )
    try:
        rules.check_players(table_size)
    except RuleError as exc:
        raise CompareConfigError(
            f"{where}: table_size = {table_size} does not fit the rules: {exc}"
        ) from None
    matches = c.matches if c.matches is not None else DEFAULT_MATCHES
    if matches % 2:
        raise CompareConfigError(
            f"matches = {matches} is not allowed; allowed: an even number (two matches per deal pair)"
        )

    sprt: Sprt | None = None
    metric, elo = "score", None
    flags_sprt = any(k[:2] == ("compare", "sprt") for k in given)
    matches_given = file_gives_matches or ("compare", "matches") in given
    fixed = c.sprt is False or (c.sprt is None and matches_given and not flags_sprt)
    if not fixed:
        table = c.sprt if isinstance(c.sprt, SprtTable) else SprtTable()
        options = table.model_dump(exclude_none=True, exclude={"elo0", "elo1"})
        if table.elo0 is not None and table.elo1 is not None:
            metric, elo = "share", (table.elo0, table.elo1)
            options["lower"], options["upper"] = share_for_elo(elo[0]), share_for_elo(elo[1])
        low, high = difference_range(rules, table_size, metric)
        try:
            sprt = Sprt(**options, low=low, high=high)
        except ValueError as exc:
            raise CompareConfigError(f"{where}: [compare.sprt] {exc}") from None
        if sprt.min_pairs > matches // 2:
            raise CompareConfigError(
                f"matches = {matches} is fewer than the test's {sprt.min_pairs} deal pairs "
                f"before any decision ({2 * sprt.min_pairs} matches)"
            )
    out = resolve(base, c.out if c.out is not None else f"results/{c.name}")
    rules_never = never_readable(out, out / "compare.db")
    check_run(
        [candidate, baseline, *opponents],
        granted,
        rules_never,
        where,
        CompareConfigError,
        sandboxed=model.sandbox.mode != "none",
    )
    return CompareConfig(
        name=c.name,
        seed=c.seed,
        table_size=table_size,
        matches=matches,
        parallel=c.parallel if c.parallel is not None else default_parallel(),
        common_seeds=c.common_seeds,
        strike_limit=c.strike_limit,
        rules=rules,
        clock=model.clock.clock(),
        sandbox=model.sandbox.mode or tier_for("compare"),
        candidate=candidate,
        baseline=baseline,
        opponents=tuple(opponents),
        sprt=sprt,
        out=out,
        database=out / "compare.db",
        metric=metric,
        elo=elo,
        fixed_by_matches=fixed and c.sprt is None,
    )


def default_parallel() -> int:
    """Matches at once unless told: one per core this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, min(64, len(os.sched_getaffinity(0))))
    return max(1, min(64, os.cpu_count() or 1))


def _load_bot(path: Path, where: str, grants: Grants) -> BotSpec:
    try:
        bot = load_bot(path, grants)
    except BotConfigError as exc:
        raise CompareConfigError(f"{where}: {exc}") from None
    if bot.external:
        raise CompareConfigError(
            f"{where}: {path}: bot {bot.name!r} has no command; a comparison starts its bots itself"
        )
    return bot


def _unique_names(bots: list[BotSpec]) -> list[BotSpec]:
    """The bots with repeated names made unique by a ``-2``, ``-3`` ... suffix."""
    import dataclasses

    seen: set[str] = set()
    out = []
    for b in bots:
        name = b.name
        k = 2
        while name in seen:
            name = f"{b.name}-{k}"
            k += 1
        seen.add(name)
        out.append(b if name == b.name else dataclasses.replace(b, name=name))
    return out


def finite(x: float) -> float | None:
    """``x``, or None when it is NaN or infinite (for JSON)."""
    return x if math.isfinite(x) else None
