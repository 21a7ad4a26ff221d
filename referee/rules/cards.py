"""Cards as plain integers, for speed: ``card = suit * 16 + rank``.

A suit is 1..8 (clubs, spades, hearts, diamonds, caps, switches, planets, stars; the
protocol's ``Suit`` enum has the same numbers, and 0 is no suit) and a rank 0..15 (decks
use 0..14). The same integer is the card's code on the wire, so card 0 means "no card". The engine's hot loops work on these
ints and lists of them; :func:`card_str` and :func:`parse_card` give the text form used in
logs, match records and the replay account (``"H12"`` is rank 12 of hearts).
"""

from __future__ import annotations

Card = int

#: Suit names by suit number (index 0 is no suit).
SUIT_NAMES: tuple[str, ...] = (
    "none",
    "clubs",
    "spades",
    "hearts",
    "diamonds",
    "caps",
    "switches",
    "planets",
    "stars",
)
#: One letter per suit, for the short text form of a card.
SUIT_LETTERS = "?CSHDKWPR"


def card(suit: int, rank: int) -> Card:
    """The card of ``rank`` in ``suit``."""
    if not 1 <= suit <= 8 or not 0 <= rank < 16:
        raise ValueError(f"card: suit {suit} rank {rank} is out of range (suit 1..8, rank 0..15)")
    return suit << 4 | rank


def suit_of(c: Card) -> int:
    """The card's suit, 1..8."""
    return c >> 4


def rank_of(c: Card) -> int:
    """The card's rank; 0 is a zero, which never wins a trick."""
    return c & 15


def card_str(c: Card) -> str:
    """Short text form, e.g. ``"C0"`` or ``"H12"``."""
    return f"{SUIT_LETTERS[c >> 4]}{c & 15}"


def parse_card(text: str) -> Card:
    """Inverse of :func:`card_str`; raises ValueError with a readable message."""
    text = text.strip()
    if len(text) < 2 or text[0].upper() not in SUIT_LETTERS[1:] or not text[1:].isdigit():
        raise ValueError(
            f"card: {text!r} is not a card; expected a suit letter from "
            f"{SUIT_LETTERS[1:]} and a rank, e.g. 'H12'"
        )
    return card(SUIT_LETTERS.index(text[0].upper()), int(text[1:]))


def cards_str(cards: list[Card] | tuple[Card, ...]) -> str:
    """Space-separated text form of several cards."""
    return " ".join(card_str(c) for c in cards)
