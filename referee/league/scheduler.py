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
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
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


def choose_table(
    candidates: Sequence[str], size: int, history: History, rng: random.Random
) -> tuple[str, ...]:
    """The seating of the next match: ``size`` distinct bots of ``candidates``, by seat.

    Raises ValueError when there are fewer than ``size`` distinct candidates.
    """
    pool = sorted(set(candidates))
    if len(pool) < size:
        raise ValueError(f"{len(pool)} bots are idle; a table needs {size}")
    rng.shuffle(pool)
    inf = math.inf

    def uncertain(bot: str) -> float:
        return -history.uncertainty.get(bot, inf)

    def played(bot: str) -> int:
        return history.matches.get(bot, 0)

    # min() keeps the first of equal keys: the shuffled order breaks ties.
    table = [min(pool, key=lambda b: (uncertain(b), played(b)))]
    while len(table) < size:
        rest = [b for b in pool if b not in table]
        table.append(
            min(
                rest,
                key=lambda b: (
                    sum(history.met.get(pair(b, t), 0) for t in table),
                    uncertain(b),
                    played(b),
                ),
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
