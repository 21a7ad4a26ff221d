"""The watchdog kills the process groups it guards, and removes the folders it was given,
once the process that started it is gone; it leaves alone those taken back before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bots.harness import assert_no_processes, new_marker, processes_with

#: A process that starts two process groups (a sleeper with a child of its own each),
#: guards both, releases the second, has two folders removed at its end, forgets one,
#: and dies by SIGKILL.
OWNER = """
import os, signal, subprocess, sys
from pathlib import Path
from referee.jail import watchdog
marker = sys.argv[1]
sleeper = f"import time; time.sleep(600)"
parent = "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); time.sleep(600)"
groups = [
    subprocess.Popen(
        [sys.executable, "-c", parent, sys.executable, "-c", sleeper, f"{marker}-{i}"],
        start_new_session=True,
    )
    for i in ("killed", "released")
]
for g in groups:
    watchdog.guard(g.pid)
watchdog.release(groups[1].pid)
kept, removed = (Path(sys.argv[2]) / name for name in ("kept", "removed"))
for folder in (kept, removed):
    (folder / "sockets").mkdir(parents=True)
    watchdog.remove_on_exit(folder)
watchdog.forget(kept)
print(watchdog.watchdog_pid(), flush=True)
sys.stdin.read()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_guarded_groups_die_with_their_owner_and_released_ones_live_on(tmp_path: Path) -> None:
    marker = new_marker()
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, marker, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None and owner.stdin is not None
    try:
        watchdog_pid = int(owner.stdout.readline())
        deadline = time.monotonic() + 30
        groups = (f"{marker}-killed", f"{marker}-released")
        while any(len(processes_with(g)) < 2 for g in groups) and time.monotonic() < deadline:
            time.sleep(0.02)  # polling /proc until both groups run, not waiting out a race
        assert len(processes_with(f"{marker}-killed")) == 2
        owner.stdin.close()  # the owner kills itself with SIGKILL: no clean-up of its own
        assert owner.wait(10) == -signal.SIGKILL
        assert_no_processes(f"{marker}-killed", within=10)
        assert len(processes_with(f"{marker}-released")) == 2
        # The watchdog's work is done: it is gone too.
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{watchdog_pid}") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not os.path.exists(f"/proc/{watchdog_pid}")
        # It removed the folder it was given, not the one taken back.
        assert not (tmp_path / "removed").exists()
        assert (tmp_path / "kept" / "sockets").is_dir()
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
