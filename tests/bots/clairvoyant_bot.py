"""A test-only cheater for the fair-play test: it plays with cards its seat cannot see.

It reads every dealt hand from a file the test writes (``$CLAIRVOYANT_DEALS``: a JSON list
of rounds, each ``{"hands": [[card, ...] per seat], "set_aside": [...]}`` with cards as
integers), finds the round it is in by its own dealt hand, and so knows every hand. On a
share ``$CLAIRVOYANT_RATE`` of its decisions (default 1: all) it chooses by playing each
candidate out ``$CLAIRVOYANT_ROLLOUTS`` times (default 6) on the true deal; on the others
it plays as the Monte Carlo sample bot. With ``$CLAIRVOYANT_PLAIN=1`` its play-outs are
plain (the shedding policy's random choice fixed to the lowest card): one play-out per
candidate, the same simple continuation the fair-play test's yardstick plays.

With ``$CLAIRVOYANT_PARTNER`` set to a bot name it is one of a colluding pair instead: it
sees only the hand of the seat of that name (as if the partner passed it its hand) and
plays for the pair's joint score, its own plus the partner's.

Run it unsandboxed (``--no-sandbox``): it reads a file outside its jail. The benchmark
(benchmarks/fairplay.py) uses :class:`ClairvoyantBot` in-process with the true round
handed over directly.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_bots" / "python"))

from montecarlo_bot import MonteCarloBot
from sticheln_bot import run

from referee.rules import Action, Card, PainCard, Phase, Round, View
from referee.rules.sample import (
    round_from_view,
    sample_hidden,
    shedding_policy,
    unseen_cards,
)
from sticheln.v1 import bot_pb2


def true_round(seen: View, dealt: Sequence[Sequence[Card]], set_aside: Sequence[Card]) -> Round:
    """The round ``seen`` shows, with every hand as it really is (from the dealt hands)."""
    n = seen.players
    if seen.phase is Phase.PAIN:
        hands = [list(h) for h in dealt]
        hands[seen.seat] = list(seen.hand)
        return Round(seen.rules, n, seen.dealer, hands, list(set_aside), seen.round_index)
    rnd = round_from_view(seen)
    played: dict[int, set[Card]] = {s: set() for s in range(n)}
    for trick in seen.tricks:
        for i, c in enumerate(trick.cards):
            played[(trick.leader + i) % n].add(c)
    for i, c in enumerate(seen.trick):
        played[(seen.leader + i) % n].add(c)
    gone_pain = seen.rules.pain_card is PainCard.SET_ASIDE
    hands = []
    for s in range(n):
        pick = set(seen.pain[s] or ()) if gone_pain else set()
        hands.append([c for c in dealt[s] if c not in played[s] and c not in pick])
    hands[seen.seat] = list(seen.hand)
    rnd.hands = hands
    rnd.set_aside = list(set_aside)
    return rnd


def partner_round(seen: View, truth: Round, partner: int, rng: random.Random) -> Round:
    """A deal consistent with ``seen`` and the partner's true hand: the rest at random."""
    rnd = round_from_view(seen) if seen.phase is not Phase.PAIN else truth.clone()
    hands, set_aside, pain = sample_hidden(seen, rng)
    known = set(truth.hands[partner])
    pool = [c for c in unseen_cards(seen) if c not in known]
    if seen.phase is Phase.PAIN:
        pool = [c for h in truth.hands for c in h if c not in known] + list(truth.set_aside)
        pool = [c for c in pool if c not in seen.hand]
    rng.shuffle(pool)
    at = 0
    new = []
    for s in range(seen.players):
        if s == seen.seat:
            new.append(list(seen.hand))
        elif s == partner:
            new.append(list(truth.hands[partner]))
        else:
            new.append(pool[at : at + len(hands[s])])
            at += len(hands[s])
    rnd.hands = new
    rnd.set_aside = pool[at : at + len(set_aside)]
    if pain is not None and seen.phase is not Phase.PAIN:
        rnd.pain, rnd.pain_suits = list(pain[0]), list(pain[1])
    return rnd


