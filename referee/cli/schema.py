"""``referee schema KIND``: a config file type's JSON Schema, for editors."""

from __future__ import annotations

import argparse

from referee.cli.common import Subparsers
from referee.config import KINDS


def add_parsers(sub: Subparsers) -> None:
    """Add this module's command to the ``referee`` parser."""
    parser = sub.add_parser(
        "schema",
        help="print a config file type's JSON Schema (for editors)",
        description="Print the JSON Schema of a config file type (the same as the shipped "
        "referee/config/schemas/*.json): point an editor's TOML support at it for "
        "completion and checking as you type.",
    )
    parser.add_argument("kind", choices=list(KINDS), help="which file: " + ", ".join(KINDS))
    parser.set_defaults(func=schema)


def schema(args: argparse.Namespace) -> int:
    """Print the shipped schema of ``args.kind`` (pydantic is loaded only here)."""
    from referee.config.schema import command

    return command(args)
