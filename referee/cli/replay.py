"""``referee replay``: re-check a match record and print it trick by trick."""

from __future__ import annotations

import argparse
import sys

from referee.cli.common import (
    Subparsers,
    UsageError,
)


def add_parsers(sub: Subparsers) -> None:
    """Add this module's command to the ``referee`` parser."""
    rp = sub.add_parser(
        "replay",
        help="re-check a match record and print it trick by trick",
        description="Replay a match record with the rules engine: check every deal, card "
        "and score it holds, and print the match trick by trick. Exit status 1 when the "
        "record does not replay (it says where and why).",
    )
    rp.add_argument("file", help="a match record (.jsonl)")
    rp.set_defaults(func=replay)


def replay(args: argparse.Namespace) -> int:
    """Re-check a match record with the engine and print a trick-by-trick account."""
    from referee.match.record import ReplayError, replay

    try:
        result = replay(args.file)
    except FileNotFoundError:
        raise UsageError(f"{args.file}: no such record file") from None
    except ReplayError as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 1
    print("\n".join(result.lines))
    return 0
