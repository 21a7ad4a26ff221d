"""A spectator's public messages (:mod:`referee.league.feed`) as the web API's JSON events.

The feed decides what is public; this module only changes the form: cards as their short
text (``"H12"``), enums as lower-case words. Every event has a ``type``:
``match``, ``dealt``, ``revealed``, ``play``, ``trick``, ``scored``, ``fault``, ``end``.
:func:`event_text` gives the same event as compact JSON text, the form a live stream sends.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.json_format import MessageToDict

from referee.rules import card_str, parse_card, score_cards, suit_of
from sticheln.v1 import game_pb2, league_pb2


def _cards(cards: Any) -> list[str]:
    return [card_str(c) for c in cards]


def event_text(msg: league_pb2.WatchMatchResponse) -> str:
    """One public message as compact JSON text: ``json.dumps(event_json(msg))`` without
    spaces. A played card, most of a match's events, is written out directly (its fields
    are numbers and a card's short text), which costs a fraction of building the dict and
    encoding it."""
    if msg.WhichOneof("kind") == "event" and msg.event.WhichOneof("kind") == "card_played":
        ev = msg.event
        play = ev.card_played
        return (
            f'{{"type":"play","round":{ev.round_index},"seat":{play.seat},'
            f'"card":"{card_str(play.card)}"}}'
        )
    return json.dumps(event_json(msg), separators=(",", ":"))


def event_json(msg: league_pb2.WatchMatchResponse) -> dict[str, Any]:
    """One public message as a JSON-ready dict."""
    kind = msg.WhichOneof("kind")
    if kind == "match":
        m = msg.match
        return {
            "type": "match",
            "match_id": m.match_id,
            "seating": list(m.seating),
            "rules": MessageToDict(m.rules, preserving_proto_field_name=True),
            "commitment": m.seed_commitment.hex(),
            "challenge": m.challenge,
        }
    if kind == "end":
        e = msg.end
        out: dict[str, Any] = {
            "type": "end",
            "totals": list(e.totals),
            "places": list(e.places),
            "reason": e.reason,
        }
        if e.seed or e.seed_nonce:
            out["seed"] = str(e.seed)
            out["nonce"] = e.seed_nonce.hex()
        return out
    ev = msg.event
    rnd = ev.round_index
    what = ev.WhichOneof("kind")
    if what == "round_dealt":
        return {"type": "dealt", "round": rnd, "dealer": ev.round_dealt.dealer}
    if what == "pain_revealed":
        return {
            "type": "revealed",
            "round": rnd,
            "pain": [_cards(p.cards) for p in ev.pain_revealed.pain],
        }
    if what == "card_played":
        return {
            "type": "play",
            "round": rnd,
            "seat": ev.card_played.seat,
            "card": card_str(ev.card_played.card),
        }
    if what == "trick":
        t = ev.trick
        reason = game_pb2.TrickReason.Name(t.reason).removeprefix("TRICK_REASON_").lower()
        return {
            "type": "trick",
            "round": rnd,
            "leader": t.leader,
            "cards": _cards(t.cards),
            "winner": t.winner,
            "reason": reason,
            "tie": t.tie,
        }
    if what == "round_scored":
        s = ev.round_scored
        return {
            "type": "scored",
            "round": rnd,
            "scores": list(s.scores),
            "totals": list(s.totals),
            "pain": [_cards(p.cards) for p in s.pain],
        }
    if what == "fault":
        f = ev.fault
        return {
            "type": "fault",
            "round": rnd,
            "seat": f.seat,
            "reason": f.reason,
            "strikes": f.strikes,
            "forfeited": f.forfeited,
        }
    return {"type": "unknown", "round": rnd}


class RunningScores:
    """The running round score of every seat, from the public events alone.

    Once the pain cards are revealed (under secret visibility only when the round is
    scored, so never before), each trick's cards are scored for their taker with the
    rules engine's formula (:func:`referee.rules.score_cards`, docs/rules.md rule 8): the live
    table can then say what each trick brought, as the replay does. :meth:`add` puts
    ``points`` (per card, for the taker) and ``scores`` (per seat, the round so far) into
    the ``revealed`` and ``trick`` events it can score, and leaves the others as they are.
    """

    def __init__(self) -> None:
        self.kept = False
        self.suits: list[set[int]] | None = None
        self.scores: list[int] | None = None

    def add(self, ev: dict[str, Any]) -> dict[str, Any]:
        """The event, with the running scores where they are known."""
        kind = ev["type"]
        if kind == "match":
            rule = str((ev.get("rules") or {}).get("pain_card", ""))
            self.kept = rule.endswith("KEPT_IN_HAND") or rule == "kept_in_hand"
        elif kind == "dealt":
            self.suits = self.scores = None
        elif kind == "revealed" and ev["pain"] and all(ev["pain"]):
            self.suits = [{suit_of(parse_card(c)) for c in p} for p in ev["pain"]]
            self.scores = [
                0 if self.kept else score_cards([parse_card(c) for c in p], self.suits[s])
                for s, p in enumerate(ev["pain"])
            ]
            ev["scores"] = list(self.scores)
        elif kind == "trick" and self.suits is not None and self.scores is not None:
            winner = int(ev["winner"])
            if winner >= 0:
                points = [score_cards([parse_card(c)], self.suits[winner]) for c in ev["cards"]]
                self.scores[winner] += sum(points)
                ev["points"] = points
            ev["scores"] = list(self.scores)
        return ev
