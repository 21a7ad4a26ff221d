"""A match: the rule set's rounds at one table, the dealer rotating, totals and ranking."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

from referee.rules.round import Action, IllegalAction, Phase, Round
from referee.rules.ruleset import MatchTies, RuleSet


class RoundResult(NamedTuple):
    """A scored round, all of it public: dealer, every seat's pain cards, scores."""

    round_index: int
    dealer: int
    pain: tuple[tuple[int, ...], ...]
    scores: tuple[int, ...]


class Match:
    """A match of ``players`` seats from a seed: a function of (rules, seed, actions).

    Round ``r`` is dealt by seat ``r % players`` (the deal passes to the left) from the
    deal stream of (seed, r). When a round is scored the next one is dealt at once, so
    ``round`` is always the round in progress (or the last one, once the match is over).
    """

    __slots__ = ("players", "results", "round", "rounds_total", "rules", "seed", "totals")

    def __init__(self, rules: RuleSet, players: int, seed: int) -> None:
        rules.check_players(players)
        self.rules = rules
        self.players = players
        self.seed = seed
        self.rounds_total = rules.rounds_for(players)
        self.results: list[RoundResult] = []
        self.totals = [0] * players
        self.round = Round.deal(rules, players, seed, 0, dealer=0)

    @property
    def is_over(self) -> bool:
        """True once the last round is scored."""
        return len(self.results) == self.rounds_total

    @property
    def round_index(self) -> int:
        """The index (0-based) of the round in progress."""
        return self.round.round_index

    def to_act(self) -> list[int]:
        """The seats the match waits for (see :meth:`Round.to_act`)."""
        return self.round.to_act()

    def legal_actions(self, seat: int) -> Sequence[Action]:
        """Every action ``seat`` may take now."""
        return self.round.legal_actions(seat)

    def apply(self, seat: int, action: Action) -> None:
        """Apply an action; when it ends a round, score it and deal the next one."""
        if self.is_over:
            raise IllegalAction(f"seat {seat} acted after the match was over")
        rnd = self.round
        rnd.apply(seat, action)
        if rnd.phase is Phase.OVER:
            self._close_round(rnd)

    def _close_round(self, rnd: Round) -> None:
        scores = rnd.scores or []
        self.results.append(
            RoundResult(
                rnd.round_index,
                rnd.dealer,
                tuple(tuple(p or ()) for p in rnd.pain),
                tuple(scores),
            )
        )
        for s, v in enumerate(scores):
            self.totals[s] += v
        nxt = rnd.round_index + 1
        if nxt < self.rounds_total:
            self.round = Round.deal(self.rules, self.players, self.seed, nxt, nxt % self.players)

    def positive_rounds(self) -> list[int]:
        """Per seat, the number of scored rounds with a positive score (the tie-break)."""
        out = [0] * self.players
        for result in self.results:
            for s, v in enumerate(result.scores):
                if v > 0:
                    out[s] += 1
        return out

    def places(self, forfeited: Collection[int] = ()) -> list[int]:
        """Each seat's place (1 = best) by :func:`ranking`; forfeited seats rank last."""
        return ranking(self.totals, self.positive_rounds(), self.rules.match_ties, forfeited)


def ranking(
    totals: Sequence[int],
    positive_rounds: Sequence[int],
    match_ties: MatchTies = MatchTies.POSITIVE_ROUNDS,
    forfeited: Collection[int] = (),
) -> list[int]:
    """Places by docs/rules.md rule 10, competition style (1, 2, 2, 4).

    Higher total ranks first; under ``positive_rounds`` equal totals are broken by the
    number of rounds with a positive score; what is still equal shares the place. Seats in
    ``forfeited`` rank below every other seat, ordered among themselves the same way.
    """
    use_positive = match_ties is MatchTies.POSITIVE_ROUNDS
    keys = [
        (s in forfeited, -totals[s], -positive_rounds[s] if use_positive else 0)
        for s in range(len(totals))
    ]
    return [1 + sum(other < key for other in keys) for key in keys]
