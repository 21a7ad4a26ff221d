"""What one seat may know: the only thing the referee ever sends to a bot.

:func:`view` is the single place where hidden information is decided (docs/rules.md rule 11,
"What each seat may know"). It copies from the state exactly what the seat may see: its own
hand, its own pain pick, the others' pain picks only after the reveal (under ``secret``
only once the round is scored), the cards played with who played them, trick winners and
scores. It never copies another hand, the set-aside cards, a pending pick or the seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.rules.cards import Card
from referee.rules.match import Match, RoundResult
from referee.rules.round import PainChoice, Phase, Round, Trick
from referee.rules.ruleset import PainVisibility, RuleSet


@dataclass(frozen=True, slots=True)
class View:
    """One seat's complete knowledge of a match at one moment.

    ``pain[s]`` is seat ``s``'s pain card(s) when this seat may see them, else None.
    ``trick`` holds the cards of the trick in progress in play order, led by ``leader``.
    ``to_play`` is -1 outside the play phase. ``match_over`` is true once the last round
    is scored; ``round_results`` holds every scored round of the match so far.
    """

    rules: RuleSet
    players: int
    seat: int
    round_index: int
    rounds_total: int
    dealer: int
    phase: Phase
    hand: tuple[Card, ...]
    pain: tuple[PainChoice | None, ...]
    set_aside_count: int
    leader: int
    to_play: int
    trick: tuple[Card, ...]
    tricks: tuple[Trick, ...]
    round_results: tuple[RoundResult, ...]
    totals: tuple[int, ...]
    match_over: bool

    @property
    def own_pain(self) -> PainChoice | None:
        """This seat's pain card(s), once picked."""
        return self.pain[self.seat]


def _visible_pain(rnd: Round, seat: int) -> tuple[PainChoice | None, ...]:
    if rnd.phase is Phase.PAIN:
        # Nothing about anyone else's pick (not even whether it was made) before the reveal.
        return tuple(rnd.pain[s] if s == seat else None for s in range(rnd.players))
    if rnd.phase is Phase.PLAY and rnd.rules.pain_visibility is PainVisibility.SECRET:
        return tuple(rnd.pain[s] if s == seat else None for s in range(rnd.players))
    return tuple(rnd.pain)


def view(state: Match | Round, seat: int) -> View:
    """Exactly what ``seat`` may know of ``state`` (a match, or a lone round)."""
    if isinstance(state, Match):
        rnd = state.round
        rounds_total = state.rounds_total
        results = tuple(state.results)
        totals = tuple(state.totals)
        match_over = state.is_over
    else:
        rnd = state
        rounds_total = 1
        results = ()
        totals = tuple(rnd.scores) if rnd.scores is not None else (0,) * rnd.players
        match_over = rnd.is_over
    if not 0 <= seat < rnd.players:
        raise ValueError(f"seat: {seat} does not exist; seats are 0 to {rnd.players - 1}")
    return View(
        rules=rnd.rules,
        players=rnd.players,
        seat=seat,
        round_index=rnd.round_index,
        rounds_total=rounds_total,
        dealer=rnd.dealer,
        phase=rnd.phase,
        hand=tuple(rnd.hands[seat]),
        pain=_visible_pain(rnd, seat),
        set_aside_count=len(rnd.set_aside),
        leader=rnd.leader,
        to_play=rnd.to_play,
        trick=tuple(rnd.trick),
        tricks=tuple(rnd.tricks),
        round_results=results,
        totals=totals,
        match_over=match_over,
    )
