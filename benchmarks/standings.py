"""Standings at a platform's scale: the time of one publication of a league's standings.

A league fits its standings again after matches finish, at most every
``publish_interval_s`` (10 s by default), in a process of its own. This benchmark times
that fit (:func:`referee.results.ratings.fit`, 200 resamples as the league's ``bootstrap``)
on simulated leagues of four-seat matches whose places are drawn from a Plackett–Luce
model (bot strengths from a normal distribution of 200 Elo), for each method of
intervals:

- ``bootstrap``: 200 refits of the whole league on resampled matches (tournaments, and
  leagues up to :data:`referee.league.standings.BOOTSTRAP_BOTS` bots and
  :data:`~referee.league.standings.BOOTSTRAP_MATCHES` matches);
- ``information``: the sandwich intervals from the fit, resampling kept for the bots
  with few matches or an open end (larger leagues).

Per size it prints the median and spread of ``--runs`` timings (wall clock, and the
process's CPU time: on a machine shared with other work the wall clock also counts the
time the fit waited for a core), the share of the machine's CPU stolen by the host
while they ran (``machine.py``: another guest's work, not other processes on this
one), and the agreement of
the two methods' interval widths (median and extreme ratios over the bots).
``--coverage N`` adds a simulation: N small leagues (20 bots, ``--coverage-matches``
matches), how often each method's 95% interval holds the true rating.

The last line holds the medians, ``<method>_wall_s_<size>=…`` and ``<method>_cpu_s_<size>=…``.

    .venv/bin/python benchmarks/standings.py                      # 200/20k and 500/50k
    .venv/bin/python benchmarks/standings.py --sizes 200x20000 --runs 3 --coverage 40
"""

from __future__ import annotations

import argparse
import array
import math
import os
import statistics
import sys
import time
from pathlib import Path

# As the league's standings process: numpy's BLAS on one thread (referee/league/standings.py).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.machine import Steal, loaded_warning  # noqa: E402
from referee.league.standings import compute_standings, interval_method  # noqa: E402
from referee.results.ratings import ELO_PER_THETA, IntervalMethod, MatchOutcome, fit  # noqa: E402
from referee.results.store import StoredResult  # noqa: E402


