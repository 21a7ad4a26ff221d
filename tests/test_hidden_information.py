"""What a bot is told, proved from what it received (docs/rules.md rule 11, "What each seat may know").

Every seat runs the recording bot, which writes every message it receives to a file. The
match record holds the referee's whole knowledge (all hands, the set-aside cards, every
pick, the seed). For each message a seat received, at the point of the match where it was
sent, every card it names must be one the seat may know then: its own hand, cards already
played, its own pain pick, and others' picks only after the reveal (under ``secret`` only
after the round is scored). The set-aside cards and the seed appear nowhere before the end.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from bots.harness import (
    assert_no_processes,
    bot,
    check_finished,
    new_marker,
    read_capture,
    run_match,
)
from google.protobuf import text_format

from referee.rules import RuleSet, parse_card, preset
from sticheln.v1 import bot_pb2

pytestmark = pytest.mark.timeout(60)

#: A seed with no short pattern, so that finding it by chance in a message is hopeless.
SEED = 0x8F3CA1D2E4B69C07
CARD_FIELDS = {"hand", "cards", "card", "trick"}


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


@dataclass
class RoundFacts:
    """One round as the record has it, with the line index of each fact."""

    hands: list[set[int]]
    set_aside: set[int]
    picks: dict[int, tuple[int, tuple[int, ...]]] = field(default_factory=dict)  # seat: (at, cards)
    plays: list[tuple[int, int, int]] = field(default_factory=list)  # (at, seat, card)
    reveal_at: int = 1 << 60
    end_at: int = 1 << 60


def facts_from(lines: list[dict[str, Any]]) -> list[RoundFacts]:
    rounds: list[RoundFacts] = []
    for at, line in enumerate(lines):
        kind = line["type"]
        if kind == "round_start":
            assert line["round"] == len(rounds)
            rounds.append(
                RoundFacts(
                    [{parse_card(c) for c in hand} for hand in line["hands"]],
                    {parse_card(c) for c in line["set_aside"]},
                )
            )
        elif kind == "pain":
            rounds[line["round"]].picks[line["seat"]] = (
                at,
                tuple(parse_card(c) for c in line["cards"]),
            )
        elif kind == "play":
            rounds[line["round"]].plays.append((at, line["seat"], parse_card(line["card"])))
        elif kind == "reveal":
            rounds[line["round"]].reveal_at = at
        elif kind == "round_end":
            rounds[line["round"]].end_at = at
    return rounds


# A card a message names: (round, what it is, whose it is (None: not said), card code).
Item = tuple[int, str, int | None, int]


def result_items(result: Any) -> list[Item]:
    return [
        (result.round_index, "pain", s, c) for s, pick in enumerate(result.pain) for c in pick.cards
    ]


def trick_items(round_index: int, trick: Any, players: int) -> list[Item]:
    return [
        (round_index, "played", (trick.leader + i) % players, c) for i, c in enumerate(trick.cards)
    ]


def items_of(message: Any, seat: int, players: int, current: int) -> tuple[list[Item], int]:
    """Every card ``message`` names, with its round; ``current`` is the round the events
    start in (the events of one message may run from one round into the next)."""
    items: list[Item] = []
    for event in message.events:
        kind = event.WhichOneof("kind")
        if kind == "round_start":
            current = event.round_start.round_index
            items += [(current, "hand", seat, c) for c in event.round_start.hand]
        elif kind == "pain_reveal":
            for s, pick in enumerate(event.pain_reveal.pain):
                items += [(current, "pain", s, c) for c in pick.cards]
        elif kind == "card_played":
            items.append((current, "played", event.card_played.seat, event.card_played.card))
        elif kind == "trick_result":
            items += trick_items(current, event.trick_result.trick, players)
        elif kind == "round_scores":
            items += result_items(event.round_scores.result)
    if message.HasField("request"):
        view = message.request.view
        r = view.round_index
        assert view.seat == seat
        items += [(r, "hand", seat, c) for c in view.hand]
        for s, pick in enumerate(view.pain):
            items += [(r, "pain", s, c) for c in pick.cards]
        items += [(r, "played", (view.leader + i) % players, c) for i, c in enumerate(view.trick)]
        for trick in view.tricks:
            items += trick_items(r, trick, players)
        for result in view.round_results:
            items += result_items(result)
    if message.HasField("match_end"):
        for result in message.match_end.rounds:
            items += result_items(result)
    return items, current


def count_cards(message: Any) -> int:
    """How many card codes a message holds, found by field name alone (a cross-check
    that :func:`items_of` misses no card field)."""
    n = 0
    for fd, value in message.ListFields():
        if fd.message_type is not None:
            n += sum(count_cards(v) for v in (value if fd.is_repeated else [value]))
        elif fd.name in CARD_FIELDS and fd.type == fd.TYPE_UINT32:
            n += len(value) if fd.is_repeated else 1
    return n


def check_seat(
    messages: list[Any],
    seat: int,
    lines: list[dict[str, Any]],
    rules: RuleSet,
) -> None:
    players = lines[0]["players"]
    rounds = facts_from(lines)
    secret = rules.pain_visibility.value == "secret"
    # The seat's k-th request was sent just before the record's k-th decision of the seat.
    decided = [
        at for at, x in enumerate(lines) if x["type"] in ("pain", "play") and x["seat"] == seat
    ]
    requests = [m for m in messages if m.HasField("request")]
    assert len(requests) == len(decided) > 0
    assert messages[0].HasField("welcome") and messages[1].HasField("match_start")
    assert messages[-1].HasField("match_end")
    assert sum(m.HasField("match_end") for m in messages) == 1
    current, k = -1, 0
    for message in messages:
        if message.HasField("request"):
            now = decided[k]
            k += 1
        elif message.HasField("match_end"):
            now = len(lines)
        else:
            now = 0
        items, current = items_of(message, seat, players, current)
        assert len(items) == count_cards(message), message
        for r, what, owner, card in items:
            facts = rounds[r]
            assert card not in facts.set_aside, f"set-aside card {card} shown to seat {seat}"
            if what == "hand":
                assert owner == seat and card in facts.hands[seat], (r, card)
            elif what == "played":
                assert any(
                    at < now and c == card and (owner is None or s == owner)
                    for at, s, c in facts.plays
                ), f"seat {seat} saw {card} of seat {owner} before it was played"
            else:
                at, pick = facts.picks[owner]  # type: ignore[index]
                assert card in pick
                if owner == seat:
                    assert at <= now
                else:
                    public = facts.end_at if secret else facts.reveal_at
                    assert public < now, (
                        f"seat {seat} saw seat {owner}'s pain card {card} of round {r} too early"
                    )


def check_seed(messages: list[Any], seed: int, nonce: bytes) -> None:
    """The seed and nonce appear in no message before MatchEnd; MatchEnd opens the
    commitment MatchStart made."""
    forms = [
        seed.to_bytes(8, "big"),
        seed.to_bytes(8, "little"),
        bot_pb2.MatchEnd(seed=seed).SerializeToString()[1:],  # the seed as a varint
        nonce,
    ]
    texts = [str(seed), f"{seed:x}", f"{seed:X}"]
    for message in messages[:-1]:
        wire = message.SerializeToString()
        text = text_format.MessageToString(message)
        assert not any(f in wire for f in forms), message
        assert not any(t in text for t in texts), message
    start, end = messages[1].match_start, messages[-1].match_end
    assert end.seed == seed and end.seed_nonce == nonce
    digest = hashlib.sha256(b"sticheln/seed/v1" + end.seed.to_bytes(8, "big") + end.seed_nonce)
    assert digest.digest() == start.seed_commitment


@pytest.mark.parametrize(
    ("rules", "players"),
    [
        (preset("sticheln"), 4),
        (preset("stick-em-secret"), 4),
        (preset("sticheln", pain_cards_per_player=2), 3),
        (preset("sticheln", deck="french_2_14"), 5),
        (preset("stick-em-secret", pain_cards_per_player=2), 3),
    ],
    ids=["sticheln", "stick-em-secret", "two-pain-cards", "set-aside", "secret-two-pain-cards"],
)
def test_a_seat_learns_nothing_it_may_not_know(
    tmp_path: Path, marker: str, rules: RuleSet, players: int
) -> None:
    captures = [tmp_path / f"seat{s}.capture" for s in range(players)]
    bots = [bot("recording_bot.py", marker, env={"CAPTURE": str(path)}) for path in captures]
    result = run_match(bots, rules, out_dir=tmp_path, seed=SEED)
    assert_no_processes(marker)
    lines = check_finished(result)
    assert all(s.faults == [] for s in result.seats)
    if rules.deck.value == "french_2_14":
        assert all(len(x["set_aside"]) == 2 for x in lines if x["type"] == "round_start")
    # The record is sealed: the header has only the commitment, the end line the seed.
    assert "seed" not in lines[0] and "nonce" not in lines[0]
    assert lines[-1]["type"] == "end" and lines[-1]["seed"] == str(SEED)
    nonce = bytes.fromhex(lines[-1]["nonce"])
    for seat, path in enumerate(captures):
        messages = read_capture(path)
        check_seat(messages, seat, lines, rules)
        check_seed(messages, SEED, nonce)


def test_the_checker_catches_a_leak(tmp_path: Path, marker: str) -> None:
    """A capture doctored to show another seat's card (or a pick too early) fails."""
    capture = tmp_path / "seat0.capture"
    bots = [bot("recording_bot.py", marker, env={"CAPTURE": str(capture)})] + [
        bot("recording_bot.py", marker) for _ in range(2)
    ]
    result = run_match(bots, preset("sticheln", rounds=1), out_dir=tmp_path, seed=SEED)
    lines = check_finished(result)
    messages = read_capture(capture)
    check_seat(messages, 0, lines, preset("sticheln"))
    other_card = parse_card(lines[1]["hands"][1][0])
    first = next(i for i, m in enumerate(messages) if m.HasField("request"))

    doctored = [bot_pb2.RefereeMessage.FromString(m.SerializeToString()) for m in messages]
    doctored[first].request.view.hand.append(other_card)
    with pytest.raises(AssertionError):
        check_seat(doctored, 0, lines, preset("sticheln"))

    doctored = [bot_pb2.RefereeMessage.FromString(m.SerializeToString()) for m in messages]
    doctored[first].request.view.pain[1].cards.append(other_card)
    with pytest.raises(AssertionError):
        check_seat(doctored, 0, lines, preset("sticheln"))

    doctored = [bot_pb2.RefereeMessage.FromString(m.SerializeToString()) for m in messages]
    doctored[first].events.add().card_played.card = other_card
    with pytest.raises(AssertionError):
        check_seat(doctored, 0, lines, preset("sticheln"))

    doctored = [bot_pb2.RefereeMessage.FromString(m.SerializeToString()) for m in messages]
    doctored[first].match_start.match_id = str(SEED)
    with pytest.raises(AssertionError):
        check_seed(doctored, SEED, bytes.fromhex(lines[-1]["nonce"]))
