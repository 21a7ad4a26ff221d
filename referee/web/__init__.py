"""The referee's web face: read-only pages and a JSON API (docs/web.md).

:class:`~referee.web.server.WebServer` serves a :class:`~referee.web.sources.Source`: a
running league (``referee serve`` with ``web_port``), a running tournament
(``referee tournament FILE --web-port P``) or a finished one's folder (``referee web DIR``).
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from prometheus_client import CollectorRegistry

from referee.web.server import WebOptions, WebServer
from referee.web.sources import FolderSource, LeagueSource, NotFound, Source, TournamentSource

__all__ = [
    "FolderSource",
    "LeagueSource",
    "NotFound",
    "Source",
    "TournamentSource",
    "WebOptions",
    "WebServer",
    "serve_folder",
]


async def serve_folder(folder: Path, host: str, port: int) -> int:
    """``referee web DIR``: serve a finished tournament's (or comparison's) folder until
    SIGTERM or Ctrl-C.

    The first line on stdout is ``web on http://HOST:PORT/``.
    """
    from referee.web.compare import CompareSource, is_compare_folder

    # A comparison's folder opens on its verdict; anything else is a tournament's.
    source: Source = CompareSource(folder) if is_compare_folder(folder) else FolderSource(folder)
    server = WebServer(source, CollectorRegistry(), WebOptions(host, port))
    await server.start()
    print(f"web on {server.address}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0
