"""A rule-of-thumb bot: cheap pain suit, shed pain cards, feed others' pain suits.

It works from the proto view alone (no referee engine), the way a bot in any other
language would. The ideas, in the order they matter:

* Pain choice: pick the card whose suit costs least: the card's own rank (it scores
  against its owner) plus the other cards of that suit still in the hand (each one must be
  shed later) plus a little for that suit's cards in other hands (they can be fed to us).
  A zero of a suit the hand holds few and low cards of is ideal.
* A card that does not take the trick now can never win it later (under both trump
  rules), so such a card is a safe way to shed a card of the own pain suit, or to feed a
  card of the pain suit of the seat winning the trick ("feeding").
* Win a trick only when it is worth it: never one holding own pain cards, and only with
  a card that is likely to stay on top (fewer unseen cards that could beat it).
* Zeros never win: they are the safe dumps, kept for when every other card would take a
  trick we do not want.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from sticheln_bot import (
    Bot,
    PlainView,
    deck_cards,
    run,
    score_of,
    trick_winner,
    unseen_cards,
)

# Weights of the card-play evaluation, in points of the round score.
SHED_OWN_PAIN = 0.8  # shedding a card of the own pain suit, per rank
FEED_FINAL = 0.7  # feeding a pain card to the seat that will take the trick, per rank
FEED_OPEN = 0.5  # ... to the seat winning now, when others still play
GIFT = 0.2  # any other card lost to another seat scores +1 for it
KEEP_ZERO = 0.4  # a zero is worth keeping as a future safe dump
KEEP_HIGH = 0.05  # a high card is worth keeping to win a good trick later, per rank
CONTEST = 0.6  # the chance that a seat holding a card that beats ours plays it


def pain_card_costs(
    hand: Sequence[int], deck: Sequence[int], kept_in_hand: bool
) -> dict[int, float]:
    """The estimated cost of each card of ``hand`` as the (single) pain card.

    The card itself scores minus its rank for us (under ``kept_in_hand`` only if we capture
    it, so half), the other cards of its suit in the hand must be shed into tricks others
    take (half their rank), and the suit's cards in other hands may be fed to us.
    """
    in_hand: dict[int, int] = {}
    for c in hand:
        in_hand[c >> 4] = in_hand.get(c >> 4, 0) + (c & 15)
    outside: dict[int, int] = {}
    for c in deck:
        outside[c >> 4] = outside.get(c >> 4, 0) + (c & 15)
    pick_weight = 0.5 if kept_in_hand else 1.0
    costs = {}
    for c in hand:
        s, r = c >> 4, c & 15
        rest = in_hand[s] - r
        costs[c] = pick_weight * r + 0.5 * rest + 0.04 * (outside.get(s, 0) - in_hand[s])
    return costs


def choose_pain_cards(
    hand: Sequence[int], count: int, deck: Sequence[int], kept_in_hand: bool = False
) -> list[int]:
    """The cheapest ``count`` pain cards (two of different suits when the hand allows)."""
    costs = pain_card_costs(hand, deck, kept_in_hand)
    if count == 1:
        return [min(hand, key=lambda c: (costs[c], c))]
    pairs = [(a, b) for a, b in combinations(sorted(hand), 2) if a >> 4 != b >> 4]
    if not pairs:  # a hand of one suit: any two cards
        pairs = list(combinations(sorted(hand), 2))
    return list(min(pairs, key=lambda p: (costs[p[0]] + costs[p[1]], p)))


class HeuristicBot(Bot):
    """Sheds its pain suit, feeds revealed pain suits, avoids bad tricks."""

    name = "heuristic"
    version = "1.0"

    def choose_pain(self, view: PlainView, count: int) -> list[int]:
        """The cheapest pain card(s); see :func:`pain_card_costs`."""
        deck, _ = deck_cards(view.rules, view.players)
        return choose_pain_cards(
            view.hand, count, deck, kept_in_hand=view.rules.pain_card == "kept_in_hand"
        )

    def choose_card(self, view: PlainView) -> int:
        """The card with the best estimated value; see the module docstring."""
        if not view.trick:
            return self._lead(view)
        ctx = _Context(view)
        return max(view.hand, key=lambda c: (ctx.value(c), -c))

    @staticmethod
    def _lead(view: PlainView) -> int:
        # A lead card only wins if nobody plays a non-zero card of another suit, and every
        # seat after us may: leading low and cheap loses the trick, leading a zero surely.
        own = view.own_pain_suits
        zeros = [c for c in view.hand if c & 15 == 0]
        if zeros:
            return min(zeros, key=lambda c: (c >> 4 in own, c))
        return min(view.hand, key=lambda c: (c >> 4 in own, c & 15, c))


class _Context:
    """What every candidate card of one decision is judged against."""

    def __init__(self, view: PlainView) -> None:
        self.view = view
        self.rule = view.rules.trump_rule
        self.trick = view.trick
        self.lead = view.trick[0] >> 4
        self.later = view.players - len(view.trick) - 1  # seats still to play after us
        self.own = view.own_pain_suits
        self.unseen = unseen_cards(view)
        self.held = len(view.hand)  # the seats after us hold as many cards as we do
        self.future = self._future_card_value()

    def value(self, card: int) -> float:
        """The estimated worth of playing ``card`` now, in round points."""
        view, trick = self.view, (*self.trick, card)
        position = trick_winner(trick, self.rule)
        r = card & 15
        keep = KEEP_ZERO if r == 0 else (0.0 if card >> 4 in self.own else KEEP_HIGH * r)
        shed = SHED_OWN_PAIN * r if card >> 4 in self.own else 0.0
        if position == len(self.trick):  # our card takes the trick, for now
            hold = self._hold_probability(card)
            win = score_of(trick, self.own) + self.later * self.future
            return hold * win + (1 - hold) * (shed - GIFT) - keep
        winner = (view.leader + position) % view.players if position >= 0 else -1
        if winner >= 0 and card >> 4 in view.pain_suits(winner):
            feed = (FEED_OPEN if self.later else FEED_FINAL) * r
        else:
            feed = -GIFT
        return shed + feed - keep

    def _hold_probability(self, card: int) -> float:
        """The chance that no seat after us beats ``card``, from the cards still unseen."""
        if not self.later:
            return 1.0
        beaters = sum(1 for u in self.unseen if _beats(u, card, self.lead, self.rule))
        total = len(self.unseen)
        if not beaters or not total:
            return 1.0
        none_held = (1 - beaters / total) ** self.held
        return (1 - CONTEST * (1 - none_held)) ** self.later

    def _future_card_value(self) -> float:
        """What one more card in a trick we take is worth to us, on average."""
        view = self.view
        if not self.own or view.rules.pain_visibility != "revealed":
            return 1.0
        # Our pain suit is known: a seat holding one of its cards will feed it to us.
        pain_cards = [u for u in self.unseen if u >> 4 in self.own]
        if not pain_cards or not self.unseen:
            return 1.0
        held = 1 - (1 - len(pain_cards) / len(self.unseen)) ** self.held
        mean_rank = sum(u & 15 for u in pain_cards) / len(pain_cards)
        return (1 - held) - held * mean_rank


def _beats(other: int, card: int, lead: int, rule: str) -> bool:
    """True when ``other``, played after ``card`` (which takes the trick now), takes it."""
    r = other & 15
    if not r:
        return False
    s = other >> 4
    if card >> 4 == lead:  # our card is a lead-suit card: any off-suit card beats it
        return s != lead or r > card & 15
    if s == lead:
        return False
    if rule == "last_suit":
        return s != card >> 4 or r > card & 15
    return r > card & 15


if __name__ == "__main__":
    run(HeuristicBot())
