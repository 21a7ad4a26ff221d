"""``referee compare`` measured: the sequential test's error rates and sample sizes, what
common random numbers save, and how busy a comparison keeps the machine.

1. Error rates (``--tests`` simulated tests per row, default 2000; numpy, a few minutes):
   for each shape of the pair differences and each pair of bounds, for compare's default
   test (``sprt``): the rate of accepting H1 when the true mean is ``lower`` (false H1;
   must be at most α + 0.01), the rate when it is ``upper`` (power; at least 1 − β − 0.01),
   the rates of accepting H0 at ``lower`` (at least 1 − α − 0.01) and at ``upper`` (at most
   β + 0.01: the test must reach the true hypothesis, not stall at the cap),
   the mean and 95th percentile of the pairs a test took at each; the same rates and the
   mean pairs of ``--sprt method=betting``; the pairs a fixed-size one-sided z-test needs
   for the same error rates; and for reference the false-H1 rate and power of the test
   compare used first (Wald's SPRT with the variance estimated, no corrections). Shapes:
   normal, gamma-shaped with skewness −3 … +3 (clipped at ±10 standard deviations, as
   Sticheln's scores are bounded), two values (a rare large loss, or gain, one pair in
   twenty: skewness ∓4.1), a coarse three-value lattice, half, eight and nine tenths of
   the pairs exactly 0 (close versions of a bot with common random numbers), Student's
   t with 5 degrees of freedom, and the pair differences recorded from the sample bots
   (tests/vectors/compare_differences.json), resampled. Bounds are given as
   (upper − lower) / σ.
2. Common random numbers: on each recorded lineup, the mean pairs to a verdict of the
   default test with each seat's bot seed the same in both matches of a pair (``crn``) and
   with seeds of their own (``ind``), and of the betting test with shared seeds, from
   resampled tests at the lineup's own mean difference; against the first test without
   common random numbers (what compare did before both).
3. Real bots (skipped with ``--no-bots``): ``referee compare`` of two instant sample bots
   (random against minimal, opponents random and minimal) at default settings (but
   ``[sandbox] mode = "none"`` unless ``--sandbox bubblewrap``: a jailed bot's CPU time
   does not reach this process's children's time, so it could not be counted), run
   ``--runs`` times (default 3) as a user would: wall time, the CPU time of the referee and
   every bot process it started, how busy that kept the cores, and wall time against
   (CPU time / cores). Medians, with the CPU share other programs and the hypervisor took.

4. Common random numbers with real processes (skipped with ``--no-bots``): a close
   lineup, the heuristic bot against a variant that plays a random card on a tenth of its
   decisions (drawn from ``MatchStart.bot_seed``), opponents random, random and heuristic,
   ``--crn-pairs`` pairs (default 60) with shared and with own bot seeds
   (``--independent-seeds``): the spread of a pair's difference and the pairs the test then
   expects.

``--record N`` plays N deal pairs of each lineup with the sample bots' own code in this
process (the same requests the referee sends, through each bot's ``decide``) and writes
tests/vectors/compare_differences.json (1000 pairs each is what is committed).

Run: ``.venv/bin/python benchmarks/compare.py`` (``--no-bots`` for the tables only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from machine import Steal  # noqa: E402

from referee.compare.config import difference_range  # noqa: E402
from referee.compare.sprt import Sprt, fixed_size_pairs, plain_wald, simulate  # noqa: E402
from referee.rules import preset  # noqa: E402

RECORDED = ROOT / "tests" / "vectors" / "compare_differences.json"
Draw = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]
SPAN = 10.0


# -- shapes ------------------------------------------------------------------------------------


def gamma_shape(skew: float) -> Callable[[float, float], Draw]:
    def make(mean: float, sd: float) -> Draw:
        def draw(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
            if skew == 0:
                x = rng.normal(0.0, 1.0, shape)
            else:
                k = 4.0 / skew**2
                x = np.sign(skew) * (rng.gamma(k, 1.0, shape) - k) / math.sqrt(k)
            return mean + sd * np.clip(x, -SPAN, SPAN)

        return draw

    return make


def two_point_shape(rare: float) -> Callable[[float, float], Draw]:
    """Two values: a large loss with probability ``rare``, a small gain otherwise (skewness
    −4.1 at 0.05; a bot that now and then loses big)."""

    def make(mean: float, sd: float) -> Draw:
        s = math.sqrt(rare * (1.0 - rare))
        loss, gain = -(1.0 - rare) / s, rare / s
        return lambda rng, shape: mean + sd * np.where(rng.random(shape) < rare, loss, gain)

    return make


def lattice_shape(mean: float, sd: float) -> Draw:
    step = sd * math.sqrt(1.5)
    return lambda rng, shape: mean + step * rng.integers(-1, 2, shape).astype(np.float64)


def zeros_shape(zeros: float) -> Callable[[float, float], Draw]:
    """A share ``zeros`` of the pairs exactly 0 (both matches played alike, as close
    versions of one bot with common random numbers play most deals), the rest normal with
    the mean that makes the whole ``mean``: a change that matters in a few deals, by much."""

    def make(mean: float, sd: float) -> Draw:
        wide = sd / math.sqrt(1.0 - zeros)
        return lambda rng, shape: np.where(
            rng.random(shape) < zeros, 0.0, rng.normal(mean / (1.0 - zeros), wide, shape)
        )

    return make


def t5_shape(mean: float, sd: float) -> Draw:
    """Student's t with 5 degrees of freedom (kurtosis 9), clipped like the others."""
    scale = sd / math.sqrt(5.0 / 3.0)
    return lambda rng, shape: (
        mean
        + scale
        * np.clip(rng.standard_t(5, shape), -SPAN * math.sqrt(5 / 3), SPAN * math.sqrt(5 / 3))
    )


