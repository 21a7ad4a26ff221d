"""``referee fairplay``: the fair-play test over a tournament's records or a league's
database (docs/fairplay.md)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.cli.common import Subparsers, UsageError

if TYPE_CHECKING:
    from referee.fairplay import Fit, MatchDecisions, Options


def add_parsers(sub: Subparsers) -> None:
    """Add this module's command to the ``referee`` parser."""
    fp = sub.add_parser(
        "fairplay",
        help="ask of every bot whether its choices fit cards its seat could not see",
        description="The fair-play test (docs/fairplay.md): for every decision in the "
        "records, how much better the bot's choice fits the hidden cards than its seat's "
        "view explains, and per pair of bots how much each one's choices fit the other's "
        "interest. Prints one line per bot (and per pair that shared enough rounds) and "
        "writes fairplay.json into FOLDER (or the current folder for --database). A flag "
        "is a question for the organiser to look into, not a verdict.",
    )
    fp.add_argument(
        "folder",
        nargs="?",
        default="",
        help="a tournament's folder (its matches/ records), or a folder of records",
    )
    fp.add_argument(
        "--database",
        default="",
        help="a league's or tournament's database instead: a SQLite file, sqlite:///path "
        "or postgresql:// URL",
    )
    fp.add_argument(
        "--league",
        default="",
        help="with --database: the league or tournament (default: the only one)",
    )
    fp.add_argument(
        "--bot",
        action="append",
        default=[],
        metavar="NAME",
        help="judge only this bot (and its pairs); repeat for several",
    )
    fp.add_argument(
        "--deals", type=int, default=None, help="deals sampled per decision (default 8)"
    )
    fp.add_argument(
        "--candidates",
        type=int,
        default=None,
        help="candidate actions valued per decision, the chosen one included (default 6)",
    )
    fp.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="false-alarm bound of a flag, per bot and per pair (default 0.01)",
    )
    fp.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="processes evaluating matches side by side (default: up to 2)",
    )
    fp.add_argument(
        "--out",
        default="",
        help="where to write fairplay.json (default: FOLDER, or the current folder)",
    )
    fp.set_defaults(func=fairplay)


