"""The decisions of a match record: for each choice a bot made, the true state it was made
in, what the seat could see, and what it chose.

A record (docs/match-record.md) holds every dealt hand, every pain choice and every card
played, so each decision can be put back on the table exactly as it stood. The seed is not
needed: the hands are in the ``round_start`` lines. Choices the referee made for a seat
(``fallback``) are not the bot's and are left out, and so is a card play with one card in
hand, which is no choice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.match.record import ReplayError, read_record
from referee.rules import Action, IllegalAction, Round, from_table, parse_card


@dataclass(frozen=True, slots=True)
class Place:
    """Where a decision was made: the match, the bot and its seat, and the moment
    (``trick`` and ``card`` 0-based, both -1 for a pain choice)."""

    match_id: str
    bot: str
    seat: int
    round_index: int
    trick: int
    card: int

    @property
    def kind(self) -> str:
        """``"pain"`` or ``"play"``."""
        return "pain" if self.trick < 0 else "play"

    @property
    def moment(self) -> str:
        """The match viewer's address of the moment this choice shows (``r2t5c3``:
        round 2, trick 5, its third card; ``r2pick``: round 2's pain choice)."""
        if self.trick < 0:
            return f"r{self.round_index + 1}pick"
        return f"r{self.round_index + 1}t{self.trick + 1}c{self.card + 1}"


@dataclass(frozen=True, slots=True)
class Decision:
    """One choice a bot made in a match.

    ``state`` is the true round just before the choice (every hand as it really was); for
    a pain choice it is the round as dealt, before anyone's pick, since the picks are
    simultaneous. ``trick`` and ``card`` place a card play (0-based: the trick of the round
    and the cards of it played before this one); both are -1 for a pain choice.
    """

    match_id: str
    bot: str
    seat: int
    round_index: int
    trick: int
    card: int
    state: Round
    action: Action

    @property
    def place(self) -> Place:
        """Where it was made, without the state (small, and picklable)."""
        return Place(self.match_id, self.bot, self.seat, self.round_index, self.trick, self.card)

    @property
    def kind(self) -> str:
        """``"pain"`` or ``"play"``."""
        return self.place.kind

    @property
    def moment(self) -> str:
        """The match viewer's address of its moment (:attr:`Place.moment`)."""
        return self.place.moment


@dataclass(frozen=True, slots=True)
class MatchDecisions:
    """A finished match's seating and the bots' decisions in it, in play order."""

    match_id: str
    seating: tuple[str, ...]
    decisions: tuple[Decision, ...]


class RecordSkipped(ValueError):
    """A record that holds no finished match to judge (unfinished or aborted)."""


def read_decisions(path: str | Path) -> MatchDecisions:
    """The decisions of the record at ``path``.

    Raises :class:`RecordSkipped` for an unfinished or aborted match and
    :class:`~referee.match.record.ReplayError` for a record the engine disagrees with.
    """
    lines = list(read_record(path))
    return decisions_of(lines)


def decisions_of(lines: list[dict[str, Any]]) -> MatchDecisions:
    """The decisions of a record given as its parsed lines."""
    if not lines or lines[0].get("type") != "header":
        raise ReplayError("line 1: the record does not start with a header line")
    header = lines[0]
    end = next((o for o in lines if o.get("type") == "end"), None)
    if end is None:
        raise RecordSkipped("the match did not finish")
    if str(end.get("reason", "")).startswith("aborted"):
        raise RecordSkipped(str(end["reason"]))
    try:
        rules = from_table(header["rules"])
        seating = tuple(str(s) for s in header["seating"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayError(f"line 1: bad header: {exc}") from None
    match_id = str(header.get("match_id", ""))
    players = len(seating)
    out: list[Decision] = []
    rnd: Round | None = None
    dealt: Round | None = None
    for obj in lines[1:]:
        kind = obj["type"]
        n = obj.get("_line", 0)
        try:
            if kind == "round_start":
                hands = [[parse_card(c) for c in h] for h in obj["hands"]]
                set_aside = [parse_card(c) for c in obj.get("set_aside", [])]
                dealt = Round(
                    rules, players, int(obj["dealer"]), hands, set_aside, int(obj["round"])
                )
                rnd = dealt.clone()
            elif kind == "pain" and rnd is not None and dealt is not None:
                seat = int(obj["seat"])
                cards = tuple(parse_card(c) for c in obj["cards"])
                if not obj.get("fallback"):
                    out.append(
                        Decision(
                            match_id, seating[seat], seat, rnd.round_index, -1, -1, dealt, cards
                        )
                    )
                rnd.apply(seat, cards)
            elif kind == "play" and rnd is not None:
                seat = int(obj["seat"])
                card = parse_card(obj["card"])
                if not obj.get("fallback") and len(rnd.hands[seat]) > 1:
                    out.append(
                        Decision(
                            match_id,
                            seating[seat],
                            seat,
                            rnd.round_index,
                            len(rnd.tricks),
                            len(rnd.trick),
                            rnd.clone(),
                            card,
                        )
                    )
                rnd.apply(seat, card)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            if isinstance(exc, IllegalAction):
                raise ReplayError(f"line {n}: not legal: {exc}") from None
            raise ReplayError(f"line {n}: unreadable {kind} line ({exc})") from None
    return MatchDecisions(match_id, seating, tuple(out))


def iter_decisions(paths: list[Path]) -> Iterator[MatchDecisions]:
    """The decisions of each finished match among ``paths``, skipping the others."""
    for path in paths:
        try:
            yield read_decisions(path)
        except RecordSkipped:
            continue