def best_action(
    rounds: Sequence[Round],
    seat: int,
    legal: Sequence[Action],
    rng: random.Random,
    rollouts: int,
    partner: int = -1,
    plain: bool = False,
) -> Action:
    """The candidate with the best mean outcome played out on ``rounds``: the seat's score
    margin over the others, or with a ``partner`` the pair's joint score margin. The
    play-outs use the shedding policy, random where it does not shed; ``plain`` fixes that
    choice to the lowest card (one play-out then says all)."""
    policy = shedding_policy((lambda: 0.0) if plain else rng.random)
    if plain:
        rollouts = 1
    team = {seat} if partner < 0 else {seat, partner}
    best, best_value = legal[0], -1e18
    for action in legal:
        total = 0.0
        for base in rounds:
            for _ in range(rollouts):
                rnd = base.clone()
                rnd.apply(seat, action)
                scores = rnd.play_out(policy)
                ours = sum(scores[s] for s in team) / len(team)
                rest = [scores[s] for s in range(len(scores)) if s not in team]
                total += ours - sum(rest) / len(rest)
        if total > best_value:
            best, best_value = action, total
    return best


class ClairvoyantBot(MonteCarloBot):
    """The Monte Carlo bot, but on a share of its decisions it knows the hidden cards."""

    name = "clairvoyant"

    def __init__(
        self,
        deals: Sequence[dict] = (),
        rate: float = 1.0,
        partner: str = "",
        rollouts: int = 6,
        cap_ms: float = 40.0,
        seed: int | None = None,
        plain: bool = False,
    ) -> None:
        super().__init__(cap_ms=cap_ms, seed=seed)
        self.rate = rate
        self.plain = plain
        self.partner_name = partner
        self.rollouts = rollouts
        self.cheat_rng = random.Random(seed)
        #: Dealt hands by the sorted hand of any seat: finds the round being played.
        self.deals: dict[tuple[Card, ...], dict] = {}
        for d in deals:
            for hand in d["hands"]:
                self.deals[tuple(sorted(hand))] = d
        #: For in-process use: the true round, set before each decision (else the file).
        self.truth: Round | None = None
        self.seating: list[str] = []
        self._dealt: dict | None = None

    def on_match_start(self, start: bot_pb2.MatchStart) -> None:
        """Keep the seating: a colluder finds its partner's seat by name."""
        super().on_match_start(start)
        self.seating = list(start.seating)
        self.cheat_rng.seed(start.bot_seed + 1)  # a match plays alike every time

    def _truth(self, seen: View) -> Round | None:
        if self.truth is not None:
            return self.truth
        if seen.phase is Phase.PAIN and seen.own_pain is None:
            self._dealt = self.deals.get(tuple(sorted(seen.hand)))
        if self._dealt is None:
            return None
        return true_round(seen, self._dealt["hands"], self._dealt.get("set_aside", []))

    def _partner(self, seen: View) -> int:
        if not self.partner_name:
            return -1
        seats = [s for s, name in enumerate(self.seating) if name == self.partner_name]
        others = [s for s in seats if s != seen.seat]
        return others[0] if others else -1

    def _cheat(self, seen: View, legal: Sequence[Action]) -> Action | None:
        truth = self._truth(seen)
        if truth is None or len(legal) < 2 or self.cheat_rng.random() >= self.rate:
            return None
        partner = self._partner(seen)
        if self.partner_name:
            if partner < 0:
                return None
            rounds = [partner_round(seen, truth, partner, self.cheat_rng) for _ in range(4)]
            return best_action(rounds, seen.seat, legal, self.cheat_rng, 2, partner, self.plain)
        return best_action(
            [truth], seen.seat, legal, self.cheat_rng, self.rollouts, plain=self.plain
        )

    def choose_pain(self, view: View, count: int) -> list[int]:
        """With the hidden hands: the pick that plays out best; else the heuristic's."""
        truth = self._truth(view)
        legal = truth.legal_pain_choices(view.seat) if truth is not None else []
        if count == 1 and truth is not None:
            legal = legal[:]  # one card: every card of the hand
            choice = self._cheat(view, legal)
            if choice is not None:
                return list(choice)  # type: ignore[arg-type]
        return super().choose_pain(view, count)

    def choose_card(self, view: View) -> int:
        """With the hidden hands: the card that plays out best; else Monte Carlo's."""
        choice = self._cheat(view, list(view.hand))
        if choice is not None:
            return int(choice)  # type: ignore[arg-type]
        return super().choose_card(view)


if __name__ == "__main__":
    with open(os.environ["CLAIRVOYANT_DEALS"], encoding="utf-8") as f:
        dealt = json.load(f)
    run(
        ClairvoyantBot(
            dealt,
            rate=float(os.environ.get("CLAIRVOYANT_RATE", "1")),
            partner=os.environ.get("CLAIRVOYANT_PARTNER", ""),
            rollouts=int(os.environ.get("CLAIRVOYANT_ROLLOUTS", "6")),
            plain=os.environ.get("CLAIRVOYANT_PLAIN") == "1",
        )
    )