def fairplay(args: argparse.Namespace) -> int:
    """Run the test over the records and print the table."""
    from referee.fairplay import FairPlay, Options, Settings

    if bool(args.folder) == bool(args.database):
        raise UsageError("give a tournament FOLDER or --database URL (one of them)")
    settings = Settings()
    for name, least in (("deals", 1), ("candidates", 2)):
        value = getattr(args, name)
        if value is not None:
            if value < least:
                raise UsageError(f"--{name}: {value} is not allowed; allowed: {least} or more")
            settings = dataclasses.replace(settings, **{name: value})
    options = Options(settings=settings)
    if args.alpha is not None:
        if not 0 < args.alpha < 1:
            raise UsageError(f"--alpha: {args.alpha} is not allowed; allowed: between 0 and 1")
        options = Options(settings=settings, alpha=args.alpha)
    if args.jobs < 1:
        raise UsageError(f"--jobs: {args.jobs} is not allowed; allowed: 1 or more")
    if args.folder:
        paths = _folder_records(Path(args.folder))
        out = Path(args.out or args.folder)
    else:
        paths = _database_records(args.database, args.league)
        out = Path(args.out or ".")
    fp = FairPlay(options)
    for count, (match, fits) in enumerate(_evaluated(paths, options, args.bot, args.jobs), 1):
        fp.add_fits(match, fits)
        if sys.stderr.isatty():
            print(f"\r{count}/{len(paths)} matches", end="", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    doc = fp.document()
    if args.bot:
        doc["bots"] = [b for b in doc["bots"] if b["name"] in args.bot]
        doc["pairs"] = [p for p in doc["pairs"] if set(p["bots"]) & set(args.bot)]
        unknown = [b for b in args.bot if b not in fp.bots]
        if unknown:
            print(f"referee fairplay: no decisions of {', '.join(unknown)}", file=sys.stderr)
    print(table(doc))
    out.mkdir(parents=True, exist_ok=True)
    (out / "fairplay.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"written: {out / 'fairplay.json'}")
    return 0


def table(doc: dict[str, Any]) -> str:
    """The bots' lines (and the pairs'), as ``referee fairplay`` prints them."""
    lines = [
        f"fair play over {doc['matches']} matches: excess = points per decision by which the "
        "choice fits the true deal better than deals the seat could not tell from it "
        "(0 for an honest bot)",
        f"{'bot':<24} {'decisions':>9} {'statistic':>9} {'95% interval':>17} {'p-value':>8}  flag",
    ]
    for b in doc["bots"]:
        lines.append(_line(b["name"], b))
    if doc["pairs"]:
        lines.append("")
        lines.append(
            "pairs (each one's choices valued for the two as a team; rounds shared: "
            f"at least {doc['test']['pair_min_rounds']})"
        )
        for p in doc["pairs"]:
            lines.append(_line(" + ".join(p["bots"]), p))
    flagged = [b["name"] for b in doc["bots"] if b["flagged"]]
    flagged += [" + ".join(p["bots"]) for p in doc["pairs"] if p["flagged"]]
    lines.append("")
    if flagged:
        lines.append(
            f"flagged: {', '.join(flagged)}: their choices fit cards they could not see more "
            f"often than chance allows (p < {doc['test']['alpha']}). A question for the "
            "organiser to look into (the decisions that weigh most are in fairplay.json), "
            "not a verdict."
        )
    else:
        lines.append("no bot or pair flagged")
    return "\n".join(lines)


def _line(name: str, b: dict[str, Any]) -> str:
    low, high = b["interval"]
    interval = "-" if low is None else f"[{low:+.2f}, {high:+.2f}]"
    stat = "-" if b["statistic"] is None else f"{b['statistic']:+.3f}"
    p = b["p_value"]
    flag = "FLAGGED: ask" if b["flagged"] else "-"
    return f"{name:<24} {b['decisions']:>9} {stat:>9} {interval:>17} {p:>8.3g}  {flag}"


def _folder_records(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder")
    where = folder / "matches" if (folder / "matches").is_dir() else folder
    paths = sorted(where.glob("*.jsonl"))
    if not paths:
        raise UsageError(f"{folder}: no match records (*.jsonl) in it or in its matches/")
    return paths


def _database_records(target: str, name: str) -> list[Path]:
    from referee.results.store import StoreError, open_store

    try:
        store = open_store(target)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        names = [r[0] for r in store.execute("SELECT name FROM tournaments ORDER BY name")]
        if not name:
            if len(names) != 1:
                raise UsageError(
                    f"give --league NAME; the database holds {len(names)}"
                    + (f": {', '.join(names)}" if names else "")
                )
            name = names[0]
        elif name not in names:
            raise UsageError(f"--league: no league or tournament {name!r} in the database")
        rows = store.match_rows(name)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    finally:
        store.close()
    paths = [Path(r["record_path"]) for r in rows if r["status"] == "finished" and r["record_path"]]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print(
            f"referee fairplay: {len(missing)} finished matches have no record file here "
            f"(the first: {missing[0]}); judged without them",
            file=sys.stderr,
        )
    paths = [p for p in paths if p.is_file()]
    if not paths:
        raise UsageError(f"{name}: no finished match with a record to judge")
    return paths


def _evaluate(job: tuple[Path, Options, tuple[str, ...]]) -> tuple[MatchDecisions, list[Fit]] | str:
    """One match's decisions and their fits, or why it was skipped (in a worker process)."""
    from referee.fairplay import Evaluator, MatchDecisions, RecordSkipped, read_decisions
    from referee.match.record import ReplayError

    path, options, only = job
    try:
        match = read_decisions(path)
    except RecordSkipped:
        return ""
    except (ReplayError, OSError) as exc:
        return f"{path}: {exc}"
    evaluator = Evaluator(options.settings)
    wanted = set(only)
    fits = [
        evaluator.fit(d)
        for d in match.decisions
        if not wanted
        or d.bot in wanted
        or any(match.seating[t] in wanted for t in range(len(match.seating)))
    ]
    # Only the seating goes back: the decisions' states stay in this process.
    return MatchDecisions(match.match_id, match.seating, ()), fits


def _evaluated(
    paths: Sequence[Path], options: Options, only: Sequence[str], jobs: int
) -> Iterator[tuple[MatchDecisions, list[Fit]]]:
    """Each finished match's fits, in the order of ``paths`` (skipping the others)."""
    work = [(p, options, tuple(only)) for p in paths]
    if jobs == 1 or len(work) < 2:
        results: Iterator[Any] = map(_evaluate, work)
        yield from _kept(results)
        return
    # Here, not at the top: multiprocessing costs every other command's start.
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from _kept(pool.map(_evaluate, work, chunksize=1))


def _kept(results: Iterator[Any]) -> Iterator[tuple[MatchDecisions, list[Fit]]]:
    for r in results:
        if isinstance(r, str):
            if r:
                print(f"referee fairplay: skipped {r}", file=sys.stderr)
            continue
        yield r
