"""What a warm Python sample bot's decisions cost in each jail tier: the whole CPU of a
round robin, referee and bots and their sandboxes, per match, with the bots' starts
taken out.

``referee tournament`` plays a round robin of ``--bots`` copies of the heuristic sample
bot (``seats = 8``: the tournament's bot pool keeps each process for every match, as a
league worker's warm pool does) at tables of 4, ``--parallel`` matches at once, in each
tier (``none``, ``bubblewrap``, ``gvisor``), twice: ``--short`` matches and ``--long``
matches. Each run is a ``cpuacct`` control group of its own (cgroup v1), so its CPU is
everything the run started (gVisor's Sentry and gofer too: the jail moves bots into
groups of other controllers only) and nothing else on the machine; the difference of the
two runs, divided by the matches between them, is a match's CPU without the starts. The
tiers are measured in turn, ``--runs`` times, and the medians printed; gVisor against no
sandbox is the hosted bot's price on top of a dial-in one's (a dial-in bot is a process
outside any sandbox).

    .venv/bin/python benchmarks/warm_tiers.py --runs 3

Needs root (cgroups, and the gVisor tier's runsc). The last line is
``none_ms=<a> bubblewrap_ms=<b> gvisor_ms=<c> gvisor_to_none=<c/a>``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import Steal

ROOT = Path(__file__).resolve().parent.parent
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
TIERS = ("none", "bubblewrap", "gvisor")


def tournament(folder: Path, tier: str, bots: int, matches: int, parallel: int) -> Path:
    entries = "".join(
        f"""
[[bots]]
name = "h{i}"
command = ["python3", "python/heuristic_bot.py"]
workdir = "{ROOT / "sample_bots"}"
seats = 8
"""
        for i in range(bots)
    )
    # Four bots are one table: all its matches; more are a sample of their tables.
    schedule = (
        f"matches_per_table = {matches}"
        if bots == 4
        else f"matches_per_table = 4\nmax_matches = {matches}"
    )
    path = folder / f"{tier}-{matches}.toml"
    path.write_text(
        f"""[tournament]
name = "warm-tiers"
seed = 1
table_size = 4
{schedule}
mode = "round_robin"
parallel = {parallel}
out = "{folder / f"out-{tier}-{matches}"}"
[sandbox]
mode = "{tier}"
{entries}"""
    )
    return path


def cpu_of(config: Path) -> float:
    """CPU seconds of ``referee tournament config`` and all it started."""
    group = CPUACCT / f"warm-tiers-{os.getpid()}-{config.stem}"
    group.mkdir()
    try:
        done = subprocess.run(
            ["sh", "-c", f'echo $$ > "{group}/cgroup.procs"; exec "$@"', "sh",
             sys.executable, "-m", "referee.cli", "tournament", str(config),
             "--workers", "1", "--log-level", "warning"],
            capture_output=True, cwd=ROOT, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            sys.exit(f"{config.name}: {done.stderr.decode(errors='replace')[-2000:]}")
        time.sleep(1)  # the sandboxes' last processes end
        return int((group / "cpuacct.usage").read_text()) / 1e9
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bots", type=int, default=4, help="copies of the heuristic bot")
    parser.add_argument("--parallel", type=int, default=1, help="matches at once")
    parser.add_argument(
        "--short", type=int, default=4, help="matches of the short run (a multiple of 4)"
    )
    parser.add_argument(
        "--long", type=int, default=16, help="matches of the long run (a multiple of 4)"
    )
    parser.add_argument("--tiers", default=",".join(TIERS), help="comma-separated")
    args = parser.parse_args()
    if not (CPUACCT / "cgroup.procs").exists():
        sys.exit("needs a cgroup v1 cpuacct hierarchy at /sys/fs/cgroup/cpuacct (and root)")
    tiers = args.tiers.split(",")
    found: dict[str, list[float]] = {t: [] for t in tiers}
    with tempfile.TemporaryDirectory(prefix="warm-tiers-", dir="/tmp") as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)
        for run in range(args.runs):
            for tier in tiers:
                steal = Steal()
                short = cpu_of(tournament(folder, tier, args.bots, args.short, args.parallel))
                long = cpu_of(tournament(folder, tier, args.bots, args.long, args.parallel))
                per = (long - short) / (args.long - args.short) * 1000
                found[tier].append(per)
                print(
                    f"run {run + 1} {tier:10s} {short:6.2f} s for {args.short} matches, "
                    f"{long:6.2f} s for {args.long}: {per:5.0f} ms a match; load "
                    f"{os.getloadavg()[0]:.0f}, {steal.percent():.1f}% stolen",
                    flush=True,
                )
                for out in folder.glob("out-*"):
                    shutil.rmtree(out, ignore_errors=True)
    med = {t: statistics.median(v) for t, v in found.items()}
    line = " ".join(f"{t}_ms={m:.0f}" for t, m in med.items())
    if "gvisor" in med and "none" in med:
        line += f" gvisor_to_none={med['gvisor'] / med['none']:.2f}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
