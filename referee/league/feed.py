"""Spectating: a match's public events, built from its record lines.

The match runner hands every record line to the match's :class:`MatchFeed` as it is
written. The record holds everything (hands, the set-aside cards, every pain pick the
moment it is made); :class:`PublicFilter` is the one place that decides what of it a
spectator may see:

- ``round_start`` becomes the dealer only: no hand, no set-aside card;
- ``pain`` (a seat's pick as it is made) is never sent;
- ``reveal`` (every pick is in) shows the picks, except under secret visibility, where
  they stay hidden until ``round_end`` (as they do for the seats);
- ``play``, ``trick``, ``fault`` and ``round_end`` are public (a fault without its
  detail text, which may name the cards of the faulting seat's hand);
- ``end`` reveals the seed and nonce (the record's end line holds them) when the match
  is completed, unless the seats' ``MatchEnd`` withheld them.

A watcher may stay ``delay_rounds`` behind: an event of round r is released once round
r + delay has been dealt, or the match is over. :class:`Spectator` is that rule, the one
every spectator door (gRPC ``WatchMatch``, the web's live streams) goes through; a
league's ``web_delay_rounds`` is the least delay of every door.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from referee.convert import rules_to_proto
from referee.rules import from_table, parse_card
from sticheln.v1 import game_pb2, league_pb2


def _cards(texts: Iterable[str]) -> list[int]:
    return [parse_card(t) for t in texts]


class PublicFilter:
    """Turns a match's record lines, in order, into the public messages of a spectator."""

    def __init__(self) -> None:
        self.secret = False
        self._picks: dict[int, list[list[int]]] = {}
        self._seed = 0
        self._nonce = b""

    def header(self, line: dict[str, Any]) -> league_pb2.WatchMatchResponse:
        """The first message, from the record's header line."""
        rules = from_table(dict(line["rules"]))
        self.secret = str(line["rules"].get("pain_visibility", "")) == "secret"
        if "seed" in line:
            # A version 1 record: the seed is in the header, and kept back here until the
            # match is completed (it opens every deal). Version 2 has it in the end line.
            self._seed = int(line["seed"])
            self._nonce = bytes.fromhex(line["nonce"])
        return league_pb2.WatchMatchResponse(
            match=league_pb2.WatchedMatch(
                match_id=line["match_id"],
                seating=line["seating"],
                rules=rules_to_proto(rules),
                seed_commitment=bytes.fromhex(line["commitment"]),
                challenge=str(line.get("challenge", "")),
            )
        )

    def event(self, line: dict[str, Any]) -> league_pb2.WatchMatchResponse | None:
        """The public message of one record line after the header, or None (nothing public)."""
        kind = line.get("type")
        rnd = int(line.get("round", 0))
        ev = league_pb2.PublicEvent(round_index=rnd)
        if kind == "play":
            ev.card_played.seat = line["seat"]
            ev.card_played.card = parse_card(line["card"])
        elif kind == "trick":
            trick = ev.trick
            trick.leader = line["leader"]
            trick.cards.extend(_cards(line["cards"]))
            trick.winner = line["winner"]
            reason: Any = game_pb2.TrickReason.Value(f"TRICK_REASON_{line['reason'].upper()}")
            trick.reason = reason
            trick.tie = bool(line["tie"])
        elif kind == "round_start":
            ev.round_dealt.dealer = line["dealer"]
        elif kind == "reveal":
            picks = [_cards(p) for p in line["pain"]]
            self._picks[rnd] = picks
            for pick in picks:
                ev.pain_revealed.pain.add().cards.extend([] if self.secret else pick)
        elif kind == "round_end":
            scored = ev.round_scored
            scored.scores.extend(line["scores"])
            scored.totals.extend(line["totals"])
            for pick in self._picks.pop(rnd, []):
                scored.pain.add().cards.extend(pick)
        elif kind == "fault":
            fault = ev.fault
            fault.seat = line["seat"]
            fault.reason = line["reason"]
            fault.strikes = line["strikes"]
            fault.forfeited = bool(line["forfeited"])
        elif kind == "end":
            end = league_pb2.MatchEnded(
                totals=line["totals"], places=line["places"], reason=line["reason"]
            )
            if line["reason"] == "completed" and not line.get("seed_withheld"):
                end.seed = int(line.get("seed", self._seed))
                end.seed_nonce = bytes.fromhex(line["nonce"]) if "nonce" in line else self._nonce
            return league_pb2.WatchMatchResponse(end=end)
        else:
            return None  # "header" again, "pain", or a line type from a later version
        return league_pb2.WatchMatchResponse(event=ev)


