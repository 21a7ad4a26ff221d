"""Write the rules conformance vectors (conformance/*.json) from the engine, or check them.

    python tools/gen_conformance.py           # regenerate conformance/
    python tools/gen_conformance.py --check   # exit 1 and name the files that would change

The vectors are the engine's own answers (``referee.rules``) for decks, seeded deals,
trick winners under every rule option, whole rounds, whole matches and match places, as
data that an implementation of the rules in any language can check itself against.
docs/protocol-reference.md describes the format of each file. Every input is fixed here
(seeded), so regenerating gives the same files until the engine's behaviour changes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from referee.rules import (  # noqa: E402
    PRESETS,
    Action,
    AllZeroTrick,
    Match,
    MatchTies,
    Round,
    RuleSet,
    TrumpRule,
    cards_str,
    deal,
    deck_for,
    preset,
)
from referee.rules.match import ranking  # noqa: E402

OUT_DIR = ROOT / "conformance"
CARD_CODE = "suit * 16 + rank; suits 1..8 = C S H D K W P R (clubs, spades, hearts, diamonds, caps, switches, planets, stars)"
GENERATOR = "tools/gen_conformance.py (the referee's rules engine, referee/rules/)"


def _head(about: str) -> dict[str, Any]:
    return {"about": about, "generator": GENERATOR, "card_code": CARD_CODE}


def _rule_variants() -> Iterator[tuple[RuleSet, int]]:
    """Every preset with every player count it allows (and sore-spot's long 3-player hands)."""
    for name in PRESETS:
        rules = preset(name)
        lo, hi = rules.player_range()
        for players in range(lo, hi + 1):
            yield rules, players
            if players == 3 and name == "sore-spot":
                yield preset(name, long_hands_3p=True), players


#: Presets played with another preset's deck (rule option ``deck`` overridden). Decks
#: that do not divide by the table size set cards aside at the deal (52 cards at 3, 5, 6,
#: 7 and 8 players).
DECK_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("sticheln", "french_2_14"),
    ("sticheln", "amigo"),
    ("amigo", "suits_per_player"),
    ("sore-spot", "french_2_14"),
    ("stick-em-secret", "french_zero_ace"),
)


def _override_variants() -> Iterator[tuple[RuleSet, int]]:
    """Every deck override with every player count it allows."""
    for name, deck in DECK_OVERRIDES:
        rules = preset(name, deck=deck)
        lo, hi = rules.player_range()
        for players in range(lo, hi + 1):
            yield rules, players


def _all_variants() -> Iterator[tuple[RuleSet, int]]:
    """The presets' variants, then the deck overrides (so older cases keep their place)."""
    yield from _rule_variants()
    yield from _override_variants()


def decks() -> dict[str, Any]:
    """The canonical deck and hand size for every preset and player count, and for every
    deck override."""
    cases = []
    for rules, players in _all_variants():
        cards, hand_size = deck_for(rules, players)
        cases.append(
            {
                "preset": rules.preset,
                "rules": rules.to_table(),
                "players": players,
                "deck_size": len(cards),
                "hand_size": hand_size,
                "set_aside_count": len(cards) - hand_size * players,
                "cards": list(cards),
            }
        )
    return {
        **_head(
            "the deck (ascending card codes) and hand size of every preset and player count, "
            "and of presets with another deck (rule option deck overridden); the cards "
            "beyond hand_size * players are set aside at the deal"
        ),
        "cases": cases,
    }


# Seeds of the deal vectors: 0, a small one, and ones that use all 64 bits.
_DEAL_SEEDS = (0, 7, 2**64 - 1, 0x5EED_CAFE_F00D_BEEF)