def resampled(sample: np.ndarray) -> Callable[[float, float], Draw]:
    def make(mean: float, _sd: float) -> Draw:
        centred = sample - sample.mean() + mean
        return lambda rng, shape: rng.choice(centred, size=shape)

    return make


# -- the test compare used before, for reference -------------------------------------------------


def normal_glr(
    sprt: Sprt, draw: Draw, tests: int, max_pairs: int, seed: int
) -> tuple[float, float]:
    """(accept H1 rate, mean pairs) of Wald's SPRT on the normal likelihood with the
    variance estimated under each hypothesis: LLR = (n/2) ln(S₀/S₁)."""
    d = draw(np.random.default_rng(seed), (tests, max_pairs))
    n = np.arange(1, max_pairs + 1, dtype=np.float64)
    llr = plain_wald(sprt, d)
    a, b = math.log((1 - sprt.beta) / sprt.alpha), math.log(sprt.beta / (1 - sprt.alpha))
    eligible = n >= sprt.min_pairs
    up, down = eligible & (llr >= a), eligible & (llr <= b)
    crossed = up | down
    decided = crossed.any(axis=1)
    first = np.where(decided, crossed.argmax(axis=1), max_pairs - 1)
    h1 = decided & up[np.arange(tests), first]
    return float(h1.mean()), float((first + 1).mean())


# -- 1. error rates ------------------------------------------------------------------------------


