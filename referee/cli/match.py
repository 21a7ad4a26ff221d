"""``referee match``: one match between bots, and its result table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from referee.cli.common import (
    SANDBOX_TIERS,
    Subparsers,
    UsageError,
    add_bot_uids,
    add_grant_flags,
    add_log_level,
    add_preflight_flag,
    announce_reads,
    check_reads,
    grants_from_flags,
    preflight,
    print_aborted,
    run_until_done,
    sandbox_for,
    u64,
)
from referee.rules import PRESETS, RuleError, preset


def add_parsers(sub: Subparsers) -> None:
    """Add this module's command to the ``referee`` parser."""
    parser = sub.add_parser(
        "match",
        help="play one match between bots and print the result",
        description="Start the bots of the given bot files (one per seat, in seat order), "
        "play one match between them, print each seat's place, total and strikes, and write "
        "the match record (replay it with `referee replay`). Exit status 1 when fewer than "
        "two bots connected and the match was not played; 2 when a bot does not start.",
    )
    parser.add_argument(
        "--bot",
        action="append",
        required=True,
        metavar="FILE",
        help="a bot file (TOML); once per seat, in seat order",
    )
    parser.add_argument(
        "--rules", default="sticheln", help=f"preset: {', '.join(PRESETS)} (default sticheln)"
    )
    parser.add_argument(
        "--seed", type=u64, default=None, help="match seed, 0..2**64-1 (default: random)"
    )
    parser.add_argument(
        "--bot-seeds",
        metavar="N,N,...",
        help="every seat's MatchStart.bot_seed, in seat order (as in a record's end line, to "
        "replay a match; default: random)",
    )
    parser.add_argument(
        "--out", default="results", help="folder for match records and bot logs (default results)"
    )
    parser.add_argument(
        "--decision-ms", type=int, default=1000, help="per-decision time limit (default 1000)"
    )
    parser.add_argument(
        "--time-bank-ms", type=int, default=0, help="match time bank per seat (default 0: none)"
    )
    parser.add_argument(
        "--startup-ms", type=int, default=10_000, help="time a bot has to connect (default 10000)"
    )
    parser.add_argument(
        "--strikes", type=int, default=3, help="faults before a seat forfeits (default 3)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to serve bots on (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="start the bots without a sandbox, as this user and with the network (trusted "
        "bots only)",
    )
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_TIERS,
        default="bubblewrap",
        help="the sandbox tier: bubblewrap (default), gvisor (an application kernel per "
        "bot; runsc, a root referee) or strongest (gvisor where it runs, else bubblewrap)",
    )
    add_bot_uids(parser)
    add_grant_flags(parser)
    add_preflight_flag(parser)
    parser.add_argument("--tls-cert", help="serve TLS with this certificate (PEM)")
    parser.add_argument("--tls-key", help="the certificate's private key (PEM)")
    add_log_level(parser, "warning")
    parser.set_defaults(func=match)


def match(args: argparse.Namespace) -> int:
    """Play one match between bots declared in TOML files and print the result table."""
    from referee.config.bots import load_bot
    from referee.jail.bots import BotConfigError
    from referee.match.runner import Clock, MatchRunner
    from referee.match.server import RefereeServer, TlsConfig
    from referee.runtime import logs

    logs.configure(args.log_level)
    grants, granted = grants_from_flags(args)
    try:
        bots = [load_bot(p, grants) for p in args.bot]
        rules = preset(args.rules)
        rules.check_players(len(bots))
        clock = Clock(
            decision_ms=args.decision_ms, time_bank_ms=args.time_bank_ms, startup_ms=args.startup_ms
        )
        bot_seeds = bot_seeds_of(args.bot_seeds, len(bots)) if args.bot_seeds else ()
    except (BotConfigError, RuleError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    check_reads(bots, granted, Path(args.out), not args.no_sandbox)
    tls = TlsConfig(Path(args.tls_cert), Path(args.tls_key)) if args.tls_cert else None
    sandbox = sandbox_for("none" if args.no_sandbox else args.sandbox, bots, bot_uids=args.bot_uids)

    async def run() -> int:
        # The start check runs on a server of its own, before the match's server answers
        # its health checks: whatever waits for it to be healthy (an external bot, a
        # container's dependency) then finds its seat open.
        await preflight(
            args, bots, sandbox, clock.startup_ms, Path(args.out) / "logs", host=args.host, tls=tls
        )
        announce_reads(sandbox, bots)
        server = RefereeServer(sandbox=sandbox)
        await server.start(args.host, args.port, tls)
        try:
            for bot in bots:
                if bot.external:
                    print(
                        f"waiting for external bot {bot.name!r} on {server.address} (its "
                        f"token from {bot.source})",
                        file=sys.stderr,
                    )
            runner = MatchRunner(
                server,
                bots,
                rules,
                seed=args.seed,
                clock=clock,
                strike_limit=args.strikes,
                out_dir=Path(args.out),
                bot_seeds=bot_seeds,
            )
            result = await runner.run()
        finally:
            await server.stop(0.5)
        if result.aborted:
            return print_aborted(result)
        print(
            f"match {result.match_id}  rules {rules.preset}  seed {result.seed}  {result.duration_s:.1f} s"
        )
        print(f"{'place':>5}  {'seat':>4}  {'bot':<16} {'total':>6}  {'strikes':>7}")
        for s in sorted(result.seats, key=lambda s: (s.place, s.seat)):
            note = "  forfeited" if s.forfeited else ""
            print(f"{s.place:>5}  {s.seat:>4}  {s.bot:<16} {s.total:>+6}  {s.strikes:>7}{note}")
        print(f"record: {result.record_path}")
        return 0

    return run_until_done(run(), "interrupted: match abandoned, bots stopped")


def bot_seeds_of(text: str, seats: int) -> tuple[int, ...]:
    """``--bot-seeds``: one u64 per seat, comma-separated; a one-line error otherwise."""
    words = [w.strip() for w in text.split(",")]
    if len(words) != seats:
        raise ValueError(f"--bot-seeds: {len(words)} seeds for {seats} seats; give one per seat")
    try:
        seeds = tuple(int(w) for w in words)
    except ValueError:
        raise ValueError(f"--bot-seeds: {text!r} is not a list of numbers") from None
    if not all(0 <= s < 1 << 64 for s in seeds):
        raise ValueError(f"--bot-seeds: {text!r}: allowed: 0 to 2**64-1 each")
    return seeds
