"""Simulating from one seat's view: deals of the unseen cards, and cheap rollout policies.

What a simulating bot needs beside the rules: :func:`round_from_view` rebuilds the round a
view shows, :func:`sample_hidden` deals the cards the seat has not seen at random,
consistently with its view, and :func:`shedding_policy` plays rounds out quickly. The Monte
Carlo sample bot plays with them; the fair-play test (``referee.fairplay``) values a
decision with them, so both imagine the hidden cards the same way.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from referee.rules.cards import Card
from referee.rules.deck import deck_for
from referee.rules.round import PainChoice, Phase, Round
from referee.rules.ruleset import PainCard
from referee.rules.view import View

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
) -> tuple[list[list[Card]], list[Card], tuple[list[PainChoice | None], list[int]] | None]:
    """One random deal of the unseen cards consistent with ``view``, uniformly.

    Uniform among the deals the view allows: the seat's own hand, the cards played and
    the pain cards it can see; there is no duty to follow suit, so play shows no voids.

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
    # In the pain choice the others have not picked yet: their hands are whole.
    picking = view.phase is Phase.PAIN
    hidden = [] if picking else [s for s in range(n) if s != me and not pain[s]]
    count = view.rules.pain_cards_per_player
    played_by: dict[int, list[Card]] = {}
    if kept:
        # A revealed pain card kept in hand is in its owner's hand until it is played.
        played = {c for t in view.tricks for c in t.cards} | set(view.trick)
        for s in range(n):
            shown = pain[s]
            if s != me and shown:
                hands[s].extend(c for c in shown if c not in played)
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
