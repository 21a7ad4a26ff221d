"""``referee compare``: is a new version better? Paired duplicate matches with a sequential test."""

from __future__ import annotations

import argparse
import sys

from referee.cli.common import (
    SANDBOX_TIERS,
    Subparsers,
    UsageError,
    add_bot_uids,
    add_log_level,
    add_preflight_flag,
    add_web_flags,
    announce_reads,
    preflight,
    run_until_done,
    sandbox_for,
    u64,
)
from referee.rules import PRESETS


def add_parsers(sub: Subparsers) -> None:
    """Add this module's command to the ``referee`` parser."""
    cmp = sub.add_parser(
        "compare",
        help="is a new version better? paired duplicate matches against a baseline, "
        "with a sequential test",
        description="Play each deal twice, once with the candidate and once with the "
        "baseline in the same seat against the same opponents, until a sequential test on "
        "the mean score difference decides (docs/compare.md). Settings come from FILE's "
        "[compare] table, the flags, or both (a flag wins). Exit status: 0 the candidate is "
        "better (H1 accepted), 1 it is not (H0 accepted), 2 undecided at the match cap, 3 "
        "settings refused, 130 interrupted (run the same command again to resume).",
    )
    cmp.add_argument("file", nargs="?", help="a comparison file, e.g. examples/compare.toml")
    add_bot_uids(cmp)
    cmp.add_argument("--candidate", metavar="FILE", help="the new version's bot file")
    cmp.add_argument("--baseline", metavar="FILE", help="the old version's bot file")
    cmp.add_argument(
        "--opponent",
        action="append",
        metavar="FILE",
        help="an opponent's bot file (repeat; each deal draws its opponents from these)",
    )
    cmp.add_argument("--rules", help=f"preset: {', '.join(PRESETS)} (default sticheln)")
    cmp.add_argument(
        "--table-size", type=int, help="seats per match (default: 1 + opponents, within the rules)"
    )
    cmp.add_argument(
        "--sprt",
        nargs="+",
        metavar="KEY=VALUE",
        help="the sequential test: lower=0 upper=5 alpha=0.05 beta=0.05 min_pairs=20 "
        "(points per match; these are the defaults), or off for a fixed-size comparison",
    )
    cmp.add_argument(
        "--matches",
        type=int,
        help="the most matches, two per deal pair (default 2000); alone, without --sprt, "
        "exactly this many (a fixed-size comparison)",
    )
    cmp.add_argument("--parallel", type=int, help="matches at once (default: the machine's cores)")
    cmp.add_argument(
        "--independent-seeds",
        dest="common_seeds",
        action="store_const",
        const=False,
        help="hand the baseline's match bot seeds of its own instead of the candidate's "
        "(without common random numbers: to measure what they save)",
    )
    cmp.add_argument("--seed", type=u64, help="draws the opponents of each deal (default 1)")
    cmp.add_argument("--name", help="the comparison's name (default compare)")
    cmp.add_argument(
        "--out",
        help="folder for the store, the report and the match records (default results/NAME)",
    )
    cmp.add_argument("--decision-ms", type=int, help="per-decision time limit (default 1000)")
    cmp.add_argument("--time-bank-ms", type=int, help="match time bank per seat (default 0)")
    cmp.add_argument("--startup-ms", type=int, help="time a bot has to connect (default 10000)")
    add_web_flags(cmp, "the comparison's page (verdict, test, pairs side by side)")
    add_log_level(
        cmp,
        None,
        said="default: warning, as text, with the progress (a line that updates on a "
        "terminal, a line per pair elsewhere); given, off a terminal the log is JSON lines, "
        "the progress among them",
    )
    cmp.add_argument(
        "--read",
        action="append",
        metavar="PATH",
        help="let every started bot read PATH (read-only), and its bot file name paths in "
        "it (repeatable; added to the file's [sandbox] read; never /proc, /sys, /dev, /run "
        "or the output folder)",
    )
    cmp.add_argument(
        "--sandbox",
        choices=SANDBOX_TIERS,
        help="the sandbox tier, in place of the file's [sandbox] mode (default bubblewrap; "
        "strongest: gvisor where runsc runs, a root referee, else bubblewrap)",
    )
    add_preflight_flag(cmp)
    cmp.set_defaults(func=compare)


