"""Fair play from the records: does a bot's choice fit the hidden cards better than its
seat's view explains, and do two bots play for each other? (docs/fairplay.md)

Pure: reads match records and simulates with the rules engine; no network, no metrics.
:func:`~referee.fairplay.decisions.read_decisions` puts a record's decisions back on the
table, :class:`~referee.fairplay.value.Evaluator` values each one on the true deal and on
deals the seat could not tell from it, :class:`~referee.fairplay.stats.Monitor` is the
anytime-valid test, and :class:`~referee.fairplay.report.FairPlay` gathers them per bot
and per pair.
"""

from referee.fairplay.decisions import (
    Decision,
    MatchDecisions,
    Place,
    RecordSkipped,
    decisions_of,
    read_decisions,
)
from referee.fairplay.report import FairPlay, Options
from referee.fairplay.stats import Monitor
from referee.fairplay.value import Evaluator, Fit, Settings

__all__ = [
    "Decision",
    "Evaluator",
    "FairPlay",
    "Fit",
    "MatchDecisions",
    "Monitor",
    "Options",
    "Place",
    "RecordSkipped",
    "Settings",
    "decisions_of",
    "read_decisions",
]
