"""A comparison's settings: a ``[compare]`` TOML file, command-line flags, or both.

The file (examples/compare.toml is a commented example) and the flags name the same
settings; a flag overrides the file's value. Every mistake is refused before any bot is
started, in one line that names the file or flag, the key and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.compare.sprt import Sprt
from referee.match.bots import BotConfigError, BotSpec, load_bot
from referee.match.runner import Clock
from referee.rules import RuleError, RuleSet, from_table


class CompareConfigError(ValueError):
    """Settings that cannot be used; the message is one line."""


#: The most matches a comparison plays unless told otherwise (1000 deal pairs).
DEFAULT_MATCHES = 2000

_SPRT_KEYS = ("lower", "upper", "alpha", "beta", "min_pairs")
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


_COMPARE_KEYS = (
    "name",
    "candidate",
    "baseline",
    "opponents",
    "table_size",
    "seed",
    "matches",
    "parallel",
    "strike_limit",
    "out",
    "sprt",
)


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
                "limits": {"cpu_seconds": b.limits.cpu_seconds, "memory_mb": b.limits.memory_mb},
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
            "sprt": None if self.sprt is None else {k: getattr(self.sprt, k) for k in _SPRT_KEYS},
            "metric": self.metric,
            "elo": None if self.elo is None else list(self.elo),
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
    out: str | None = None
    sprt: list[str] | None = None
    decision_ms: int | None = None
    time_bank_ms: int | None = None
    startup_ms: int | None = None


def parse_sprt_words(words: list[str]) -> dict[str, float]:
    """``["lower=0", "upper=5", ...]`` as a table; a one-line error for anything else."""
    table: dict[str, float] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or key not in _SPRT_KEYS + _ELO_KEYS:
            raise CompareConfigError(
                f"--sprt: {word!r} is not allowed; allowed: off, or KEY=VALUE with KEY one of "
                f"{', '.join(_SPRT_KEYS + _ELO_KEYS)}, e.g. --sprt lower=0 upper=5 alpha=0.05 beta=0.05"
            )
        try:
            number = float(value)
        except ValueError:
            raise CompareConfigError(f"--sprt: {key} = {value!r} is not a number") from None
        table[key] = int(number) if key == "min_pairs" and number.is_integer() else number
    return table


def load_compare(path: str | Path | None, flags: Overrides) -> CompareConfig:
    """Read the file (when given), apply the flags over it, and validate."""
    data: dict[str, Any] = {}
    base = Path.cwd()
    where = "referee compare"
    if path is not None:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CompareConfigError(f"{path}: comparison file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CompareConfigError(f"{path}: cannot read the file: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise CompareConfigError(f"{path}: not valid TOML: {exc}") from None
        base = path.parent
        where = str(path)
    return _validate(data, base, where, flags)


def _validate(data: dict[str, Any], base: Path, where: str, flags: Overrides) -> CompareConfig:
    unknown = sorted(set(data) - {"compare", "rules", "clock"})
    if unknown:
        raise CompareConfigError(
            f"{where}: unknown table [{unknown[0]}]; allowed: [compare], [compare.sprt], [rules], [clock]"
        )
    c = data.get("compare", {})
    if not isinstance(c, dict):
        raise CompareConfigError(f"{where}: [compare] must be a table")
    extra = sorted(set(c) - set(_COMPARE_KEYS))
    if extra:
        raise CompareConfigError(
            f"{where}: [compare] has unknown key {extra[0]!r}; allowed: {', '.join(_COMPARE_KEYS)}"
        )
    cwd = Path.cwd()

    def bot_file(key: str, flag: str | None) -> BotSpec:
        if flag is not None:
            return _load_bot(Path(flag), f"--{key}")
        value = c.get(key)
        if value is None:
            raise CompareConfigError(
                f'{where}: no {key}; give --{key} FILE or [compare] {key} = "FILE"'
            )
        if not isinstance(value, str):
            raise CompareConfigError(f"{where}: [compare] {key} must be a bot file path")
        return _load_bot(base / value, f"{where} [compare] {key}")

    candidate = bot_file("candidate", flags.candidate)
    baseline = bot_file("baseline", flags.baseline)
    if flags.opponents is not None:
        opponents = [_load_bot(Path(p), "--opponent") for p in flags.opponents]
    else:
        listed = c.get("opponents", [])
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise CompareConfigError(f"{where}: [compare] opponents must be a list of bot files")
        opponents = [_load_bot(base / p, f"{where} [compare] opponents") for p in listed]
    if not opponents:
        raise CompareConfigError(
            f"{where}: no opponents; give --opponent FILE (once per opponent) or "
            '[compare] opponents = ["FILE", ...]'
        )
    named = _unique_names([candidate, baseline, *opponents])
    candidate, baseline, opponents = named[0], named[1], named[2:]

    rules_table = data.get("rules", {})
    if not isinstance(rules_table, dict):
        raise CompareConfigError(f"{where}: [rules] must be a table")
    if flags.rules is not None:
        rules_table = {"preset": flags.rules}
    try:
        rules = from_table(rules_table)
    except RuleError as exc:
        raise CompareConfigError(f"{where}: [rules] {exc}") from None

    clock_table = data.get("clock", {})
    if not isinstance(clock_table, dict):
        raise CompareConfigError(f"{where}: [clock] must be a table")
    extra = sorted(set(clock_table) - {"decision_ms", "time_bank_ms", "startup_ms"})
    if extra:
        raise CompareConfigError(
            f"{where}: [clock] has unknown key {extra[0]!r}; allowed: decision_ms, time_bank_ms, startup_ms"
        )
    clock_table = dict(clock_table)
    for key in ("decision_ms", "time_bank_ms", "startup_ms"):
        if getattr(flags, key) is not None:
            clock_table[key] = getattr(flags, key)
    try:
        clock = Clock(**clock_table)
    except (TypeError, ValueError) as exc:
        raise CompareConfigError(f"{where}: [clock] {exc}") from None

    def number(key: str, flag: int | None, default: int, low: int, high: int) -> int:
        value = flag if flag is not None else c.get(key, default)
        source = f"--{key.replace('_', '-')}" if flag is not None else f"{where}: [compare] {key}"
        if type(value) is not int or not low <= value <= high:
            raise CompareConfigError(
                f"{source} = {value!r} is not allowed; allowed: a whole number from {low} to {high}"
            )
        return value

    lo, hi = rules.player_range()
    table_size = number("table_size", flags.table_size, min(max(1 + len(opponents), lo), hi), 3, 8)
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
    seed = number("seed", flags.seed, 1, 0, (1 << 64) - 1)
    parallel = number("parallel", flags.parallel, 1, 1, 64)
    strike_limit = number("strike_limit", None, 3, 1, 1000)
    matches_given = flags.matches is not None or "matches" in c
    matches = number("matches", flags.matches, DEFAULT_MATCHES, 2, 10_000_000)
    if matches % 2:
        raise CompareConfigError(
            f"matches = {matches} is not allowed; allowed: an even number (two matches per deal pair)"
        )

    sprt_table: dict[str, Any] | None = None
    file_sprt = c.get("sprt")
    if file_sprt is not None and file_sprt is not False:
        if not isinstance(file_sprt, dict):
            raise CompareConfigError(
                f"{where}: [compare] sprt must be a table [compare.sprt] (or false for a fixed-size comparison)"
            )
        extra = sorted(set(file_sprt) - set(_SPRT_KEYS + _ELO_KEYS))
        if extra:
            raise CompareConfigError(
                f"{where}: [compare.sprt] has unknown key {extra[0]!r}; allowed: "
                f"{', '.join(_SPRT_KEYS + _ELO_KEYS)}"
            )
        sprt_table = dict(file_sprt)
    if flags.sprt is not None:
        if flags.sprt == ["off"]:
            sprt_table = None
            file_sprt = False
        else:
            sprt_table = {**(sprt_table or {}), **parse_sprt_words(flags.sprt)}
    sprt: Sprt | None
    metric, elo = "score", None
    if sprt_table is not None and set(sprt_table) & set(_ELO_KEYS):
        if set(sprt_table) & {"lower", "upper"}:
            raise CompareConfigError(
                f"{where}: [compare.sprt] give the bounds either as lower/upper (points per "
                "match) or as elo0/elo1 (Elo), not both"
            )
        if not set(_ELO_KEYS) <= set(sprt_table):
            raise CompareConfigError(f"{where}: [compare.sprt] give both elo0 and elo1")
        e0, e1 = sprt_table.pop("elo0"), sprt_table.pop("elo1")
        for key, value in (("elo0", e0), ("elo1", e1)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise CompareConfigError(
                    f"{where}: [compare.sprt] {key} = {value!r} is not a number"
                )
            if not -1000 <= value <= 1000:
                raise CompareConfigError(
                    f"{where}: [compare.sprt] {key} = {value!r} is not allowed; allowed: -1000 to 1000 Elo"
                )
        metric, elo = "share", (float(e0), float(e1))
        sprt_table["lower"], sprt_table["upper"] = share_for_elo(e0), share_for_elo(e1)
    if sprt_table is None and (file_sprt is False or (matches_given and flags.sprt is None)):
        sprt = None  # a fixed-size comparison of exactly `matches` matches
    else:
        try:
            sprt = Sprt(**(sprt_table or {}))
        except (TypeError, ValueError) as exc:
            raise CompareConfigError(f"{where}: [compare.sprt] {exc}") from None
        if sprt.min_pairs > matches // 2:
            raise CompareConfigError(
                f"matches = {matches} is fewer than the test's {sprt.min_pairs} deal pairs "
                f"before any decision ({2 * sprt.min_pairs} matches)"
            )

    name = flags.name if flags.name is not None else c.get("name", "compare")
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise CompareConfigError(
            f"{where}: name = {name!r} is not allowed; allowed: letters, digits, '-', '_', '.'"
        )
    if flags.out is not None:
        out = (cwd / flags.out).resolve()
    else:
        value = c.get("out", f"results/{name}")
        if not isinstance(value, str):
            raise CompareConfigError(f"{where}: [compare] out must be a string")
        out = (base / value).resolve()
    return CompareConfig(
        name=name,
        seed=seed,
        table_size=table_size,
        matches=matches,
        parallel=parallel,
        strike_limit=strike_limit,
        rules=rules,
        clock=clock,
        candidate=candidate,
        baseline=baseline,
        opponents=tuple(opponents),
        sprt=sprt,
        out=out,
        database=out / "compare.db",
        metric=metric,
        elo=elo,
    )


def _load_bot(path: Path, where: str) -> BotSpec:
    try:
        bot = load_bot(path)
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
