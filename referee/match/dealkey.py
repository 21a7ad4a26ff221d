"""The secret deal key: where every match seed of a tournament or league comes from.

A tournament's public ``seed`` decides its schedule and seating, and nothing else. The
deals come from a :class:`DealKey`: 256 random bits made when the tournament or league is
created, kept in its database and nowhere else (never in a config file, a record before the
end, a log line, a metric or a message to a bot). Deal number ``d`` is played from

    match seed = first 8 bytes, big-endian, of HMAC-SHA256(key, "sticheln/deal/v2" || d as u64 big-endian)

HMAC-SHA256 is a pseudo-random function: without the key, the seed of one deal says
nothing about the seed of another, however many seeds were revealed (docs/deal.md gives the
argument). At creation the tournament publishes :meth:`DealKey.commitment`, a hash of the
key; when its last match has ended it publishes the key itself, and anyone can re-derive
every deal and check it against the commitment (``referee verify``).

The same key gives every seat of a deal a seed for the bot's own random choices
(``MatchStart.bot_seed``), under a domain of its own:

    bot seed = first 8 bytes, big-endian, of HMAC-SHA256(key, "sticheln/bot-seed/v1" || d as u64 big-endian || seat as u32 big-endian)

It depends on the deal and the seat, never on the bot seated there, so every match that
plays deal ``d`` (a duplicate deal's seatings, a comparison's pair) hands seat ``s`` the
same seed: common random numbers for the bots that use it. With a different domain tag the
two derivations are independent pseudo-random functions of the key, so bot seeds, however
many are known, say nothing about any match seed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

#: The key's length in bytes (256 bits).
KEY_BYTES = 32
#: Domain tag of the match-seed derivation.
DEAL_DOMAIN = b"sticheln/deal/v2"
#: Domain tag of the bots' seed derivation (``MatchStart.bot_seed``).
BOT_SEED_DOMAIN = b"sticheln/bot-seed/v1"
#: Domain tag of the published commitment to the key.
COMMITMENT_DOMAIN = b"sticheln/deal-key/v1"
#: The environment variable a shard reads its deal key from (hex), when no key file is given.
KEY_ENV = "STICHELN_DEAL_KEY"


@dataclass(frozen=True)
class DealKey:
    """A tournament's or league's secret deal key. Its ``repr`` shows the commitment
    only, so that the key cannot reach a log line by accident."""

    secret: bytes

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise ValueError(f"a deal key is {KEY_BYTES} bytes, not {len(self.secret)}")

    def __repr__(self) -> str:
        return f"DealKey(commitment={self.commitment()[:16]}…)"

    __str__ = __repr__

    @classmethod
    def new(cls) -> DealKey:
        """A fresh key from the operating system's random source."""
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def from_hex(cls, text: str) -> DealKey:
        """A key from its 64 hex digits (surrounding white space is ignored); a
        :class:`ValueError` says in one line what is wrong."""
        text = text.strip()
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise ValueError(
                f"a deal key is {2 * KEY_BYTES} hex digits; this is not hex ({len(text)} characters)"
            ) from None
        if len(raw) != KEY_BYTES:
            raise ValueError(f"a deal key is {2 * KEY_BYTES} hex digits, not {len(text)}")
        return cls(raw)

    def hex(self) -> str:
        """The key as 64 hex digits: for the database, a shard's key file, the final export."""
        return self.secret.hex()

    def commitment(self) -> str:
        """SHA-256 of the domain tag and the key, in hex: published at creation."""
        return hashlib.sha256(COMMITMENT_DOMAIN + self.secret).hexdigest()

    def match_seed(self, deal: int) -> int:
        """The match seed of deal number ``deal`` (0 .. 2^64 − 1)."""
        if not 0 <= deal < 1 << 64:
            raise ValueError(f"deal number {deal} is out of range")
        digest = hmac.digest(self.secret, DEAL_DOMAIN + deal.to_bytes(8, "big"), "sha256")
        return int.from_bytes(digest[:8], "big")

    def bot_seed(self, deal: int, seat: int) -> int:
        """The bot seed of ``seat`` in every match of deal number ``deal`` (0 .. 2^64 − 1)."""
        if not 0 <= deal < 1 << 64:
            raise ValueError(f"deal number {deal} is out of range")
        if not 0 <= seat < 1 << 32:
            raise ValueError(f"seat {seat} is out of range")
        message = BOT_SEED_DOMAIN + deal.to_bytes(8, "big") + seat.to_bytes(4, "big")
        return int.from_bytes(hmac.digest(self.secret, message, "sha256")[:8], "big")

    def bot_seeds(self, deal: int, players: int) -> tuple[int, ...]:
        """The bot seed of every seat of deal number ``deal``, indexed by seat."""
        return tuple(self.bot_seed(deal, seat) for seat in range(players))


def check_commitment(key_hex: str, commitment: str) -> bool:
    """Whether the revealed key ``key_hex`` is the one ``commitment`` was made to."""
    try:
        key = DealKey.from_hex(key_hex)
    except ValueError:
        return False
    return hmac.compare_digest(key.commitment(), commitment.strip().lower())