def deals() -> dict[str, Any]:
    """Seeded deals (docs/deal.md) for every preset and player count, several rounds, and
    for every deck override (some setting cards aside)."""
    cases = []
    for i, (rules, players) in enumerate(_all_variants()):
        for j in range(2):
            seed = _DEAL_SEEDS[(i + j) % len(_DEAL_SEEDS)]
            round_index = (i + 3 * j) % players
            dealer = round_index % players
            hands, set_aside = deal(rules, players, seed, round_index, dealer)
            cases.append(
                {
                    "preset": rules.preset,
                    "rules": rules.to_table(),
                    "players": players,
                    "seed": str(seed),
                    "round_index": round_index,
                    "dealer": dealer,
                    "hands": hands,
                    "set_aside": set_aside,
                }
            )
    return {
        **_head(
            "seeded deals by the algorithm of docs/deal.md; the seed is a decimal string "
            "(it uses all 64 bits)"
        ),
        "cases": cases,
    }


def _c(text: str) -> list[int]:
    letters = "?CSHDKWPR"
    return [letters.index(t[0]) << 4 | int(t[1:]) for t in text.split()]


#: Hand-picked tricks, each showing one step of docs/rules.md rule 6 (played under both trump
#: rules and both all-zero options).
NAMED_TRICKS: tuple[tuple[str, str], ...] = (
    ("lead suit only: the highest lead-suit card wins", "C5 C9 C3"),
    ("any non-zero off-suit card beats the lead suit", "C14 S2 C9"),
    ("the highest of several off-suit cards wins", "C3 S5 H9 D2"),
    ("a zero led still sets the lead suit", "C0 C7 S0"),
    ("a zero led, then an off-suit card", "C0 S3 C12"),
    ("zeros never win: the only non-zero card takes it", "H0 S0 D0 H4"),
    ("zeros of other suits are no off-suit cards", "D3 S0 H0 D1"),
    ("equal off-suit ranks: the earlier card wins", "C5 S9 H9"),
    ("equal off-suit ranks after a higher one", "C5 S11 H9 D9"),
    ("last suit: the most recent off-suit takes priority", "C5 S9 H3"),
    ("last suit: the highest card of the most recent off-suit", "C5 H2 S9 H7"),
    ("last suit: a zero played last does not change the suit", "C5 S9 H3 D0"),
    ("last suit: a lead-suit card played last does not change it", "C5 S9 C14"),
    ("last suit: the off-suit's zero is no candidate", "C5 S0 S4 H0"),
    ("all zeros: nobody wins it (or the leader takes it)", "C0 S0 H0"),
    ("all zeros at a table of five", "D0 C0 H0 S0 K0"),
    ("a single off-suit card of rank 1 beats a lead 14", "S14 S13 C1 S12"),
    ("eight players, two off-suits", "R2 P9 R14 W9 K3 C9 S1 H0"),
)


def _play_trick(
    cards: Sequence[int], leader: int, trump_rule: TrumpRule, all_zero: AllZeroTrick
) -> dict[str, Any]:
    """Play ``cards`` as the first trick of a real engine round; what the engine made of it."""
    players = len(cards)
    rules = preset("sticheln", trump_rule=trump_rule, all_zero_trick=all_zero)
    # Each seat holds its trick card and one more it picks as its pain card (set aside).
    spare = [c for c in range(16, 144) if c & 15 != 15 and c not in cards]
    hands = [[] for _ in range(players)]
    for k, c in enumerate(cards):
        hands[(leader + k) % players] = sorted([c, spare[k]])
    dealer = (leader - 1) % players
    rnd = Round(rules, players, dealer, hands, [])
    for seat in range(players):
        rnd.apply(seat, (spare[(seat - leader) % players],))
    assert rnd.leader == leader
    for c in cards:
        rnd.apply(rnd.to_play, c)
    trick = rnd.tricks[0]
    position = -1 if trick.reason == "all_zero" else (trick.winner - leader) % players
    return {
        "position": position,
        "winner": trick.winner,
        "reason": trick.reason.value,
        "tie": trick.tie,
        "captured_by": next((s for s in range(players) if rnd.captured[s]), -1),
        "next_leader": rnd.leader,
    }


