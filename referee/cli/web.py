"""``referee web``: browse a finished tournament's output folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from referee.cli.common import (
    Subparsers,
    UsageError,
)


def add_parsers(sub: Subparsers) -> None:
    """Add this module's command to the ``referee`` parser."""
    wb = sub.add_parser(
        "web",
        help="browse a finished tournament's output folder in a web browser",
        description="Serve a finished tournament's output folder (its standings, bots, "
        "head-to-head matrix and every match, trick by trick) as web pages and a read-only "
        "JSON API until Ctrl-C or SIGTERM (docs/web.md).",
    )
    wb.add_argument(
        "folder",
        help="the tournament's output folder (its `out`, with matches/), or a comparison's "
        "(`referee compare --out`): its verdict, test and pairs side by side",
    )
    wb.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    wb.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: any free port)")
    wb.set_defaults(func=web)


def web(args: argparse.Namespace) -> int:
    """Serve a finished tournament's folder as web pages until SIGTERM or Ctrl-C."""
    from referee.runtime import eventloop, logs
    from referee.web import NotFound, serve_folder

    logs.configure("warning")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not allowed; allowed: 0 to 65535")
    try:
        return eventloop.run(serve_folder(Path(args.folder), args.host, args.port))
    except NotFound as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot serve on {args.host}:{args.port}: {exc}") from None
