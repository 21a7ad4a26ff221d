"""A Monte Carlo bot: it guesses the hidden hands and plays each candidate card out.

It uses the referee's own rules engine as its simulator (``pip install`` the referee
package, or run it from the referee's virtualenv). At each card play, until its time
budget is spent:

1. Deal the cards it has not seen (:func:`unseen_cards`) at random to the other seats,
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
from referee.rules import Card, PainCard, Phase, Round, View, deck_for
from sticheln.v1 import bot_pb2, game_pb2

#: A rollout policy for Round.play_out: (round, seat, legal cards) -> the card to play.
Policy = Callable[[Round, int, Sequence[Card]], Card]
#: A rollout policy drawing its random numbers from the given source (``Random.random``).
PolicyMaker = Callable[[Callable[[], float]], Policy]


def random_policy(rand: Callable[[], float]) -> Policy:
    """Any legal card, uniformly."""

    def policy(rnd: Round, seat: int, legal: Sequence[Card]) -> Card:
        return legal[int(rand() * len(legal))]

    return policy


def shedding_policy(rand: Callable[[], float]) -> Policy:
    """A rollout policy a little smarter than random, and nearly as cheap.

    When a card of its own pain suit cannot take the trick, a seat sheds the highest such
    card; otherwise it plays a random card. Shedding is what makes pain suits hurt, so a
    rollout without it misjudges them badly.
    """

    def policy(rnd: Round, seat: int, legal: Sequence[Card]) -> Card:
        trick = rnd.trick
        mask = rnd.pain_suits[seat]
        if not trick or not mask:
            return legal[int(rand() * len(legal))]
        lead = trick[0] >> 4
        lead_top = 0
        off_top = 0
        for c in trick:
            if c >> 4 == lead:
                if c & 15 > lead_top:
                    lead_top = c & 15
            elif c & 15 > off_top:
                off_top = c & 15
        # Cards that cannot take (exact under "highest"; under "last_suit" an off-suit
        # card of another suit may, which this ignores): with an off-suit card in the
        # trick, lead cards and off-suit cards up to its rank; without, lead cards up to
        # the lead's top.
        best = 0
        for c in legal:
            if mask >> (c >> 4) & 1 and c & 15 > best & 15:
                r = c & 15
                if (c >> 4 == lead and (off_top or r <= lead_top)) or (
                    c >> 4 != lead and r <= off_top
                ):
                    best = c
        return best or legal[int(rand() * len(legal))]

    return policy


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


def round_from_view(view: View) -> Round:
    """An engine round in the state ``view`` shows, with empty hands for the other seats.

    The completed tricks, the trick in progress, the captured and discarded cards, the
    visible pain picks, the leader and the seat to play are all set from the view;
    :func:`sample_hidden` supplies the hands (and the unseen pain picks under secret).
    """
    n = view.players
    hands: list[list[Card]] = [[] for _ in range(n)]
    hands[view.seat] = list(view.hand)
    rnd = Round(view.rules, n, view.dealer, hands, [], view.round_index)
    rnd.pain = list(view.pain)
    rnd.pain_suits = [_suit_mask(p) for p in view.pain]
    rnd.phase = Phase.PLAY
    rnd.leader = view.leader
    rnd.to_play = view.to_play
    rnd.trick = list(view.trick)
    rnd.tricks = list(view.tricks)
    for trick in view.tricks:
        if trick.winner >= 0:
            rnd.captured[trick.winner].extend(trick.cards)
        else:
            rnd.discarded.extend(trick.cards)
    return rnd


def _suit_mask(cards: Sequence[Card] | None) -> int:
    mask = 0
    for c in cards or ():
        mask |= 1 << (c >> 4)
    return mask


def unseen_cards(view: View) -> list[Card]:
    """The cards whose place the seat does not know: in other hands, or set aside at the deal.

    The deck minus its hand, every card played this round and every pain card it can see
    (one lying face up, or, under ``kept_in_hand``, one known to be in its owner's hand).
    """
    deck, _ = deck_for(view.rules, view.players)
    seen = set(view.hand)
    seen.update(view.trick)
    for trick in view.tricks:
        seen.update(trick.cards)
    for pick in view.pain:
        seen.update(pick or ())
    return [c for c in deck if c not in seen]


def sample_hidden(
    view: View, rng: random.Random
) -> tuple[list[list[Card]], list[Card], tuple[list, list] | None]:
    """One random deal of the unseen cards consistent with ``view``.

    Returns the hands by seat (the own hand as it is), the cards set aside at the deal,
    and, when some pain picks are hidden (``secret``), a guess of every seat's pick and
    pain-suit mask (else None). Every seat holds as many cards as the own hand, less one
    if it has played to the trick in progress.
    """
    n, me = view.players, view.seat
    pool = unseen_cards(view)
    rng.shuffle(pool)
    kept = view.rules.pain_card is PainCard.KEPT_IN_HAND
    played_now = {(view.leader + i) % n for i in range(len(view.trick))}
    size = len(view.hand)
    hands: list[list[Card]] = [[] for _ in range(n)]
    hands[me] = list(view.hand)
    pain = list(view.pain)
    hidden = [s for s in range(n) if s != me and not pain[s]]
    count = view.rules.pain_cards_per_player
    played_by: dict[int, list[Card]] = {}
    if kept:
        # A revealed pain card kept in hand is in its owner's hand until it is played.
        played = {c for t in view.tricks for c in t.cards} | set(view.trick)
        for s in range(n):
            if s != me and pain[s]:
                hands[s].extend(c for c in pain[s] if c not in played)
    elif hidden:
        # Secret pain cards set aside: they lie face down, out of the hands.
        for s in hidden:
            pick = _draw_pain(pool, count)
            pain[s] = tuple(pick)
    at = 0
    for s in range(n):
        if s == me:
            continue
        need = size - (1 if s in played_now else 0) - len(hands[s])
        hands[s].extend(pool[at : at + need])
        at += need
    set_aside = pool[at : at + view.set_aside_count]
    if kept and hidden:
        # A secret pain card kept in hand is one of the cards its owner held this round.
        for t in view.tricks:
            for i, c in enumerate(t.cards):
                played_by.setdefault((t.leader + i) % n, []).append(c)
        for i, c in enumerate(view.trick):
            played_by.setdefault((view.leader + i) % n, []).append(c)
        for s in hidden:
            held = hands[s] + played_by.get(s, [])
            pain[s] = tuple(_draw_pain(list(held), count, shuffle=rng))
    if not hidden:
        return hands, set_aside, None
    return hands, set_aside, (pain, [_suit_mask(p) for p in pain])


def _draw_pain(pool: list[Card], count: int, shuffle: random.Random | None = None) -> list[Card]:
    """Take ``count`` pain cards off ``pool`` (two of different suits when possible)."""
    if shuffle is not None:
        shuffle.shuffle(pool)
    first = pool.pop()
    if count == 1:
        return [first]
    for i in range(len(pool) - 1, -1, -1):
        if pool[i] >> 4 != first >> 4:
            return [first, pool.pop(i)]
    return [first, pool.pop()]


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
