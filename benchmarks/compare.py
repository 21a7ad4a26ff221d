"""``referee compare`` measured: the sequential test's error rates and sample sizes on
simulated paired differences, and the paired design's variance on real sample bots.

1. Simulated tests (``--tests`` each, default 4000; numpy, a few seconds): for each
   setting, the rate of accepting H1 when the true mean difference is ``lower`` (must be
   at most ``alpha``) and when it is ``upper`` (must be at least 1 − ``beta``), the mean
   number of deal pairs the test took, and beside it the pairs a fixed-size one-sided
   z-test needs for the same error rates. ± is the binomial standard error of a rate.
2. Real bots (skipped with ``--no-bots``): ``--pairs`` deal pairs (default 30) of the
   heuristic sample bot against random (opponents: random and minimal) and against
   minimal (opponents: two minimal bots, so that every bot at the table plays the same
   cards on the same deal), at three seats, fixed-size comparisons as ``referee compare
   --matches`` plays them. Each prints the variance of a pair's score difference in the
   paired design (the same deal, seat and opponents) against the unpaired one (the
   candidate's and the baseline's scores taken as independent: the sum of their
   variances) on the same matches. Then ``referee compare``'s sequential test of
   heuristic against random.

Run: ``.venv/bin/python benchmarks/compare.py`` (about a minute on two idle cores with
the bots, most of it bot start-up: every match starts its bots afresh).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.compare.config import Overrides, load_compare  # noqa: E402
from referee.compare.run import run_compare  # noqa: E402
from referee.compare.sprt import Sprt, fixed_size_pairs, simulate  # noqa: E402
from referee.runtime import logs  # noqa: E402

Draw = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]


def normal(mean: float, sd: float) -> Draw:
    return lambda rng, shape: rng.normal(mean, sd, shape)


def skewed(mean: float, sd: float) -> Draw:
    return lambda rng, shape: mean + sd * (rng.exponential(1.0, shape) - 1.0)


SETTINGS: list[tuple[str, Sprt, float, Callable[[float, float], Draw], int]] = [
    ("normal sd 40, bounds 0/5", Sprt(0.0, 5.0, 0.05, 0.05), 40.0, normal, 4000),
    ("skewed sd 40, bounds 0/5", Sprt(0.0, 5.0, 0.05, 0.05), 40.0, skewed, 4000),
    ("normal sd 40, bounds 0/10", Sprt(0.0, 10.0, 0.05, 0.05), 40.0, normal, 1500),
    ("normal sd 40, bounds 0/40", Sprt(0.0, 40.0, 0.05, 0.05), 40.0, normal, 400),
    (
        "normal sd 30, bounds -2/8, alpha 0.1 beta 0.2",
        Sprt(-2.0, 8.0, 0.1, 0.2),
        30.0,
        normal,
        2000,
    ),
]


def simulated(tests: int) -> None:
    print(f"simulated sequential tests, {tests} per row (± one binomial standard error)")
    print(
        f"{'setting':48} {'P(H1 | lower)':>15} {'P(H1 | upper)':>15} "
        f"{'pairs | lower':>13} {'pairs | upper':>13} {'fixed-size':>10}"
    )
    for name, sprt, sd, draw, cap in SETTINGS:
        low = simulate(sprt, draw(sprt.lower, sd), tests=tests, max_pairs=cap, seed=1)
        high = simulate(sprt, draw(sprt.upper, sd), tests=tests, max_pairs=cap, seed=2)

        def rate(p: float) -> str:
            return f"{p:.4f}±{math.sqrt(p * (1 - p) / tests):.4f}"

        print(
            f"{name:48} {rate(low.accept_h1):>15} {rate(high.accept_h1):>15} "
            f"{low.mean_pairs:>13.1f} {high.mean_pairs:>13.1f} {fixed_size_pairs(sprt, sd):>10}"
        )


def real_bots(pairs: int) -> None:
    samples = ROOT / "sample_bots"
    heuristic, random, minimal = (
        str(samples / f) for f in ("heuristic.toml", "random.toml", "minimal-python.toml")
    )
    lineups = [
        # (what, candidate, baseline, opponents)
        ("heuristic − random, opponents random and minimal", heuristic, random, [random, minimal]),
        # Every bot here plays the same cards on the same deal: only the deal varies.
        ("heuristic − minimal, opponents two minimal", heuristic, minimal, [minimal, minimal]),
    ]
    with tempfile.TemporaryDirectory(prefix="compare-bench-") as tmp:
        for k, (what, candidate, baseline, opponents) in enumerate(lineups):
            common = {
                "candidate": candidate,
                "baseline": baseline,
                "opponents": opponents,
                "parallel": 2,
                # A generous clock: the bots answer in about a millisecond, but a busy
                # machine should not turn into timeouts.
                "decision_ms": 5000,
            }
            fixed = load_compare(
                None,
                Overrides(**common, matches=2 * pairs, out=f"{tmp}/fixed{k}"),  # type: ignore[arg-type]
            )
            s = asyncio.run(run_compare(fixed)).summary
            ratio = s["variance_unpaired"] / s["variance_paired"]
            print(
                f"\n{what}, {s['pairs']} deal pairs at 3 seats (fixed size): "
                f"{s['score_diff']['mean']:+.1f} ± {s['score_diff']['ci95']:.1f} points per "
                f"match, {s['deals_won']} of {s['pairs']} deals won\n"
                f"variance of a pair's difference: paired {s['variance_paired']:.0f}, unpaired "
                f"{s['variance_unpaired']:.0f}: the paired design needs {ratio:.2f} times "
                "fewer pairs"
            )
            if k == 0:
                seq = load_compare(None, Overrides(**common, out=f"{tmp}/sprt"))  # type: ignore[arg-type]
                s = asyncio.run(run_compare(seq)).summary
                print(
                    f"sequential test (lower 0, upper 5, alpha = beta = 0.05): {s['verdict']} "
                    f"after {s['pairs']} deal pairs, LLR {s['test']['llr']:.2f}"
                )


def main() -> None:
    logs.configure("warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=4000, help="simulated tests per row")
    parser.add_argument("--pairs", type=int, default=30, help="deal pairs with real bots")
    parser.add_argument("--no-bots", action="store_true", help="only the simulations")
    args = parser.parse_args()
    simulated(args.tests)
    if not args.no_bots:
        real_bots(args.pairs)


if __name__ == "__main__":
    main()
