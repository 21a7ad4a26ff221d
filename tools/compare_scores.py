"""Mean score per match of each bot in a tournament's ``results.csv``, with 95% intervals,
and, for every pair of bots that shared matches, the mean paired difference.

``python tools/compare_scores.py results/strength/results.csv``
"""

from __future__ import annotations

import csv
import itertools
import statistics
import sys
from collections import defaultdict


def main(path: str) -> None:
    """Print the comparison for one results file."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    totals: dict[str, list[int]] = defaultdict(list)
    matches: dict[str, dict[str, int]] = defaultdict(dict)
    for row in rows:
        totals[row["bot"]].append(int(row["total"]))
        matches[row["match_index"]][row["bot"]] = int(row["total"])
    order = sorted(totals, key=lambda b: -statistics.mean(totals[b]))
    print(f"{'bot':<12} {'matches':>7} {'mean score':>10} {'95% interval':>16}")
    for bot in order:
        v = totals[bot]
        half = 1.96 * statistics.stdev(v) / len(v) ** 0.5 if len(v) > 1 else float("nan")
        m = statistics.mean(v)
        print(f"{bot:<12} {len(v):>7} {m:>10.1f} {m - half:>7.1f} to {m + half:<6.1f}")
    print()
    for a, b in itertools.combinations(order, 2):
        d = [p[a] - p[b] for p in matches.values() if a in p and b in p]
        if len(d) < 2:
            continue
        half = 1.96 * statistics.stdev(d) / len(d) ** 0.5
        more = sum(x > 0 for x in d)
        print(
            f"{a} - {b}: {statistics.mean(d):+.1f} ± {half:.1f} per match; "
            f"{a} scored more in {more} of {len(d)}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