def error_table(tests: int) -> None:
    shapes: list[tuple[str, Callable[[float, float], Draw], float, tuple[float, float] | None]] = [
        (f"skew {g:+.0f}" if g else "normal", gamma_shape(g), 40.0, None)
        for g in (-3, -2, -1, 0, 1, 2, 3)
    ]
    shapes.append(("two-point, rare loss 0.05", two_point_shape(0.05), 40.0, None))
    shapes.append(("two-point, rare gain 0.05", two_point_shape(0.95), 40.0, None))
    shapes.append(("lattice of 3 values", lattice_shape, 40.0, None))
    shapes.append(("half the pairs 0", zeros_shape(0.5), 40.0, None))
    shapes.append(("eight in ten pairs 0", zeros_shape(0.8), 40.0, None))
    shapes.append(("nine in ten pairs 0", zeros_shape(0.9), 40.0, None))
    shapes.append(("Student's t, 5 df", t5_shape, 40.0, None))
    for lineup in json.loads(RECORDED.read_text())["lineups"]:
        for kind in ("independent", "crn"):
            sample = np.asarray(lineup[kind], dtype=np.float64)
            if sample.std() == 0:
                continue
            rng = difference_range(preset(lineup["rules"]), lineup["table_size"])
            name = f"{lineup['name']} {kind}"
            shapes.append((name, resampled(sample), float(sample.std(ddof=1)), rng))
    print(f"1. error rates, {tests} simulated tests per row, alpha = beta = 0.05")
    print(
        "   sprt: compare's default test; betting: --sprt method=betting; old: Wald's SPRT with\n"
        "   the variance estimated, compare's test before both. pairs@lo / @up: mean pairs when\n"
        "   the truth is lower / upper; fixed: a fixed-size z-test of the same error rates."
    )
    print(
        f"{'shape':40} {'(up-lo)/sd':>10} {'sprt: false H1':>14} {'power':>6} {'H0@lo':>6} "
        f"{'H0@up':>6} {'pairs@lo':>8} "
        f"{'p95@lo':>7} {'pairs@up':>8} {'p95@up':>7} {'betting: false H1':>17} {'power':>6} "
        f"{'pairs':>6} {'fixed':>6} {'old: false H1':>13} {'power':>6} {'pairs':>6}"
    )
    for name, make, sd, span in shapes:
        for ratio in (0.1, 0.25, 0.5, 1.0):
            delta = round(ratio * sd, 2)
            low, high = span if span else (-SPAN * sd - delta, SPAN * sd + delta)
            sprt = Sprt(0.0, delta, 0.05, 0.05, low=low, high=high)
            betting = Sprt(0.0, delta, 0.05, 0.05, low=low, high=high, method="betting")
            cap = int(60 / ratio**2) + 100
            lo = simulate(sprt, make(0.0, sd), tests=tests, max_pairs=cap, seed=1)
            up = simulate(sprt, make(delta, sd), tests=tests, max_pairs=cap, seed=2)
            b_lo = simulate(betting, make(0.0, sd), tests=min(tests, 1000), max_pairs=cap, seed=1)
            b_up = simulate(betting, make(delta, sd), tests=min(tests, 1000), max_pairs=cap, seed=2)
            old_lo, old_n = normal_glr(sprt, make(0.0, sd), min(tests, 1000), cap, 3)
            old_up, _ = normal_glr(sprt, make(delta, sd), min(tests, 1000), cap, 4)
            # Both hypotheses both ways: the true one must be reached, not the cap.
            held = lo.accept_h1 <= 0.06 and up.accept_h1 >= 0.94
            held = held and lo.accept_h0 >= 0.94 and up.accept_h0 <= 0.06
            flag = "" if held else "  <-- outside"
            print(
                f"{name:40} {ratio:>10} {lo.accept_h1:>14.3f} {up.accept_h1:>6.3f} "
                f"{lo.accept_h0:>6.3f} {up.accept_h0:>6.3f} "
                f"{lo.mean_pairs:>8.0f} {lo.p95_pairs:>7.0f} {up.mean_pairs:>8.0f} "
                f"{up.p95_pairs:>7.0f} {b_lo.accept_h1:>17.3f} {b_up.accept_h1:>6.3f} "
                f"{(b_lo.mean_pairs + b_up.mean_pairs) / 2:>6.0f} {fixed_size_pairs(sprt, sd):>6} "
                f"{old_lo:>13.3f} {old_up:>6.3f} {old_n:>6.0f}{flag}",
                flush=True,
            )


# -- 2. common random numbers ------------------------------------------------------------------


def crn_table(tests: int) -> None:
    print(
        "\n2. common random numbers: mean pairs to a verdict at the lineup's own mean "
        "difference, bounds 0 / 5 points, alpha = beta = 0.05; crn: shared bot seeds, ind: "
        "seeds of their own; old: Wald's SPRT with the variance estimated (compare's first "
        "test), without common random numbers"
    )
    print(
        f"{'lineup':34} {'sd crn':>7} {'sd ind':>7} {'mean':>6} {'sprt crn':>8} "
        f"{'sprt ind':>8} {'betting crn':>11} {'old ind':>7} {'sprt crn / old':>14}"
    )
    for lineup in json.loads(RECORDED.read_text())["lineups"]:
        crn = np.asarray(lineup["crn"], dtype=np.float64)
        ind = np.asarray(lineup["independent"], dtype=np.float64)
        low, high = difference_range(preset(lineup["rules"]), lineup["table_size"])
        sprt = Sprt(0.0, 5.0, 0.05, 0.05, low=low, high=high)
        betting = Sprt(0.0, 5.0, 0.05, 0.05, low=low, high=high, method="betting")
        mean = float(ind.mean())

        def at_mean(sample: np.ndarray, mean: float = mean) -> Draw:
            return resampled(sample)(mean, 0.0)

        cap = 3000
        with_crn = simulate(sprt, at_mean(crn), tests=tests, max_pairs=cap, seed=5)
        without = simulate(sprt, at_mean(ind), tests=tests, max_pairs=cap, seed=6)
        bet = simulate(betting, at_mean(crn), tests=min(tests, 1000), max_pairs=cap, seed=5)
        _, old = normal_glr(sprt, at_mean(ind), min(tests, 1000), cap, 7)
        print(
            f"{lineup['name']:34} {crn.std(ddof=1):>7.1f} {ind.std(ddof=1):>7.1f} "
            f"{mean:>+6.1f} {with_crn.mean_pairs:>8.0f} {without.mean_pairs:>8.0f} "
            f"{bet.mean_pairs:>11.0f} {old:>7.0f} {with_crn.mean_pairs / old:>14.2f}",
            flush=True,
        )


