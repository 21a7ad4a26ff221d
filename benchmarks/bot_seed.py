"""Common random numbers measured: how much ``MatchStart.bot_seed`` cuts the variance of a
comparison's pair differences.

A comparison plays every deal twice, once with the candidate and once with the baseline
in the same seat against the same opponents. With common random numbers every seat gets
the same bot seed in both matches (``MatchStart.bot_seed`` belongs to the deal and the
seat), so a random opponent draws the same numbers in both; without them (what a bot that
seeds itself from the clock or the operating system gets) its draws in the two matches
are independent. For each lineup this prints, over ``--deals`` deal pairs, the variance
of the pair difference (candidate's score − baseline's) with and without common random
numbers, their ratio (how many times fewer pairs a test of the same power needs), and the
unpaired variance (the two scores taken as independent) for reference.

The bots are the Python sample bots' own code (``sample_bots/python``), played in this
process on the referee's engine exactly as the referee would ask them (a
``DecisionRequest`` per decision, ``on_match_start`` with the bot seed), so that
thousands of matches take seconds; a bot's choices depend only on its requests and its
seed, so the figures are those of real matches. Deals and bot seeds come from a fixed
deal key, so a run repeats exactly.

Run: ``.venv/bin/python benchmarks/bot_seed.py`` (about a minute; ``--deals`` to change).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sample_bots" / "python"))

import heuristic_bot  # noqa: E402
import random_bot  # noqa: E402
import sticheln_bot  # noqa: E402

from referee.convert import view_to_proto  # noqa: E402
from referee.match.dealkey import DealKey  # noqa: E402
from referee.rules import Match, Phase, RuleSet, preset, view  # noqa: E402
from sticheln.v1 import bot_pb2  # noqa: E402

KEY = DealKey(bytes(range(32)))
Make = Callable[[], sticheln_bot.Bot]


def _ask(bot: sticheln_bot.Bot, match: Match, seat: int) -> object:
    seen = view(match, seat)
    request = bot_pb2.DecisionRequest(request_id=1, timeout_ms=1000)
    if seen.phase is Phase.PAIN:
        request.kind = bot_pb2.DECISION_KIND_PAIN_CHOICE
        request.count = seen.rules.pain_cards_per_player
    else:
        request.kind = bot_pb2.DECISION_KIND_CARD_PLAY
        request.count = 1
    view_to_proto(seen, request.view)
    answer = bot.decide(request)
    return tuple(answer) if request.kind == bot_pb2.DECISION_KIND_PAIN_CHOICE else answer[0]


def play(makers: Sequence[Make], rules: RuleSet, seed: int, bot_seeds: Sequence[int]) -> list[int]:
    """One match: fresh bots, each told its seat's bot seed at the start; the totals."""
    bots = [make() for make in makers]
    for seat, bot in enumerate(bots):
        bot.on_match_start(bot_pb2.MatchStart(seat=seat, bot_seed=bot_seeds[seat]))
    match = Match(rules, len(bots), seed)
    while not match.is_over:
        for seat in match.to_act():
            match.apply(seat, _ask(bots[seat], match, seat))
    return list(match.totals)


def pair_differences(
    candidate: Make,
    baseline: Make,
    opponents: Sequence[Make],
    rules: RuleSet,
    deals: int,
    common: bool,
) -> tuple[list[int], list[int], list[int]]:
    """Per deal pair: candidate − baseline, and the two scores; the compared bot's seat
    rotates over the deals as in ``referee compare``."""
    players = len(opponents) + 1
    diffs, cand, base = [], [], []
    for d in range(deals):
        seat = d % players
        seats = list(opponents)
        seed, seeds = KEY.match_seed(d), KEY.bot_seeds(d, players)
        # Without common random numbers the baseline's match draws other numbers.
        other = seeds if common else KEY.bot_seeds(d + (1 << 40), players)
        c = play([*seats[:seat], candidate, *seats[seat:]], rules, seed, seeds)[seat]
        b = play([*seats[:seat], baseline, *seats[seat:]], rules, seed, other)[seat]
        diffs.append(c - b)
        cand.append(c)
        base.append(b)
    return diffs, cand, base


class SometimesRandom(heuristic_bot.HeuristicBot):
    """A close variant of the heuristic bot: one card play in ten is a random card, drawn
    from the match's bot seed."""

    name = "heuristic-10%-random"

    def __init__(self) -> None:
        super().__init__()
        self.rng = random.Random()

    def on_match_start(self, start: bot_pb2.MatchStart) -> None:
        """Seed the random plays from the match's bot seed."""
        self.rng.seed(start.bot_seed)

    def choose_card(self, view: sticheln_bot.PlainView) -> int:
        """The heuristic's card, or one time in ten any card."""
        if self.rng.random() < 0.1:
            return self.rng.choice(view.hand)
        return super().choose_card(view)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the variance table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--deals", type=int, default=400, help="deal pairs per lineup")
    args = parser.parse_args(argv)
    rnd: Make = random_bot.RandomBot
    heur: Make = heuristic_bot.HeuristicBot
    close: Make = SometimesRandom
    # (candidate, baseline, opponents): the same program twice, a strong bot against a
    # weak one, and two close versions of one bot, among random and mixed opponents.
    lineups: list[tuple[str, Make, Make, list[Make]]] = [
        ("random vs random; opponents random x2", rnd, rnd, [rnd, rnd]),
        ("heuristic vs random; opponents random x2", heur, rnd, [rnd, rnd]),
        ("heuristic vs random; opponents heuristic, random", heur, rnd, [heur, rnd]),
        ("heuristic vs heuristic-10%-random; opponents random x2", heur, close, [rnd, rnd]),
        ("heuristic vs heuristic-10%-random; opp. heuristic, random", heur, close, [heur, rnd]),
    ]
    rules = preset("sticheln")
    print(f"{args.deals} deal pairs per lineup, 3 players, preset sticheln (3 rounds a match)")
    print(f"{'lineup':<58} {'var with CRN':>12} {'var without':>12} {'ratio':>7} {'unpaired':>9}")
    started = time.perf_counter()
    for name, cand, base, opps in lineups:
        with_crn, _, _ = pair_differences(cand, base, opps, rules, args.deals, common=True)
        without, c, b = pair_differences(cand, base, opps, rules, args.deals, common=False)
        v_with, v_without = statistics.variance(with_crn), statistics.variance(without)
        unpaired = statistics.variance(c) + statistics.variance(b)
        ratio = f"{v_without / v_with:7.2f}" if v_with else "    inf"
        print(f"{name:<58} {v_with:12.1f} {v_without:12.1f} {ratio} {unpaired:9.1f}")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
