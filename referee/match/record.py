"""Match records: one JSON Lines file per match (format in docs/match-record.md), and replay.

Each line is one JSON object with a ``type``. Cards are written in their short text form
(``"H12"``). The writer flushes at every round end and at the match end, so a killed
referee loses at most the round in progress, and a record without its ``end`` line is
recognisably unfinished.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from referee.match.faults import FaultReason
from referee.rules import (
    IllegalAction,
    Match,
    Phase,
    cards_str,
    from_table,
    parse_card,
)
from referee.rules import card_str as cs
from referee.runtime.private import open_private, private_dir

#: The version this referee writes. Version 2 seals the seed: the header holds only its
#: commitment, the end line the seed and nonce. ``replay`` reads versions 1 and 2.
RECORD_VERSION = 2
READABLE_VERSIONS = (1, 2)
#: Domain tag of a match seed's commitment (also sent in ``MatchStart.seed_commitment``).
SEED_DOMAIN = b"sticheln/seed/v1"


class RecordWriter:
    """Appends a match's events to its JSON Lines file."""

    def __init__(self, path: Path) -> None:
        # Private to the organiser (0600 in a 0700 folder): the record holds every hand.
        private_dir(path.parent)
        self.path = path
        self._file: IO[str] = open(  # noqa: SIM115 - closed in close()
            open_private(path), "w", encoding="utf-8"
        )
        self._dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

    def write(self, obj: dict[str, Any]) -> None:
        """Append one line."""
        self._file.write(self._dumps(obj))
        self._file.write("\n")

    def write_line(self, line: str) -> None:
        """Append one line already formatted as JSON (ending in a newline)."""
        self._file.write(line)

    def flush(self) -> None:
        """Push what was written to the operating system."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        if not self._file.closed:
            self._file.flush()
            self._file.close()


def cards_text(cards: Sequence[int]) -> list[str]:
    """Cards as their short text forms, for a record line."""
    return [cs(c) for c in cards]


def read_record(path: str | Path) -> Iterator[dict[str, Any]]:
    """The lines of a record as objects; raises ReplayError on a line that is not JSON."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReplayError(f"line {number}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict) or "type" not in obj:
                raise ReplayError(f"line {number}: not a record line (no 'type')")
            obj["_line"] = number
            yield obj


class ReplayError(ValueError):
    """The record disagrees with the engine; the message names the first discrepancy."""


@dataclass
class ReplayResult:
    """What a successful replay found: the account text and the final totals."""

    lines: list[str] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    places: list[int] = field(default_factory=list)
    finished: bool = False
    seed: int = 0
    header: dict[str, Any] = field(default_factory=dict)
    end: dict[str, Any] = field(default_factory=dict)
    #: The end line's reason when the match was aborted (not played), else "".
    aborted: str = ""


def seed_commitment(seed: int, nonce: bytes) -> str:
    """The hex commitment to a match seed: SHA-256 of the domain, the seed (u64
    big-endian) and the 16-byte nonce."""
    return hashlib.sha256(SEED_DOMAIN + seed.to_bytes(8, "big") + nonce).hexdigest()


def sealed_seed(header: dict[str, Any], rest: Sequence[dict[str, Any]]) -> tuple[int, bytes, int]:
    """A record's seed, nonce and the line they are on: the header's in version 1, the end
    line's in version 2. Raises :class:`ReplayError` when the record does not hold them."""
    version = header.get("version")
    if version not in READABLE_VERSIONS:
        raise ReplayError(
            f"line 1: record version {version!r} is not supported; this referee reads versions "
            + " and ".join(map(str, READABLE_VERSIONS))
        )
    where = header
    if version != 1:
        end = next((o for o in rest if o.get("type") == "end"), None)
        if end is None:
            raise ReplayError(
                "the record has no end line: the match did not finish, and its seed is sealed until the end"
            )
        where = end
    line = int(where.get("_line", 1))
    try:
        return int(where["seed"]), bytes.fromhex(where.get("nonce", "")), line
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayError(f"line {line}: no readable seed and nonce ({exc})") from None