# -- 3. real bots --------------------------------------------------------------------------------


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _machine_busy() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def real_bots(runs: int, sandbox: str = "none") -> None:
    samples = ROOT / "sample_bots"
    random_bot, minimal = str(samples / "random.toml"), str(samples / "minimal-python.toml")
    cores = _cores()
    print(
        f"\n3. referee compare of two instant bots (random vs minimal, opponents random and "
        f"minimal), default settings but [sandbox] mode = {sandbox!r}, {cores} cores, {runs} runs"
    )
    if sandbox != "none":
        print(
            "(under bubblewrap the bots' CPU time is not reaped into this process's "
            "children's time: CPU is undercounted, wall time is right)"
        )
    walls, cpus, busy, ratios, others, steals = [], [], [], [], [], []
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="compare-bench-") as tmp:
            settings = Path(tmp) / "compare.toml"
            settings.write_text(f'[sandbox]\nmode = "{sandbox}"\n')
            cmd = [
                sys.executable, "-m", "referee.cli", "compare", str(settings),
                "--candidate", random_bot, "--baseline", minimal,
                "--opponent", random_bot, "--opponent", minimal,
                "--out", f"{tmp}/out",
            ]  # fmt: skip
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            steal = Steal()
            m0 = _machine_busy()
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            wall = time.perf_counter() - start
            m1 = _machine_busy()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode not in (0, 1, 2):
                sys.exit(f"referee compare failed ({proc.returncode}): {proc.stderr[-2000:]}")
            summary = json.loads(Path(f"{tmp}/out/compare.json").read_text())
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        machine = (m1[0] - m0[0]) / max(1, m1[1] - m0[1])  # share of all cores busy
        walls.append(wall)
        cpus.append(cpu)
        busy.append(cpu / (wall * cores))
        ratios.append(wall / (cpu / cores))
        others.append(max(0.0, machine - cpu / (wall * cores)))
        steals.append(steal.percent())
        print(
            f"run {run + 1}: {summary['verdict']} after {summary['pairs']} pairs, "
            f"{summary['matches']} matches; wall {wall:.1f} s, CPU {cpu:.1f} s, cores busy "
            f"with the comparison {100 * busy[-1]:.0f}%, wall / (CPU / cores) "
            f"{ratios[-1]:.2f}; other programs {100 * others[-1]:.0f}% of the cores (the "
            f"machine {100 * (busy[-1] + others[-1]):.0f}% busy in all); stolen "
            f"{steals[-1]:.1f}%",
            flush=True,
        )
    print(
        f"median: wall {statistics.median(walls):.1f} s, CPU {statistics.median(cpus):.1f} s, "
        f"cores busy {100 * statistics.median(busy):.0f}%, wall / (CPU / cores) "
        f"{statistics.median(ratios):.2f}, other programs {100 * statistics.median(others):.0f}%"
        f", stolen {statistics.median(steals):.1f}%"
    )


# -- 4. common random numbers with real processes ---------------------------------------------

EPS_BOT = """\
\"\"\"The heuristic sample bot playing a random card on a tenth of its decisions, its random
numbers drawn from MatchStart.bot_seed (a close variant for measuring compare).\"\"\"
import random
import sys

sys.path.insert(0, {folder!r})
from heuristic_bot import HeuristicBot  # noqa: E402
from sticheln_bot import run  # noqa: E402


class EpsHeuristic(HeuristicBot):
    name = "heuristic-eps"

    def __init__(self):
        super().__init__()
        self.rng = random.Random()

    def on_match_start(self, start):
        self.rng.seed(start.bot_seed)

    def choose_card(self, view):
        if self.rng.random() < 0.1:
            return self.rng.choice(view.hand)
        return super().choose_card(view)


run(EpsHeuristic())
"""


