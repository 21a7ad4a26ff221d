"""``referee league season end|cancel|list``: end a league's season (its final starts),
cancel the final being played, read the seasons and their finals."""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable
from typing import Any

from referee.cli.common import UsageError


def add_parser(league_action: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Add ``season`` to ``referee league``."""
    ssn = league_action(
        "season",
        "end the current season: freeze each entry's playing submission and play a final of "
        "them ($STICHELN_ADMIN_TOKEN); cancel the final being played (the same token); or "
        "list the seasons and their finals",
    )
    ssn.add_argument(
        "what",
        choices=("end", "cancel", "list"),
        help="end the season, cancel the final being played, or list the seasons",
    )
    ssn.add_argument(
        "--deals",
        type=int,
        default=0,
        help="end: deals per table of the final, each played once per seat rotation (default 2)",
    )
    ssn.add_argument(
        "--max-matches",
        type=int,
        default=0,
        help="end: at most this many matches in the final, the tables sampled (default 0: "
        "every table)",
    )
    ssn.add_argument(
        "--parallel",
        type=int,
        default=0,
        help="end: matches of the final played at once (default: the league's parallel)",
    )
    ssn.add_argument(
        "--json", action="store_true", help="list: one JSON object per line per ended season"
    )


def season(args: argparse.Namespace, stub: Any) -> int:
    """Call EndSeason or Seasons; print the outcome (grpc errors are the caller's)."""
    from sticheln.v1 import league_pb2

    if args.what in ("end", "cancel"):
        token = os.environ.get("STICHELN_ADMIN_TOKEN", "")
        if not token:
            raise UsageError("set STICHELN_ADMIN_TOKEN to the league's admin token")
    if args.what == "cancel":
        s = stub.CancelFinal(
            league_pb2.CancelFinalRequest(),
            metadata=[("authorization", f"Bearer {token}")],
            timeout=max(args.timeout, 60.0),
        )
        print(
            f"final {s.final} of season {s.number} cancelled: {s.finished} of {s.planned} "
            "matches had finished and are kept; the others are not played"
        )
        print(f"deal key {s.deal_key} (commitment {s.deal_key_commitment})")
        print(f"the ladder plays on in season {s.number + 1}; end it when you like")
        return 0
    if args.what == "end":
        for flag, value, least, most in (
            ("--deals", args.deals, 0, 100),
            ("--max-matches", args.max_matches, 0, 10**9),
            ("--parallel", args.parallel, 0, 64),
        ):
            if not least <= value <= most:
                raise UsageError(f"{flag}: {value} is not allowed; allowed: {least} to {most}")
        s = stub.EndSeason(
            league_pb2.EndSeasonRequest(
                deals=args.deals, max_matches=args.max_matches, parallel=args.parallel
            ),
            metadata=[("authorization", f"Bearer {token}")],
            timeout=max(args.timeout, 60.0),
        )
        print(f"season {s.number} ended; season {s.number + 1} has begun")
        print(
            f"final {s.final}: {len(s.finalists)} finalists, {s.planned} matches "
            f"({s.deals} deals per table of {s.table_size}, duplicate)"
        )
        for f in s.finalists:
            print(f"  {f.bot:24} submission {f.submission:<4} sha256 {f.sha256}")
        print(
            f"deal key commitment: {s.deal_key_commitment} (the key is published when the "
            "final has ended)"
        )
        return 0
    got = stub.Seasons(league_pb2.SeasonsRequest(), timeout=args.timeout)
    if args.json:
        for s in got.seasons:
            print(json.dumps(season_json(s)))
        return 0
    print(f"season {got.current} (the ladder) since {_when(got.current_since)}")
    for s in got.seasons:
        print_season(s)
    return 0


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t)) if t else "-"


def _finite(x: float) -> float | None:
    return None if math.isnan(x) or math.isinf(x) else round(x, 1)


def season_json(s: Any) -> dict[str, Any]:
    """A ``Season`` message as ``referee league season list --json`` prints it."""
    return {
        "season": s.number,
        "status": s.status,
        "started_at": s.started_at,
        "ended_at": s.ended_at,
        "final": s.final,
        "deals": s.deals,
        "table_size": s.table_size,
        "planned": s.planned,
        "finished": s.finished,
        "finished_at": s.finished_at or None,
        "deal_key_commitment": s.deal_key_commitment,
        "deal_key": s.deal_key or None,
        "finalists": [
            {"bot": f.bot, "submission": f.submission, "sha256": f.sha256} for f in s.finalists
        ],
        "standings": [
            {
                "bot": x.bot,
                "rating": _finite(x.rating),
                "interval": None
                if math.isnan(x.ci_low)
                else [_finite(x.ci_low), _finite(x.ci_high)],
                "matches": x.matches,
                "mean_place": _finite(x.mean_place),
                "mean_score": _finite(x.mean_score),
            }
            for x in s.standings.standings
        ],
        "matches": [m.match_id for m in s.matches],
    }


def print_season(s: Any) -> None:
    """One ended season: its final's state, finalists and standings."""
    print()
    if s.status == "finished":
        state = f"final {s.final} ended {_when(s.finished_at)}"
    elif s.status == "cancelled":
        state = (
            f"final {s.final} cancelled {_when(s.finished_at)} after {s.finished} of "
            f"{s.planned} matches (no standings)"
        )
    else:
        state = f"final {s.final} being played: {s.finished} of {s.planned} matches"
    print(f"season {s.number}: {_when(s.started_at)} to {_when(s.ended_at)}; {state}")
    print(
        f"deal key commitment {s.deal_key_commitment}"
        + (f", key {s.deal_key}" if s.deal_key else "")
    )
    submission = {f.bot: f.submission for f in s.finalists}
    if not s.standings.standings:
        for f in s.finalists:
            print(f"   {f.bot:24} submission {f.submission}")
        return
    print(
        f"{'#':>3} {'bot':24} {'sub':>4} {'rating':>7} {'95% interval':>15} {'matches':>7} {'place':>6}"
    )
    for rank, x in enumerate(s.standings.standings, 1):
        ci = "-" if math.isnan(x.ci_low) else f"{x.ci_low:.0f} to {x.ci_high:.0f}"
        print(
            f"{rank:>3} {x.bot:24} {submission.get(x.bot, 0):>4} {x.rating:>7.0f} {ci:>15} "
            f"{x.matches:>7} {x.mean_place:>6.2f}"
        )
