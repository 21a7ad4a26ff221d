"""A Monte Carlo bot: it guesses the hidden hands and plays each candidate card out.

It uses the referee's own rules engine as its simulator (``pip install`` the referee
package, or run it from the referee's virtualenv). At each card play, until its time
budget is spent:

1. Deal the cards it has not seen (:func:`unseen_cards`, from ``referee.rules.sample``) at random to the other seats,
   in the right numbers, and to the cards set aside at the deal: one *determinization*,
   a full game state consistent with everything the seat knows.
2. For each legal card, play it in that state and play the round out with a fast
   rollout policy (:func:`shedding_policy`) for every seat.
3. Keep, per card, the running mean of (own round score - the others' mean score).

It plays the card with the best mean. Every card is tried on the same determinizations,
so their differences are not drowned in the luck of the deal. The pain choice uses the
heuristic bot's cost estimate.

Time: at most ``budget_share`` of the request's ``timeout_ms`` and never more than
``cap_ms`` (default 150 ms, ``--cap-ms`` or ``MONTECARLO_CAP_MS``), clock checked between
simulations.

Randomness: the sampled deals and the rollouts draw from one generator seeded at every
match with ``MatchStart.bot_seed``, so two matches of a comparison pair sample alike as
far as their positions agree. How many simulations fit the time budget still depends on
the machine, so the bot does not replay a match card for card.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence

from heuristic_bot import choose_pain_cards
from sticheln_bot import Bot, arg_parser, run

from referee.convert import view_from_proto
from referee.rules import PainCard, View, deck_for
from referee.rules.sample import (  # the engine's simulation helpers, shared with fair play
    Policy,
    PolicyMaker,
    random_policy,
    round_from_view,
    sample_hidden,
    shedding_policy,
    unseen_cards,
)
from sticheln.v1 import bot_pb2, game_pb2

__all__ = [
    "MonteCarloBot",
    "Policy",
    "PolicyMaker",
    "main",
    "random_policy",
    "round_from_view",
    "sample_hidden",
    "shedding_policy",
    "unseen_cards",
]


class MonteCarloBot(Bot):
    """Chooses each card by simulation with the referee's engine."""

    name = "montecarlo"
    version = "1.0"

    def __init__(
        self,
        cap_ms: float = 150.0,
        budget_share: float = 0.35,
        seed: int | None = None,
        policy: PolicyMaker = shedding_policy,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        super().__init__()
        self.cap_ms = cap_ms
        #: Seconds, read to keep to the budget; a test passes a clock of its own.
        self.clock = clock
        self.budget_share = budget_share
        #: A seed given here holds for the process; otherwise each match's bot seed.
        self.fixed_seed = seed
        self.rng = random.Random(seed)
        # The deals sampled and the rollouts draw from the one generator.
        self.policy = policy(self.rng.random)
        #: Simulations run for the last card play (one per candidate card per deal).
        self.last_simulations = 0

    def on_match_start(self, start: bot_pb2.MatchStart) -> None:
        """Seed the sampling from the match's bot seed (common random numbers)."""
        if self.fixed_seed is None:
            self.rng.seed(start.bot_seed)

    def convert_view(self, msg: game_pb2.View) -> View:
        """The engine's view: the simulator wants engine types."""
        return view_from_proto(msg)

    def choose_pain(self, view: View, count: int) -> list[int]:
        """The heuristic bot's cheapest pain card(s)."""
        deck, _ = deck_for(view.rules, view.players)
        return choose_pain_cards(
            view.hand, count, deck, kept_in_hand=view.rules.pain_card is PainCard.KEPT_IN_HAND
        )

    def deadline(self) -> float:
        """The :attr:`clock` time by which the current decision must be made (the request's
        arrival, :attr:`received_at`, is read from the same clock)."""
        timeout_ms = self.request.timeout_ms if self.request is not None else 1000
        budget = min(self.cap_ms, self.budget_share * timeout_ms) / 1000
        start = self.received_at if self.request is not None else self.clock()
        return start + budget

    def choose_card(self, view: View) -> int:
        """The card with the best mean simulated score margin."""
        deadline = self.deadline()
        candidates = list(view.hand)
        self.last_simulations = 0
        if len(candidates) == 1:
            return candidates[0]
        base = round_from_view(view)
        me, others = view.seat, view.players - 1
        totals = [0.0] * len(candidates)
        deals = 0
        clock = self.clock
        policy = self.policy
        deal_s = 0.0
        while True:
            started = clock()
            hands, set_aside, pain = sample_hidden(view, self.rng)
            for i, card in enumerate(candidates):
                rnd = base.clone()
                rnd.hands = [list(h) for h in hands]
                rnd.set_aside = set_aside
                if pain is not None:
                    rnd.pain, rnd.pain_suits = list(pain[0]), list(pain[1])
                rnd.apply(me, card)
                scores = rnd.play_out(policy)
                mine = scores[me]
                totals[i] += mine - (sum(scores) - mine) / others
            deals += 1
            now = clock()
            # Stop when the next deal (about as long as this one) would end past the deadline.
            deal_s = max(deal_s, now - started)
            if now + deal_s >= deadline:
                break
        self.last_simulations = deals * len(candidates)
        best = max(range(len(candidates)), key=lambda i: totals[i])
        return candidates[best]


def main(argv: Sequence[str] | None = None) -> None:
    """The helper's command line plus ``--cap-ms``, then play."""
    parser = arg_parser(MonteCarloBot.name)
    parser.add_argument(
        "--cap-ms",
        type=float,
        default=float(os.environ.get("MONTECARLO_CAP_MS", "150")),
        help="most thinking time per card play in ms (default: $MONTECARLO_CAP_MS or 150)",
    )
    args = parser.parse_args(argv)
    run(MonteCarloBot(cap_ms=args.cap_ms), args=args)


if __name__ == "__main__":
    main()