def tricks() -> dict[str, Any]:
    """Trick winners with their reason, for hand-picked and seeded random tricks."""
    cases: list[dict[str, Any]] = []

    def add(name: str, cards: list[int], leader: int) -> None:
        for trump_rule in TrumpRule:
            for all_zero in AllZeroTrick:
                if all_zero is AllZeroTrick.LEADER_TAKES and any(c & 15 for c in cards):
                    continue  # the option only matters for an all-zero trick
                cases.append(
                    {
                        "name": name,
                        "trump_rule": trump_rule.value,
                        "all_zero_trick": all_zero.value,
                        "players": len(cards),
                        "leader": leader,
                        "cards": cards,
                        "cards_text": cards_str(cards),
                        **_play_trick(cards, leader, trump_rule, all_zero),
                    }
                )

    for i, (name, text) in enumerate(NAMED_TRICKS):
        cards = _c(text)
        add(name, cards, i % len(cards))
    rng = random.Random(17)
    for n in range(120):
        players = rng.randint(3, 8)
        deck = [s << 4 | r for s in range(1, players + 1) for r in range(15)]
        # Zeros are drawn more often than in a deck, so zero leads and all-zero tricks occur.
        zeros = [c for c in deck if not c & 15]
        cards = []
        while len(cards) < players:
            c = rng.choice(zeros if rng.random() < 0.3 else deck)
            if c not in cards:
                cards.append(c)
        add(f"random {n + 1}", cards, rng.randrange(players))
    return {
        **_head(
            "trick winners: position is the index into cards (0 = the leader's card, -1 = "
            "nobody: all zeros), winner the seat the engine records (-1: the trick is set "
            "aside), captured_by the seat that takes the cards (-1: nobody), next_leader "
            "who leads the next trick"
        ),
        "cases": cases,
    }


#: The rule sets the round vectors are played under: every scoring option and every preset.
ROUND_RULES: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("sticheln", {}, 4),
    ("sticheln", {"pain_cards_per_player": 2}, 4),
    ("sticheln", {"pain_card": "kept_in_hand"}, 4),
    ("sticheln", {"pain_card": "kept_in_hand", "pain_cards_per_player": 2}, 3),
    ("sticheln", {"first_lead": "dealer", "all_zero_trick": "leader_takes"}, 3),
    ("sticheln", {"trump_rule": "last_suit"}, 6),
    ("sticheln", {}, 8),
    ("amigo", {}, 5),
    ("amigo", {}, 3),
    ("sore-spot", {}, 4),
    ("sore-spot", {"long_hands_3p": True}, 3),
    ("french-2-14", {}, 4),
    ("stick-em-secret", {}, 5),
    ("stick-em-secret", {"pain_cards_per_player": 2}, 4),
)


def _policy(rng: random.Random) -> Callable[[Round, int, Sequence[Action]], Action]:
    """Random legal moves that favour zeros, so that all-zero tricks happen too."""

    def choose(rnd: Round, seat: int, legal: Sequence[Action]) -> Action:
        zeros = [a for a in legal if isinstance(a, int) and not a & 15]
        if zeros and rng.random() < 0.6:
            return rng.choice(zeros)
        return rng.choice(list(legal))

    return choose


def _trick_table(t: Any) -> dict[str, Any]:
    return {
        "leader": t.leader,
        "cards": list(t.cards),
        "winner": t.winner,
        "reason": t.reason.value,
        "tie": t.tie,
    }


def _played_round(rnd: Round, seed: int) -> dict[str, Any]:
    """Play the dealt ``rnd`` out with the seeded policy; the round's vector fields."""
    hands = [list(h) for h in rnd.hands]
    set_aside = list(rnd.set_aside)
    rnd.play_out(_policy(random.Random(seed)))
    assert rnd.scores is not None
    return {
        "round_index": rnd.round_index,
        "dealer": rnd.dealer,
        "hands": hands,
        "set_aside": set_aside,
        "pain": [list(p or ()) for p in rnd.pain],
        "tricks": [_trick_table(t) for t in rnd.tricks],
        "captured": [sorted(c) for c in rnd.captured],
        "discarded": sorted(rnd.discarded),
        "scores": rnd.scores,
    }


def _describe(rules: RuleSet, players: int) -> str:
    """A rule set in words: its preset, the options that differ from it, the table size."""
    base = preset(rules.preset).to_table()
    changed = [f"{k} {v}" for k, v in rules.to_table().items() if base.get(k) != v]
    return f"{rules.preset}{' with ' + ', '.join(changed) if changed else ''}, {players} players"


