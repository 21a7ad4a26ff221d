"""Choosing the league's next table among the bots with an idle stream. Pure.

The league plays whenever ``table_size`` different bots have an idle stream. A table is
built greedily:

1. the first bot is the one whose rating is least certain (the widest published
   interval; a bot without one counts as infinitely uncertain), then the one with the
   fewest matches;
2. each further bot is the one that has shared a table least often with the bots
   already chosen, then the least certain, then the one with the fewest matches.

Ties are broken by a seeded random order, so a league replays the same choices from the
same history. The seating then rotates: seat by seat, the chosen bot that has sat in that
seat position least often takes it.

Some bots are kept apart (:class:`SeatingRules`): by default no two versions of one bot
(one family: ``alpha`` and ``alpha@v2``) and no two bots of one owner sit at one table,
since they could play as one. Each bot then has two marks, its family and its owner (a
relaxed rule, or no owner given, makes the mark the bot's own), and a table takes no
mark twice. A bot is chosen only when the table can still be filled after it: the
remaining seats are a matching between families and owners, found exactly
(:func:`can_seat`), so the greedy choice never paints itself into a corner and a table
is refused only when none exists.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field


def pair(a: str, b: str) -> tuple[str, str]:
    """The key of an unordered pair of bots."""
    return (a, b) if a < b else (b, a)


@dataclass
class History:
    """What the scheduler knows of the matches so far."""

    #: Matches shared at a table, by pair of bots.
    met: dict[tuple[str, str], int] = field(default_factory=dict)
    #: Matches played, by bot.
    matches: dict[str, int] = field(default_factory=dict)
    #: How often each bot sat in each seat position.
    seats: dict[str, list[int]] = field(default_factory=dict)
    #: The width of each bot's published 95% interval, in Elo.
    uncertainty: dict[str, float] = field(default_factory=dict)

    def add(self, seating: Sequence[str]) -> None:
        """Count one match."""
        for i, bot in enumerate(seating):
            self.matches[bot] = self.matches.get(bot, 0) + 1
            counts = self.seats.setdefault(bot, [])
            counts.extend([0] * (i + 1 - len(counts)))
            counts[i] += 1
            for other in seating[i + 1 :]:
                key = pair(bot, other)
                self.met[key] = self.met.get(key, 0) + 1

    def set_uncertainty(self, widths: Mapping[str, float]) -> None:
        """Take the interval widths of freshly published standings."""
        self.uncertainty = {b: w for b, w in widths.items() if not math.isnan(w)}


@dataclass(frozen=True)
class SeatingRules:
    """Who may sit at one table (a league file's ``[seating]``)."""

    #: Two versions of one bot (one family) may sit at one table.
    same_family: bool = False
    #: Two bots of one owner may sit at one table (bots without an owner always may).
    same_owner: bool = False

    def marks(self, bot: str, family: str, owner: str) -> Marks:
        """The two marks of a bot: a table holds no mark twice."""
        return (
            ("family", family) if not self.same_family and family else ("bot", bot),
            ("owner", owner) if not self.same_owner and owner else ("bot", bot),
        )


#: A bot's (family mark, owner mark).
Marks = tuple[Hashable, Hashable]


def _augment(
    family: Hashable,
    seen: set[Hashable],
    edges: Mapping[Hashable, list[Hashable]],
    matched: dict[Hashable, Hashable],
) -> bool:
    """Kuhn's augmenting path from ``family``; a function of the module, not a closure
    calling itself (that is a reference cycle each call, left for the collector)."""
    for owner in edges[family]:
        if owner in seen:
            continue
        seen.add(owner)
        if owner not in matched or _augment(matched[owner], seen, edges, matched):
            matched[owner] = family
            return True
    return False


def _matching(bots: Sequence[str], marks: Mapping[str, Marks], need: int) -> int:
    """How many of ``bots`` (up to ``need``) can sit together: the size of a maximum
    matching between family marks and owner marks, each bot an edge. A greedy pass first
    (it usually finds ``need`` at once), then Kuhn's augmenting paths from the families
    left over; the graphs are a league's idle bots, small."""
    edges: dict[Hashable, list[Hashable]] = {}
    matched: dict[Hashable, Hashable] = {}  # owner mark -> family mark
    used: set[Hashable] = set()
    for b in bots:
        family, owner = marks[b]
        edges.setdefault(family, []).append(owner)
        if family not in used and owner not in matched:
            matched[owner] = family
            used.add(family)
            if len(used) >= need:
                return need

    size = len(used)
    for family in edges:
        if size >= need:
            break
        if family not in used and _augment(family, set(), edges, matched):
            used.add(family)
            size += 1
    return size


def _fits(table: Sequence[str], bot: str, marks: Mapping[str, Marks] | None) -> bool:
    """``bot`` shares no mark with the bots of ``table``."""
    if marks is None:
        return True
    family, owner = marks[bot]
    return all(marks[t][0] != family and marks[t][1] != owner for t in table)


def can_seat(
    candidates: Sequence[str], size: int, marks: Mapping[str, Marks] | None = None
) -> bool:
    """True when ``size`` of ``candidates`` can sit at one table (no mark twice)."""
    pool = sorted(set(candidates))
    if len(pool) < size:
        return False
    return marks is None or _matching(pool, marks, size) >= size


def choose_table(
    candidates: Sequence[str],
    size: int,
    history: History,
    rng: random.Random,
    marks: Mapping[str, Marks] | None = None,
) -> tuple[str, ...]:
    """The seating of the next match: ``size`` distinct bots of ``candidates``, by seat,
    no two sharing a mark of ``marks`` (bot → :meth:`SeatingRules.marks`; None: any bots).

    Raises ValueError when no such table can be made of the candidates.
    """
    pool = sorted(set(candidates))
    if len(pool) < size:
        raise ValueError(f"{len(pool)} bots are idle; a table needs {size}")
    if not can_seat(pool, size, marks):
        raise ValueError(
            f"the {len(pool)} idle bots cannot fill a table of {size}: too many share a "
            "family or an owner"
        )
    rng.shuffle(pool)
    inf = math.inf

    def uncertain(bot: str) -> float:
        return -history.uncertainty.get(bot, inf)

    def played(bot: str) -> int:
        return history.matches.get(bot, 0)

    def keeps_a_table(table: list[str], bot: str) -> bool:
        """``bot`` may join ``table`` and the rest can still be filled after it."""
        if not _fits(table, bot, marks):
            return False
        if marks is None:
            return True
        joined = [*table, bot]
        rest = [b for b in pool if b not in joined and _fits(joined, b, marks)]
        need = size - len(joined)
        return _matching(rest, marks, need) >= need

    def best(rest: list[str], key: Callable[[str], tuple[float, ...]], table: list[str]) -> str:
        """The first of ``rest`` by ``key`` (the shuffled order breaking ties, as min()
        would) that keeps a whole table possible: usually the very first."""
        return next(b for b in sorted(rest, key=key) if keeps_a_table(table, b))

    table: list[str] = []
    table.append(best(pool, lambda b: (uncertain(b), played(b)), table))
    while len(table) < size:
        table.append(
            best(
                [b for b in pool if b not in table],
                lambda b: (
                    sum(history.met.get(pair(b, t), 0) for t in table),
                    uncertain(b),
                    played(b),
                ),
                table,
            )
        )
    seating: list[str] = []
    for position in range(size):

        def sat(bot: str, position: int = position) -> int:
            counts = history.seats.get(bot, [])
            return counts[position] if position < len(counts) else 0

        bot = min((b for b in table if b not in seating), key=sat)
        seating.append(bot)
    return tuple(seating)
