"""The web API's documents, computed from data the referee already has.

Pure functions: stored seat results, match records and published standings in, JSON-ready
dicts out. The sources (:mod:`referee.web.sources`) say where the data comes from (a
running league, a running tournament, a finished tournament's folder); the server
(:mod:`referee.web.server`) only serves what these functions return.

Match records are read tolerantly: line types this module does not know are skipped, and
the seed is taken from the header or, where the format moves it there, from a later line.
"""

from __future__ import annotations

import array
import copy
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from referee.results.explain import explain
from referee.results.ratings import LiveElo, MatchOutcome
from referee.results.store import StoredResult

#: Think-time percentiles shown on a bot's page.
THINK_PERCENTILES = (0.5, 0.9, 0.99, 1.0)


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float (also inside lists and dicts) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def by_match(results: Iterable[StoredResult]) -> dict[int, list[StoredResult]]:
    """Seat rows grouped by match, in the order the matches first appear, seats in order."""
    out: dict[int, list[StoredResult]] = {}
    for r in results:
        out.setdefault(r.idx, []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: r.seat)
    return out


def ranked(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Standings rows sorted by rating, best first, with a competition ``rank``; a
    provisional bot (fewer matches than the minimum) is not ranked (``rank`` null) and is
    listed after the ranked ones."""
    ordered = sorted(
        rows, key=lambda r: (bool(r.get("provisional")), -(r.get("rating") or -math.inf))
    )
    out: list[dict[str, Any]] = []
    count = 0
    for row in ordered:
        if row.get("provisional"):
            out.append({**row, "rank": None})
            continue
        count += 1
        same = count > 1 and row.get("rating") == out[-1].get("rating")
        out.append({**row, "rank": out[-1]["rank"] if same else count})
    return out


def match_summary(rows: Sequence[StoredResult], finish_order: int = 0) -> dict[str, Any]:
    """A finished match in the matches list: seating, totals, places, forfeited seats."""
    return {
        "match_id": rows[0].match_id,
        "index": rows[0].idx,
        "finish_order": finish_order or rows[0].finish_order,
        "seating": [r.bot for r in rows],
        "totals": [r.total for r in rows],
        "places": [r.place for r in rows],
        "forfeited_seats": [r.seat for r in rows if r.forfeited],
        "faults": [r.faults for r in rows],
    }


#: Per ordered pair of bots that met: matches shared, better places (a shared place counts
#: half) and the sum of score differences, from the first bot's view.
Pairs = dict[tuple[str, str], tuple[int, float, float]]


def _add_pairs(pairs: Pairs, matches: Iterable[Sequence[StoredResult]]) -> None:
    """Count ``matches`` (each its seat rows) into ``pairs``."""
    for rows in matches:
        for one in rows:
            for other in rows:
                if one.bot == other.bot:
                    continue
                n, better, diff = pairs.get((one.bot, other.bot), (0, 0.0, 0.0))
                better += (
                    1.0 if one.place < other.place else 0.5 if one.place == other.place else 0.0
                )
                pairs[one.bot, other.bot] = (n + 1, better, diff + (one.total - other.total))


def _pairs_document(pairs: Pairs) -> dict[str, Any]:
    bots = sorted({a for a, _ in pairs} | {b for _, b in pairs})
    cells: list[list[dict[str, Any] | None]] = []
    for a in bots:
        line: list[dict[str, Any] | None] = []
        for b in bots:
            found = pairs.get((a, b))
            if found is None:
                line.append(None)
            else:
                n = found[0]
                line.append(
                    {"matches": n, "better_share": found[1] / n, "score_diff": found[2] / n}
                )
        cells.append(line)
    return {"bots": bots, "cells": cells}


def head_to_head(results: Iterable[StoredResult]) -> dict[str, Any]:
    """Pairwise results of every two bots that met: for the row bot against the column
    bot, the matches they shared, the share of those where the row bot placed better
    (a shared place counts half) and its mean score difference."""
    pairs: Pairs = {}
    _add_pairs(pairs, by_match(results).values())
    return _pairs_document(pairs)


def _rate(elo: LiveElo, rows: Sequence[StoredResult]) -> dict[str, float] | None:
    """Rate the match of seat rows ``rows`` into ``elo``; every bot's live Elo after it, or
    None when one bot held several seats (a test match: nothing to rate)."""
    seating = tuple(r.bot for r in rows)
    if len(set(seating)) < len(seating):
        return None
    elo.update(
        MatchOutcome(
            seating,
            tuple(r.place for r in rows),
            rows[0].match_id,
            forfeited=tuple(r.forfeited for r in rows),
        )
    )
    return elo.ratings()


def _add_history(
    history: dict[str, list[dict[str, Any]]],
    elo: LiveElo,
    matches: Iterable[Sequence[StoredResult]],
    counted: int,
) -> int:
    """Rate ``matches`` (each its seat rows, in finishing order) after ``counted`` earlier
    ones, appending each bot's live Elo to ``history``; the matches counted now."""
    for rows in matches:
        counted += 1
        ratings = _rate(elo, rows)
        if ratings is None:
            continue
        for r in rows:
            history.setdefault(r.bot, []).append(
                {"match": counted, "match_id": r.match_id, "elo": ratings[r.bot], "place": r.place}
            )
    return counted


def rating_history(results: Iterable[StoredResult]) -> dict[str, list[dict[str, Any]]]:
    """Per bot, its live Elo after each of its matches, in finishing order."""
    out: dict[str, list[dict[str, Any]]] = {}
    _add_history(out, LiveElo(), by_match(results).values(), 0)
    return out


class ThinkHistogram:
    """A bot's think times (µs), counted in fixed log-scale buckets: the memory of a few
    hundred counters however many decisions it made.

    Below 64 µs every value has a bucket of its own; above, every doubling is split into
    32 buckets of equal width (as HdrHistogram with 5 significant bits), up to 2³² µs,
    the largest think time the store keeps. A value is read back as the middle of its
    bucket, at most 1/64 (1.6%) away from it; a percentile, interpolated between two
    such values as :func:`~referee.results.ratings.quantile` interpolates between the
    exact ones, is then within :data:`RELATIVE_ERROR` of the exact percentile. The
    smallest and the largest value are kept exactly (the max shown is exact).

    A histogram is not changed once made (a request may be reading it): :meth:`added`
    returns a new one.
    """

    #: Buckets per doubling; values below ``2 * SUB`` are counted exactly.
    SUB = 32
    #: Every value up to 2³² − 1 µs has a bucket: 64 exact ones, then 32 per doubling.
    BUCKETS = 2 * SUB + (32 - 6) * SUB
    #: A percentile read from the histogram is within this share of the exact one.
    RELATIVE_ERROR = 1 / (2 * SUB)

    __slots__ = ("count", "counts", "high", "low")

    def __init__(self) -> None:
        self.counts: np.ndarray[Any, np.dtype[np.int64]] = np.zeros(self.BUCKETS, np.int64)
        self.count = 0
        self.low = 0
        self.high = 0

    @classmethod
    def bucket(cls, values: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.int64]]:
        """The bucket of each value (µs; clamped to 0 … 2³² − 1)."""
        v = np.clip(np.asarray(values, dtype=np.int64), 0, 2**32 - 1)
        top = np.frexp(v.astype(np.float64))[1].astype(np.int64) - 1  # floor(log2 v)
        shift = np.maximum(top - 5, 0)
        logged = 2 * cls.SUB + (top - 6) * cls.SUB + (v >> shift) - cls.SUB
        return np.where(v < 2 * cls.SUB, v, logged)

    @classmethod
    def middle(cls, bucket: int) -> float:
        """The value a bucket is read back as: the middle of the integers it counts."""
        if bucket < 2 * cls.SUB:
            return float(bucket)
        top, sub = divmod(bucket - 2 * cls.SUB, cls.SUB)
        width = 1 << (top + 1)
        return (cls.SUB + sub) * width + (width - 1) / 2

    def added(self, values: Sequence[int] | np.ndarray[Any, Any]) -> ThinkHistogram:
        """A new histogram: this one's counts and ``values`` (µs)."""
        v = np.asarray(values, dtype=np.int64)
        if v.size == 0:
            return self
        out = ThinkHistogram()
        out.counts = self.counts + np.bincount(self.bucket(v), minlength=self.BUCKETS)
        low, high = int(v.min()), int(v.max())
        out.count = self.count + int(v.size)
        out.low = min(self.low, low) if self.count else low
        out.high = max(self.high, high)
        return out

    def quantile(self, q: float) -> float | None:
        """The q-quantile (0 ≤ q ≤ 1) in µs, interpolated between order statistics as
        numpy's default; None without values."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile {q} is not in [0, 1]")
        if not self.count:
            return None
        rank = (self.count - 1) * q
        below = math.floor(rank)
        cumulative = np.cumsum(self.counts)

        def value(r: int) -> float:
            if r == 0:
                return float(self.low)
            if r >= self.count - 1:
                return float(self.high)
            b = int(np.searchsorted(cumulative, r, side="right"))
            return min(max(self.middle(b), self.low), self.high)

        at = value(below)
        if rank == below:
            return at
        return at + (rank - below) * (value(below + 1) - at)


def think_percentiles(think: ThinkHistogram, decision_ms: float) -> dict[str, Any]:
    """A bot's think times as percentiles in ms, beside the clock's decision limit; read
    from its histogram (within ``relative_error`` of the exact ones, the max exact)."""
    return {
        "decisions": think.count,
        "decision_ms": decision_ms,
        "relative_error": ThinkHistogram.RELATIVE_ERROR,
        "percentiles": [
            {"q": q, "ms": None if (us := think.quantile(q)) is None else us / 1000}
            for q in THINK_PERCENTILES
        ],
    }


#: At most this many points of a bot's rating history are kept (and the latest one).
HISTORY_POINTS = 200
#: The latest matches kept in memory (the first page of ``/api/matches`` at its largest);
#: older ones are read from the store when asked for.
KEPT_MATCHES = 500
#: The latest matches of each bot kept for its page.
RECENT_PER_BOT = 20


@dataclass(frozen=True)
class RatingHistory:
    """A bot's live Elo over its rated matches, thinned to at most :data:`HISTORY_POINTS`
    points: the Elo after every ``stride``-th of its matches, the stride doubling (and
    every other point dropped) whenever there would be more, and the Elo after its latest.
    The points are those of the whole history, evenly spaced, however long it grows."""

    stride: int = 1
    #: Each point: (the bot's rated match number, the league's match count, match id,
    #: Elo after it, place).
    points: tuple[tuple[int, int, str, float, int], ...] = ()
    latest: tuple[int, int, str, float, int] | None = None

    def added(self, point: tuple[int, int, str, float, int]) -> RatingHistory:
        """A new history with the bot's next rated match."""
        stride, points = self.stride, self.points
        if point[0] % stride == 0:
            points = (*points, point)
            while len(points) > HISTORY_POINTS:
                stride *= 2
                points = tuple(p for p in points if p[0] % stride == 0)
        return RatingHistory(stride, points, point)

    def document(self) -> list[dict[str, Any]]:
        """The points for the page, oldest first (``nth``: the bot's rated match number)."""
        shown = list(self.points)
        if self.latest is not None and (not shown or shown[-1] is not self.latest):
            shown.append(self.latest)
        return [
            {"nth": nth, "match": match, "match_id": mid, "elo": elo, "place": place}
            for nth, match, mid, elo, place in shown
        ]


