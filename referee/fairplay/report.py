"""Fair play over many matches: per bot and per pair of bots, the running test, the
effect, and the decisions that weigh most; as the ``fairplay.json`` document and a table.

:class:`FairPlay` takes matches one at a time (:meth:`FairPlay.add`), in the order they
finished, so a league can feed it as matches arrive; its state is a small JSON document
(:meth:`FairPlay.state`, :meth:`FairPlay.from_state`), so it need not read old matches
again.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from referee.fairplay.decisions import MatchDecisions
from referee.fairplay.stats import Monitor
from referee.fairplay.value import Evaluator, Fit, Settings

#: Defaults, chosen by measurement (docs/fairplay.md): the false-alarm bound, and the
#: mean rank above 1/2 that an honest bot's score may reach before it counts as evidence.
ALPHA = 0.01
MARGIN = 0.0
PAIR_MARGIN = 0.0
#: Rounds a pair must share before it is reported.
PAIR_MIN_UNITS = 8
#: Decisions kept per bot: those whose choice fitted the true deal best.
TOP = 8


@dataclass(frozen=True)
class Options:
    """The test's settings: simulation per decision, threshold and margins."""

    settings: Settings = field(default_factory=Settings)
    alpha: float = ALPHA
    margin: float = MARGIN
    pair_margin: float = PAIR_MARGIN
    pair_min_units: int = PAIR_MIN_UNITS


