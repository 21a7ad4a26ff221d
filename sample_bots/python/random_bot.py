"""A bot that plays a uniformly random legal card: the smallest complete bot.

Run it against a referee with ``STICHELN_REFEREE`` and ``STICHELN_TOKEN`` set (the
referee sets both when it starts the bot from ``sample_bots/random.toml``).

Its random numbers come from ``MatchStart.bot_seed``, drawn anew at every match: given the
same cards and the same seed it plays the same cards, and in a comparison it plays with
the same luck against the candidate and the baseline (docs/bot-protocol.md, 6.1).
``RANDOM_BOT_SEED`` fixes the seed for the whole process instead.
"""

from __future__ import annotations

import os
import random

from sticheln_bot import Bot, PlainView, run

from sticheln.v1 import bot_pb2


class RandomBot(Bot):
    """Any card of the hand is legal (there is no duty to follow suit), so pick one."""

    name = "random"
    version = "1.0"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__()
        #: A seed given here holds for the process; otherwise each match's bot seed.
        self.fixed_seed = seed
        self.rng = random.Random(seed)

    def on_match_start(self, start: bot_pb2.MatchStart) -> None:
        """Seed the random choices from the match's bot seed."""
        if self.fixed_seed is None:
            self.rng.seed(start.bot_seed)

    def choose_pain(self, view: PlainView, count: int) -> list[int]:
        """``count`` random cards, uniformly among the legal choices.

        Two pain cards must be of two suits, unless the hand holds a single suit.
        """
        if count == 1:
            return [self.rng.choice(view.hand)]
        one_suit = len({c >> 4 for c in view.hand}) == 1
        while True:  # rejection sampling keeps every legal pair equally likely
            pair = self.rng.sample(view.hand, 2)
            if one_suit or pair[0] >> 4 != pair[1] >> 4:
                return pair

    def choose_card(self, view: PlainView) -> int:
        """A random card of the hand."""
        return self.rng.choice(view.hand)


if __name__ == "__main__":
    seed = os.environ.get("RANDOM_BOT_SEED")
    run(RandomBot(int(seed) if seed else None))