def compare(args: argparse.Namespace) -> int:
    """Compare a candidate bot with a baseline on paired deals until the test decides.

    Exit status 0: the candidate is better (H1), 1: it is not (H0), 2: undecided at the
    match cap, 3: the settings were refused, 130: interrupted (resume with the same command).
    """
    import json

    from referee.compare.config import CompareConfigError, Overrides, load_compare
    from referee.compare.run import (
        CompareRefused,
        Verdict,
        progress_line,
        progress_record,
        run_compare,
    )
    from referee.runtime import logs

    # As referee tournament: at the default level a piped run prints what a terminal
    # shows (the progress a line per pair, warnings as text); JSON lines, the progress
    # among them, come with an explicit --log-level off a terminal.
    tty = sys.stderr.isatty()
    plain = not tty and args.log_level is None
    level = args.log_level or "warning"
    logs.configure(level, json=False if plain else None)
    flags = Overrides(
        name=args.name,
        candidate=args.candidate,
        baseline=args.baseline,
        opponents=args.opponent,
        rules=args.rules,
        table_size=args.table_size,
        seed=args.seed,
        matches=args.matches,
        parallel=args.parallel,
        common_seeds=args.common_seeds,
        out=args.out,
        sprt=args.sprt,
        decision_ms=args.decision_ms,
        time_bank_ms=args.time_bank_ms,
        startup_ms=args.startup_ms,
        read=args.read,
        sandbox=args.sandbox,
    )
    try:
        config = load_compare(args.file, flags)
    except CompareConfigError as exc:
        return _refused(str(exc))
    if args.web_port is not None and not 0 <= args.web_port <= 65535:
        return _refused(f"--web-port {args.web_port} is not allowed; allowed: 0 to 65535")

    def show(verdict: Verdict, matches: int) -> None:
        if tty:
            end = "\n" if verdict.finished else ""
            sys.stderr.write(f"\r\x1b[K{progress_line(config, verdict, matches)}{end}")
        elif plain:
            sys.stderr.write(progress_line(config, verdict, matches) + "\n")
        else:
            sys.stderr.write(json.dumps(progress_record(config, verdict, matches)) + "\n")
        sys.stderr.flush()

    async def run() -> int:
        def notice(text: str) -> None:
            # On its own lines, above the live line.
            sys.stderr.write(("\r\x1b[K" if tty else "") + text + "\n")
            sys.stderr.flush()

        bots = [config.candidate, config.baseline, *config.opponents]
        try:
            # --bot-uids reaches every sandbox of the run through the environment.
            sandbox = sandbox_for(config.sandbox, bots, say=False, bot_uids=args.bot_uids)
            await preflight(args, bots, sandbox, config.clock.startup_ms, config.out / "logs")
            announce_reads(sandbox, bots, notice)
        except UsageError as exc:  # refused before any match: as settings are (status 3)
            return _refused(str(exc))
        web = source = None
        if args.web_port is not None:
            from prometheus_client import CollectorRegistry

            from referee.web import WebOptions, WebServer
            from referee.web.compare import LiveCompareSource

            source = LiveCompareSource(config)
            web = WebServer(source, CollectorRegistry(), WebOptions(args.web_host, args.web_port))
            try:
                await web.start()
            except OSError as exc:
                raise CompareRefused(
                    f"--web-port: cannot serve on {args.web_host}:{args.web_port}: {exc}"
                ) from None
            notice(f"web on {web.address}")
        try:
            outcome = await run_compare(config, on_progress=show, on_notice=notice, log_level=level)
        finally:
            if web is not None:
                await web.stop()
        print(outcome.text, flush=True)
        print(f"report, pairs and match records in {config.out}", flush=True)
        return outcome.exit_status

    try:
        return run_until_done(
            run(), "interrupted: finished matches are kept; run the same command again to resume"
        )
    except CompareRefused as exc:
        return _refused(str(exc))


def _refused(text: str) -> int:
    """Print why the comparison was refused, each line with the command's name once (a
    message about the flags alone names the command already); exit status 3."""
    for line in text.splitlines():
        print(f"referee compare: {line.removeprefix('referee compare: ')}", file=sys.stderr)
    return 3