@dataclass(frozen=True)
class BotFigures:
    """What the pages show of one bot, kept as running totals (their size does not grow
    with the matches)."""

    #: Seats it held in finished matches, and the sums of its scores and places there.
    matches: int = 0
    score_sum: int = 0
    place_sum: int = 0
    think: ThinkHistogram = field(default_factory=ThinkHistogram)
    history: RatingHistory = field(default_factory=RatingHistory)
    #: Summaries of its latest matches, newest first (at most :data:`RECENT_PER_BOT`).
    recent: tuple[dict[str, Any], ...] = ()


@dataclass
class _Totals:
    """What a snapshot's successor continues from: the matches counted, the live Elo after
    them and the head-to-head sums."""

    matches: int = 0
    elo: LiveElo = field(default_factory=LiveElo)
    pairs: Pairs = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    """Every document derived from the finished matches at one moment, computed together
    (away from the event loop) so that a request only looks one up.

    Bounded: per bot its running totals (:class:`BotFigures`), per pair of bots the
    head-to-head sums, and the latest :data:`KEPT_MATCHES` match summaries; nothing in it
    grows with the number of matches."""

    version: Any = None
    bots: dict[str, BotFigures] = field(default_factory=dict)
    #: The latest finished matches, newest first.
    summaries: tuple[dict[str, Any], ...] = ()
    head_to_head: dict[str, Any] = field(default_factory=lambda: {"bots": [], "cells": []})
    faults: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: _Totals = field(default_factory=_Totals, repr=False, compare=False)

    def page(self, before: int | None, limit: int) -> list[dict[str, Any]] | None:
        """The finished matches before the ``before``-th in finishing order (all with
        None), newest first, at most ``limit``; None when older matches than those kept
        are needed (the source reads them from its store)."""
        start = 0
        if before is not None:
            start = next(
                (i for i, s in enumerate(self.summaries) if s["finish_order"] < before),
                len(self.summaries),
            )
        page = list(self.summaries[start : start + limit])
        complete = len(self.summaries) >= self.totals.matches  # nothing was dropped
        if len(page) < limit and not complete:
            return None
        return page


