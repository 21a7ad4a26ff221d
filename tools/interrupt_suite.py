"""Interrupt the whole test suite with a terminal's Ctrl-C and list what it left behind.

    python3 tools/interrupt_suite.py --after 300            # scripts/test.sh, Ctrl-C at 5 min
    python3 tools/interrupt_suite.py --after 120 -- -k web  # arguments after -- go to it

``tests/test_interrupt.py`` interrupts a small pytest session of its own on every run;
this tool does it to the real thing, as a developer does: it starts ``bash
scripts/test.sh`` (which installs what is missing, lints, and runs pytest on four
workers) in a process group of its own, as a terminal's foreground job, waits ``--after``
seconds, sends SIGINT to that group (what Ctrl-C does), and waits for the script to end.

Then it looks for what the run left (anything there before the run is left out):
- live processes started after the run began, other than this tool;
- entries of the temporary folders (``$TMPDIR`` or ``/tmp``, ``/var/tmp``, ``/dev/shm``);
- control groups under ``/sys/fs/cgroup`` (the bots' cpu, memory and pids groups).

Each is listed on a line; the exit status is 0 when nothing was left, 1 otherwise, 2 when
the suite ended before the interrupt (nothing was checked). The jail's trees of hard links
(``/var/tmp/sticheln-trees-UID``) are kept on purpose across runs and are not counted.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: How long the script may take to end after the interrupt.
GRACE_S = 180.0
#: How long what is left may take to go after the script has ended.
SETTLE_S = 10.0
#: Kept across runs by design (referee/jail/trees.py).
KEPT = ("sticheln-trees-",)


def _ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def _boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise RuntimeError("no btime in /proc/stat")


def processes_since(since: float) -> list[str]:
    """Live processes started at or after ``since`` (epoch seconds), this one and its
    ancestors left out: 'pid: command line'."""
    mine = set()
    pid = os.getpid()
    while pid > 1:
        mine.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    boot, tick = _boot_time(), _ticks()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] == "Z":
                continue
            started = boot + int(fields[19]) / tick
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if started >= since - 1 and cmdline:
            found.append(f"{entry.name}: {cmdline.strip()[:160]}")
    return sorted(found)


def temporary_entries() -> set[str]:
    """Entries of the temporary folders (one level down)."""
    seen = set()
    for folder in {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}:
        try:
            seen |= {str(p) for p in Path(folder).iterdir() if not p.name.startswith(KEPT)}
        except OSError:
            continue
    return seen


def cgroups() -> set[str]:
    """Every control group folder under /sys/fs/cgroup."""
    seen = set()
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        seen |= {os.path.join(root, d) for d in dirs}
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--after", type=float, default=300.0, help="seconds before Ctrl-C")
    parser.add_argument(
        "--log", type=Path, default=ROOT / "test-artifacts" / "interrupted-suite.log"
    )
    parser.add_argument("args", nargs="*", help="arguments for scripts/test.sh (after --)")
    options = parser.parse_args()

    options.log.parent.mkdir(parents=True, exist_ok=True)
    before_tmp, before_cg = temporary_entries(), cgroups()
    began = time.time()
    with options.log.open("wb") as log:
        suite = subprocess.Popen(
            ["bash", "scripts/test.sh", *options.args],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            process_group=0,  # a job of its own, as a terminal's foreground job is
        )
        try:
            suite.wait(options.after)
            print(f"the suite ended before the interrupt (exit {suite.returncode})")
            return 2
        except subprocess.TimeoutExpired:
            pass
        print(f"Ctrl-C (SIGINT to the suite's process group) after {options.after:.0f} s")
        os.killpg(suite.pid, signal.SIGINT)
        hit = time.monotonic()
        try:
            suite.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            print(f"the suite did not end within {GRACE_S:.0f} s of the interrupt")
            os.killpg(suite.pid, signal.SIGKILL)
            suite.wait()
            return 1
    print(f"the suite ended {time.monotonic() - hit:.1f} s after it, exit {suite.returncode}")
    # A process's parent may remove what it left a moment after it ends: look again for
    # a few seconds before calling anything left behind.
    until = time.monotonic() + SETTLE_S
    while True:
        left = [f"process {p}" for p in processes_since(began)]
        left += [f"temporary {t}" for t in sorted(temporary_entries() - before_tmp)]
        left += [f"cgroup {c}" for c in sorted(cgroups() - before_cg)]
        if not left or time.monotonic() > until:
            break
        time.sleep(0.5)
    for line in left:
        print(f"left behind: {line}")
    print(f"{len(left)} left behind; the suite's output is in {options.log}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
