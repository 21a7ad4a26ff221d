"""How well a choice fits the hidden cards: its value on the true deal against its value on
deals the seat could not tell from it.

For one decision the :class:`Evaluator` plays every candidate action out with a cheap, fixed
rollout policy (:func:`yardstick_policy`) on the true deal and on ``deals`` deals of the
unseen cards drawn uniformly consistent with the seat's view
(:func:`~referee.rules.sample.sample_hidden`, the Monte Carlo sample bot's sampler). The
policy is deterministic, so a value carries no rollout noise: one play-out per candidate
and deal says all it can. A
candidate's *advantage* on a deal is its value minus the mean value of all candidates on
that deal, so the luck of the deal cancels. What is kept per decision:

* ``excess``: the chosen action's advantage on the true deal minus its mean advantage over
  the sampled deals, in points of the round score;
* ``rank``: where the true deal's advantage falls among the sampled deals' advantages, a
  number in (0, 1) (ties broken at random).

A bot whose choice depends only on what its seat sees cannot make the chosen action fit
the true deal better than the deals it cannot tell from it: the true deal is then one
more draw from the same set, so ``excess`` has mean 0 and ``rank`` is uniform, whatever
the bot's strategy. Both are computed for the seat's own score margin (own score minus the
others' mean: the clairvoyance test) and, for every other seat, for the margin of the two
as a team (their mean score minus the rest's mean: the collusion test; measured against
the other seat's score alone, docs/fairplay.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import cast

from referee.fairplay.decisions import Decision, Place
from referee.rules import Action, Card, Round, view
from referee.rules.round import Policy as RoundPolicy
from referee.rules.sample import round_from_view, sample_hidden, shedding_policy


@dataclass(frozen=True, slots=True)
class Fit:
    """What one decision says: per seat ``t``, how the chosen action's value to ``t``
    fits the true deal beyond what the deciding seat could see.

    ``excess[t]`` is in points of a score margin: for the deciding seat itself, its score
    minus the others' mean; for another seat ``t``, the mean score of the deciding seat and
    ``t`` minus the rest's mean (their margin as a team); ``rank[t]`` is in (0, 1), 0.5 on
    average for an honest choice; ``informative[t]`` is false when the candidates' values did not differ
    on any deal (the decision says nothing and is left out).
    """

    decision: Place
    excess: tuple[float, ...]
    rank: tuple[float, ...]
    informative: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class Settings:
    """How much simulation one decision gets.

    ``deals`` sampled deals beside the true one, at most ``candidates`` candidate actions (the chosen one and others drawn at
    random: the mean over a random subset is as centred as the mean over all).
    """

    deals: int = 8
    candidates: int = 6
    seed: int = 0


class Evaluator:
    """Values decisions by simulation; deterministic for a given ``Settings.seed`` and
    decision (each decision draws from a generator seeded by its place in its match)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.policy = yardstick_policy()

    def fit(self, decision: Decision) -> Fit:
        """The :class:`Fit` of one decision."""
        s = self.settings
        rng = random.Random(
            f"{s.seed}/{decision.match_id}/{decision.round_index}/{decision.seat}/"
            f"{decision.trick}/{decision.card}"
        )
        state, seat = decision.state, decision.seat
        n = state.players
        seen = view(state, seat)
        candidates = _candidates(state, seat, decision.action, s.candidates, rng)
        # The true deal and the sampled ones, each as a round ready to take a candidate.
        true_base = _base(state, seat)
        true_base.hands = [list(h) for h in state.hands]
        true_base.set_aside = list(state.set_aside)
        true_base.pain, true_base.pain_suits = list(state.pain), list(state.pain_suits)
        bases = [true_base]
        for _ in range(s.deals):
            base = _base(state, seat)
            hands, set_aside, pain = sample_hidden(seen, rng)
            base.hands = [list(h) for h in hands]
            base.set_aside = set_aside
            if pain is not None:
                base.pain, base.pain_suits = list(pain[0]), list(pain[1])
            bases.append(base)
        # advantage[d][t]: the chosen action's value minus the candidates' mean, on deal d,
        # to the deciding seat itself (t == seat) or to its team with seat t.
        advantage: list[list[float]] = []
        for base in bases:
            values = [self._value(base, seat, c) for c in candidates]
            mean = [sum(v[t] for v in values) / len(values) for t in range(n)]
            chosen = values[0]
            advantage.append(_margins([chosen[t] - mean[t] for t in range(n)], seat))
        excess: list[float] = []
        ranks: list[float] = []
        informative: list[bool] = []
        k = s.deals
        for t in range(n):
            true_adv = advantage[0][t]
            sampled = [advantage[d][t] for d in range(1, k + 1)]
            excess.append(true_adv - sum(sampled) / k)
            below = sum(1 for a in sampled if a < true_adv)
            equal = sum(1 for a in sampled if a == true_adv)
            ranks.append((below + rng.randint(0, equal) + rng.random()) / (k + 1))
            informative.append(any(abs(advantage[d][t]) > 1e-9 for d in range(k + 1)))
        return Fit(decision.place, tuple(excess), tuple(ranks), tuple(informative))

    def _value(self, base: Round, seat: int, action: Action) -> list[int]:
        """Every seat's round score when ``seat`` takes ``action`` in ``base`` and the
        round is played out with the yardstick."""
        rnd = base.clone()
        rnd.apply(seat, action)
        return rnd.play_out(self.policy)


def _margins(points: list[float], seat: int) -> list[float]:
    """Per seat ``t``, a score margin from every seat's ``points``: for ``t == seat`` the
    seat's own points minus the others' mean (the clairvoyance test); for another ``t``
    the mean of ``seat``'s and ``t``'s points minus the mean of the rest, the pair's
    margin as a team (the collusion test: what playing for each other is for)."""
    n = len(points)
    total = sum(points)
    out = []
    for t in range(n):
        team = (seat,) if t == seat else (seat, t)
        ours = sum(points[s] for s in team)
        rest = n - len(team)
        out.append(ours / len(team) - ((total - ours) / rest if rest else 0.0))
    return out


def yardstick_policy() -> RoundPolicy:
    """The fixed rollout policy values are measured with: the engine's
    :func:`~referee.rules.sample.shedding_policy` (shed the highest own pain card that
    cannot take the trick) with its random choice fixed to the first legal action (the
    lowest card of the hand; the others' pain picks likewise). Deterministic and cheap;
    measured against the alternatives in docs/fairplay.md."""
    # The others' pain picks in a play-out go through it too (its first legal pick).
    return cast(RoundPolicy, shedding_policy(lambda: 0.0))


def _base(state: Round, seat: int) -> Round:
    """The round as the seat sees it, hands still to be filled: for a card play the
    engine's :func:`round_from_view`; for a pain choice the round as dealt, no pick made."""
    if state.tricks or state.trick or state.pain[seat] is not None or state.to_play >= 0:
        return round_from_view(view(state, seat))
    n = state.players
    hands: list[list[Card]] = [[] for _ in range(n)]
    return Round(state.rules, n, state.dealer, hands, [], state.round_index)


def _candidates(
    state: Round, seat: int, chosen: Action, most: int, rng: random.Random
) -> list[Action]:
    """The chosen action first, then up to ``most - 1`` other legal actions at random."""
    legal = list(state.legal_actions(seat))
    others = [a for a in legal if a != chosen]
    if len(others) > most - 1:
        others = rng.sample(others, most - 1)
    return [chosen, *others]
