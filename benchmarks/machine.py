"""How much of the machine a benchmark run had: the share of CPU time stolen by the
hypervisor (``steal`` in ``/proc/stat``; ``st`` in ``vmstat``).

On a virtual machine whose CPUs are shared, other guests' work shows up as stolen time,
and a run with much of it is slower and noisier than the code it measures. The benchmarks
print the share for each run so that such runs can be told apart (docs/performance.md).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

_STAT = Path("/proc/stat")


def _cpu_times() -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs since boot; None where /proc/stat is missing."""
    try:
        first = _STAT.read_text().splitlines()[0].split()
    except OSError:
        return None
    values = [int(v) for v in first[1:]]
    steal = values[7] if len(values) > 7 else 0
    # guest and guest_nice are already counted in user and nice.
    return steal, sum(values[:8])


class Steal:
    """The stolen share of CPU time from its creation to :meth:`percent`."""

    def __init__(self) -> None:
        self._start = _cpu_times()

    def percent(self) -> float:
        """Stolen time as a percentage of all CPU time since creation (NaN where the
        kernel does not say)."""
        end = _cpu_times()
        if self._start is None or end is None or end[1] <= self._start[1]:
            return float("nan")
        return 100.0 * (end[0] - self._start[0]) / (end[1] - self._start[1])


def _busy_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs since boot: busy is user, nice, system, irq and
    softirq time; None where /proc/stat is missing."""
    try:
        first = _STAT.read_text().splitlines()[0].split()
    except OSError:
        return None
    values = [int(v) for v in first[1:]]
    return sum(values[i] for i in (0, 1, 2, 5, 6)), sum(values[:8])


class Busy:
    """How many cores the whole machine kept busy from creation to :meth:`cores`: every
    process's time, whether or not a benchmark's accounting reaches it (a process that is
    not the waited-for child of one it measures, such as gVisor's sandbox, is counted here
    and nowhere else), and other users' too."""

    def __init__(self) -> None:
        self._start = _busy_times()

    def cores(self) -> float:
        """Busy cores on average since creation (NaN where the kernel does not say)."""
        end = _busy_times()
        if self._start is None or end is None or end[1] <= self._start[1]:
            return float("nan")
        share = (end[0] - self._start[0]) / (end[1] - self._start[1])
        return share * (os.cpu_count() or 1)


#: Stolen share (%) above which a run measured the neighbours as much as the code.
LOADED_PERCENT = 5.0


def loaded_warning(percents: list[float]) -> str | None:
    """A line to print before a benchmark's result when some of its runs had more than
    :data:`LOADED_PERCENT` of the CPU stolen, else None: such runs are slower, and their
    ratios to a floor timed alongside drift (docs/performance.md)."""
    loaded = [p for p in percents if p > LOADED_PERCENT]
    if not loaded:
        return None
    return (
        f"warning: {len(loaded)} of {len(percents)} runs had more than {LOADED_PERCENT:.0f}% of "
        f"the CPU stolen by the host (up to {max(loaded):.0f}%): the machine was loaded, and "
        "these figures are not comparable with a quiet machine's"
    )


class RunGroup:
    """A ``cpuacct`` control group (cgroup v1) of one configuration: the benchmark joins it
    before it starts the configuration's processes, so that they and everything they start
    (the bots' sandboxes, runsc's Sentry and gofer too: the jail moves bots into groups of
    other controllers only) are counted in it, and nothing else on the machine is. Absent
    (``usage`` None) where the machine has no such hierarchy."""

    ROOT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self, label: str) -> None:
        self.folder: Path | None = None
        if not (self.ROOT / "cgroup.procs").exists():
            return
        folder = self.ROOT / f"bench-{os.getpid()}-{label}"
        try:
            folder.mkdir()
            (folder / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            return
        self.folder = folder

    def usage(self) -> float | None:
        """CPU seconds of every process in the group since it was made (the benchmark's
        own included: :func:`_cpu_s` of itself takes it out)."""
        if self.folder is None:
            return None
        return int((self.folder / "cpuacct.usage").read_text()) / 1e9

    def leave(self) -> None:
        """The benchmark back in the root group; the group removed once empty."""
        if self.folder is None:
            return
        with contextlib.suppress(OSError):
            (self.ROOT / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):
            try:
                self.folder.rmdir()
                return
            except OSError:
                time.sleep(0.2)
