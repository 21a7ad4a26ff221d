"""One round: deal, simultaneous pain choice and reveal, tricks, scoring.

A :class:`Round` is the game state of one hand. It is mutable (``apply`` changes it in
place, as a simulator wants) and :meth:`Round.clone` copies it cheaply. The rules are
resolved as named steps: :meth:`_reveal` ends the pain choice, :meth:`_finish_trick`
resolves a trick with :func:`trick_winner`, :meth:`_score` scores the round. Each rule
option changes one step, not the code around it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from functools import lru_cache
from itertools import combinations
from typing import NamedTuple

from referee.rules.cards import Card, card_str
from referee.rules.deck import deal
from referee.rules.ruleset import (
    AllZeroTrick,
    FirstLead,
    PainCard,
    RuleSet,
    TrumpRule,
)
from referee.rules.trick import TrickReason, trick_winner

#: A pain choice is a tuple of one or two cards; a play is one card.
PainChoice = tuple[Card, ...]
Action = Card | PainChoice


#: A policy for :meth:`Round.play_out`: (round, seat, legal actions) -> the chosen action.
Policy = Callable[["Round", int, Sequence[Action]], Action]


class IllegalAction(ValueError):
    """An action the rules do not allow now; the message says why in one line."""


class Phase(StrEnum):
    """Where a round is."""

    PAIN = "pain"  # every seat picks its pain card(s), simultaneously
    PLAY = "play"  # tricks
    OVER = "over"  # scored


_new_tuple = tuple.__new__
# _OFF_SUIT_RANK[lead_suit][card]: the card's rank when it is a non-zero card of another
# suit than the lead suit, else 0 (zeros never win; lead-suit cards lose to any such card).
_OFF_SUIT_RANK = [[c & 15 if c >> 4 != lead else 0 for c in range(256)] for lead in range(16)]
_PAIN = Phase.PAIN
_PLAY = Phase.PLAY
_OVER = Phase.OVER
_HIGHEST = TrumpRule.HIGHEST
_OFF_SUIT_HIGHEST = TrickReason.OFF_SUIT_HIGHEST


class Trick(NamedTuple):
    """A completed trick: who led, the cards in play order, who took them and why.

    ``winner`` is -1 when the trick was all zeros and set aside. Under ``leader_takes``
    an all-zero trick has the leader as winner and reason ``ALL_ZERO``.
    """

    leader: int
    cards: tuple[Card, ...]
    winner: int
    reason: TrickReason
    tie: bool


class Round:
    """The state of one round.

    Seats are 0..players-1 in clockwise order; the seat after ``s`` is ``(s + 1) % players``.
    """

    __slots__ = (
        "_leader_takes",
        "_pain_set_aside",
        "_trump_rule",
        "captured",
        "dealer",
        "discarded",
        "hands",
        "leader",
        "pain",
        "pain_suits",
        "phase",
        "players",
        "round_index",
        "rules",
        "scores",
        "set_aside",
        "to_play",
        "trick",
        "tricks",
    )

    def __init__(
        self,
        rules: RuleSet,
        players: int,
        dealer: int,
        hands: list[list[Card]],
        set_aside: list[Card],
        round_index: int = 0,
    ) -> None:
        self.rules = rules
        self.players = players
        self.dealer = dealer
        self.round_index = round_index
        self.hands = hands
        self.set_aside = set_aside
        #: Each seat's pain card(s), or None while not yet picked.
        self.pain: list[PainChoice | None] = [None] * players
        #: Each seat's pain suits as a bit mask (bit s = suit s); 0 until the reveal.
        self.pain_suits: list[int] = [0] * players
        self.phase = Phase.PAIN
        self.leader = -1
        self.to_play = -1
        self.trick: list[Card] = []
        self.tricks: list[Trick] = []
        self.captured: list[list[Card]] = [[] for _ in range(players)]
        self.discarded: list[Card] = []
        self.scores: list[int] | None = None
        self._trump_rule = rules.trump_rule
        self._leader_takes = rules.all_zero_trick is AllZeroTrick.LEADER_TAKES
        self._pain_set_aside = rules.pain_card is PainCard.SET_ASIDE

    @classmethod
    def deal(
        cls, rules: RuleSet, players: int, seed: int, round_index: int = 0, dealer: int = 0
    ) -> Round:
        """A fresh round dealt from the match seed by the documented algorithm."""
        _check_players(rules, players)
        hands, set_aside = deal(rules, players, seed, round_index, dealer)
        return cls(rules, players, dealer, hands, set_aside, round_index)

    # -- queries ---------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        """True once the round is scored."""
        return self.phase is _OVER

    def to_act(self) -> list[int]:
        """The seats whose decision the round waits for (all unpicked seats in PAIN)."""
        if self.phase is _PLAY:
            return [self.to_play]
        if self.phase is _PAIN:
            return [s for s in range(self.players) if self.pain[s] is None]
        return []

    def legal_plays(self) -> list[Card]:
        """The cards the seat to play may play: any card of its hand (no duty to follow)."""
        return list(self.hands[self.to_play]) if self.phase is Phase.PLAY else []

    def legal_pain_choices(self, seat: int) -> list[PainChoice]:
        """The pain choices open to ``seat``: one card, or two cards of different suits.

        With two pain cards, the two must be of different suits (two pain suits) unless
        the hand holds a single suit.
        """
        if self.phase is not Phase.PAIN or self.pain[seat] is not None:
            return []
        hand = self.hands[seat]
        if self.rules.pain_cards_per_player == 1:
            return [(c,) for c in hand]
        pairs: list[PainChoice] = [(a, b) for a, b in combinations(hand, 2) if a >> 4 != b >> 4]
        return pairs or [(a, b) for a, b in combinations(hand, 2)]

    def legal_actions(self, seat: int) -> Sequence[Action]:
        """Every action ``seat`` may take now; empty when it is not its turn."""
        if self.phase is _PLAY:
            return self.hands[seat][:] if seat == self.to_play else []
        return self.legal_pain_choices(seat)

    def pain_suits_of(self, seat: int) -> list[int]:
        """The pain suits of ``seat`` (empty before it picked)."""
        choice = self.pain[seat]
        return sorted({c >> 4 for c in choice}) if choice else []

    # -- actions ---------------------------------------------------------------------

    def apply(self, seat: int, action: Action) -> None:
        """Apply one seat's action, or raise :class:`IllegalAction` and change nothing."""
        if self.phase is _PLAY:
            if seat != self.to_play:
                raise IllegalAction(
                    f"seat {seat} played out of turn; seat {self.to_play} is to play"
                )
            if type(action) is not int:
                raise IllegalAction(
                    f"seat {seat} sent a pain choice during play; a card is expected"
                )
            # The body of play(), inlined: this is the simulator's hottest line.
            try:
                self.hands[seat].remove(action)
            except ValueError:
                raise IllegalAction(
                    f"seat {seat} played {_card_text(action)}, which it does not hold"
                ) from None
            trick = self.trick
            trick.append(action)
            if len(trick) == self.players:
                self._finish_trick()
            else:
                self.to_play = (seat + 1) % self.players
        elif self.phase is _PAIN:
            if isinstance(action, int):
                raise IllegalAction(f"seat {seat} played a card during the pain choice")
            self.choose_pain(seat, action)
        else:
            raise IllegalAction(f"seat {seat} acted after the round was over")

    def play_out(self, policy: Policy) -> list[int]:
        """Play the round to its end, asking ``policy(round, seat, legal)`` for every decision.

        The simulator's fast path (a Monte Carlo bot's rollouts): the same rules and checks
        as :meth:`apply`, without the per-call dispatch. Pain picks are asked seat by seat,
        but a policy sees no other pick before its own, as in the simultaneous choice.
        Returns the round's scores.
        """
        if self.phase is _PAIN:
            for seat in range(self.players):
                if self.pain[seat] is None:
                    self.choose_pain(seat, policy(self, seat, self.legal_pain_choices(seat)))  # type: ignore[arg-type]
        hands = self.hands
        players = self.players
        while self.phase is _PLAY:
            seat = self.to_play
            hand = hands[seat]
            card = policy(self, seat, hand[:])
            if type(card) is not int:
                raise IllegalAction(
                    f"seat {seat} sent a pain choice during play; a card is expected"
                )
            try:
                hand.remove(card)
            except ValueError:
                raise IllegalAction(
                    f"seat {seat} played {_card_text(card)}, which it does not hold"
                ) from None
            trick = self.trick
            trick.append(card)
            if len(trick) == players:
                self._finish_trick()
            else:
                self.to_play = (seat + 1) % players
        return list(self.scores or ())

    def choose_pain(self, seat: int, cards: PainChoice) -> None:
        """Record ``seat``'s pain pick; the reveal happens when the last seat has picked."""
        if self.phase is not Phase.PAIN:
            raise IllegalAction(f"seat {seat} chose a pain card outside the pain choice")
        if not 0 <= seat < self.players:
            raise IllegalAction(f"seat {seat} does not exist; seats are 0 to {self.players - 1}")
        if self.pain[seat] is not None:
            raise IllegalAction(f"seat {seat} already chose its pain card")
        want = self.rules.pain_cards_per_player
        cards = tuple(cards)
        if len(cards) != want:
            raise IllegalAction(
                f"seat {seat} chose {len(cards)} pain cards; the rules ask for {want}"
            )
        hand = self.hands[seat]
        for c in cards:
            if c not in hand:
                raise IllegalAction(
                    f"seat {seat} chose pain card {_card_text(c)}, which it does not hold"
                )
        if want == 2:
            if cards[0] == cards[1]:
                raise IllegalAction(f"seat {seat} chose the same pain card twice")
            if cards[0] >> 4 == cards[1] >> 4 and len({c >> 4 for c in hand}) > 1:
                raise IllegalAction(
                    f"seat {seat} chose two pain cards of one suit; they must be of two suits"
                )
        self.pain[seat] = cards
        if self._pain_set_aside:
            for c in cards:
                hand.remove(c)
        if all(p is not None for p in self.pain):
            self._reveal()

    def play(self, card: Card) -> None:
        """The seat to play plays ``card``."""
        if self.phase is not _PLAY:
            raise IllegalAction(f"a card was played during phase {self.phase.value!r}")
        self.apply(self.to_play, card)

    # -- the steps of a round ----------------------------------------------------------

    def _reveal(self) -> None:
        """All picks are in: fix the pain suits, and the first leader leads."""
        for s, choice in enumerate(self.pain):
            mask = 0
            for c in choice or ():
                mask |= 1 << (c >> 4)
            self.pain_suits[s] = mask
        if self.rules.first_lead is FirstLead.DEALER:
            self.leader = self.dealer
        else:
            self.leader = (self.dealer + 1) % self.players
        self.to_play = self.leader
        self.phase = Phase.PLAY

    def _finish_trick(self) -> None:
        cards = tuple(self.trick)
        if self._trump_rule is _HIGHEST:
            # trick_winner() for the default rule, done with C-level list calls; same result.
            ranks = [_OFF_SUIT_RANK[cards[0] >> 4][c] for c in cards]
            best = max(ranks)
            if best:
                position = ranks.index(best)
                reason = _OFF_SUIT_HIGHEST
                tie = ranks.count(best) > 1
            else:
                position, reason, tie = trick_winner(cards, _HIGHEST)
        else:
            position, reason, tie = trick_winner(cards, self._trump_rule)
        leader = self.leader
        if position < 0:
            if self._leader_takes:
                winner = leader
                self.captured[leader].extend(cards)
            else:
                winner = -1
                self.discarded.extend(cards)
        else:
            winner = (leader + position) % self.players
            self.captured[winner].extend(cards)
            self.leader = winner
        # tuple.__new__ skips NamedTuple's Python-level __new__ (same object, faster).
        self.tricks.append(_new_tuple(Trick, (leader, cards, winner, reason, tie)))
        self.trick = []
        self.to_play = self.leader
        if not self.hands[self.leader]:
            self._score()

    def _score(self) -> None:
        """docs/rules.md rule 8: pain-suit cards cost their rank, every other card is +1."""
        scores = []
        for s in range(self.players):
            mask = self.pain_suits[s]
            cards = self.captured[s]
            if self._pain_set_aside:
                cards = cards + list(self.pain[s] or ())
            scores.append(sum(-(c & 15) if mask >> (c >> 4) & 1 else 1 for c in cards))
        self.scores = scores
        self.phase = _OVER
        self.to_play = -1

    def clone(self) -> Round:
        """An independent copy, for simulation."""
        new = Round(
            self.rules,
            self.players,
            self.dealer,
            [list(h) for h in self.hands],
            list(self.set_aside),
            self.round_index,
        )
        new.pain = list(self.pain)
        new.pain_suits = list(self.pain_suits)
        new.phase = self.phase
        new.leader = self.leader
        new.to_play = self.to_play
        new.trick = list(self.trick)
        new.tricks = list(self.tricks)
        new.captured = [list(c) for c in self.captured]
        new.discarded = list(self.discarded)
        new.scores = None if self.scores is None else list(self.scores)
        return new


@lru_cache(maxsize=512)
def _check_players(rules: RuleSet, players: int) -> None:
    # Only successful checks are cached; a refusal raises again every time.
    rules.check_players(players)


def _card_text(card: object) -> str:
    return card_str(card) if type(card) is int and 16 <= card < 144 else f"code {card!r}"


def score_cards(cards: list[Card], pain_suits: list[int] | set[int]) -> int:
    """The rule 8 score of a pile of cards for a player with these pain suits."""
    return sum(-(c & 15) if c >> 4 in pain_suits else 1 for c in cards)