def simulate(
    bots: int, matches: int, seed: int, seats: int = 4
) -> tuple[np.ndarray, list[MatchOutcome]]:
    """True strengths (θ units) and ``matches`` Plackett–Luce matches among ``bots``: the
    pairwise order of two seats is then exactly Bradley–Terry's."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 200.0 / ELO_PER_THETA, bots)
    names = [f"bot{i:04d}" for i in range(bots)]
    outcomes = []
    for m in range(matches):
        chosen = rng.choice(bots, size=seats, replace=False)
        finish = rng.gumbel(size=seats) + strength[chosen]
        places = np.empty(seats, dtype=int)
        places[np.argsort(-finish)] = np.arange(1, seats + 1)
        outcomes.append(
            MatchOutcome(
                tuple(names[i] for i in chosen), tuple(int(p) for p in places), key=f"m{m:07d}"
            )
        )
    return strength, outcomes


def timed(
    outcomes: list[MatchOutcome], method: IntervalMethod, runs: int
) -> tuple[list[float], list[float], float, dict[str, float]]:
    """Wall and CPU seconds of each run, the stolen share over them and the widths of
    the last run."""
    steal = Steal()
    wall, cpu = [], []
    widths: dict[str, float] = {}
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fit(outcomes, bootstrap=200, min_matches=5, intervals=method)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        widths = {s.bot: s.ci_high - s.ci_low for s in result.standings}
    return wall, cpu, steal.percent(), widths


def publication(outcomes: list[MatchOutcome]) -> tuple[float, float, str]:
    """Wall and CPU seconds of what the league's standings process does once it has read
    the database (:func:`compute_standings`: live Elo, statistics, the fit with the
    intervals the league's size calls for), and that method."""
    rows = [
        StoredResult(
            idx=m, match_id=o.key, seat=seat, bot=bot, total=0, place=place, forfeited=False,
            positive_rounds=0, faults=0, think_us=array.array("q"), finish_order=m + 1,
        )
        for m, o in enumerate(outcomes)
        for seat, (bot, place) in enumerate(zip(o.bots, o.places, strict=True))
    ]  # fmt: skip
    start, start_cpu = time.perf_counter(), time.process_time()
    compute_standings(rows, 200, min_matches=5)
    method = interval_method(len({b for o in outcomes for b in o.bots}), len(outcomes))
    return time.perf_counter() - start, time.process_time() - start_cpu, method


def coverage(leagues: int, matches: int) -> None:
    """How often each method's interval holds the true rating (bots without an open end)."""
    held = {"bootstrap": 0, "information": 0}
    width = {"bootstrap": [], "information": []}
    total = 0
    for seed in range(leagues):
        strength, outcomes = simulate(20, matches, 1000 + seed)
        truth = 1500.0 + ELO_PER_THETA * (strength - strength.mean())
        for method in held:
            for s in fit(outcomes, bootstrap=200, seed=seed, intervals=method).standings:
                if s.low_open or s.high_open:
                    continue
                true = truth[int(s.bot[3:])]
                held[method] += s.ci_low <= true <= s.ci_high
                width[method].append(s.ci_high - s.ci_low)
                total += method == "bootstrap"
    print(
        f"coverage of 95% intervals, {leagues} leagues of 20 bots and {matches} matches "
        f"({total} intervals each):"
    )
    for method in held:
        print(
            f"  {method:12s} {held[method] / total:.3f}, mean width "
            f"{statistics.fmean(width[method]):.0f} Elo"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", nargs="*", default=["200x20000", "500x50000"], help="BOTSxMATCHES"
    )
    parser.add_argument("--runs", type=int, default=3, help="timings per size and method")
    parser.add_argument(
        "--bootstrap-runs", type=int, default=1, help="timings of the full bootstrap"
    )
    parser.add_argument("--coverage", type=int, default=0, help="simulated leagues for coverage")
    parser.add_argument(
        "--no-publication",
        dest="publication",
        action="store_false",
        help="skip timing the league's whole publication (compute_standings)",
    )
    parser.add_argument("--coverage-matches", type=int, default=100)
    args = parser.parse_args()
    stolen: list[float] = []
    last: dict[str, float] = {}
    for size in args.sizes:
        bots, matches = (int(x) for x in size.split("x"))
        _, outcomes = simulate(bots, matches, seed=1)
        print(f"{bots} bots, {matches} four-seat matches:")
        widths = {}
        methods: tuple[tuple[IntervalMethod, int], ...] = (
            ("information", args.runs),
            ("bootstrap", args.bootstrap_runs),
        )
        for method, runs in methods:
            if runs <= 0:
                continue
            wall, cpu, steal, widths[method] = timed(outcomes, method, runs)
            stolen.append(steal)
            last[f"{method}_wall_s_{size}"] = statistics.median(wall)
            last[f"{method}_cpu_s_{size}"] = statistics.median(cpu)
            print(
                f"  {method:12s} median {statistics.median(wall):6.2f} s of {runs} "
                f"(min {min(wall):.2f}, max {max(wall):.2f}); CPU median "
                f"{statistics.median(cpu):.2f} s; {steal:.1f}% of the CPU stolen"
            )
        if args.publication:
            wall, cpu, method = publication(outcomes)
            last[f"publication_cpu_s_{size}"] = cpu
            print(
                f"  publication  {wall:6.2f} s (CPU {cpu:.2f} s): live Elo, statistics and "
                f"the fit with the league's intervals at this size ({method})"
            )
        if len(widths) == 2:
            ratio = [
                widths["information"][b] / widths["bootstrap"][b]
                for b in widths["bootstrap"]
                if math.isfinite(widths["bootstrap"][b]) and widths["bootstrap"][b] > 0
            ]
            print(
                f"  width information/bootstrap: median {statistics.median(ratio):.3f}, "
                f"min {min(ratio):.3f}, max {max(ratio):.3f} over {len(ratio)} bots"
            )
    if args.coverage:
        coverage(args.coverage, args.coverage_matches)
    warning = loaded_warning(stolen)
    if warning:
        print(warning)
    if last:
        print(" ".join(f"{k}={v:.2f}" for k, v in last.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
