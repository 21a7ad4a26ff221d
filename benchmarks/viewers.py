"""Idle viewers against a tournament's web port, at the scale of issue 32 (route 4).

``referee tournament FILE --web-port 0`` in duplicate mode (every seating starts its three
bots afresh, each in its sandbox: ``tests/bots/lowest_bot.py``) with its descriptor limit
set to ``--limit`` (soft and hard: raising the soft limit cannot help), while ``--viewers``
idle viewers (``tests/idleviewers.py``) from ``--clients`` loopback addresses ask for the
live updates stream, never read, and come back a second after the server closes them.
Once they have all knocked, one new viewer from another address asks for the first page.

Printed: the tournament's exit status and its last line, the matches finished, the faults
in their records (a seat the referee failed would be one), the viewers' tally (connections
made, answers by status, the last refusal's text), the new viewer's answer, and the time
the tournament took; with ``--viewers 0`` the same tournament alone, for comparison::

    python benchmarks/viewers.py [--viewers 2000] [--clients 20] [--limit 1024]
        [--matches 6] [--parallel 2]

Measured on the 2-core development machine (root referee, bubblewrap): 2,000 viewers
from 20 addresses against a limit of 1024: 6 of 6 matches finished, no fault, no "Too
many open files", no void match; the web server held 471 viewers and refused the rest
(4,799 answers 503 with a one-line reason, 511 connections reset while refusals came in
faster than they could be read), the new viewer got a 503; 21.7 s (the same tournament
with 600 viewers: 17.4 s). Before, 1,100 such viewers against the same limit made 42
seats forfeit and crashed the referee (issue 32).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from idleviewers import IdleViewers, ask  # noqa: E402

REFEREE = [sys.executable, "-m", "referee.cli"]
BOTS = ROOT / "tests" / "bots"


def tournament_file(tmp: Path, matches: int, parallel: int) -> Path:
    lines = [
        "[tournament]",
        'name = "viewed"',
        'mode = "duplicate"',
        "table_size = 3",
        f"matches_per_table = {matches}",
        f"parallel = {parallel}",
        f"out = {json.dumps(str(tmp / 'out'))}",
        "[clock]",
        "decision_ms = 5000",
        "startup_ms = 30000",
        "[sandbox]",
        f"read = [{json.dumps(str(BOTS))}]",
    ]
    for name in ("ann", "ben", "cy"):
        lines += [
            "[[bots]]",
            f"name = {json.dumps(name)}",
            f"command = {json.dumps([sys.executable, 'lowest_bot.py'])}",
            f"workdir = {json.dumps(str(BOTS))}",
            'env = { SLEEP_MS = "5" }',
        ]
    path = tmp / "t.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--viewers", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--limit", type=int, default=1024)
    parser.add_argument("--matches", type=int, default=6, help="a multiple of 3")
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    # This process holds the viewers' connections: it needs more than the referee gets.
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    with tempfile.TemporaryDirectory(prefix="viewers-") as folder:
        tmp = Path(folder)

        def limited() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (args.limit, args.limit))

        started = time.monotonic()
        file = tournament_file(tmp, args.matches, args.parallel)
        proc = subprocess.Popen(
            [*REFEREE, "tournament", str(file), "--web-port", "0", "--workers", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=limited,
        )
        lines: list[str] = []
        found = threading.Event()

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                if "web on http" in line:
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        viewers = None
        newcomer: tuple[str, str] = ("", "")
        try:
            if not found.wait(120):
                raise SystemExit("no web address: " + "".join(lines)[-2000:])
            match = re.search(r"web on http://127\.0\.0\.1:(\d+)/", "".join(lines))
            assert match
            port = int(match.group(1))
            if args.viewers:
                sources = [f"127.0.{1 + i // 250}.{2 + i % 250}" for i in range(args.clients)]
                viewers = IdleViewers("127.0.0.1", port, args.viewers, sources)
                deadline = time.monotonic() + 120
                while viewers.tally.made + viewers.tally.failed < args.viewers:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        break
                    time.sleep(0.1)
                try:
                    newcomer = ask("127.0.0.1", port, "127.0.0.250")
                except OSError as exc:
                    newcomer = (repr(exc), "")
            out, _ = proc.communicate(timeout=1200)
        finally:
            if viewers is not None:
                viewers.close()
            if proc.poll() is None:
                proc.kill()
        took = time.monotonic() - started
        db = sqlite3.connect(tmp / "out" / "tournament.db")
        statuses = [s for (s,) in db.execute("SELECT status FROM matches").fetchall()]
        db.close()
        faults: dict[str, int] = {}
        for record in (tmp / "out" / "matches").glob("*.jsonl"):
            for line in record.read_text().splitlines():
                event = json.loads(line)
                if event["type"] == "fault":
                    key = f"{event['reason']}: {event.get('detail', '')[:80]}"
                    faults[key] = faults.get(key, 0) + 1
        log = "".join(lines)
        print(f"limit {args.limit}, {args.viewers} viewers from {args.clients} addresses")
        print(f"exit status {proc.returncode}: {out.strip().splitlines()[-1:]}")
        print(
            f"matches: {statuses.count('finished')} of {len(statuses)} finished; faults: {faults}"
        )
        print(f"'Too many open files' in the log: {log.count('Too many open files')}")
        print(f"void and played again: {log.count('match_void')}")
        if viewers is not None:
            t = viewers.tally
            print(f"viewers: {t.made} connections made, {t.failed} failed, answers {t.answers}")
            print(f"last refusal: {t.refusal.strip()!r}")
            print(f"new viewer: {newcomer[0]!r} ({len(newcomer[1])} bytes)")
        print(f"tournament took {took:.1f} s")


if __name__ == "__main__":
    main()