def snapshot(
    version: Any,
    new: Sequence[StoredResult],
    faults: dict[str, dict[str, int]],
    previous: Snapshot | None = None,
) -> Snapshot:
    """The documents of the ``previous`` snapshot's matches and the matches of ``new``
    (their seat rows, in finishing order), with ``faults`` (bot → reason → count).

    The cost follows the new matches, not the whole history. The previous snapshot's
    documents are not changed (a request may be serving them).
    """
    previous = previous or Snapshot()
    grouped = list(by_match(new).values())
    before = previous.totals
    totals = _Totals(before.matches, copy.deepcopy(before.elo), dict(before.pairs))
    _add_pairs(totals.pairs, grouped)
    bots = dict(previous.bots)
    think: dict[str, list[Any]] = {}
    fresh: list[dict[str, Any]] = []
    for rows in grouped:
        totals.matches += 1
        summary = match_summary(rows, rows[0].finish_order or totals.matches)
        fresh.append(summary)
        elo = _rate(totals.elo, rows)
        for r in rows:
            f = bots.get(r.bot) or BotFigures()
            history = f.history
            if elo is not None:
                nth = (history.latest[0] if history.latest else 0) + 1
                history = history.added((nth, totals.matches, r.match_id, elo[r.bot], r.place))
            recent = f.recent
            if not recent or recent[0] is not summary:
                recent = (summary, *recent[: RECENT_PER_BOT - 1])
            bots[r.bot] = BotFigures(
                f.matches + 1,
                f.score_sum + r.total,
                f.place_sum + r.place,
                f.think,
                history,
                recent,
            )
            if len(r.think_us):
                think.setdefault(r.bot, []).append(np.asarray(r.think_us, dtype=np.int64))
    for bot, arrays in think.items():
        f = bots[bot]
        bots[bot] = dataclasses.replace(f, think=f.think.added(np.concatenate(arrays)))
    summaries = (*reversed(fresh), *previous.summaries)[:KEPT_MATCHES]
    return Snapshot(
        version=version,
        bots=bots,
        summaries=summaries,
        head_to_head=_pairs_document(totals.pairs) if grouped else previous.head_to_head,
        faults=faults,
        totals=totals,
    )


