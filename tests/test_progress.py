"""Tournament progress: a live line on a terminal, with every other line (a warning, the
"interrupted" line) on a line of its own above or below it; JSON log lines and no
terminal codes when stderr is not a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_tournament import BOTS, league

pytestmark = pytest.mark.timeout(180)

_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def screen(raw: str) -> list[str]:
    """The lines a terminal shows after ``raw`` (enough of one for what rich writes:
    carriage return, newline, cursor up, erase line; colours and the rest are ignored)."""
    rows: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\x1b":
            m = _CSI.match(raw, i)
            if m is None:
                i += 1
                continue
            arg, op = m.groups()
            if op == "A":
                row = max(0, row - int(arg or 1))
            elif op == "K":
                rows[row] = rows[row][:col] if arg in ("", "0") else []
            i = m.end()
            continue
        if c == "\r":
            col = 0
        elif c == "\n":
            row += 1
            col = 0
            while len(rows) <= row:
                rows.append([])
        elif c.isprintable():
            line = rows[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = c
            else:
                line.append(c)
            col += 1
        i += 1
    return [("".join(r)).rstrip() for r in rows if "".join(r).strip()]


def on_a_terminal(
    args: list[str], until: Callable[[str], bool] | None = None, then: int | None = None
) -> tuple[int, str, bytes]:
    """Run ``referee ARGS`` with stderr on a pseudo-terminal; once what it wrote there
    satisfies ``until``, send it signal ``then``. Its exit status, the terminal's raw
    text and stdout."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee.cli", *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    seen = b""
    signalled = False
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: the tournament process ended
            break
        if not chunk:
            break
        seen += chunk
        ready = until is not None and until(seen.decode(errors="replace"))
        if ready and then is not None and not signalled:
            proc.send_signal(then)
            signalled = True
    os.close(master)
    out = proc.communicate(timeout=30)[0]
    return proc.returncode, seen.decode(errors="replace"), out


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    path = league(tmp_path, "bar", parallel=2, matches_per_table=1)
    status, raw, out = on_a_terminal(["tournament", str(path)])
    assert status == 0, raw
    # The line is redrawn after each match: 0/4 ... 4/4, with the leader.
    counts = [int(n) for n in re.findall(r"(\d+)/4 matches", raw)]
    assert counts == sorted(counts) and set(counts) == {0, 1, 2, 3, 4}, raw
    shown = screen(raw)
    assert re.fullmatch(r"━+ 4/4 matches  ETA [0-9:]+ leader \w+ \(\d+\)  running 0", shown[-1]), (
        shown
    )
    assert "{" not in raw  # no JSON log lines on a terminal by default
    assert b"4/4 matches finished" in out


def test_a_warning_is_a_line_of_its_own_above_the_bar(tmp_path: Path) -> None:
    path = league(tmp_path, "warn", parallel=1, matches_per_table=1)
    # A fifth bot plays one card it does not hold in each of its matches: a warning each.
    path.write_text(
        path.read_text()
        + f'[[bots]]\nname = "cheat"\ncommand = ["{sys.executable}", "illegal_bot.py"]\n'
        f'workdir = "{BOTS}"\n[bots.env]\nILLEGAL = "not_in_hand"\nILLEGAL_AT = "2"\n'
    )
    status, raw, _ = on_a_terminal(["tournament", str(path), "--workers", "1"])
    assert status == 0, raw
    shown = screen(raw)
    warnings = [i for i, line in enumerate(shown) if "[warning" in line and "fault" in line]
    assert warnings, shown
    bar = [i for i, line in enumerate(shown) if "matches  ETA" in line]
    assert len(bar) == 1 and bar[0] > max(warnings), shown
    assert not any("matches" in shown[i] for i in warnings)


def test_interrupted_is_said_on_a_line_of_its_own_below_the_bar(tmp_path: Path) -> None:
    path = league(tmp_path, "stop", parallel=1, matches_per_table=50)
    status, raw, _ = on_a_terminal(
        ["tournament", str(path), "--workers", "1"],
        until=lambda text: bool(re.search(r"[1-9]\d*/200 matches", text)),
        then=signal.SIGINT,
    )
    assert status == 130, raw
    shown = screen(raw)
    assert shown[-1] == (
        "interrupted: finished matches are kept; run the same command again to resume"
    ), shown
    assert "/200 matches" in shown[-2]
    assert "Traceback" not in raw and "exception was never retrieved" not in raw


def test_a_piped_run_prints_what_a_terminal_prints(tmp_path: Path) -> None:
    # `scripts/demo.sh | tee`: at the default level, the progress a line per match and
    # the standings, with no JSON log lines (and no terminal codes).
    path = league(tmp_path, "piped", parallel=2, matches_per_table=1)
    proc = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(path)],
        capture_output=True,
        timeout=150,
        check=True,
    )
    err = proc.stderr.decode().splitlines()
    assert not [line for line in err if line.startswith("{")], err
    assert any(line.startswith("tournament piped: deal key commitment ") for line in err), err
    assert any(line.startswith("sandbox: ") for line in err), err
    progress = [line for line in err if " matches  ETA " in line]
    assert [int(line.split("/")[0]) for line in progress] == [1, 2, 3, 4], err
    assert re.fullmatch(r"4/4 matches  ETA 0:00  leader \w+ \(\d+\)  running 0", progress[-1])
    assert b"\x1b" not in proc.stderr + proc.stdout and b"\r" not in proc.stderr
    assert b"4/4 matches finished" in proc.stdout and b"rank  bot" in proc.stdout
    key_line = next(line for line in err if "deal key commitment" in line)
    assert key_line.endswith("(the key is published when the last match has ended)")
    # Run again, every match finished: the key is published already, and said so.
    again = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(path)],
        capture_output=True,
        timeout=150,
        check=True,
    )
    err = again.stderr.decode().splitlines()
    key_line = next(line for line in err if "deal key commitment" in line)
    assert re.search(
        r"\(every match has ended: the key is in \S+/out-piped/deal-key\.txt\)$", key_line
    )
    assert b"4/4 matches finished" in again.stdout


def test_progress_as_json_lines_off_a_terminal_when_a_log_level_is_given(tmp_path: Path) -> None:
    path = league(tmp_path, "lines", parallel=2, matches_per_table=1)
    proc = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(path), "--log-level", "info"],
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
    # Nothing meant for a terminal: no bar, no cursor or colour codes.
    assert b"\x1b" not in proc.stderr + proc.stdout and b"\r" not in proc.stderr
    assert b"matches  ETA" not in proc.stderr