class FairPlay:
    """The fair-play test over the matches added so far."""

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()
        self.evaluator = Evaluator(self.options.settings)
        self.bots: dict[str, Monitor] = {}
        self.pairs: dict[tuple[str, str], Monitor] = {}
        #: Per bot, the decisions that weigh most: (excess, details), smallest first.
        self.top: dict[str, list[tuple[float, str, dict[str, Any]]]] = {}
        self.matches = 0
        #: Match ids already added (a league adds each match once).
        self.seen: set[str] = set()

    # -- feeding ---------------------------------------------------------------------

    def add(self, match: MatchDecisions, only: Sequence[str] = ()) -> None:
        """Evaluate and add one match (its decisions by the bots in ``only``, or all)."""
        if match.match_id and match.match_id in self.seen:
            return
        wanted = set(only)
        fits = [
            self.evaluator.fit(d)
            for d in match.decisions
            if not wanted
            or d.bot in wanted
            or any(match.seating[t] in wanted for t in range(len(match.seating)) if t != d.seat)
        ]
        self.add_fits(match, fits)

    def add_fits(self, match: MatchDecisions, fits: Sequence[Fit]) -> None:
        """Add one match's evaluated decisions."""
        self.matches += 1
        if match.match_id:
            self.seen.add(match.match_id)
        seating = match.seating
        rounds = sorted({f.decision.round_index for f in fits})
        for r in rounds:
            here = [f for f in fits if f.decision.round_index == r]
            # One unit per bot per round: the decisions of one round share its deal.
            by_bot: dict[str, list[tuple[float, float]]] = {}
            for f in here:
                seat = f.decision.seat
                if f.informative[seat]:
                    by_bot.setdefault(f.decision.bot, []).append((f.rank[seat], f.excess[seat]))
                    self._keep(f)
            for bot, items in by_bot.items():
                self._monitor(self.bots, bot, self.options.margin).add(
                    sum(r - 0.5 for r, _ in items) / len(items),
                    sum(x for _, x in items),
                    len(items),
                )
            # One unit per pair of seats per round: each one's choices valued for the two as a team.
            by_pair: dict[tuple[str, str], list[tuple[float, float]]] = {}
            for f in here:
                seat = f.decision.seat
                for t in range(len(seating)):
                    if t == seat or not f.informative[t]:
                        continue
                    a, b = sorted((seating[seat], seating[t]))
                    by_pair.setdefault((a, b), []).append((f.rank[t], f.excess[t]))
            for pair, items in by_pair.items():
                self._monitor(self.pairs, pair, self.options.pair_margin).add(
                    sum(r - 0.5 for r, _ in items) / len(items),
                    sum(x for _, x in items),
                    len(items),
                )

    def _monitor(self, table: dict[Any, Monitor], key: Any, margin: float) -> Monitor:
        m = table.get(key)
        if m is None:
            m = table[key] = Monitor(alpha=self.options.alpha, margin=margin)
        return m

    def _keep(self, fit: Fit) -> None:
        d = fit.decision
        excess = fit.excess[d.seat]
        kept = self.top.setdefault(d.bot, [])
        if len(kept) >= TOP and excess <= kept[0][0]:
            return
        detail = {
            "match_id": d.match_id,
            "moment": d.moment,
            "round": d.round_index + 1,
            "trick": d.trick + 1 if d.trick >= 0 else None,
            "kind": d.kind,
            "seat": d.seat,
            "excess": round(excess, 3),
            "rank": round(fit.rank[d.seat], 3),
        }
        item = (excess, f"{d.match_id}#{d.moment}#{d.seat}", detail)
        if len(kept) >= TOP:
            heapq.heapreplace(kept, item)
        else:
            heapq.heappush(kept, item)

    # -- results ---------------------------------------------------------------------

    def document(self) -> dict[str, Any]:
        """The ``fairplay.json`` document (docs/fairplay.md)."""
        o = self.options
        bots = [
            {"name": name, **_numbers(m), "weighing_most": self.weighing_most(name)}
            for name, m in sorted(self.bots.items())
        ]
        pairs = [
            {"bots": list(pair), **_numbers(m)}
            for pair, m in sorted(self.pairs.items())
            if m.units >= o.pair_min_units
        ]
        return {
            "test": {
                "alpha": o.alpha,
                "margin": o.margin,
                "pair_margin": o.pair_margin,
                "pair_min_rounds": o.pair_min_units,
                **asdict(o.settings),
            },
            "matches": self.matches,
            "bots": bots,
            "pairs": pairs,
        }

    def weighing_most(self, bot: str) -> list[dict[str, Any]]:
        """The bot's decisions whose choice fitted the true deal best, best first."""
        return [d for _, _, d in sorted(self.top.get(bot, []), key=lambda i: -i[0])]

    def flagged(self) -> list[str]:
        """The bots whose test reached its threshold."""
        return [name for name, m in sorted(self.bots.items()) if m.flagged]

    # -- state -----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything needed to go on later (:meth:`from_state`), as JSON values."""
        return {
            "options": {
                **{f.name: getattr(self.options, f.name) for f in fields(Options)},
                "settings": asdict(self.options.settings),
            },
            "matches": self.matches,
            "seen": sorted(self.seen),
            "bots": {k: asdict(m) for k, m in self.bots.items()},
            "pairs": [[list(k), asdict(m)] for k, m in self.pairs.items()],
            "top": {k: [[x, key, d] for x, key, d in v] for k, v in self.top.items()},
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> FairPlay:
        """A :class:`FairPlay` that goes on from a saved :meth:`state`."""
        raw = dict(state["options"])
        options = Options(**{**raw, "settings": Settings(**raw["settings"])})
        fp = cls(options)
        fp.matches = int(state["matches"])
        fp.seen = set(state["seen"])
        fp.bots = {k: Monitor(**v) for k, v in state["bots"].items()}
        fp.pairs = {(k[0], k[1]): Monitor(**v) for k, v in state["pairs"]}
        fp.top = {k: [(x, key, d) for x, key, d in v] for k, v in state["top"].items()}
        for v in fp.top.values():
            heapq.heapify(v)
        return fp


def _numbers(m: Monitor) -> dict[str, Any]:
    low, high = m.interval
    return {
        "decisions": m.decisions,
        "rounds": m.units,
        "statistic": _finite(m.statistic),
        "standard_error": _finite(m.standard_error),
        "interval": [_finite(low), _finite(high)],
        "mean_rank": round(m.mean_rank, 4),
        "e_value": _finite(m.e_value, 4),
        "p_value": _finite(m.p_value, 6),
        "flagged": m.flagged,
    }


def _finite(x: float, digits: int = 3) -> float | None:
    return None if math.isnan(x) or math.isinf(x) else round(x, digits)