def _round_case(
    name: str, rules: RuleSet, players: int, seed: int, round_index: int
) -> dict[str, Any]:
    rnd = Round.deal(rules, players, seed, round_index, round_index % players)
    return {
        "name": name,
        "preset": rules.preset,
        "rules": rules.to_table(),
        "players": players,
        "seed": str(seed),
        **_played_round(rnd, seed),
    }


def _has_all_zero_trick(case: dict[str, Any]) -> bool:
    return any(t["reason"] == "all_zero" for t in case["tricks"])


def rounds() -> dict[str, Any]:
    """Whole rounds played by the engine: the deal, the pain picks, every trick, the scores.

    Every scoring option; every preset with every player count; every deck override that
    sets cards aside at the deal; and all-zero tricks set aside (the rule's default).
    """
    cases = []
    for i, (name, overrides, players) in enumerate(ROUND_RULES):
        rules = preset(name, **overrides)
        for j in range(2):
            cases.append(_round_case(_describe(rules, players), rules, players, 1000 * i + j, j))
    for k, (rules, players) in enumerate(_rule_variants()):
        cases.append(
            _round_case(_describe(rules, players), rules, players, 50_000 + k, k % players)
        )
    for k, (rules, players) in enumerate(_override_variants()):
        cards, hand_size = deck_for(rules, players)
        if len(cards) > hand_size * players:
            extra = len(cards) - hand_size * players
            name = f"{_describe(rules, players)}: {extra} card{'s' if extra > 1 else ''} set aside at the deal"
            cases.append(_round_case(name, rules, players, 60_000 + k, k % players))
    # A trick of zeros only is rare: the first seeds whose round has one, under set_aside.
    for name, overrides, players in (
        ("sticheln", {}, 3),
        ("stick-em-secret", {}, 4),
        ("sticheln", {"pain_card": "kept_in_hand"}, 5),
    ):
        rules = preset(name, **overrides)
        for seed in range(70_000, 80_000):
            case = _round_case(
                f"{_describe(rules, players)}: an all-zero trick set aside",
                rules,
                players,
                seed,
                seed % players,
            )
            if _has_all_zero_trick(case):
                cases.append(case)
                break
        else:
            raise AssertionError(f"no all-zero trick under {name} {overrides}")
    return {
        **_head(
            "whole rounds: name says what the case shows; the hands dealt (round round_index, "
            "dealt by dealer), the cards set aside at the deal, every seat's pain pick, every "
            "trick in order (cards from its leader), the cards each seat captured in tricks, "
            "the cards of all-zero tricks set aside (discarded), and the round scores "
            "(docs/rules.md rule 8)"
        ),
        "cases": cases,
    }


#: The rule sets of the match vectors: fixed numbers of rounds (fewer and more rounds than
#: players), the default (one round per player), both match_ties options.
MATCH_RULES: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("sticheln", {"rounds": 2}, 4),
    ("sticheln", {"rounds": 5, "match_ties": "shared"}, 3),
    ("amigo", {}, 4),
    ("sore-spot", {"rounds": 7}, 5),
    ("stick-em-secret", {"rounds": 3, "pain_cards_per_player": 2}, 6),
    ("french-2-14", {"match_ties": "shared"}, 4),
    ("sticheln", {"deck": "french_2_14", "rounds": 4}, 5),
)


