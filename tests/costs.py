"""What each test costs, for making the suite cheaper: with ``STICHELN_TEST_COSTS=FILE``
set, every test appends one JSON line to FILE with its wall time and the CPU seconds that
it and the processes it started used (setup and teardown included). Unlike the wall
time, the CPU figure hardly moves with the machine's load, so a run on a busy machine still
ranks the tests by what they cost a quiet one. ``python tools/test_costs.py FILE`` sums
and ranks them.

Where the cgroup v1 ``cpuacct`` hierarchy is writable (a root run), each test runs in a
``cpuacct`` group of its own, so the figure is everything the test started, wherever it
ended up: a referee's bots, a league's workers, a browser, gVisor's sandboxes (the jail
groups bots under ``cpu``, ``memory`` and ``pids``, never ``cpuacct``). Elsewhere it is
what the test's worker used and the processes it waited for (``getrusage``), which misses
whatever a process it started left to others to reap.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

#: The hierarchy whose groups count each test's CPU, when it can be written to.
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


def _own_cpuacct() -> Path:
    """The ``cpuacct`` group this process is in (the hierarchy's root if none is named)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return CPUACCT / path.lstrip("/")
    return CPUACCT


class _Group:
    """A ``cpuacct`` group for one test, inside the worker's own group (a run measured by
    a group of its own keeps counting it): the worker joins it for the test's length."""

    def __init__(self, name: str) -> None:
        self.home = _own_cpuacct()
        self.path = self.home / name
        self.path.mkdir()
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def leave(self) -> float:
        """Go back to the worker's own group; this group's CPU seconds so far."""
        (self.home / "cgroup.procs").write_text(str(os.getpid()))
        used = int((self.path / "cpuacct.usage").read_text()) / 1e9
        self.remove()
        return used

    def remove(self) -> bool:
        """Remove the group; False while a process the test left is still in it."""
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


class Costs:
    """The pytest plugin: registered by tests/conftest.py when the variable is set."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.grouped = os.access(CPUACCT / "cgroup.procs", os.W_OK)
        self.count = 0
        #: Groups a process of their test was still in when it ended: removed at the end.
        self.left: list[_Group] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        group = None
        if self.grouped:
            self.count += 1
            try:
                group = _Group(f"sticheln-test-{os.getpid()}-{self.count}")
            except OSError:
                group = None
        cpu, start = _cpu_now(), time.monotonic()
        yield
        line = {
            "test": item.nodeid,
            "wall": round(time.monotonic() - start, 3),
            "cpu": round(group.leave() if group else _cpu_now() - cpu, 3),
        }
        if group is not None and group.path.exists():
            self.left.append(group)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    def pytest_sessionfinish(self) -> None:
        # What a test left behind has ended by now (the suite's fixtures stop it).
        self.left = [g for g in self.left if not g.remove()]


def register(config: pytest.Config) -> None:
    path = os.environ.get("STICHELN_TEST_COSTS")
    if path:
        config.pluginmanager.register(Costs(os.path.abspath(path)), "sticheln-costs")