def real_crn(pairs: int, sandbox: str = "none") -> None:
    """The close lineup with real bot processes, with and without shared bot seeds:
    the spread of a pair's difference, and the pairs the test expects at bounds 0/5."""
    from referee.compare.config import Overrides, load_compare
    from referee.compare.run import run_compare

    samples = ROOT / "sample_bots"
    heuristic, random_bot = str(samples / "heuristic.toml"), str(samples / "random.toml")
    print(
        f"\n4. common random numbers with real processes: heuristic-eps vs heuristic, "
        f"opponents random, random and heuristic, 4 seats, {pairs} pairs each (fixed size)"
    )
    with tempfile.TemporaryDirectory(prefix="compare-crn-") as tmp:
        bot = Path(tmp) / "eps_bot.py"
        bot.write_text(EPS_BOT.format(folder=str(samples / "python")))
        eps = Path(tmp) / "eps.toml"
        eps.write_text(f'name = "heuristic-eps"\ncommand = ["{sys.executable}", "{bot}"]\n')
        settings = Path(tmp) / "compare.toml"
        settings.write_text(f'[sandbox]\nmode = "{sandbox}"\n')
        expect: dict[bool, float] = {}
        for shared in (True, False):
            config = load_compare(
                settings,
                Overrides(
                    candidate=str(eps),
                    baseline=heuristic,
                    opponents=[random_bot, random_bot, heuristic],
                    table_size=4,
                    matches=2 * pairs,
                    common_seeds=shared,
                    decision_ms=5000,
                    out=f"{tmp}/{'shared' if shared else 'own'}",
                ),
            )
            s = asyncio.run(run_compare(config)).summary
            sd = math.sqrt(s["variance_paired"])
            low, high = difference_range(preset("sticheln"), 4)
            sprt = Sprt(0.0, 5.0, 0.05, 0.05, low=low, high=high)
            betting = Sprt(0.0, 5.0, 0.05, 0.05, low=low, high=high, method="betting")
            expected = sprt.expected_pairs(sprt.lower, sd) or math.nan
            bet = betting.expected_pairs(sprt.lower, sd) or math.nan
            # The first test: Wald's bounds ln((1 - beta)/alpha), no margin.
            wald = math.log(0.95 / 0.05)
            old = sprt.pairs_between(sprt.lower, sd, wald, wald) or math.nan
            expect[shared] = expected
            print(
                f"{'shared' if shared else 'own':>6} seeds: sd of a pair's difference {sd:.1f}, "
                f"mean {s['score_diff']['mean']:+.1f}; at bounds 0/5 when the truth is 0 the "
                f"test expects about {expected:.0f} pairs ({bet:.0f} with method=betting, "
                f"{old:.0f} with the first test)",
                flush=True,
            )
            if not shared:
                print(
                    f"shared seeds and the default test against own seeds and the first test: "
                    f"{expect[True]:.0f} / {old:.0f} = {expect[True] / old:.2f} of the pairs "
                    "(target <= 0.5)",
                    flush=True,
                )


# -- recording -------------------------------------------------------------------------------------

LINEUPS = [
    # (name, candidate, baseline, opponents, table size)
    ("heuristic-vs-random-3", "heuristic", "random", ["random", "minimal"], 3),
    ("heuristic-eps-vs-heuristic-mc-3", "heuristic-eps", "heuristic", ["random", "montecarlo"], 3),
    ("random-vs-random-4", "random", "random", ["random", "random", "random"], 4),
    (
        "heuristic-vs-minimal-5",
        "heuristic",
        "minimal",
        ["heuristic", "heuristic", "random", "minimal"],
        5,
    ),
    (
        "heuristic-eps-vs-heuristic-4",
        "heuristic-eps",
        "heuristic",
        ["random", "random", "heuristic"],
        4,
    ),
]