def bot_detail(name: str, snap: Snapshot, decision_ms: float, recent: int = 20) -> dict[str, Any]:
    """A bot's page: rating over matches, think times against the clock, faults by reason,
    its latest matches (newest first)."""
    f = snap.bots.get(name) or BotFigures()
    faults = snap.faults.get(name, {})
    return {
        "bot": name,
        "matches": f.matches,
        "mean_score": f.score_sum / f.matches if f.matches else None,
        "mean_place": f.place_sum / f.matches if f.matches else None,
        "rating_history": f.history.document(),
        "think": think_percentiles(f.think, decision_ms),
        "faults": dict(sorted(faults.items(), key=lambda rc: (-rc[1], rc[0]))),
        "recent_matches": list(f.recent[:recent]),
    }


# -- match records ---------------------------------------------------------------------------


class RecordShapeError(ValueError):
    """A record that cannot be shown; the message names the line and what is wrong."""


class _Clocks:
    """The clock each decision of a match was against, replayed from its record as the
    runner keeps it (docs/bot-protocol.md, section 4): ``decision_ms``, plus ``startup_ms``
    on a seat's first decision of the match, plus what is left of the seat's time bank,
    which a decision over its time draws on and a timeout empties. A seat that has
    forfeited is asked no more: its fallback cards had no clock."""

    def __init__(self, clock: Mapping[str, Any], n: int) -> None:
        self.decision_ms = int(clock.get("decision_ms") or 0)
        self.startup_ms = int(clock.get("startup_ms") or 0)
        self.has_bank = bool(clock.get("time_bank_ms"))
        self.bank = [float(clock.get("time_bank_ms") or 0)] * n
        self.asked = [False] * n
        self.out: set[int] = set()
        self.leaving: set[int] = set()

    def fault(self, seat: int, forfeited: bool) -> None:
        if forfeited:  # recorded before the (fallback) decision that forfeited it
            self.leaving.add(seat)

    def decision(self, seat: int, think_us: Any, fallback: bool) -> dict[str, Any]:
        """``clock_ms`` (the time allowed, without the bank) and ``bank_ms`` (the bank left
        before it); both null when the seat was not asked or the clock is not known."""
        if not self.decision_ms or seat in self.out:
            return {"clock_ms": None, "bank_ms": None}
        if seat in self.leaving:
            self.leaving.discard(seat)
            self.out.add(seat)
        allowed = self.decision_ms + (0 if self.asked[seat] else self.startup_ms)
        self.asked[seat] = True
        before = self.bank[seat]
        if isinstance(think_us, int):
            think = think_us / 1000
            if fallback and think >= allowed + before - 0.001:  # a timeout
                self.bank[seat] = 0.0 if self.has_bank else before
            elif think > allowed:
                self.bank[seat] = max(0.0, before - (think - allowed))
        return {"clock_ms": allowed, "bank_ms": round(before) if self.has_bank else None}


