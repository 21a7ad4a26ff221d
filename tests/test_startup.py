"""A ``referee`` process's start stays cheap: structlog comes without rich's traceback and
pretty-printer modules (``referee/runtime/lean.py``), ``--version`` looks the version up
only when asked, and the config files' models are built when first used
(``benchmarks/startup.py`` counts what each costs)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import {entry}
import structlog
heavy = ("rich.traceback", "rich.pretty", "importlib.metadata", "prometheus_client")
heavy = sorted(m for m in heavy if m in sys.modules)
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


def test_the_entry_points_import_structlog_without_rich_and_no_metadata_or_metrics() -> None:
    # The command, a tournament's worker (whose parent keeps the metrics: no
    # prometheus_client), and the league's children: the standings' fit
    # (``-m referee.league.standings``), a season's final (``-m referee.league.season``)
    # and the fair-play evaluator (spawned: it imports referee.league.fairplay first).
    entries = (
        "referee.cli",
        "referee.tournament.worker",
        "referee.league.standings",
        "referee.league.season",
        "referee.league.fairplay",
    )
    for entry in entries:
        assert _probe(entry) == ["[] True", "Table"], entry


CONFIG_PROBE = """
import sys
import referee.runtime.lean
import referee.config.bots, referee.tournament.config, referee.league.config, referee.compare.config
from pydantic import BaseModel
built = sorted(
    f"{m.__module__}.{m.__name__}"
    for m in {type_ for mod in list(sys.modules.values()) for type_ in vars(mod).values()
              if isinstance(type_, type) and issubclass(type_, BaseModel) and type_ is not BaseModel
              and type_.__module__.startswith("referee.")}
    if m.__pydantic_complete__
)
print(built)
"""


def test_importing_the_config_files_models_builds_none_of_their_validators() -> None:
    # A model builds its validator when it first validates (defer_build): a command pays
    # for the file types it reads. A field default made by calling a model (``= Table()``)
    # would build it, and its tables, at import.
    done = subprocess.run(
        [sys.executable, "-c", CONFIG_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_the_version_is_still_printed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "referee.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("referee ") and done.stdout.strip() != "referee"
