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
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.results.ratings import LiveElo, MatchOutcome, quantile
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
    """Standings rows sorted by rating, best first, with a competition ``rank``."""
    ordered = sorted(rows, key=lambda r: -(r.get("rating") or -math.inf))
    out: list[dict[str, Any]] = []
    for i, row in enumerate(ordered):
        same = i > 0 and row.get("rating") == ordered[i - 1].get("rating")
        out.append({**row, "rank": out[-1]["rank"] if same else i + 1})
    return out


def match_summary(rows: Sequence[StoredResult]) -> dict[str, Any]:
    """A finished match in the matches list: seating, totals, places, forfeited seats."""
    return {
        "match_id": rows[0].match_id,
        "index": rows[0].idx,
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
        seating = tuple(r.bot for r in rows)
        if len(set(seating)) < len(seating):
            continue  # one bot in several seats (a test match): nothing to rate
        elo.update(MatchOutcome(seating, tuple(r.place for r in rows), rows[0].match_id))
        ratings = elo.ratings()
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


def think_percentiles(think_us: Iterable[int], decision_ms: float) -> dict[str, Any]:
    """A bot's think times (µs) as percentiles in ms, beside the clock's decision limit."""
    ms = [t / 1000 for t in think_us]
    return {
        "decisions": len(ms),
        "decision_ms": decision_ms,
        "percentiles": [{"q": q, "ms": quantile(ms, q) if ms else None} for q in THINK_PERCENTILES],
    }


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
    (away from the event loop) so that a request only looks one up."""

    version: Any = None
    results: list[StoredResult] = field(default_factory=list)
    by_bot: dict[str, list[StoredResult]] = field(default_factory=dict)
    #: Finished matches, newest first, and by match index.
    summaries: list[dict[str, Any]] = field(default_factory=list)
    by_index: dict[int, dict[str, Any]] = field(default_factory=dict)
    head_to_head: dict[str, Any] = field(default_factory=lambda: {"bots": [], "cells": []})
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    faults: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: _Totals = field(default_factory=_Totals, repr=False, compare=False)


def _continues(before: Sequence[StoredResult], results: Sequence[StoredResult]) -> bool:
    """``results`` begin with the rows of ``before`` (the same matches, in the same order)."""
    if len(results) < len(before):
        return False
    if not before:
        return True
    end = len(before)
    first, last = before[0], before[-1]
    return (
        (results[0].idx, results[0].seat) == (first.idx, first.seat)
        and (results[end - 1].idx, results[end - 1].seat) == (last.idx, last.seat)
        and (end == len(results) or results[end].idx != last.idx)
    )


def snapshot(
    version: Any,
    results: list[StoredResult],
    faults: dict[str, dict[str, int]],
    previous: Snapshot | None = None,
) -> Snapshot:
    """The documents of ``results`` (finishing order) and ``faults`` (bot → reason → count).

    Given the ``previous`` snapshot, whose results ``results`` continue, only the matches
    finished since are added to its documents (the same documents as computed afresh):
    the cost follows the new matches, not the whole history. The previous snapshot's
    documents are not changed (a request may be serving them).
    """
    if previous is None or not _continues(previous.results, results):
        previous = Snapshot()
    new = results[len(previous.results) :]
    grouped = list(by_match(new).values())
    by_bot = dict(previous.by_bot)
    added: dict[str, list[StoredResult]] = {}
    for r in new:
        added.setdefault(r.bot, []).append(r)
    for bot, rows in added.items():
        by_bot[bot] = [*by_bot.get(bot, ()), *rows]
    fresh = [match_summary(rows) for rows in reversed(grouped)]
    summaries = fresh + previous.summaries
    by_index = {**previous.by_index, **{s["index"]: s for s in fresh}}
    before = previous.totals
    totals = _Totals(before.matches, copy.deepcopy(before.elo), dict(before.pairs))
    _add_pairs(totals.pairs, grouped)
    extra: dict[str, list[dict[str, Any]]] = {}
    totals.matches = _add_history(extra, totals.elo, grouped, before.matches)
    history = dict(previous.history)
    for bot, entries in extra.items():
        history[bot] = [*history.get(bot, ()), *entries]
    return Snapshot(
        version=version,
        results=results,
        by_bot=by_bot,
        summaries=summaries,
        by_index=by_index,
        head_to_head=_pairs_document(totals.pairs) if grouped else previous.head_to_head,
        history=history,
        faults=faults,
        totals=totals,
    )


def bot_detail(name: str, snap: Snapshot, decision_ms: float, recent: int = 20) -> dict[str, Any]:
    """A bot's page: rating over matches, think times against the clock, faults by reason,
    its latest matches (newest first)."""
    mine = snap.by_bot.get(name, [])
    think: list[int] = []
    for r in mine:
        think.extend(r.think_us)
    faults = snap.faults.get(name, {})
    return {
        "bot": name,
        "matches": len(mine),
        "mean_score": sum(r.total for r in mine) / len(mine) if mine else None,
        "mean_place": sum(r.place for r in mine) / len(mine) if mine else None,
        "rating_history": snap.history.get(name, []),
        "think": think_percentiles(think, decision_ms),
        "faults": dict(sorted(faults.items(), key=lambda rc: (-rc[1], rc[0]))),
        "recent_matches": [snap.by_index[r.idx] for r in reversed(mine[-recent:])],
    }


# -- match records ---------------------------------------------------------------------------


class RecordShapeError(ValueError):
    """A record that cannot be shown; the message names the line and what is wrong."""


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
    rounds: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    hands: list[list[str]] = [[] for _ in range(n)]
    plays: list[dict[str, Any]] = []
    end: dict[str, Any] | None = None
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
                    "tricks": [],
                    "faults": [],
                    "scores": None,
                    "totals": None,
                }
                rounds.append(current)
                plays = []
            elif current is None:
                if kind == "end":
                    end = dict(line)
                continue
            elif kind == "pain":
                seat = int(line["seat"])
                current["pain"][seat] = [str(c) for c in line["cards"]]
                if not kept:
                    for c in current["pain"][seat]:
                        if c in hands[seat]:
                            hands[seat].remove(c)
            elif kind == "reveal":
                current["pain"] = [[str(c) for c in p] for p in line["pain"]]
            elif kind == "play":
                seat, card = int(line["seat"]), str(line["card"])
                plays.append(
                    {
                        "seat": seat,
                        "card": card,
                        "think_us": line.get("think_us"),
                        "fallback": bool(line.get("fallback", False)),
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
                current["faults"].append(
                    {
                        "seat": int(line["seat"]),
                        "reason": str(line["reason"]),
                        "detail": str(line.get("detail", "")),
                        "strikes": line.get("strikes"),
                        "forfeited": bool(line.get("forfeited", False)),
                        "trick": len(current["tricks"]),
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
    return {
        "match_id": str(header.get("match_id", "")),
        "version": header.get("version"),
        "rules": rules,
        "seating": seating,
        "commitment": header.get("commitment"),
        "seed": record_seed(lines),
        "clock": header.get("clock"),
        "started_at": header.get("started_at"),
        "rounds": rounds,
        "end": end,
    }


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
    for line in lines:
        kind = line.get("type")
        if kind in ("play", "pain") and line.get("think_us") is not None:
            think[int(line["seat"])].append(int(line["think_us"]))
        elif kind == "fault":
            faults[int(line["seat"])] += 1
        elif kind == "round_end":
            for s, score in enumerate(line.get("scores", [])):
                positive[s] += score > 0
    forfeited = set(end.get("forfeited", []))
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
