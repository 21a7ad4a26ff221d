"""Sum and rank what the tests cost, from the lines ``STICHELN_TEST_COSTS`` made
(tests/costs.py): the total CPU and wall seconds, each file's share, and the costliest
tests.

    STICHELN_TEST_COSTS=/tmp/costs.jsonl bash scripts/test.sh
    python tools/test_costs.py /tmp/costs.jsonl [--top 30]
"""

from __future__ import annotations

import argparse
import json
import signal
from collections import defaultdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    with open(args.file, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    cpu = sum(r["cpu"] for r in rows)
    wall = sum(r["wall"] for r in rows)
    print(f"{len(rows)} tests: {cpu:.0f} CPU s, {wall:.0f} wall s (summed over workers)")
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for r in rows:
        f = files[r["test"].split("::")[0]]
        f[0] += r["cpu"]
        f[1] += r["wall"]
        f[2] += 1
    print(f"\nfiles by CPU (top {args.top}):")
    for name, (c, w, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"{c:8.1f} cpu {w:8.1f} wall {int(n):4d} tests  {name}")
    print(f"\ntests by CPU (top {args.top}):")
    for r in sorted(rows, key=lambda r: -r["cpu"])[: args.top]:
        print(f"{r['cpu']:8.1f} cpu {r['wall']:8.1f} wall  {r['test']}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # piped into head: stop quietly
    main()