def record(pairs: int) -> None:
    """Play ``pairs`` deal pairs of every lineup with the sample bots' code in process."""
    sys.path.insert(0, str(ROOT / "sample_bots" / "python"))
    import heuristic_bot
    import montecarlo_bot
    import random_bot
    import sticheln_bot

    from referee.convert import view_to_proto
    from referee.rules import Match, Phase, view
    from sticheln.v1 import bot_pb2

    class Minimal(sticheln_bot.Bot):
        def decide(self, request: Any) -> list[int]:
            hand = sorted(request.view.hand)
            cards = hand[:1]
            if request.count == 2:
                cards.append(next((c for c in hand if c >> 4 != hand[0] >> 4), hand[1]))
            return cards

    class EpsHeuristic(heuristic_bot.HeuristicBot):  # type: ignore[misc]
        """The heuristic bot, playing a random card on a tenth of its decisions."""

        def __init__(self, seed: int) -> None:
            super().__init__()
            self.rng = random.Random(seed)

        def choose_card(self, v: Any) -> int:
            if self.rng.random() < 0.1:
                return int(self.rng.choice(v.hand))
            return int(super().choose_card(v))

    makers: dict[str, Callable[[int], Any]] = {
        "heuristic": lambda s: heuristic_bot.HeuristicBot(),
        "heuristic-eps": EpsHeuristic,
        "random": lambda s: random_bot.RandomBot(s),
        "minimal": lambda s: Minimal(),
        "montecarlo": lambda s: montecarlo_bot.MonteCarloBot(cap_ms=4.0, seed=s),
    }

    def play(names: list[str], rules: Any, seed: int, seeds: list[int]) -> list[int]:
        bots = [makers[n](s) for n, s in zip(names, seeds, strict=True)]
        match = Match(rules, len(bots), seed)
        while not match.is_over:
            for seat in match.to_act():
                seen = view(match, seat)
                req = bot_pb2.DecisionRequest(request_id=1, timeout_ms=1000)
                pain = seen.phase is Phase.PAIN
                req.kind = (
                    bot_pb2.DECISION_KIND_PAIN_CHOICE if pain else bot_pb2.DECISION_KIND_CARD_PLAY
                )
                req.count = seen.rules.pain_cards_per_player if pain else 1
                view_to_proto(seen, req.view)
                bots[seat].received_at = time.perf_counter()
                answer = bots[seat].decide(req)
                match.apply(seat, tuple(answer) if pain else answer[0])
        return list(match.totals)

    rules = preset("sticheln")
    out = []
    for name, candidate, baseline, opponents, k in LINEUPS:
        rng = random.Random(f"{candidate}/{baseline}/{k}")
        crn, independent = [], []
        started = time.perf_counter()
        # The Monte Carlo bot thinks for its budget at every card: fewer pairs of it.
        for deal in range(min(pairs, 400) if "montecarlo" in opponents else pairs):
            seat = deal % k
            others = rng.sample(opponents, k - 1)
            seed = rng.getrandbits(63)
            c_seats = [*others[:seat], candidate, *others[seat:]]
            b_seats = [*others[:seat], baseline, *others[seat:]]
            shared = [rng.getrandbits(32) for _ in range(k)]
            own = [rng.getrandbits(32) for _ in range(k)]
            c = play(c_seats, rules, seed, shared)[seat]
            crn.append(c - play(b_seats, rules, seed, shared)[seat])
            independent.append(c - play(b_seats, rules, seed, own)[seat])
        print(f"{name}: {len(crn)} pairs in {time.perf_counter() - started:.0f} s", flush=True)
        out.append(
            {
                "name": name,
                "candidate": candidate,
                "baseline": baseline,
                "opponents": opponents,
                "table_size": k,
                "rules": "sticheln",
                "crn": crn,
                "independent": independent,
            }
        )
    doc = {
        "description": (
            "Paired score differences (the candidate's match score minus the baseline's on "
            "the same deal, seat and opponents) of the sample bots' own code, recorded by "
            "benchmarks/compare.py --record: 'crn' with each seat's bot seed the same in "
            "both matches of a pair, 'independent' with seeds of their own. heuristic-eps "
            "is the heuristic bot playing a random card on a tenth of its decisions; "
            "montecarlo runs with a 4 ms budget per decision."
        ),
        "lineups": out,
    }
    RECORDED.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"written: {RECORDED}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="simulated tests per row")
    parser.add_argument("--runs", type=int, default=3, help="real comparisons to time")
    parser.add_argument(
        "--crn-pairs", type=int, default=60, help="pairs of the real common-seed lineup"
    )
    parser.add_argument("--no-bots", action="store_true", help="only the simulations")
    parser.add_argument("--record", type=int, metavar="PAIRS", help="record the lineups")
    parser.add_argument(
        "--sandbox",
        default="none",
        choices=("none", "bubblewrap"),
        help="the real comparisons' [sandbox] mode (none: every bot's CPU time is counted)",
    )
    args = parser.parse_args()
    if args.record:
        record(args.record)
        return
    error_table(args.tests)
    crn_table(args.tests)
    if not args.no_bots:
        real_bots(args.runs, args.sandbox)
        real_crn(args.crn_pairs, args.sandbox)


if __name__ == "__main__":
    main()
