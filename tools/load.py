"""Hold the machine busy, for a bounded time, to run the tests under load.

    python tools/load.py --load 20 --minutes 45 &
    bash scripts/test.sh

Runnable processes are what a load average counts: ``--procs N`` starts N spinners
(processes that spin on the CPU); ``--load L`` keeps about L processes runnable, the
machine's other work included, so that the load average settles near L: every 5 seconds
it adds or ends spinners by the difference between L and the mean number of runnable
processes it saw (``/proc/loadavg``'s fourth field, sampled ten times a step). Either way the spinners stop by themselves after
``--minutes`` (default 30), at Ctrl-C or SIGTERM, and when this process dies: a spinner
whose parent is gone exits. Every minute a line on stderr gives the load averages and
the spinners running.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

#: How often (seconds) the ``--load`` mode adjusts the spinners, and each spinner looks
#: for its parent.
STEP_S = 5.0


def spin(parent: int, until: float) -> None:
    """Burn CPU until ``until`` (monotonic) or until ``parent`` is gone; never returns."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        while time.monotonic() < until and os.getppid() == parent:
            for _ in range(200_000):
                pass
    finally:
        os._exit(0)


class Spinners:
    """The busy child processes."""

    def __init__(self, until: float) -> None:
        self.until = until
        self.pids: list[int] = []

    def add(self) -> None:
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            spin(parent, self.until)
        self.pids.append(pid)

    def remove(self) -> None:
        pid = self.pids.pop()
        self._end(pid)

    def stop(self) -> None:
        while self.pids:
            self.remove()

    @staticmethod
    def _end(pid: int) -> None:
        try:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def runnable() -> float:
    """The mean number of runnable processes over one step, this one left out."""
    seen = []
    for _ in range(10):
        with open("/proc/loadavg", encoding="ascii") as f:
            seen.append(int(f.read().split()[3].split("/")[0]) - 1)
        time.sleep(STEP_S / 10)
    return sum(seen) / len(seen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--procs", type=int, help="this many spinners, all the time")
    how.add_argument(
        "--load", type=float, help="keep the 1-minute load average near this (default 20)"
    )
    parser.add_argument("--minutes", type=float, default=30.0, help="stop after (default 30)")
    parser.add_argument(
        "--most", type=int, default=64, help="never more spinners than this (default 64)"
    )
    args = parser.parse_args(argv)
    if args.procs is not None and not 0 < args.procs <= args.most:
        parser.error(f"--procs: {args.procs} is not allowed; allowed: 1 to --most ({args.most})")
    if not 0 < args.minutes <= 24 * 60:
        parser.error(f"--minutes: {args.minutes} is not allowed; allowed: more than 0, to 1440")
    target = args.load if args.procs is None and args.load is not None else 20.0
    if args.procs is None and not 0 < target <= args.most:
        parser.error(f"--load: {target} is not allowed; allowed: more than 0, to --most")

    end = time.monotonic() + args.minutes * 60
    spinners = Spinners(end)

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    said = 0.0
    try:
        if args.procs is not None:
            for _ in range(args.procs):
                spinners.add()
        while (now := time.monotonic()) < end:
            if now - said >= 60:
                said = now
                load1, load5, load15 = os.getloadavg()
                print(
                    f"load {load1:.1f} {load5:.1f} {load15:.1f}, {len(spinners.pids)} spinners, "
                    f"{(end - now) / 60:.0f} min left",
                    file=sys.stderr,
                    flush=True,
                )
            if args.procs is not None:
                time.sleep(min(STEP_S, max(0.0, end - now)))
                continue
            change = max(-4, min(4, round(target - runnable())))
            for _ in range(change):
                if len(spinners.pids) < args.most:
                    spinners.add()
            for _ in range(-change):
                if spinners.pids:
                    spinners.remove()
    except KeyboardInterrupt:
        return 130
    finally:
        spinners.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
