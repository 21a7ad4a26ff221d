"""The duplicate embargo: a deal played in several seatings is shown to no one until its
last seating has ended.

In a duplicate tournament every deal is played once per rotation of the seating, and a
seat of a later seating holds the hand an earlier seating's seat held. The seats' own
``MatchEnd`` withholds the seed until the deal's last seating (``seed_withheld`` in the
record); the web pages, their API, their live streams and the record downloads hold back
the same deal for as long: an earlier seating's record, viewer, live events and result
(scores, places, faults, its share in the standings) are served only once every seating
of its deal has ended. That a match of the deal was played, and who sat at it, is public
meanwhile; nothing that follows from its cards is.

Two ways to know when a deal is over, one per kind of source:

- from a schedule (:class:`DealSeatings`): a match is held while another seating of its
  deal has not finished (a running tournament, whose schedule names every seating);
- from records alone (:func:`embargoed_records`): a record whose end withholds the seed is
  held until a record of the same deal reveals it (the deal's last seating) or the
  tournament's deal key is published (a finished tournament's output folder).

A deal played once (round robin, a league, a single match) is never held.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: What an embargoed match's record, viewer and live stream answer.
EMBARGOED = "embargoed until the last seating of its deal has ended"


@dataclass(frozen=True)
class DealSeatings:
    """The seatings of every deal a schedule plays more than once, by match index."""

    #: Per match index whose deal is played again: the deal number.
    deal_of: dict[int, int] = field(default_factory=dict)
    #: Per such deal: the indices of its seatings, in schedule order.
    seatings: dict[int, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, matches: Iterable[tuple[int, int]]) -> DealSeatings:
        """From the schedule's (match index, deal number) pairs."""
        by_deal: dict[int, list[int]] = {}
        for index, deal in matches:
            by_deal.setdefault(deal, []).append(index)
        shared = {d: tuple(sorted(ix)) for d, ix in by_deal.items() if len(ix) > 1}
        return cls({i: d for d, ix in shared.items() for i in ix}, shared)

    def pending(self, index: int, finished: Collection[int]) -> list[int]:
        """The other seatings of match ``index``'s deal that have not finished (given the
        indices of the finished matches): while there is one, the match is embargoed."""
        deal = self.deal_of.get(index)
        if deal is None:
            return []
        return [i for i in self.seatings[deal] if i != index and i not in finished]

    def first_held(self, indices: Iterable[int], finished: Collection[int]) -> int | None:
        """The position in ``indices`` (matches in finishing order) of the first one still
        embargoed, or None when none is."""
        if not self.deal_of:
            return None
        for position, index in enumerate(indices):
            if self.pending(index, finished):
                return position
        return None


def embargo_message(match_id: str, pending: Iterable[str]) -> str:
    """The one line an embargoed match's doors answer."""
    still = sorted(pending)
    return (
        f"match {match_id!r} is {EMBARGOED} (its deal is still to be played in "
        f"{', '.join(still) if still else 'another seating'})"
    )


def embargoed_records(
    records: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]],
    deal_key_published: bool,
) -> dict[str, list[str]]:
    """The records (match id → (header line, end line or None)) that are embargoed, each
    with the other records of its deal that have not revealed its seed yet.

    A completed record whose end says ``seed_withheld`` is held until a completed record of
    the same deal (header ``deal``) reveals the seed, or the deal key is published; a
    record that did not complete is held while its deal is open (its hands are the later
    seatings' too). Every record is free once the deal key is published.
    """
    if deal_key_published:
        return {}
    by_deal: dict[Any, list[str]] = {}
    for match_id, (header, _) in records.items():
        if "deal" in header:
            by_deal.setdefault(header["deal"], []).append(match_id)
    out: dict[str, list[str]] = {}
    for ids in by_deal.values():
        ends = [records[m][1] for m in ids]
        withheld = any(e is not None and e.get("seed_withheld") for e in ends)
        revealed = any(
            e is not None and e.get("reason") == "completed" and not e.get("seed_withheld")
            for e in ends
        )
        if not withheld or revealed:
            continue  # a deal played once, or one whose last seating has revealed its seed
        for match_id in ids:
            out[match_id] = sorted(m for m in ids if m != match_id)
    return out
