"""tools/load.py, the load generator the suite is run beside: its spinners run, and end by
themselves, at the end of their time or when the generator is killed."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from machine import stretched

LOAD = Path(__file__).resolve().parent.parent / "tools" / "load.py"


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _spinners_of(pid: int, count: int) -> list[int]:
    deadline = time.monotonic() + stretched(30)
    while len(children := _children(pid)) < count and time.monotonic() < deadline:
        time.sleep(0.05)  # polling /proc until the spinners run
    return children


def _gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + stretched(20)
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling /proc until the spinners have ended
    return not any(Path(f"/proc/{p}").exists() for p in pids)


def test_the_spinners_end_with_their_time_and_with_the_generator() -> None:
    timed = subprocess.Popen([sys.executable, str(LOAD), "--procs", "2", "--minutes", "0.05"])
    spinners = _spinners_of(timed.pid, 2)
    assert len(spinners) == 2
    assert timed.wait(timeout=stretched(30)) == 0  # after its 3 s, by itself
    assert _gone(spinners)

    killed = subprocess.Popen([sys.executable, str(LOAD), "--procs", "2", "--minutes", "10"])
    spinners = _spinners_of(killed.pid, 2)
    assert len(spinners) == 2
    killed.send_signal(signal.SIGKILL)  # no chance to stop them: they see their parent gone
    killed.wait()
    assert _gone(spinners)


def test_bad_settings_are_refused_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, str(LOAD), "--procs", "0"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "load.py: error: --procs: 0 is not allowed; allowed: 1 to --most (64)"
    )
