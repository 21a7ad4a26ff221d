"""What each test costs, for making the suite cheaper: with ``STICHELN_TEST_COSTS=FILE``
set, every test appends one JSON line to FILE with its wall time and the CPU seconds that
it and the processes it waited for used (setup and teardown included). Unlike the wall
time, the CPU figure hardly moves with the machine's load, so a run on a busy machine still
ranks the tests by what they cost a quiet one. ``python tools/test_costs.py FILE`` sums
and ranks them.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator

import pytest


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


class Costs:
    """The pytest plugin: registered by tests/conftest.py when the variable is set."""

    def __init__(self, path: str) -> None:
        self.path = path

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        cpu, start = _cpu_now(), time.monotonic()
        yield
        line = {
            "test": item.nodeid,
            "wall": round(time.monotonic() - start, 3),
            "cpu": round(_cpu_now() - cpu, 3),
        }
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


def register(config: pytest.Config) -> None:
    path = os.environ.get("STICHELN_TEST_COSTS")
    if path:
        config.pluginmanager.register(Costs(os.path.abspath(path)), "sticheln-costs")
