"""``referee deal-key`` and ``referee verify``: the secret deal key, and the audit of a finished tournament."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from referee.cli.common import (
    Subparsers,
    UsageError,
)


def add_parsers(sub: Subparsers) -> None:
    """Add this module's commands to the ``referee`` parser."""
    dk = sub.add_parser(
        "deal-key",
        help="print a fresh secret deal key (for shards with SQLite databases)",
        description="Print 64 hex digits of fresh random deal key on stdout (or write them to "
        "--out, mode 0600) and its commitment on stderr. Give the same key to every shard "
        "of one tournament with --deal-key-file or $STICHELN_DEAL_KEY (docs/sharding.md).",
    )
    dk.add_argument("--out", metavar="FILE", help="write the key to FILE (mode 0600)")
    dk.set_defaults(func=deal_key)

    vf = sub.add_parser(
        "verify",
        help="audit a finished tournament's output folder: deals, records, results",
        description="Check a finished tournament's output folder: the revealed deal key "
        "matches its commitment, every record's seed is the key's seed for its deal and "
        "opens its commitment, every record replays with the rules engine, and results.csv "
        "agrees with the records. One line per problem; exit status 1 on any (docs/deal.md).",
    )
    vf.add_argument("dir", help="the tournament's output folder (ratings.json, matches/, ...)")
    vf.add_argument(
        "--commitment",
        metavar="HEX",
        help="the deal-key commitment published when the tournament was created",
    )
    vf.add_argument(
        "--config",
        metavar="FILE",
        help="the tournament file: also check every scheduled match has its record, with "
        "the schedule's seating and deal number",
    )
    vf.set_defaults(func=verify)


def deal_key(args: argparse.Namespace) -> int:
    """Print a fresh deal key (for the shards of a tournament with SQLite databases)."""
    from referee.match.dealkey import DealKey
    from referee.runtime.private import open_private

    key = DealKey.new()
    if args.out:
        try:
            fd = open_private(Path(args.out))
        except OSError as exc:
            raise UsageError(f"--out {args.out}: cannot be written: {exc.strerror}") from None
        with open(fd, "w", encoding="ascii") as f:
            f.write(key.hex() + "\n")
        print(f"deal key written to {args.out} (mode 0600)", file=sys.stderr)
    else:
        print(key.hex(), flush=True)
    print(f"commitment: {key.commitment()}", file=sys.stderr)
    return 0


def verify(args: argparse.Namespace) -> int:
    """Audit a finished tournament's output folder: deals, records, results."""
    from referee.results.verify import verify_tournament

    folder = Path(args.dir)
    if not folder.is_dir():
        raise UsageError(f"{args.dir}: no such folder")
    schedule = None
    if args.config:
        from referee.tournament.config import ConfigError, load_config
        from referee.tournament.run import match_id_of
        from referee.tournament.schedule import make_schedule

        try:
            config = load_config(args.config)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        schedule = {match_id_of(config, m): (m.seating, m.deal) for m in make_schedule(config)}
    audit = verify_tournament(folder, args.commitment or "", schedule)
    for line in audit.problems:
        print(f"{args.dir}/{line}", flush=True)
    if audit.clean:
        print(
            f"verified {args.dir}: deal key matches commitment {audit.commitment}; "
            f"{audit.records} records replay with their deals from the key; "
            f"results.csv agrees ({audit.result_rows} rows)",
            flush=True,
        )
        return 0
    print(
        f"{args.dir}: {len(audit.problems)} problem(s) in {audit.records} records and "
        f"{audit.result_rows} result rows",
        file=sys.stderr,
    )
    return 1
