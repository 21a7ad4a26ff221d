"""Decks per rule set and player count, and the seeded deal.

The deal algorithm is specified in ``docs/deal.md`` so that a bot author can re-derive any
deal from a revealed match seed in any language:

1. The deck in canonical order: ascending card number ``suit * 16 + rank``.
2. A byte stream: block ``i`` (i = 0, 1, ...) is
   ``SHA-256("sticheln/deal/v1" || seed as u64 big-endian || round as u32 big-endian ||
   i as u64 big-endian)``; the stream is the blocks concatenated.
3. Draws: each draw reads the next 8 bytes as a big-endian u64 ``x``; a uniform integer in
   ``[0, n)`` is ``x mod n`` unless ``x >= 2**64 - (2**64 mod n)``, in which case that
   draw is discarded and the next one read (rejection sampling; no modulo bias).
4. Fisher-Yates: for ``i`` from ``len(deck) - 1`` down to 1, ``j = draw(i + 1)``, swap
   ``deck[i]`` and ``deck[j]``.
5. Dealing: shuffled card ``k`` goes to seat ``(dealer + 1 + k) mod players`` while
   ``k < hand_size * players``; the remaining cards are set aside face down.
"""

from __future__ import annotations

import hashlib
import struct
from functools import lru_cache

from referee.rules.cards import Card
from referee.rules.ruleset import Deck, RuleSet

_DOMAIN = b"sticheln/deal/v1"
_TWO64 = 1 << 64

# French decks: Ace = 0, then 2..10, J 11, Q 12, K 13 (there is no 1).
_FRENCH_ZERO_ACE_RANKS = (0, *range(2, 14))


def _cards(suits: range | tuple[int, ...], ranks: range | tuple[int, ...]) -> list[Card]:
    return [s << 4 | r for s in suits for r in ranks]


@lru_cache(maxsize=256)
def _deck_for(rules: RuleSet, players: int) -> tuple[tuple[Card, ...], int]:
    deck = rules.deck
    if deck is Deck.SUITS_PER_PLAYER:
        cards = _cards(range(1, players + 1), range(15))
    elif deck is Deck.AMIGO:
        suits = range(1, 7) if players >= 6 else range(1, 6)
        top = {3: 9, 4: 12}.get(players, 15)
        cards = _cards(suits, range(top))
    elif deck is Deck.FRENCH_ZERO_ACE:
        if players == 3:
            top = 13 if rules.long_hands_3p else 10  # A..Q or A..9
            cards = _cards(range(1, 5), tuple(r for r in _FRENCH_ZERO_ACE_RANKS if r < top))
        else:
            cards = _cards(range(1, 5), _FRENCH_ZERO_ACE_RANKS)
            if players == 5:
                cards = [
                    c for c in cards if c not in (1 << 4 | 2, 2 << 4 | 2)
                ]  # 2 of clubs, spades
            elif players >= 6:
                cards = [c for c in cards if c & 15 != 2]
    else:  # Deck.FRENCH_2_14
        cards = _cards(range(1, 5), range(2, 15))
    return tuple(sorted(cards)), len(cards) // players


def deck_for(rules: RuleSet, players: int) -> tuple[tuple[Card, ...], int]:
    """The canonical (sorted) deck and the hand size for ``players`` players."""
    return _deck_for(rules, players)


class _Stream:
    """Uniform draws from SHA-256 in counter mode, as specified above."""

    __slots__ = ("_counter", "_prefix", "_words")

    def __init__(self, seed: int, round_index: int) -> None:
        if not 0 <= seed < _TWO64:
            raise ValueError(f"seed: {seed} is out of range; allowed: 0 to 2**64 - 1")
        self._prefix = _DOMAIN + seed.to_bytes(8, "big") + round_index.to_bytes(4, "big")
        self._counter = 0
        self._words: list[int] = []

    def _refill(self) -> None:
        block = hashlib.sha256(self._prefix + self._counter.to_bytes(8, "big")).digest()
        self._counter += 1
        # Reversed so that pop() yields the words in stream order.
        self._words = [int.from_bytes(block[i : i + 8], "big") for i in (24, 16, 8, 0)]

    def below(self, n: int) -> int:
        limit = _TWO64 - _TWO64 % n
        while True:
            if not self._words:
                self._refill()
            x = self._words.pop()
            if x < limit:
                return x % n


# Rejection limits per range size: a draw x is kept for range n when x < _LIMITS[n].
_LIMITS = [0, _TWO64] + [_TWO64 - _TWO64 % n for n in range(2, 257)]
# No draw below this is rejected for any range up to 256, so one max() checks a shuffle.
_SAFE = min(_LIMITS[2:])
_COUNTERS = [i.to_bytes(8, "big") for i in range(64)]
_BLOCK_WORDS = {nb: struct.Struct(f">{4 * nb}Q") for nb in range(1, 65)}


def _shuffle_fast(cards: list[Card], prefix: bytes) -> bool:
    """Fisher-Yates when no draw is rejected (all but ~n/2**64 of shuffles); False if one is."""
    n = len(cards)
    blocks = (n + 2) // 4  # n - 1 draws, four per block
    sha256 = hashlib.sha256
    data = b"".join([sha256(prefix + c).digest() for c in _COUNTERS[:blocks]])
    words = _BLOCK_WORDS[blocks].unpack(data)[: n - 1]
    if max(words) >= _SAFE:
        return False
    for i, j in zip(
        range(n - 1, 0, -1),
        [x % m for x, m in zip(words, range(n, 1, -1), strict=True)],
        strict=True,
    ):
        cards[i], cards[j] = cards[j], cards[i]
    return True


def shuffled(deck: tuple[Card, ...] | list[Card], seed: int, round_index: int) -> list[Card]:
    """The deck shuffled by the documented algorithm for (seed, round)."""
    stream = _Stream(seed, round_index)
    cards = list(deck)
    if 2 <= len(cards) <= 256 and _shuffle_fast(cards, stream._prefix):
        return cards
    cards = list(deck)
    below = stream.below
    for i in range(len(cards) - 1, 0, -1):
        j = below(i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return cards


def deal(
    rules: RuleSet, players: int, seed: int, round_index: int, dealer: int
) -> tuple[list[list[Card]], list[Card]]:
    """Hands (sorted, indexed by seat) and the set-aside cards for one round."""
    deck, hand_size = deck_for(rules, players)
    cards = shuffled(deck, seed, round_index)
    dealt = hand_size * players
    # Card k goes to seat (dealer + 1 + k) % players: seat s gets every players-th card
    # starting at offset (s - dealer - 1) % players.
    hands = [sorted(cards[(s - dealer - 1) % players : dealt : players]) for s in range(players)]
    return hands, cards[dealt:]
