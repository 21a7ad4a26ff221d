"""Decks per rule set and player count, and the seeded deal (docs/deal.md).

The deal vectors in tests/vectors/deal_vectors.json come from tools/deal_vectors.mjs, an
independent Node.js implementation of docs/deal.md; matching them shows that a bot author
can re-derive every deal from a revealed seed in another language. Regenerate them with
``node tools/deal_vectors.mjs > tests/vectors/deal_vectors.json``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from referee.rules import Round, RuleSet, card_str, deal, deck_for, preset, shuffled

ROOT = Path(__file__).resolve().parent.parent
VECTORS_FILE = ROOT / "tests" / "vectors" / "deal_vectors.json"
GENERATOR = ROOT / "tools" / "deal_vectors.mjs"
DEAL_DOC = ROOT / "docs" / "deal.md"
VECTORS: list[dict[str, Any]] = json.loads(VECTORS_FILE.read_text())["vectors"]

FRENCH_ZERO_ACE_RANKS = {0, *range(2, 14)}


def vector_id(v: dict[str, Any]) -> str:
    extra = "".join(f"-{k}={val}" for k, val in v["overrides"].items())
    return f"{v['preset']}{extra}-{v['players']}p-seed{v['seed']}-r{v['round']}-d{v['dealer']}"


def vector_rules(v: dict[str, Any]) -> RuleSet:
    return preset(v["preset"], **v["overrides"])


def suits_and_ranks(deck: tuple[int, ...]) -> dict[int, set[int]]:
    by_suit: dict[int, set[int]] = {}
    for c in deck:
        by_suit.setdefault(c // 16, set()).add(c % 16)
    return by_suit


# -- deck composition (docs/rules.md rule 1, the deck option and the presets) -----------


@pytest.mark.parametrize("name", ["sticheln", "stick-em-secret"])
@pytest.mark.parametrize("players", range(3, 9))
def test_suits_per_player_deck_is_n_suits_of_0_to_14(name: str, players: int) -> None:
    deck, hand_size = deck_for(preset(name), players)
    assert len(deck) == 15 * players
    assert hand_size == 15
    assert suits_and_ranks(deck) == {s: set(range(15)) for s in range(1, players + 1)}


AMIGO = {3: (45, 9), 4: (60, 12), 5: (75, 15), 6: (90, 15)}  # cards, ranks per suit


@pytest.mark.parametrize(("players", "expected"), AMIGO.items())
def test_amigo_deck_is_trimmed_by_player_count(players: int, expected: tuple[int, int]) -> None:
    size, ranks = expected
    deck, hand_size = deck_for(preset("amigo"), players)
    assert (len(deck), hand_size) == (size, 15)
    by_suit = suits_and_ranks(deck)
    assert len(by_suit) == (6 if players == 6 else 5)
    assert all(r == set(range(ranks)) for r in by_suit.values())


SORE_SPOT = {3: (36, 12), 4: (52, 13), 5: (50, 10), 6: (48, 8)}


@pytest.mark.parametrize(("players", "expected"), SORE_SPOT.items())
def test_sore_spot_deck_follows_the_deal_table(players: int, expected: tuple[int, int]) -> None:
    deck, hand_size = deck_for(preset("sore-spot"), players)
    assert (len(deck), hand_size) == expected
    by_suit = suits_and_ranks(deck)
    assert set(by_suit) == {1, 2, 3, 4}
    assert all(1 not in ranks and 14 not in ranks for ranks in by_suit.values())
    if players == 3:
        assert all(r == {0, *range(2, 10)} for r in by_suit.values())  # A..9
    elif players == 4:
        assert all(r == FRENCH_ZERO_ACE_RANKS for r in by_suit.values())
    elif players == 5:
        full = {s * 16 + r for s in range(1, 5) for r in FRENCH_ZERO_ACE_RANKS}
        assert full - set(deck) == {1 * 16 + 2, 2 * 16 + 2}  # 2 of clubs and of spades
    else:
        assert all(r == FRENCH_ZERO_ACE_RANKS - {2} for r in by_suit.values())


def test_sore_spot_long_hands_3p_uses_ace_to_queen() -> None:
    deck, hand_size = deck_for(preset("sore-spot", long_hands_3p=True), 3)
    assert (len(deck), hand_size) == (48, 16)
    assert suits_and_ranks(deck) == {s: {0, *range(2, 13)} for s in range(1, 5)}


def test_long_hands_3p_changes_nothing_for_four_players() -> None:
    long = preset("sore-spot", long_hands_3p=True)
    assert deck_for(long, 4) == deck_for(preset("sore-spot"), 4)


def test_french_2_14_deck_is_52_cards_without_zeros() -> None:
    deck, hand_size = deck_for(preset("french-2-14"), 4)
    assert (len(deck), hand_size) == (52, 13)
    assert suits_and_ranks(deck) == {s: set(range(2, 15)) for s in range(1, 5)}


def test_decks_are_in_canonical_order_without_duplicates() -> None:
    for name in ("sticheln", "amigo", "sore-spot", "french-2-14", "stick-em-secret"):
        rules = preset(name)
        lo, hi = rules.player_range()
        for players in range(lo, hi + 1):
            deck, _ = deck_for(rules, players)
            assert list(deck) == sorted(set(deck))


# -- the deal -----------------------------------------------------------------------------


def test_deal_gives_every_seat_a_full_sorted_hand() -> None:
    rules = preset("sticheln")
    hands, set_aside = deal(rules, 5, seed=9, round_index=0, dealer=0)
    deck, hand_size = deck_for(rules, 5)
    assert [len(h) for h in hands] == [hand_size] * 5
    assert all(h == sorted(h) for h in hands)
    assert set_aside == []
    assert Counter(c for h in hands for c in h) == Counter(deck)


def test_leftover_cards_are_set_aside() -> None:
    rules = preset("sticheln", deck="french_2_14")
    for players, left in ((3, 1), (5, 2), (6, 4), (7, 3), (8, 4)):
        hands, set_aside = deal(rules, players, seed=3, round_index=1, dealer=1)
        assert len(set_aside) == left
        assert {len(h) for h in hands} == {52 // players}
        assert Counter([*set_aside, *(c for h in hands for c in h)]) == Counter(
            deck_for(rules, players)[0]
        )


def test_deal_is_deterministic() -> None:
    rules = preset("sore-spot")
    assert deal(rules, 4, 77, 2, 2) == deal(rules, 4, 77, 2, 2)
    assert shuffled(deck_for(rules, 4)[0], 77, 2) == shuffled(deck_for(rules, 4)[0], 77, 2)
    assert Round.deal(rules, 4, 77, 2, 2).hands == deal(rules, 4, 77, 2, 2)[0]


def test_deal_differs_across_rounds_and_seeds() -> None:
    rules = preset("sticheln")
    deck = deck_for(rules, 4)[0]
    orders = {tuple(shuffled(deck, seed, r)) for seed in range(5) for r in range(5)}
    assert len(orders) == 25
    assert tuple(shuffled(deck, 0, 0)) != deck


def test_shuffle_is_a_permutation() -> None:
    deck = deck_for(preset("amigo"), 6)[0]
    for seed in (0, 1, 2**64 - 1):
        assert sorted(shuffled(deck, seed, 0)) == list(deck)


def test_shuffled_does_not_change_its_input() -> None:
    deck = list(deck_for(preset("sticheln"), 3)[0])
    before = list(deck)
    shuffled(deck, 5, 0)
    assert deck == before


def test_dealer_rotates_who_gets_which_card() -> None:
    # Card k goes to seat (dealer + 1 + k) mod players, so moving the dealer by one seat
    # moves every hand by one seat.
    rules = preset("sticheln")
    base, _ = deal(rules, 4, 12, 0, dealer=0)
    for dealer in range(1, 4):
        hands, _ = deal(rules, 4, 12, 0, dealer=dealer)
        assert [hands[(s + dealer) % 4] for s in range(4)] == base


@pytest.mark.parametrize("seed", [-1, 2**64, 2**70, -(2**64)])
def test_seeds_outside_u64_are_refused(seed: int) -> None:
    rules = preset("sticheln")
    deck = deck_for(rules, 3)[0]
    with pytest.raises(ValueError, match="seed"):
        shuffled(deck, seed, 0)
    with pytest.raises(ValueError, match="seed"):
        deal(rules, 3, seed, 0, 0)
    with pytest.raises(ValueError, match="seed"):
        Round.deal(rules, 3, seed)


def test_seed_bounds_are_accepted() -> None:
    rules = preset("sticheln")
    for seed in (0, 2**64 - 1):
        hands, _ = deal(rules, 3, seed, 0, 0)
        assert sum(map(len, hands)) == 45


# -- the independent deal vectors -----------------------------------------------------------


def test_vectors_cover_every_preset_and_deck() -> None:
    assert {v["preset"] for v in VECTORS} == {
        "sticheln",
        "amigo",
        "sore-spot",
        "french-2-14",
        "stick-em-secret",
    }
    assert {v["deck"] for v in VECTORS} == {
        "suits_per_player",
        "amigo",
        "french_zero_ace",
        "french_2_14",
    }
    assert any(v["set_aside"] for v in VECTORS)
    assert any(int(v["seed"]) == 2**64 - 1 for v in VECTORS)


@pytest.mark.parametrize("v", VECTORS, ids=vector_id)
def test_engine_deck_matches_independent_vector(v: dict[str, Any]) -> None:
    rules = vector_rules(v)
    assert rules.deck.value == v["deck"]
    deck, hand_size = deck_for(rules, v["players"])
    assert list(deck) == v["canonical_deck"]
    assert (len(deck), hand_size) == (v["deck_size"], v["hand_size"])


@pytest.mark.parametrize("v", VECTORS, ids=vector_id)
def test_engine_deal_matches_independent_vector(v: dict[str, Any]) -> None:
    rules = vector_rules(v)
    seed = int(v["seed"])
    deck, _ = deck_for(rules, v["players"])
    order = shuffled(deck, seed, v["round"])
    assert order == v["shuffled"]
    assert order[:10] == v["first10"]
    assert " ".join(map(card_str, order[:10])) == v["first10_text"]
    hands, set_aside = deal(rules, v["players"], seed, v["round"], v["dealer"])
    assert hands == v["hands"]
    assert set_aside == v["set_aside"]
    assert " ".join(map(card_str, hands[0])) == v["seat0_hand_text"]


@pytest.mark.parametrize("v", VECTORS, ids=vector_id)
def test_deal_doc_shows_the_vectors(v: dict[str, Any]) -> None:
    doc = DEAL_DOC.read_text()
    assert v["first10_text"] in doc
    assert v["seat0_hand_text"] in doc


def _doc_code(language: str) -> str:
    """The reference implementation in ``language``: the first block after its heading."""
    doc = DEAL_DOC.read_text()
    start = doc.index("## Reference implementation (" + {"python": "Python"}.get(language, "Java"))
    blocks = re.findall(rf"```{language}\n(.*?)```", doc[start:], flags=re.S)
    assert blocks, f"docs/deal.md has no {language} block"
    return str(blocks[0])


def test_deal_doc_python_reference_reproduces_the_vectors() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_doc_code("python"), "docs/deal.md", "exec"), namespace)
    for v in VECTORS:
        deck = namespace["deck_for"](v["deck"], v["players"], v["overrides"].get("long_hands_3p"))
        assert deck == v["canonical_deck"]
        hands, set_aside = namespace["deal"](
            deck, v["players"], int(v["seed"]), v["round"], v["dealer"]
        )
        assert hands == v["hands"]
        assert set_aside == v["set_aside"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_vector_file_is_what_the_node_generator_prints() -> None:
    out = subprocess.run(
        ["node", str(GENERATOR)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    assert json.loads(out) == json.loads(VECTORS_FILE.read_text())


_NODE_CHECK = """
import { readFileSync } from "node:fs";
const [docPath, vectorsPath] = process.argv.slice(1);
const code = readFileSync(docPath, "utf8").match(/```javascript\\n([\\s\\S]*?)```/)[1];
const mod = await import("data:text/javascript," + encodeURIComponent(code + "\\nexport { deal };"));
const out = JSON.parse(readFileSync(vectorsPath, "utf8")).vectors.map((v) =>
  mod.deal(v.canonical_deck, v.players, BigInt(v.seed), v.round, v.dealer));
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_deal_doc_javascript_reference_reproduces_the_vectors() -> None:
    out = subprocess.run(
        ["node", "--input-type=module", "-e", _NODE_CHECK, str(DEAL_DOC), str(VECTORS_FILE)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    results = json.loads(out)
    assert [r["hands"] for r in results] == [v["hands"] for v in VECTORS]
    assert [r["setAside"] for r in results] == [v["set_aside"] for v in VECTORS]


class _FakeHash:
    """Stands in for SHA-256: every block is the same four chosen words."""

    def __init__(self, words: list[int]) -> None:
        self._block = b"".join(w.to_bytes(8, "big") for w in words)

    def digest(self) -> bytes:
        return self._block


def test_draws_at_or_above_the_rejection_limit_are_discarded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With 3 cards the first draw is draw(3): 2**64 mod 3 == 1, so the limit is 2**64 - 1
    # and the word 2**64 - 1 must be discarded. Then 5 % 3 = 2 (no swap) and draw(2)
    # reads 6 % 2 = 0 (swap the first two). Without the discard the words would give
    # j = 0 and then j = 1: a different order.
    words = [2**64 - 1, 5, 6, 6]
    import hashlib

    import referee.rules.deck as deck_module

    def fake(data: bytes = b"") -> _FakeHash:
        return _FakeHash(words)

    monkeypatch.setattr(hashlib, "sha256", fake)
    if hasattr(deck_module, "sha256"):
        monkeypatch.setattr(deck_module, "sha256", fake)
    assert shuffled([16, 17, 18], 0, 0) == [17, 16, 18]
    namespace: dict[str, Any] = {}
    exec(compile(_doc_code("python"), "docs/deal.md", "exec"), namespace)
    assert namespace["shuffle"]([16, 17, 18], 0, 0) == [17, 16, 18]
