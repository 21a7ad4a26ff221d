"""Hosted bots: the time from ``referee league submit`` to ``playing``.

Each run starts a real ``referee serve`` league (SQLite, a fresh temporary folder, hosting
on with the defaults), registers one entry, submits a sample bot with ``referee league
submit`` and polls ``referee league bots --json`` (every 0.2 s) until the entry's status
is ``playing`` (or ``refused``, which fails the run). The time is from the start of the
submit command (packing the folder, the upload) to the poll that saw ``playing``: the
upload, the unpacking, the build (C++), the start check and the check-bot scenarios
(``validation_rounds`` = 1), all jailed.

    .venv/bin/python benchmarks/hosting.py                 # the Python sample bot, 5 runs
    .venv/bin/python benchmarks/hosting.py --validation-jobs 1   # scenarios one at a time
    .venv/bin/python benchmarks/hosting.py --sandbox bubblewrap  # the cheaper tier
    .venv/bin/python benchmarks/hosting.py --bot cpp --runs 1
    .venv/bin/python benchmarks/hosting.py --bot node --runs 3
    .venv/bin/python benchmarks/hosting.py --bot java --runs 1

``--bot cpp`` uploads sample_bots/cpp without its build folder and a bot file whose
``build`` is the starter's two cmake commands, so the build runs in the jail (no network,
``build_timeout_s``, ``build_memory_mb``). ``--bot node`` uploads sample_bots/node with its
installed ``node_modules`` (a build has no network to fetch them). ``--bot java`` uploads the
Java kit as it is but what its build.sh makes (gen/, classes/, lib/). Target (issue 33):
the Python sample bot under 30 s from submit to playing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import Steal

from referee.jail import gvisor

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
REFEREE = [sys.executable, "-m", "referee.cli"]
ADMIN = "benchmark-admin-token-0123456789"
TARGET_PYTHON_S = 30.0

BOT_FILES = {
    "cpp": """name = "cpp"
command = ["build/sticheln-bot"]
build = "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2 --target sticheln-bot"
seats = 8
""",
    "node": """name = "node"
command = ["node", "bot.js"]
""",
}


def folder_of(bot: str, work: Path) -> tuple[Path, str]:
    """The folder to upload and its bot file's name."""
    if bot == "python":
        return SAMPLES / "python", "bot.toml"
    src = SAMPLES / bot
    dest = work / f"{bot}-upload"
    # A copy without the build folder (the league builds it) and with node_modules' files
    # themselves (an upload holds no links).
    leave_out = {"cpp": ("build",), "java": ("gen", "classes", "lib")}.get(bot, ())
    shutil.copytree(src, dest, symlinks=False, ignore=shutil.ignore_patterns(*leave_out))
    if bot in BOT_FILES:  # else the kit's own bot.toml
        (dest / "bot.toml").write_text(BOT_FILES[bot], encoding="utf-8")
    return dest, "bot.toml"


def one_run(bot: str, timeout_s: float, sandbox: str, jobs: int) -> float:
    work = Path(tempfile.mkdtemp(prefix="bench-hosting-", dir="/tmp"))
    work.chmod(0o755)
    env = {**os.environ, "STICHELN_ADMIN_TOKEN": ADMIN}
    config = work / "league.toml"
    config.write_text(
        '[league]\nname = "bench"\nport = 0\nout = "out"\n'
        f'[hosting]\nenabled = true\ncode_dir = "{work / "code"}"\nworkers = 0\n'
        f"build_timeout_s = 1200\nvalidation_jobs = {jobs}\n"
        f'[sandbox]\nmode = "{sandbox}"\n',
        encoding="utf-8",
    )
    serve = subprocess.Popen(
        [*REFEREE, "serve", "--config", str(config), "--log-level", "warning"],
        stdout=subprocess.PIPE,
        stderr=open(work / "serve.log", "wb"),  # noqa: SIM115 - the process's, until it ends
        env=env,
        text=True,
        cwd=ROOT,
    )
    try:
        assert serve.stdout is not None
        address = serve.stdout.readline().rsplit(" ", 1)[1].strip()
        token = subprocess.run(
            [*REFEREE, "league", "register", bot, "--address", address],
            env=env, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        folder, bot_file = folder_of(bot, work)
        started = time.perf_counter()
        done = subprocess.run(
            [*REFEREE, "league", "submit", str(folder), "--bot-file", bot_file,
             "--address", address],
            env={**env, "STICHELN_BOT_TOKEN": token}, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"submit failed: {done.stderr.strip()}")
        while True:
            rows = subprocess.run(
                [*REFEREE, "league", "bots", "--json", "--address", address],
                env=env, capture_output=True, text=True, check=True,
            ).stdout.splitlines()  # fmt: skip
            status = json.loads(rows[0])["status"]
            if status == "playing":
                return time.perf_counter() - started
            if status == "refused":
                report = subprocess.run(
                    [*REFEREE, "league", "status", bot, "--address", address],
                    env={**env, "STICHELN_BOT_TOKEN": token}, capture_output=True, text=True,
                ).stdout  # fmt: skip
                raise SystemExit(f"refused:\n{report}")
            if time.perf_counter() - started > timeout_s:
                raise SystemExit(f"not playing after {timeout_s:g} s")
            time.sleep(0.2)
    finally:
        serve.terminate()
        serve.wait(60)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bot", choices=("python", "node", "cpp", "java"), default="python")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per run")
    parser.add_argument(
        "--sandbox",
        choices=("strongest", "gvisor", "bubblewrap"),
        default="strongest",
        help="the tier hosted code runs in (default strongest, as a league runs it)",
    )
    parser.add_argument(
        "--validation-jobs", type=int, default=3, help="[hosting] validation_jobs (default 3)"
    )
    args = parser.parse_args()
    tier = args.sandbox
    if tier == "strongest":
        tier = "bubblewrap" if gvisor.missing() else "gvisor"
    print(f"tier: {tier}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    times = []
    steal = Steal()
    for i in range(args.runs):
        t = one_run(args.bot, args.timeout, args.sandbox, args.validation_jobs)
        times.append(t)
        print(f"run {i + 1}: {args.bot} submit -> playing in {t:.1f} s", flush=True)
    median = statistics.median(times)
    print(
        f"median of {len(times)}: {median:.1f} s (min {min(times):.1f}, max {max(times):.1f}); "
        f"{steal.percent():.1f}% of the CPU stolen"
    )
    if args.bot == "python":
        met = "met" if median < TARGET_PYTHON_S else "MISSED"
        print(f"target: under {TARGET_PYTHON_S:g} s: {met}")


if __name__ == "__main__":
    main()
