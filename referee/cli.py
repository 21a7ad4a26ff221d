"""The ``referee`` command."""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence

from referee.rules import PRESETS, Round, cards_str, preset


def _demo(args: argparse.Namespace) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="referee", description="Tournament referee for the card game Sticheln."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="play one seeded round of each preset between random players"
    )
    demo.add_argument("--seed", type=int, default=1, help="deal seed (default 1)")
    demo.add_argument("--players", type=int, default=4, help="players per table (default 4)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``referee`` console script."""
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