def record_seed(lines: Sequence[Mapping[str, Any]]) -> str | None:
    """The match seed as a decimal string: from the header, or from the last line that
    carries one (a record may reveal it only at its end); None when it is not there."""
    for line in reversed(lines):
        if line.get("type") != "header" and "seed" in line:
            return str(line["seed"])
    if lines and "seed" in lines[0]:
        return str(lines[0]["seed"])
    return None


def viewer_document(lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A finished match for the viewer: per round the dealt hands, the pain cards, every
    trick with its cards by seat, winner and reason and the hands after it, faults and
    scores; the match's end. Raises :class:`RecordShapeError` on a record it cannot read."""
    if not lines or lines[0].get("type") != "header":
        raise RecordShapeError("line 1: the record does not start with a header line")
    header = lines[0]
    try:
        seating = [str(b) for b in header["seating"]]
        rules = dict(header["rules"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordShapeError(f"line 1: bad header: {exc}") from None
    n = len(seating)
    kept = str(rules.get("pain_card", "set_aside")) == "kept_in_hand"
    clocks = _Clocks(header.get("clock") or {}, n)
    rounds: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    hands: list[list[str]] = [[] for _ in range(n)]
    plays: list[dict[str, Any]] = []
    end: dict[str, Any] | None = None
    revealed = False
    for number, line in enumerate(lines[1:], 2):
        kind = line.get("type")
        try:
            if kind == "round_start":
                hands = [[str(c) for c in h] for h in line.get("hands", [[] for _ in range(n)])]
                current = {
                    "round": int(line["round"]),
                    "dealer": int(line["dealer"]),
                    "hands": [list(h) for h in hands],
                    "set_aside": [str(c) for c in line.get("set_aside", [])],
                    "pain": [[] for _ in range(n)],
                    "pain_plays": [None for _ in range(n)],
                    "tricks": [],
                    "faults": [],
                    "scores": None,
                    "totals": None,
                }
                rounds.append(current)
                plays = []
                revealed = False
            elif current is None:
                if kind == "end":
                    end = dict(line)
                continue
            elif kind == "pain":
                seat = int(line["seat"])
                current["pain"][seat] = [str(c) for c in line["cards"]]
                fallback = bool(line.get("fallback", False))
                current["pain_plays"][seat] = {
                    "think_us": line.get("think_us"),
                    "fallback": fallback,
                    **clocks.decision(seat, line.get("think_us"), fallback),
                }
                if not kept:
                    for c in current["pain"][seat]:
                        if c in hands[seat]:
                            hands[seat].remove(c)
            elif kind == "reveal":
                current["pain"] = [[str(c) for c in p] for p in line["pain"]]
                revealed = True
            elif kind == "play":
                seat, card = int(line["seat"]), str(line["card"])
                fallback = bool(line.get("fallback", False))
                plays.append(
                    {
                        "seat": seat,
                        "card": card,
                        "think_us": line.get("think_us"),
                        "fallback": fallback,
                        **clocks.decision(seat, line.get("think_us"), fallback),
                    }
                )
                if card in hands[seat]:
                    hands[seat].remove(card)
            elif kind == "trick":
                current["tricks"].append(
                    {
                        "leader": int(line["leader"]),
                        "cards": [str(c) for c in line["cards"]],
                        "plays": plays,
                        "winner": int(line["winner"]),
                        "reason": str(line["reason"]),
                        "tie": bool(line.get("tie", False)),
                        "hands_after": [list(h) for h in hands],
                    }
                )
                plays = []
            elif kind == "fault":
                clocks.fault(int(line["seat"]), bool(line.get("forfeited", False)))
                current["faults"].append(
                    {
                        "seat": int(line["seat"]),
                        "reason": str(line["reason"]),
                        "detail": str(line.get("detail", "")),
                        "strikes": line.get("strikes"),
                        "forfeited": bool(line.get("forfeited", False)),
                        "trick": len(current["tricks"]),
                        # The card it belongs to: a fault is recorded just before the
                        # (fallback) card it caused; one before the reveal, at the deal.
                        "card": len(plays) if revealed else None,
                    }
                )
            elif kind == "round_end":
                current["scores"] = [int(s) for s in line["scores"]]
                current["totals"] = [int(s) for s in line["totals"]]
            elif kind == "end":
                end = dict(line)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise RecordShapeError(
                f"line {number}: a {kind} line that cannot be read: {exc}"
            ) from None
    if end is not None:
        end.pop("_line", None)
        end.pop("seed", None)
        end.pop("nonce", None)
    doc = {
        "match_id": str(header.get("match_id", "")),
        "version": header.get("version"),
        "rules": rules,
        "seating": seating,
        "commitment": header.get("commitment"),
        "seed": record_seed(lines),
        "clock": header.get("clock"),
        "started_at": header.get("started_at"),
        "challenge": header.get("challenge"),
        "rounds": rounds,
        "end": end,
    }
    try:
        doc["scores_explained"] = explain(doc)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise RecordShapeError(f"the record's cards cannot be scored: {exc}") from None
    return doc


def results_from_record(lines: Sequence[Mapping[str, Any]], idx: int) -> list[StoredResult]:
    """The seat rows of a finished match from its record alone (a tournament folder
    without its database); empty for a record without an end line."""
    if not lines or lines[0].get("type") != "header":
        return []
    header = lines[0]
    seating = [str(b) for b in header.get("seating", [])]
    end = next((x for x in reversed(lines) if x.get("type") == "end"), None)
    if end is None or not seating:
        return []
    faults = [0] * len(seating)
    positive = [0] * len(seating)
    think = [array.array("q") for _ in seating]
    forfeited = set(end.get("forfeited", []))
    for line in lines:
        kind = line.get("type")
        if kind in ("play", "pain") and line.get("think_us") is not None:
            think[int(line["seat"])].append(int(line["think_us"]))
        elif kind == "fault":
            faults[int(line["seat"])] += 1
            # The fault that forfeited a seat says so, whatever the end line lists.
            if line.get("forfeited"):
                forfeited.add(int(line["seat"]))
        elif kind == "round_end":
            for s, score in enumerate(line.get("scores", [])):
                positive[s] += score > 0
    totals, places = end.get("totals", []), end.get("places", [])
    if len(totals) != len(seating) or len(places) != len(seating):
        return []
    return [
        StoredResult(
            idx=idx,
            match_id=str(header.get("match_id", "")),
            seat=s,
            bot=bot,
            total=int(totals[s]),
            place=int(places[s]),
            forfeited=s in forfeited,
            positive_rounds=positive[s],
            faults=faults[s],
            think_us=think[s],
        )
        for s, bot in enumerate(seating)
    ]


def faults_from_record(lines: Iterable[Mapping[str, Any]], into: dict[str, dict[str, int]]) -> None:
    """Add a record's faults to ``into`` (bot → reason → count)."""
    seating: list[str] = []
    for line in lines:
        if line.get("type") == "header":
            seating = [str(b) for b in line.get("seating", [])]
        elif line.get("type") == "fault":
            seat = int(line["seat"])
            bot = str(line.get("bot") or (seating[seat] if seat < len(seating) else seat))
            reasons = into.setdefault(bot, {})
            reason = str(line.get("reason", "unknown"))
            reasons[reason] = reasons.get(reason, 0) + 1