def matches() -> dict[str, Any]:
    """Whole matches played by the engine: every round (dealt by the rotating dealer from
    the match seed), its scores, the running totals, the final places."""
    cases = []
    for i, (name, overrides, players) in enumerate(MATCH_RULES):
        rules = preset(name, **overrides)
        seed = 0x0DEA_1000_0000_0000 + i
        match = Match(rules, players, seed)
        played = []
        rng = random.Random(seed)
        while not match.is_over:
            rnd = match.round
            entry = _played_round(rnd.clone(), rng.randrange(1 << 32))
            # Replay the same moves on the match itself, which scores and deals the next.
            for pick_seat, pick in enumerate(entry["pain"]):
                match.apply(pick_seat, tuple(pick))
            for trick in entry["tricks"]:
                for k, card in enumerate(trick["cards"]):
                    match.apply((trick["leader"] + k) % players, card)
            assert list(match.results[-1].scores) == entry["scores"]
            entry["totals"] = list(match.totals)
            played.append(entry)
        cases.append(
            {
                "name": _describe(rules, players),
                "preset": name,
                "rules": rules.to_table(),
                "players": players,
                "seed": str(seed),
                "rounds_total": match.rounds_total,
                "rounds": played,
                "totals": list(match.totals),
                "positive_rounds": match.positive_rounds(),
                "places": match.places(),
            }
        )
    return {
        **_head(
            "whole matches: rounds_total rounds (the rule set's rounds, or one per player); "
            "round r is dealt by seat r mod players from the match seed (docs/deal.md) and "
            "holds the fields of a rounds.json case plus totals, every seat's match total "
            "after it; at the end totals, positive_rounds (rounds with a score above 0) and "
            "places (docs/rules.md rule 10, as places.json)"
        ),
        "cases": cases,
    }


def places() -> dict[str, Any]:
    """Match places (docs/rules.md rule 10) under both match_ties options, with forfeits."""
    inputs: list[tuple[list[int], list[int], list[int]]] = [
        ([10, 4, -3], [2, 1, 0], []),
        ([5, 5, 1], [2, 1, 1], []),
        ([5, 5, 1], [1, 1, 3], []),
        ([0, 0, 0, 0], [0, 0, 0, 0], []),
        ([7, 3, 7, -2], [1, 2, 2, 0], []),
        ([20, 3, 3, 3, -9], [3, 2, 2, 1, 0], [0]),
        ([-4, -4, 2, 9], [1, 1, 2, 2], [2, 3]),
    ]
    rng = random.Random(23)
    for _ in range(20):
        n = rng.randint(3, 8)
        totals = [rng.randint(-4, 4) for _ in range(n)]
        positive = [rng.randint(0, 2) for _ in range(n)]
        forfeited = [s for s in range(n) if rng.random() < 0.15]
        inputs.append((totals, positive, forfeited))
    cases = [
        {
            "match_ties": ties.value,
            "totals": totals,
            "positive_rounds": positive,
            "forfeited": forfeited,
            "places": ranking(totals, positive, ties, forfeited),
        }
        for totals, positive, forfeited in inputs
        for ties in MatchTies
    ]
    return {
        **_head(
            "match places by seat (1 = best; equal places are shared, competition style): "
            "higher total first, then under positive_rounds more rounds with a positive "
            "score; forfeited seats rank below all others"
        ),
        "cases": cases,
    }


FILES: dict[str, Callable[[], dict[str, Any]]] = {
    "decks.json": decks,
    "deals.json": deals,
    "tricks.json": tricks,
    "rounds.json": rounds,
    "matches.json": matches,
    "places.json": places,
}


def render(data: dict[str, Any]) -> str:
    """The file text: one case per line, so that a diff shows which case changed."""
    head = {k: v for k, v in data.items() if k != "cases"}
    lines = [json.dumps(case, separators=(", ", ": ")) for case in data["cases"]]
    text = json.dumps(head, indent=2)[:-2]  # without the closing brace
    return text + ',\n  "cases": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"


def build() -> dict[str, str]:
    """Every file's name and text, as the engine answers now."""
    return {name: render(make()) for name, make in FILES.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when stale")
    args = parser.parse_args(argv)
    built = build()
    if args.check:
        stale = [
            name
            for name, text in built.items()
            if not (OUT_DIR / name).is_file() or (OUT_DIR / name).read_text() != text
        ]
        if stale:
            print(
                f"gen_conformance: stale: {', '.join(stale)}; run python tools/gen_conformance.py",
                file=sys.stderr,
            )
            return 1
        return 0
    OUT_DIR.mkdir(exist_ok=True)
    for name, text in built.items():
        (OUT_DIR / name).write_text(text)
    print(f"wrote {len(built)} files to {OUT_DIR}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