#: Faults of an answer that came in time to the request asked, and was refused: with the
#: answers applied, the end line's ``decisions``.
REFUSED_ANSWERS = frozenset(
    r.value
    for r in (
        FaultReason.ILLEGAL_CARD_NOT_IN_HAND,
        FaultReason.ILLEGAL_WRONG_PHASE,
        FaultReason.ILLEGAL_WRONG_COUNT,
        FaultReason.MALFORMED_MESSAGE,
    )
)


def replay(path: str | Path) -> ReplayResult:
    """Re-check a match record with the engine; raise :class:`ReplayError` at the first
    discrepancy, else return a readable trick-by-trick account."""
    out = ReplayResult()
    say = out.lines.append
    everything = list(read_record(path))
    header = everything[0] if everything else None
    if header is None or header.get("type") != "header":
        raise ReplayError("line 1: the record does not start with a header line")
    end = next((o for o in everything[1:] if o.get("type") == "end"), None)
    if end is not None and str(end.get("reason", "")).startswith("aborted") and "seed" not in end:
        # Nothing was dealt, and the deal may be played again: its seed stays sealed.
        out.header, out.end, out.aborted, out.finished = header, end, str(end["reason"]), True
        say(f"match {header.get('match_id', '?')} {end['reason']}")
        return out
    seed, nonce, seed_line = sealed_seed(header, everything[1:])
    try:
        rules = from_table(header["rules"])
        seating: list[str] = list(header["seating"])
        match = Match(rules, len(seating), seed)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayError(f"line 1: bad header: {exc}") from None
    if seed_commitment(seed, nonce) != header.get("commitment"):
        raise ReplayError(
            f"line {seed_line}: the seed and nonce do not hash to the header's commitment"
        )
    out.seed = seed
    out.header = header
    lines = iter(everything[1:])
    say(
        f"match {header.get('match_id', '?')}: {len(seating)} players, rules {rules.preset}, seed {seed}"
    )
    say("seating: " + ", ".join(f"{s}={name}" for s, name in enumerate(seating)))
    forfeited: set[int] = set()
    trick_number = 0
    # The end line's ``decisions``: the answers in time to the request asked, applied (a
    # pain or play line without fallback) or refused as illegal or malformed.
    applied = refused = refused_dropped = 0
    # The round being replayed: the match deals the next one as soon as a round is scored,
    # but that round's trick and end lines still follow.
    rnd = match.round
    for obj in lines:
        n = obj["_line"]
        kind = obj["type"]

        def fail(msg: str, n: int = n) -> ReplayError:
            return ReplayError(f"line {n}: {msg}")

        if kind == "round_start":
            trick_number = 0
            rnd = match.round
            if obj.get("round") != rnd.round_index or obj.get("dealer") != rnd.dealer:
                raise fail(
                    f"round {obj.get('round')} dealt by seat {obj.get('dealer')}; the engine has round {rnd.round_index} dealt by seat {rnd.dealer}"
                )
            hands = [[parse_card(c) for c in h] for h in obj.get("hands", [])]
            if hands != rnd.hands:
                seat = next(
                    (
                        s
                        for s in range(len(hands))
                        if s >= len(rnd.hands) or hands[s] != rnd.hands[s]
                    ),
                    0,
                )
                raise fail(f"seat {seat}'s dealt hand differs from the engine's deal from the seed")
            say(f"\nround {rnd.round_index + 1}: dealer seat {rnd.dealer}")
            for s, hand in enumerate(rnd.hands):
                say(f"  seat {s} {seating[s]:<12} {cards_str(hand)}")
        elif kind == "pain":
            applied += not obj.get("fallback")
            seat = int(obj["seat"])
            cards = tuple(parse_card(c) for c in obj["cards"])
            try:
                rnd.apply(seat, cards)
            except IllegalAction as exc:
                raise fail(f"pain choice not legal: {exc}") from None
        elif kind == "reveal":
            if rnd.phase is not Phase.PLAY:
                raise fail("reveal before every seat chose its pain card")
            say(
                "  pain: "
                + ", ".join(f"seat {s} {cards_str(p or ())}" for s, p in enumerate(rnd.pain))
            )
        elif kind == "play":
            applied += not obj.get("fallback")
            seat = int(obj["seat"])
            card = parse_card(obj["card"])
            if seat != rnd.to_play:
                raise fail(f"seat {seat} plays, but the engine has seat {rnd.to_play} to play")
            try:
                match.apply(seat, card)
            except IllegalAction as exc:
                raise fail(f"play not legal: {exc}") from None
        elif kind == "trick":
            trick_number += 1
            if not rnd.tricks or len(rnd.tricks) < trick_number:
                raise fail("trick line before the trick was complete")
            trick = rnd.tricks[trick_number - 1]
            if [parse_card(c) for c in obj["cards"]] != list(trick.cards) or obj.get(
                "winner"
            ) != trick.winner:
                raise fail(
                    f"trick {trick_number} recorded as won by seat {obj.get('winner')}; the engine says seat {trick.winner}"
                )
            who = (
                "nobody (set aside)"
                if trick.winner < 0
                else f"seat {trick.winner} {seating[trick.winner]}"
            )
            say(
                f"  trick {trick_number:2}: seat {trick.leader} leads {cards_str(trick.cards):<28} -> {who} ({trick.reason.value}{', tie' if trick.tie else ''})"
            )
        elif kind == "fault":
            refused += obj.get("reason") in REFUSED_ANSWERS and bool(obj.get("request_id"))
            if obj.get("forfeited"):
                forfeited.add(int(obj["seat"]))
            say(
                f"  fault: seat {obj['seat']} {obj['reason']} ({obj.get('detail', '')}), strikes {obj.get('strikes')}"
            )
        elif kind == "faults_dropped":
            refused_dropped += sum(
                int(n) for reason, n in obj.get("counts", {}).items() if reason in REFUSED_ANSWERS
            )
            counts = ", ".join(f"{n} {reason}" for reason, n in obj.get("counts", {}).items())
            say(f"  faults not recorded one by one: seat {obj['seat']} {counts}")
        elif kind == "round_end":
            result = match.results[-1] if match.results else None
            if result is None or result.round_index != obj.get("round"):
                raise fail("round end before the round was over")
            if list(result.scores) != obj.get("scores"):
                raise fail(
                    f"round {result.round_index} scores {obj.get('scores')}; the engine scores {list(result.scores)}"
                )
            say(
                "  scores: "
                + "  ".join(f"{seating[s]} {v:+d}" for s, v in enumerate(result.scores))
            )
        elif kind == "end" and str(obj.get("reason", "")).startswith("aborted"):
            out.aborted = str(obj["reason"])
            out.finished = True
            say(f"\nmatch {obj['reason']}")
        elif kind == "end":
            if obj.get("reason", "completed") == "completed" and not match.is_over:
                raise fail("the match ended before its last round was scored")
            if obj.get("totals") != match.totals:
                raise fail(f"totals {obj.get('totals')}; the engine has {match.totals}")
            places = match.places(forfeited)
            if obj.get("places") != places:
                raise fail(f"places {obj.get('places')}; the engine ranks {places}")
            decisions = obj.get("decisions")
            # Faults not written one by one name no request: they may or may not be answers.
            if decisions is not None and not (
                applied + refused <= decisions <= applied + refused + refused_dropped
            ):
                raise fail(
                    f"decisions {decisions}; the record holds {applied} answers applied and "
                    f"{refused} refused as illegal or malformed (a late answer is none)"
                )
            out.totals = list(match.totals)
            out.places = places
            out.finished = True
            out.end = obj
            say("\nresult:")
            for s in sorted(range(len(seating)), key=lambda s: places[s]):
                note = " (forfeited)" if s in forfeited else ""
                say(f"  {places[s]}. {seating[s]:<12} {match.totals[s]:+d}{note}")
        elif kind == "header":
            raise fail("a second header line")
        # Unknown line types are skipped: later versions may add some.
    if not out.finished:
        raise ReplayError("the record has no end line: the match did not finish")
    return out
