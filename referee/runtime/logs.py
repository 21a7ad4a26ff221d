"""structlog, configured once at the entry point.

On a terminal: readable key=value lines on stderr. Elsewhere (CI, containers, pipes):
one JSON object per line, unless the command asks for text (``referee tournament`` at its
default level prints what a terminal shows). Context such as ``match_id`` and ``seat`` is bound by the code
that knows it (``log.bind`` or ``structlog.contextvars.bind_contextvars``).
"""

from __future__ import annotations

import logging
import sys

import structlog

LEVEL = "info"
"""The level last configured (referee worker processes are started with it)."""


class _Stderr:
    """``sys.stderr`` as it is at each write: a live progress line on a terminal takes it
    over while it is shown, to print log lines above itself."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(level: str = "info", json: bool | None = None, *, cache: bool = True) -> None:
    """Configure structlog for the ``referee`` command. ``cache=False`` for a provisional
    setting that a later call replaces (loggers used meanwhile do not keep it)."""
    global LEVEL
    LEVEL = level.lower()
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=cache,
    )
