"""``referee demo``: one seeded round of each preset, printed trick by trick."""

from __future__ import annotations

import argparse
import random

from referee.cli.common import (
    Subparsers,
)
from referee.rules import PRESETS, Round, cards_str, preset


def add_parsers(sub: Subparsers) -> None:
    """Add this module's command to the ``referee`` parser."""
    parser = sub.add_parser(
        "demo",
        help="play one seeded round of each preset between random players",
        description="Deal one round of each rules preset from a seed and play it with "
        "random legal cards in this process (no bots, no server), printing the pain cards, "
        "every trick and its winner, and the scores: a look at the rules at work.",
    )
    parser.add_argument("--seed", type=int, default=1, help="deal seed (default 1)")
    parser.add_argument("--players", type=int, default=4, help="players per table (default 4)")
    parser.set_defaults(func=demo)


def demo(args: argparse.Namespace) -> int:
    """One seeded round of each preset between random players, printed trick by trick."""
    for name in PRESETS:
        rules = preset(name)
        lo, hi = rules.player_range()
        players = min(max(args.players, lo), hi)
        rnd = Round.deal(rules, players, seed=args.seed)
        rng = random.Random(args.seed)
        while not rnd.is_over:
            for seat in rnd.to_act():
                rnd.apply(seat, rng.choice(rnd.legal_actions(seat)))
        print(f"== {name}: {players} players, seed {args.seed}, dealer seat {rnd.dealer}")
        print(
            "   pain: "
            + ", ".join(f"seat {s} {cards_str(p or ())}" for s, p in enumerate(rnd.pain))
        )
        for i, trick in enumerate(rnd.tricks, 1):
            who = "nobody (set aside)" if trick.winner < 0 else f"seat {trick.winner}"
            print(
                f"   trick {i:2}: seat {trick.leader} leads {cards_str(trick.cards):<24} "
                f"-> {who} ({trick.reason.value}{', tie' if trick.tie else ''})"
            )
        print(
            "   scores: " + "  ".join(f"seat {s}: {v:+d}" for s, v in enumerate(rnd.scores or ()))
        )
        print()
    return 0
