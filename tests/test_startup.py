"""A ``referee`` process's start stays cheap: structlog comes without rich's traceback and
pretty-printer modules (``referee/runtime/lean.py``), and ``--version`` looks the version
up only when asked (``benchmarks/startup.py`` counts what each costs)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import {entry}
import structlog
heavy = sorted(m for m in ("rich.traceback", "rich.pretty", "importlib.metadata") if m in sys.modules)
print(heavy, structlog.dev.rich is None)
import rich.table  # rich itself stays importable for the terminal's tables
print(rich.table.Table.__name__)
"""


def _probe(entry: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(entry=entry)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_entry_points_import_structlog_without_rich_and_no_package_metadata() -> None:
    for entry in ("referee.cli", "referee.tournament.worker"):
        assert _probe(entry) == ["[] True", "Table"], entry


def test_the_version_is_still_printed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "referee.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("referee ") and done.stdout.strip() != "referee"
