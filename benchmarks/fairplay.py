"""The fair-play test measured: false alarms over leagues of honest bots, power against
cheaters, and cost (docs/fairplay.md).

Matches are played in-process with the rules engine (no gRPC: the sample bots' own
classes answer the views the referee would send them, converted through the same proto
messages), and each writes a record in the match record format (docs/match-record.md),
which ``referee.fairplay`` then reads like any other.

Parts (``--part``, default all):

1. ``alarms``: ``--leagues`` leagues of ``--matches`` four-seat matches each, drawn from
   the honest bots: random, heuristic, Monte Carlo (the Python sample bots), ``highest``
   (always its highest card) and ``tenth`` (heuristic, a random card one time in ten).
   Prints, per bot, the share of leagues in which it was flagged, the mean excess and
   mean rank; and the share of honest pairs flagged.
2. ``power``: leagues of one cheater (the Monte Carlo bot, seeing every hand on a share
   ``--rate`` of its decisions: 0.2 and 1) among honest bots, and of a colluding pair
   (each sees the other's hand and plays for the pair), each looked at after every match:
   the share flagged and the median number of matches to the flag.
3. ``cost``: the evaluation's CPU time per match, and what a league of 50 bots and 10,000
   matches costs computed incrementally.

Usage::

    .venv/bin/python benchmarks/fairplay.py --part alarms --leagues 40 --matches 25
    .venv/bin/python benchmarks/fairplay.py --part power --leagues 10 --matches 25
    .venv/bin/python benchmarks/fairplay.py --part cost

The C++ and Node starters play the heuristic bot's strategy; they are run for real by
tests/test_fairplay.py.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "sample_bots" / "python"))
sys.path.insert(0, str(ROOT / "tests" / "bots"))
sys.path.insert(0, str(ROOT))

from clairvoyant_bot import ClairvoyantBot  # noqa: E402
from heuristic_bot import HeuristicBot  # noqa: E402
from montecarlo_bot import MonteCarloBot  # noqa: E402
from random_bot import RandomBot  # noqa: E402
from sticheln_bot import Bot  # noqa: E402

from referee.convert import view_to_proto  # noqa: E402
from referee.fairplay import FairPlay, Options, Settings, read_decisions  # noqa: E402
from referee.match.record import cards_text, seed_commitment  # noqa: E402
from referee.rules import Action, Match, Phase, Round, preset, view  # noqa: E402
from sticheln.v1 import bot_pb2  # noqa: E402

RULES = preset("sticheln")
HONEST = ("random", "heuristic", "montecarlo", "highest", "tenth")


class Highest(HeuristicBot):
    """An odd but honest style: always its highest card (the heuristic's pain choice)."""

    def choose_card(self, view: Any) -> int:
        return max(view.hand, key=lambda c: (c & 15, c))


class Tenth(HeuristicBot):
    """The heuristic bot, but a random card one time in ten."""

    def __init__(self) -> None:
        super().__init__()
        self.rng = random.Random()

    def on_match_start(self, start: bot_pb2.MatchStart) -> None:
        self.rng.seed(start.bot_seed)

    def choose_card(self, view: Any) -> int:
        if self.rng.random() < 0.1:
            return self.rng.choice(view.hand)
        return super().choose_card(view)


def make_bot(kind: str) -> Bot:
    """A fresh in-process bot of ``kind`` (an honest style, ``cheat20``, ``cheat100``,
    ``colluder:PARTNER``)."""
    if kind == "random":
        return RandomBot()
    if kind == "heuristic":
        return HeuristicBot()
    if kind == "montecarlo":
        return MonteCarloBot(cap_ms=3.0)
    if kind == "highest":
        return Highest()
    if kind == "tenth":
        return Tenth()
    if kind.startswith("plaincheat"):
        return ClairvoyantBot(rate=int(kind[10:]) / 100, cap_ms=3.0, plain=True)
    if kind.startswith("cheat"):
        return ClairvoyantBot(rate=int(kind[5:]) / 100, cap_ms=3.0)
    if kind.startswith("colluder:"):
        return ClairvoyantBot(partner=kind.split(":", 1)[1], cap_ms=3.0)
    if kind.startswith("plaincolluder:"):
        return ClairvoyantBot(partner=kind.split(":", 1)[1], cap_ms=3.0, plain=True)
    raise ValueError(f"unknown bot kind {kind!r}")


def play_match(
    seating: Sequence[str], kinds: dict[str, str], seed: int, path: Path, match_id: str
) -> None:
    """Play one match in-process and write its record to ``path``."""
    n = len(seating)
    rng = random.Random(seed)
    bots = [make_bot(kinds[name]) for name in seating]
    for s, bot in enumerate(bots):
        bot.on_match_start(
            bot_pb2.MatchStart(
                match_id=match_id, seat=s, seating=list(seating), bot_seed=rng.getrandbits(63)
            )
        )
    nonce = rng.randbytes(16)
    match = Match(RULES, n, seed)
    lines: list[dict[str, Any]] = [
        {
            "type": "header",
            "version": 2,
            "match_id": match_id,
            "rules": RULES.to_table(),
            "players": n,
            "seating": list(seating),
            "commitment": seed_commitment(seed, nonce),
            "sandbox": "none",
        }
    ]

    def ask(seat: int, truth: Round) -> Action:
        bot = bots[seat]
        if isinstance(bot, ClairvoyantBot):
            bot.truth = truth
        v = bot.convert_view(view_to_proto(view(match, seat)))
        if match.round.phase is Phase.PAIN:
            return tuple(bot.choose_pain(v, RULES.pain_cards_per_player))
        return bot.choose_card(v)

    while not match.is_over:
        rnd = match.round
        dealt = rnd.clone()
        lines.append(
            {
                "type": "round_start",
                "round": rnd.round_index,
                "dealer": rnd.dealer,
                "hands": [cards_text(h) for h in rnd.hands],
                "set_aside": cards_text(rnd.set_aside),
            }
        )
        picks = [ask(s, dealt) for s in range(n)]  # simultaneous: no pick seen before
        for s, pick in enumerate(picks):
            match.apply(s, pick)
            lines.append(
                {
                    "type": "pain",
                    "round": rnd.round_index,
                    "seat": s,
                    "cards": cards_text(pick),  # type: ignore[arg-type]
                    "think_us": 0,
                    "fallback": False,
                }
            )
        lines.append(
            {
                "type": "reveal",
                "round": rnd.round_index,
                "pain": [cards_text(p or ()) for p in rnd.pain],
            }
        )
        while rnd.phase is Phase.PLAY:
            seat = rnd.to_play
            card = ask(seat, rnd.clone())
            match.apply(seat, card)
            lines.append(
                {
                    "type": "play",
                    "round": rnd.round_index,
                    "seat": seat,
                    "card": cards_text([card])[0],  # type: ignore[list-item]
                    "think_us": 0,
                    "fallback": False,
                }
            )
            if rnd.trick == [] and rnd.tricks:
                t = rnd.tricks[-1]
                lines.append(
                    {
                        "type": "trick",
                        "round": rnd.round_index,
                        "leader": t.leader,
                        "cards": cards_text(t.cards),
                        "winner": t.winner,
                        "reason": t.reason.value,
                        "tie": t.tie,
                    }
                )
        result = match.results[-1]
        lines.append(
            {
                "type": "round_end",
                "round": result.round_index,
                "scores": list(result.scores),
                "totals": list(match.totals),
            }
        )
    lines.append(
        {
            "type": "end",
            "reason": "completed",
            "totals": match.totals,
            "places": match.places(),
            "forfeited": [],
            "decisions": sum(1 for o in lines if o["type"] in ("pain", "play")),
            "seed": str(seed),
            "nonce": nonce.hex(),
        }
    )
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")


def run_league(
    names: Sequence[str],
    kinds: dict[str, str],
    matches: int,
    seed: int,
    folder: Path,
    options: Options,
    on_match: Callable[[int, FairPlay], bool] | None = None,
    always: Sequence[str] = (),
) -> tuple[FairPlay, float]:
    """Play up to ``matches`` four-seat matches among ``names`` (random tables, with the
    bots in ``always`` at every one), feeding each to the test as it finishes, until
    ``on_match`` says stop; the test's CPU seconds."""
    rng = random.Random(seed)
    fp = FairPlay(options)
    spent = 0.0
    rest = [n for n in names if n not in always]
    for i in range(matches):
        seating = [*always, *rng.sample(rest, 4 - len(always))]
        rng.shuffle(seating)
        path = folder / f"m{seed}-{i:05d}.jsonl"
        play_match(seating, kinds, rng.getrandbits(63), path, f"m{seed}-{i:05d}")
        started = time.process_time()
        fp.add(read_decisions(path))
        spent += time.process_time() - started
        path.unlink()
        if on_match is not None and on_match(i + 1, fp):
            break
    return fp, spent


def alarms(args: argparse.Namespace, options: Options) -> None:
    """False alarms among honest bots."""
    names = [f"{k}-{j}" for k in HONEST for j in (1, 2)]
    kinds = {n: n.rsplit("-", 1)[0] for n in names}
    flagged: dict[str, int] = {k: 0 for k in HONEST}
    excess: dict[str, list[float]] = {k: [] for k in HONEST}
    ranks: dict[str, list[float]] = {k: [] for k in HONEST}
    pair_flags = pairs = 0
    spent = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for league in range(args.leagues):
            fp, cpu = run_league(names, kinds, args.matches, 1000 + league, Path(tmp), options)
            spent += cpu
            for name, m in fp.bots.items():
                kind = kinds[name]
                flagged[kind] += m.flagged
                excess[kind].append(m.statistic)
                ranks[kind].append(m.mean_rank)
            reported = [(k, m) for k, m in fp.pairs.items() if m.units >= options.pair_min_units]
            pairs += len(reported)
            pair_flags += sum(m.flagged for _, m in reported)
            print(
                f"league {league + 1}/{args.leagues}: flagged {fp.flagged() or 'none'}; pairs "
                f"flagged {[k for k, m in reported if m.flagged] or 'none'} of {len(reported)}",
                flush=True,
            )
    total = 0
    print(
        f"\nfalse alarms over {args.leagues} leagues of {args.matches} matches (10 bots, 2 of each style):"
    )
    print(f"{'bot':<12} {'flagged':>10} {'mean excess':>12} {'mean rank':>10}")
    for kind in HONEST:
        total += flagged[kind]
        print(
            f"{kind:<12} {flagged[kind]:>4}/{2 * args.leagues:<5} {statistics.fmean(excess[kind]):>12.3f} "
            f"{statistics.fmean(ranks[kind]):>10.4f}"
        )
    bots = 2 * len(HONEST) * args.leagues
    print(f"honest bots flagged: {total}/{bots} = {100 * total / bots:.2f} %")
    if pairs:
        print(f"honest pairs flagged: {pair_flags}/{pairs} = {100 * pair_flags / pairs:.2f} %")
    print(f"test CPU: {spent:.1f} s for {args.leagues * args.matches} matches")


def power(args: argparse.Namespace, options: Options) -> None:
    """How soon a cheater, and a colluding pair, are flagged."""
    cases: list[tuple[str, list[str], dict[str, str], list[str]]] = []
    honest = ["heuristic-1", "montecarlo-1", "random-1", "tenth-1"]
    for rate in args.rates:
        name = f"{args.cheater}{rate}"
        kinds = {n: n.rsplit("-", 1)[0] for n in honest} | {name: name}
        cases.append(
            (f"sees every hand on {rate} % of its decisions", [*honest, name], kinds, [name])
        )
    pair = ["ally-a", "ally-b"] if args.pair else []
    kinds = {n: n.rsplit("-", 1)[0] for n in honest} | {
        "ally-a": f"{args.colluder}:ally-b",
        "ally-b": f"{args.colluder}:ally-a",
    }
    if pair:
        label = f"colluding pair ({args.colluder}: each sees the other's hand)"
        cases.append((label, [*honest, *pair], kinds, pair))
    with tempfile.TemporaryDirectory() as tmp:
        for label, names, kinds, targets in cases:
            first: list[int] = []
            missed = 0
            honest_flags = 0
            for league in range(args.leagues):
                hit: list[int] = []
                pair_key = tuple(sorted(targets)) if len(targets) == 2 else None

                def watch(
                    i: int,
                    fp: FairPlay,
                    hit: list[int] = hit,
                    targets: list[str] = targets,
                    pair_key: Any = pair_key,
                ) -> None:
                    if hit:
                        return
                    if pair_key is not None:
                        m = fp.pairs.get(pair_key)
                        if m is not None and m.flagged:
                            hit.append(i)
                    elif fp.bots.get(targets[0]) is not None and fp.bots[targets[0]].flagged:
                        hit.append(i)

                # The cheater, or both of the pair, at every table.
                fp, _ = run_league(
                    names, kinds, args.matches, 5000 + league, Path(tmp), options, watch, targets
                )
                honest_flags += sum(1 for n, m in fp.bots.items() if n not in targets and m.flagged)
                if hit:
                    first.append(hit[0])
                else:
                    missed += 1
                m = (
                    fp.pairs.get(tuple(sorted(targets)))
                    if len(targets) == 2
                    else fp.bots[targets[0]]
                )
                assert m is not None
                print(
                    f"  {label}: league {league + 1}: flagged after {hit[0] if hit else '-'} matches "
                    f"(statistic {m.statistic:.2f}, mean rank {m.mean_rank:.3f}, e {m.e_value:.3g})",
                    flush=True,
                )
            share = len(first) / args.leagues
            median = statistics.median(first) if first else float("nan")
            print(
                f"{label}: flagged in {len(first)}/{args.leagues} leagues ({100 * share:.0f} %) within "
                f"{args.matches} matches; median matches to the flag {median}, max {max(first) if first else '-'}; "
                f"honest bots flagged beside it: {honest_flags}"
            )


def cost(args: argparse.Namespace, options: Options) -> None:
    """CPU per match of the evaluation, and the league of 50 bots x 10,000 matches."""
    names = [f"{k}-{j}" for k in HONEST for j in range(10)]
    kinds = {n: n.rsplit("-", 1)[0] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        fp, spent = run_league(names, kinds, args.cost_matches, 77, Path(tmp), options)
    per = spent / args.cost_matches
    decisions = sum(m.decisions for m in fp.bots.values())
    print(
        f"evaluation CPU: {per:.3f} s per match ({1000 * spent / max(decisions, 1):.2f} ms per "
        f"informative decision), {args.cost_matches} matches of 50 bots"
    )
    print(
        f"a league of 50 bots and 10,000 matches: {per * 10_000 / 3600:.2f} CPU hours in all, "
        f"{per:.2f} s per match as it arrives"
    )
    state = json.dumps(fp.state())
    print(
        f"incremental state: {len(state) / 1024:.0f} KiB for {len(fp.bots)} bots and {len(fp.pairs)} pairs"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Settings()
    parser.add_argument("--part", choices=("alarms", "power", "cost", "all"), default="all")
    parser.add_argument("--leagues", type=int, default=20)
    parser.add_argument("--matches", type=int, default=20)
    parser.add_argument("--cost-matches", type=int, default=10)
    parser.add_argument(
        "--rates",
        type=lambda t: [int(x) for x in t.split(",") if x],
        default=[100, 20],
        help="power: the cheaters' shares of decisions seen through, in %% (default 100,20)",
    )
    parser.add_argument(
        "--cheater",
        choices=("cheat", "plaincheat"),
        default="cheat",
        help="power: the cheater's play-outs on the true deal: 6 random ones per candidate "
        "(cheat, default) or one plain one (plaincheat)",
    )
    parser.add_argument(
        "--colluder",
        choices=("colluder", "plaincolluder"),
        default="plaincolluder",
        help="power: the pair's play-outs on deals with the partner's true hand: plain ones "
        "(plaincolluder, default) or 2 random ones per deal (colluder)",
    )
    parser.add_argument(
        "--no-pair", dest="pair", action="store_false", help="power: leave out the colluding pair"
    )
    parser.add_argument("--deals", type=int, default=default.deals)
    parser.add_argument("--candidates", type=int, default=default.candidates)
    parser.add_argument("--margin", type=float, default=Options().margin)
    args = parser.parse_args(argv)
    options = Options(
        settings=Settings(deals=args.deals, candidates=args.candidates),
        margin=args.margin,
        pair_margin=args.margin,
    )
    from machine import Steal  # benchmarks/machine.py (not tests/machine.py: imported late)

    steal = Steal()
    started = time.monotonic()
    if args.part in ("alarms", "all"):
        alarms(args, options)
    if args.part in ("power", "all"):
        power(args, options)
    if args.part in ("cost", "all"):
        cost(args, options)
    print(
        f"\nwall {time.monotonic() - started:.0f} s; CPU stolen {steal.percent():.1f} %; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
