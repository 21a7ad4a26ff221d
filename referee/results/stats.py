"""From the store's seat rows to what the ratings and the standings tables take: match
outcomes (places by seat, in finishing order) and per-bot figures."""

from __future__ import annotations

import math
from collections.abc import Sequence

from referee.results.ratings import BotStats, MatchOutcome, quantile
from referee.results.store import StoredResult


def outcomes_from(results: Sequence[StoredResult]) -> list[MatchOutcome]:
    """Group stored seat rows into match outcomes, in finishing order."""
    by_match: dict[int, list[StoredResult]] = {}
    for r in results:
        by_match.setdefault(r.idx, []).append(r)
    out = []
    for idx, rows in by_match.items():
        rows.sort(key=lambda r: r.seat)
        out.append(
            MatchOutcome(
                bots=tuple(r.bot for r in rows),
                places=tuple(r.place for r in rows),
                key=f"{idx:08d}",
                forfeited=tuple(r.forfeited for r in rows),
            )
        )
    return out


def bot_stats(results: Sequence[StoredResult]) -> dict[str, BotStats]:
    """Per bot: matches, mean score and place, faults, think-time p50/p99."""
    acc: dict[str, list[StoredResult]] = {}
    for r in results:
        acc.setdefault(r.bot, []).append(r)
    stats = {}
    for bot, rows in acc.items():
        think = [t / 1000 for r in rows for t in r.think_us]
        stats[bot] = BotStats(
            bot=bot,
            matches=len(rows),
            mean_score=sum(r.total for r in rows) / len(rows),
            mean_place=sum(r.place for r in rows) / len(rows),
            faults=sum(r.faults for r in rows),
            # No decision at all is no think time ("–"), not 0 ms.
            think_p50_ms=quantile(think, 0.5) if think else math.nan,
            think_p99_ms=quantile(think, 0.99) if think else math.nan,
        )
    return stats
