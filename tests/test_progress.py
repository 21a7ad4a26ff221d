"""Tournament progress: a bar on a terminal, JSON log lines when not on one."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_tournament import league

pytestmark = pytest.mark.timeout(180)


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    path = league(tmp_path, "bar", parallel=2, matches_per_table=1)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee.cli", "tournament", str(path)],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: the tournament process ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, seen.decode(errors="replace")
    text = seen.decode()
    # The bar redraws in place after each match: 1/4 ... 4/4, with an ETA and the leader.
    frames = [f for f in text.split("\r") if "matches" in f]
    counts = [int(m.group(1)) for f in frames if (m := re.search(r"(\d+)/4 matches", f))]
    assert counts == sorted(counts) and counts[-1] == 4 and len(counts) == 4
    last = frames[-1]
    assert re.search(r"\[#{30}\] 4/4 matches  ETA 0m00s  leader \w+ \(\d+\)  running 0", last)
    assert "{" not in text  # no JSON log lines on a terminal by default
    assert b"4/4 matches finished" in out


def test_progress_as_json_lines_off_a_terminal(tmp_path: Path) -> None:
    path = league(tmp_path, "lines", parallel=2, matches_per_table=1)
    proc = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(path)],
        capture_output=True,
        timeout=150,
        check=True,
    )
    events = [
        json.loads(line) for line in proc.stderr.decode().splitlines() if line.startswith("{")
    ]
    progress = [e for e in events if e["event"] == "progress"]
    assert [e["done"] for e in progress] == [1, 2, 3, 4]
    assert all(e["planned"] == 4 and e["leader"] for e in progress)
    assert progress[-1]["eta_s"] == 0
