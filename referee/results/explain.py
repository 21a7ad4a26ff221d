"""Where every point of a round comes from, for the match viewer.

A pure function over the viewer document (:func:`referee.results.documents.viewer_document`):
it scores each captured card with the rules engine's own formula
(:func:`referee.rules.score_cards`, docs/rules.md rule 8) and adds, per round, the points of
each seat's own pain card(s) and the running round score after every trick. The page
then only draws: it never scores a card itself, and a test can compare the running
scores with the record's round totals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from referee.rules import parse_card, score_cards, suit_of


def _points(card: str, pain_suits: set[int]) -> int:
    return score_cards([parse_card(card)], pain_suits)


def explain_round(rnd: dict[str, Any], kept_in_hand: bool) -> bool:
    """Add the running score fields to one round of a viewer document, in place.

    Added: ``pain_suits`` (per seat, the suit letters of its pain cards),
    ``pain_points`` (per seat, the points of each own pain card; all zero when the pain
    card is kept in the hand, where it scores only when captured), ``scores_start`` (per
    seat, the round score before the first trick), and per trick ``points`` (per card in
    play order, what it brings its taker; null when nobody takes the trick) and
    ``scores_after`` (per seat, the round score once the trick is taken). Returns whether
    the last trick's running scores equal the round's recorded scores (true for a round
    without recorded scores).
    """
    pain: Sequence[Sequence[str]] = rnd["pain"]
    suits = [{suit_of(parse_card(c)) for c in p} for p in pain]
    rnd["pain_suits"] = [sorted({c[0] for c in p}) for p in pain]
    rnd["pain_points"] = [
        [0 if kept_in_hand else _points(c, suits[s]) for c in p] for s, p in enumerate(pain)
    ]
    running = [sum(p) for p in rnd["pain_points"]]
    rnd["scores_start"] = list(running)
    for trick in rnd["tricks"]:
        winner = int(trick["winner"])
        if winner >= 0:
            trick["points"] = [_points(c, suits[winner]) for c in trick["cards"]]
            running[winner] += sum(trick["points"])
        else:
            trick["points"] = None
        trick["scores_after"] = list(running)
    scores = rnd.get("scores")
    return scores is None or list(scores) == running


def explain(doc: Mapping[str, Any]) -> bool:
    """Add the running scores to every round of a viewer document (in place), and each
    round's match totals before it (``totals_before``). Returns whether every scored
    round's running scores end at its recorded scores."""
    rules = doc.get("rules") or {}
    kept = str(rules.get("pain_card", "set_aside")) == "kept_in_hand"
    totals = [0] * len(doc["seating"])
    agree = True
    for rnd in doc["rounds"]:
        rnd["totals_before"] = list(totals)
        agree = explain_round(rnd, kept) and agree
        if rnd.get("totals") is not None:
            totals = list(rnd["totals"])
        elif rnd.get("scores") is not None:
            totals = [t + s for t, s in zip(totals, rnd["scores"], strict=True)]
    return agree
