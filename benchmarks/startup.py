"""A ``referee`` process's start: the instructions its imports cost, counted by valgrind.

Most ``referee`` commands a test suite or a script starts are short (a match of a few
hands, ``league status``, ``verify``), and for those the interpreter's start and the
imports are most of the work: a three-bot ``referee match`` of the default rules runs
about 1.8 billion instructions, of which about 1.6 billion are its imports. This script
counts, under ``valgrind --tool=cachegrind --cache-sim=no`` (a count that does not
depend on the machine's load, unlike a timing), the user-space instructions of:

- ``python -c pass``: the interpreter alone, the floor;
- ``referee --help``: the command's entry point and its parsers;
- the imports of ``referee match``: the command's modules, the bot-file tables (pydantic
  models) and the match runner, without playing;
- the same and reading one bot file (``sample_bots/random.toml``): the bot file's model
  is built when it first validates, so this is what the command pays for its tables;
- the imports of a league's standings process (``python -m referee.league.standings``,
  started at every publication), up to its fit, with BLAS on one thread as the league
  starts it;
- the jail's launcher as the referee starts it before every bot, up to its arguments;
- ``import structlog`` and ``import pydantic``, the two libraries most of that goes to.

Prints one line per process, then exactly:
``python_M=<n> referee_help_M=<n> match_imports_M=<n> bot_file_M=<n> standings_M=<n>
launcher_M=<n>`` (millions of instructions; medians over ``--repeats``). Needs valgrind
(Debian package ``valgrind``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from referee.jail import launch
from referee.league.standings import _ONE_THREAD

ROOT = Path(__file__).resolve().parent.parent
VALGRIND = ("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null")
COLLECTED = re.compile(r"I\s+refs:\s+([\d,]+)")

_LAUNCH = launch.command()
#: name -> the interpreter's arguments.
PROCESSES = {
    "python": ["-c", "pass"],
    "referee_help": ["-m", "referee.cli", "--help"],
    "match_imports": [
        "-c",
        "import referee.cli, referee.cli.match, referee.config.bots, referee.match.runner",
    ],
    "bot_file": [
        "-c",
        "import referee.cli, referee.cli.match, referee.config.bots, referee.match.runner; "
        "referee.config.bots.load_bot('sample_bots/random.toml')",
    ],
    "standings": ["-c", "import referee.league.standings"],
    # The jail's launcher, started before every bot (referee/jail/launch.py), to the
    # point where it would read its arguments.
    "launcher": [*_LAUNCH[1:-1], _LAUNCH[-1].replace("launch.main()", "launch")],
    "structlog": ["-c", "import structlog"],
    "pydantic": ["-c", "import pydantic"],
}
#: name -> the environment's additions, as the process is started.
ENVIRONMENT = {"standings": _ONE_THREAD}


def count(args: list[str], env: dict[str, str] | None = None) -> int:
    """User-space instructions of one ``python ARGS`` under cachegrind."""
    proc = subprocess.run(
        [*VALGRIND, sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    found = COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"python {' '.join(args)} failed under valgrind:\n{tail}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="counts to take the median of")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    medians: dict[str, float] = {}
    for name, argv in PROCESSES.items():
        counts = [count(argv, ENVIRONMENT.get(name)) / 1e6 for _ in range(args.repeats)]
        medians[name] = statistics.median(counts)
        print(f"{name}: {medians[name]:,.0f} million instructions ({len(counts)} counts)")
    keys = ("python", "referee_help", "match_imports", "bot_file", "standings", "launcher")
    print(" ".join(f"{k}_M={medians[k]:.0f}" for k in keys))


if __name__ == "__main__":
    main()