class MatchFeed:
    """The record lines of one running match, for any number of watchers."""

    def __init__(self, match_id: str) -> None:
        self.match_id = match_id
        self.lines: list[dict[str, Any]] = []
        #: The latest round dealt (-1 before the first).
        self.dealt = -1
        self.over = False
        self._waiter: asyncio.Future[None] | None = None

    def append(self, line: dict[str, Any]) -> None:
        """One record line was written (the match runner's ``on_record`` hook)."""
        self.lines.append(line)
        if line.get("type") == "round_start":
            self.dealt = int(line["round"])
        self._wake()

    def interrupt(self) -> None:
        """The match was stopped before its end (it is replayed later)."""
        if not self.over:
            self.lines.append(
                {
                    "type": "end",
                    "round": self.dealt,
                    "totals": [],
                    "places": [],
                    "reason": "interrupted",
                }
            )
        self.finish()

    def finish(self) -> None:
        """No more lines come."""
        self.over = True
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _changed(self) -> None:
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._waiter)

    async def watch(self, delay_rounds: int = 0) -> AsyncIterator[league_pb2.WatchMatchResponse]:
        """The public messages, ``delay_rounds`` rounds behind; ends after ``MatchEnded``."""
        spectator = Spectator(self, delay_rounds)
        while True:
            released = spectator.take()
            for msg in released:
                yield msg  # lines may come meanwhile: looked at before waiting
            if spectator.done:
                return
            if not released:
                await self._changed()


class Spectator:
    """One spectator's place in a feed: what the delay has let out of it so far.

    The one rule every spectator door follows (gRPC ``WatchMatch``, the web's live
    streams): the header first, then each record line through :class:`PublicFilter`
    once the round ``delay_rounds`` after its own has been dealt, or the match is over.
    """

    def __init__(
        self,
        feed: MatchFeed,
        delay_rounds: int,
        due: Callable[[int, dict[str, Any]], bool] | None = None,
    ) -> None:
        self.feed = feed
        self.delay_rounds = max(0, delay_rounds)
        #: A further gate a released line must pass, by its index (the web's pacing of a
        #: delayed round); None lets every released line out at once.
        self.due = due
        self.public = PublicFilter()
        #: Record lines taken so far.
        self.read = 0
        #: Every message is out (the last one was ``MatchEnded``, or the feed is over).
        self.done = False

    def take(self) -> list[league_pb2.WatchMatchResponse]:
        """The messages released since the last call (none once :attr:`done`)."""
        feed, lines = self.feed, self.feed.lines
        out: list[league_pb2.WatchMatchResponse] = []
        if self.done:
            return out
        if self.read == 0 and lines:
            out.append(self.public.header(lines[0]))
            self.read = 1
        while self.read < len(lines):
            line = lines[self.read]
            if not feed.over and int(line.get("round", 0)) > feed.dealt - self.delay_rounds:
                break
            if self.due is not None and not self.due(self.read, line):
                break
            self.read += 1
            msg = self.public.event(line)
            if msg is not None:
                out.append(msg)
                if msg.WhichOneof("kind") == "end":
                    self.done = True
                    return out
        self.done = feed.over and self.read >= len(lines)
        return out


def replay_feed(match_id: str, lines: Iterable[dict[str, Any]]) -> MatchFeed:
    """A finished match's feed, from its stored record."""
    feed = MatchFeed(match_id)
    for line in lines:
        feed.append(line)
    feed.finish()
    return feed
