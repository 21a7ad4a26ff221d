"""Deterministic tournament schedules: round robin, duplicate, and balanced samples.

Everything follows from the tournament's public seed: the order of the tables, the seating
of each match and which matches share a deal. The same configuration always gives the same
schedule, which is what lets a killed tournament resume, and shards split it. The cards of
a deal do not follow from the schedule: deal number ``d`` is played from the match seed
``key.match_seed(d)`` of the tournament's secret deal key (:mod:`referee.match.dealkey`).

- **Round robin**: every k-subset of the bots is a table. A table's matches come in
  blocks of k, the k rotations of one cyclic seating order, so that over whole blocks
  every bot sits in every seat position equally often; successive blocks take different
  cyclic orders (all (k-1)! of them in turn), so that every bot also has every other bot
  as its neighbour equally often. Leftover matches (``matches_per_table`` not a multiple
  of k) take the rotations that keep each bot's seat counts most even.
- **Duplicate**: each deal is played under all k cyclic rotations of the seating, with the
  same deal, so the luck of the deal cancels out (as in duplicate bridge); successive
  deals take different cyclic orders.
- **Balanced sample**: when every k-subset would exceed ``max_matches``, tables are chosen
  greedily so that every pair of bots shares a table as equally as possible.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations, permutations
from math import comb, factorial

from referee.tournament.config import TournamentConfig


@dataclass(frozen=True)
class ScheduledMatch:
    """One match of the schedule: its position, seating (bot names by seat) and deal number.

    ``deal`` numbers the deals; in duplicate mode the k rotations of one deal share it (and
    so the match seed, which the tournament's deal key gives for the deal number).
    """

    index: int
    table: tuple[str, ...]
    seating: tuple[str, ...]
    deal: int

    @property
    def key(self) -> str:
        """A stable text key: ``index:seat0,seat1,...``."""
        return f"{self.index}:{','.join(self.seating)}"


def make_schedule(config: TournamentConfig) -> list[ScheduledMatch]:
    """The whole schedule of ``config``, in play order."""
    return build_schedule(
        [b.name for b in config.bots],
        table_size=config.table_size,
        matches_per_table=config.matches_per_table,
        seed=config.seed,
        mode=config.mode,
        max_matches=config.max_matches,
    )


def build_schedule(
    bots: Sequence[str],
    *,
    table_size: int,
    matches_per_table: int,
    seed: int,
    mode: str = "round_robin",
    max_matches: int = 0,
) -> list[ScheduledMatch]:
    """The schedule for these bots (see the module docstring)."""
    k = table_size
    if not 3 <= k <= len(bots):
        raise ValueError(
            f"table_size: {k} is not allowed with {len(bots)} bots; allowed: 3 to {len(bots)}"
        )
    rng = random.Random(f"sticheln/schedule/v1/{seed}")
    names = sorted(bots)
    n_tables = comb(len(names), k)
    if max_matches and n_tables * matches_per_table > max_matches:
        tables = _balanced_tables(names, k, max(1, max_matches // matches_per_table), rng)
    else:
        tables = list(combinations(names, k))
        rng.shuffle(tables)
    seat_counts: dict[str, list[int]] = {b: [0] * k for b in names}
    plans: list[tuple[tuple[str, ...], list[tuple[str, ...]]]] = []  # per table: its seatings
    leftover: list[tuple[list[tuple[str, ...]], tuple[tuple[str, ...], ...]]] = []
    for table in tables:
        blocks = -(-matches_per_table // k)
        orders = _cyclic_orders(table, blocks, rng)
        cycles = [[tuple(o[r:] + o[:r]) for r in range(k)] for o in orders]
        if mode == "duplicate":
            plans.append((table, [s for b in range(blocks) for s in cycles[b % len(cycles)]]))
            continue
        whole = matches_per_table - matches_per_table % k
        seatings = [cycles[(j // k) % len(cycles)][j % k] for j in range(whole)]
        for seating in seatings:
            _count(seat_counts, seating)
        rotations = cycles[(whole // k) % len(cycles)]
        chosen: tuple[tuple[str, ...], ...] = ()
        if whole < matches_per_table:
            # The leftover matches take distinct rotations: first greedily, the set that
            # keeps every bot's seat counts most even, then improved below.
            chosen = min(
                combinations(rotations, matches_per_table - whole),
                key=lambda c: (_cost_all(seat_counts, c), rng.random()),
            )
            for seating in chosen:
                _count(seat_counts, seating)
        leftover.append((rotations, chosen))
        plans.append((table, seatings))
    _balance_leftovers(leftover, seat_counts, matches_per_table % k)
    out: list[ScheduledMatch] = []
    deal = 0
    rest = iter(leftover)
    for table, seatings in plans:
        if mode == "duplicate":
            for d in range(matches_per_table // k):
                for seating in seatings[d * k : (d + 1) * k]:
                    out.append(ScheduledMatch(len(out), tuple(table), seating, deal))
                deal += 1
            continue
        _, chosen = next(rest)
        for seating in [*seatings, *chosen]:
            out.append(ScheduledMatch(len(out), tuple(table), seating, deal))
            deal += 1
    return out


def _cyclic_orders(table: Sequence[str], wanted: int, rng: random.Random) -> list[list[str]]:
    """``wanted`` distinct cyclic orders of ``table`` (all (k-1)! of them, shuffled, when
    there are no more than that): each block of k matches plays the k rotations of one.
    Over all the orders every bot has every other bot as its left (and right) neighbour
    equally often, so no bot always plays just before the same opponent."""
    first, rest = table[0], list(table[1:])
    if factorial(len(rest)) <= wanted:
        orders = [[first, *p] for p in permutations(rest)]
        rng.shuffle(orders)
        return orders
    seen: set[tuple[str, ...]] = set()
    orders = []
    while len(orders) < wanted:
        rng.shuffle(rest)
        if tuple(rest) not in seen:
            seen.add(tuple(rest))
            orders.append([first, *rest])
    return orders


def _balance_leftovers(
    leftover: list[tuple[list[tuple[str, ...]], tuple[tuple[str, ...], ...]]],
    seat_counts: dict[str, list[int]],
    extra: int,
) -> None:
    """Swap tables' leftover rotation sets while that makes seat counts more even."""
    if not extra:
        return
    improved = True
    passes = 0
    while improved and passes < 50:
        improved = False
        passes += 1
        for t, (rotations, chosen) in enumerate(leftover):
            for seating in chosen:
                _count(seat_counts, seating, -1)
            best = min(
                combinations(rotations, extra),
                key=lambda c: (_cost_all(seat_counts, c), c != chosen),
            )
            if best != chosen and _cost_all(seat_counts, best) < _cost_all(seat_counts, chosen):
                chosen = best
                leftover[t] = (rotations, chosen)
                improved = True
            for seating in chosen:
                _count(seat_counts, seating)


def _count(seat_counts: dict[str, list[int]], seating: Sequence[str], by: int = 1) -> None:
    for pos, bot in enumerate(seating):
        seat_counts[bot][pos] += by


def _cost_all(seat_counts: dict[str, list[int]], seatings: Sequence[Sequence[str]]) -> int:
    # How uneven the seat counts become: the sum of squares grows fastest where a bot
    # already sat in that position most.
    extra: dict[tuple[str, int], int] = {}
    for seating in seatings:
        for pos, bot in enumerate(seating):
            extra[(bot, pos)] = extra.get((bot, pos), 0) + 1
    return sum(
        (seat_counts[bot][pos] + add) ** 2 - seat_counts[bot][pos] ** 2
        for (bot, pos), add in extra.items()
    )


def _balanced_tables(
    names: list[str], k: int, count: int, rng: random.Random
) -> list[tuple[str, ...]]:
    """``count`` tables, chosen so that pair co-occurrences and appearances stay even."""
    pairs = {(a, b): 0 for a, b in combinations(names, 2)}
    appearances = dict.fromkeys(names, 0)

    def pair(a: str, b: str) -> int:
        return pairs[(a, b) if a < b else (b, a)]

    tables: list[tuple[str, ...]] = []
    for _ in range(count):  # greedy: the least-seen bot first, then its least-met partners
        first = min(names, key=lambda b: (appearances[b], rng.random()))
        chosen = [first]
        while len(chosen) < k:
            candidate = min(
                (b for b in names if b not in chosen),
                key=lambda b: (
                    max(pair(b, c) for c in chosen),
                    sum(pair(b, c) for c in chosen),
                    appearances[b],
                    rng.random(),
                ),
            )
            chosen.append(candidate)
        table = tuple(sorted(chosen))
        for a, b in combinations(table, 2):
            pairs[(a, b)] += 1
        for b in table:
            appearances[b] += 1
        tables.append(table)
    _improve(tables, pairs, appearances, rng)
    return [tuple(sorted(t)) for t in tables]


def _improve(
    tables: list[tuple[str, ...]],
    pairs: dict[tuple[str, str], int],
    appearances: dict[str, int],
    rng: random.Random,
    rounds: int = 0,
) -> None:
    """Local search after the greedy pass: swap one bot of a table for another when that
    makes the pair counts and the appearances more even (lower sums of squares)."""
    names = sorted(appearances)
    rounds = rounds or max(20_000, 60 * len(tables) * len(tables[0]))

    def key(a: str, b: str) -> tuple[str, str]:
        return (a, b) if a < b else (b, a)

    for _ in range(rounds):
        t = rng.randrange(len(tables))
        table = tables[t]
        out_bot = rng.choice(table)
        in_bot = rng.choice(names)
        if in_bot in table:
            continue
        rest = [b for b in table if b != out_bot]
        # Change in sum of squares when out_bot leaves and in_bot joins this table.
        delta = 0
        for c in rest:
            po, pi = pairs[key(out_bot, c)], pairs[key(in_bot, c)]
            delta += (po - 1) ** 2 - po**2 + (pi + 1) ** 2 - pi**2
        ao, ai = appearances[out_bot], appearances[in_bot]
        delta += (ao - 1) ** 2 - ao**2 + (ai + 1) ** 2 - ai**2
        if delta < 0 or (delta == 0 and rng.random() < 0.1):  # sideways moves escape plateaus
            for c in rest:
                pairs[key(out_bot, c)] -= 1
                pairs[key(in_bot, c)] += 1
            appearances[out_bot] -= 1
            appearances[in_bot] += 1
            tables[t] = (*rest, in_bot)


def pair_counts(schedule: Sequence[ScheduledMatch]) -> dict[tuple[str, str], int]:
    """How many matches each pair of bots shares (for checks and the dry run)."""
    counts: dict[tuple[str, str], int] = {}
    for m in schedule:
        for a, b in combinations(sorted(m.seating), 2):
            counts[(a, b)] = counts.get((a, b), 0) + 1
    return counts


def seat_balance(schedule: Sequence[ScheduledMatch]) -> dict[str, list[int]]:
    """Per bot, how often it sits in each seat position."""
    k = len(schedule[0].seating) if schedule else 0
    counts: dict[str, list[int]] = {}
    for m in schedule:
        for pos, bot in enumerate(m.seating):
            counts.setdefault(bot, [0] * k)[pos] += 1
    return counts


def last_seatings(schedule: Sequence[ScheduledMatch]) -> dict[int, int]:
    """Per deal number, the index of the last scheduled match that plays it: in duplicate
    mode a deal's seed may be revealed to the bots only at the end of that match."""
    last: dict[int, int] = {}
    for m in schedule:
        last[m.deal] = max(m.index, last.get(m.deal, m.index))
    return last
