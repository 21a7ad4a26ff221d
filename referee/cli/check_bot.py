"""``referee check-bot``: a bot author's own conformance test."""

from __future__ import annotations

import argparse
import secrets
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
    check_reads,
    grants_from_flags,
    preflight,
    run_until_done,
    sandbox_for,
    u64,
)


def add_parsers(sub: Subparsers) -> None:
    """Add this module's command to the ``referee`` parser."""
    chk = sub.add_parser(
        "check-bot",
        help="play a bot through scripted scenarios and report every non-conforming answer",
        description="Play a bot through scripted scenarios (every preset, 3 and 8 players, "
        "secret pain suits, two pain cards, a pain card kept in the hand, a short clock) "
        "against the referee's house bots; report each non-conforming answer with what the "
        "bot sent and what was expected. Exit status 1 when any scenario fails. Then play "
        "one match twice with the same deal and MatchStart.bot_seed and say whether the bot "
        "played the same cards (information only).",
    )
    chk.add_argument(
        "bot_command",
        nargs=argparse.REMAINDER,
        metavar="command",
        help="after --: the command that starts the bot",
    )
    chk.add_argument("--bot", metavar="FILE", help="a bot file (TOML) instead of a command")
    chk.add_argument(
        "--connect",
        action="store_true",
        help="the bot dials in by itself: print the address and the token to use",
    )
    chk.add_argument("--token", default="", help="with --connect: the token (default: random)")
    chk.add_argument("--name", default="candidate", help="the bot's name in the seating")
    chk.add_argument(
        "--scenario", action="append", metavar="NAME", help="play only this scenario (repeatable)"
    )
    chk.add_argument("--list", action="store_true", help="list the scenarios and exit")
    chk.add_argument("--rounds", type=int, default=2, help="rounds per scenario (default 2)")
    chk.add_argument("--seed", type=u64, default=1, help="seed of the first scenario (default 1)")
    chk.add_argument(
        "--strikes", type=int, default=3, help="faults before the seat forfeits (default 3)"
    )
    chk.add_argument(
        "--startup-ms",
        type=int,
        default=0,
        help="time the bot has to connect (default 10000; 60000 with --connect)",
    )
    chk.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="scenario families played side by side (default 1; the short-clock and "
        "many-stream scenarios are always played alone; not with --connect)",
    )
    chk.add_argument(
        "--out",
        help="keep match records and bot logs here (default: a temporary folder, kept only "
        "when a scenario failed)",
    )
    chk.add_argument(
        "--host", default="127.0.0.1", help="address to serve bots on (default 127.0.0.1)"
    )
    chk.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    chk.add_argument(
        "--no-sandbox",
        action="store_true",
        help="start the bot without a sandbox, as this user and with the network",
    )
    chk.add_argument(
        "--sandbox",
        choices=SANDBOX_TIERS,
        default="bubblewrap",
        help="the sandbox tier: bubblewrap (default), gvisor (an application kernel per "
        "bot, as a league's hosted bots run; runsc, a root referee) or strongest",
    )
    add_bot_uids(chk)
    add_grant_flags(chk)
    add_preflight_flag(chk)
    add_log_level(chk, "error")
    chk.set_defaults(func=check_bot)


def check_bot(args: argparse.Namespace) -> int:
    """Play one bot through the scripted scenarios; print PASS/FAIL per scenario."""
    import shutil
    import tempfile

    from referee.config.bots import load_bot
    from referee.jail.bots import BotConfigError, BotSpec
    from referee.match.checkbot import SEATS_SCENARIO, Outcome, check_bot, scenarios
    from referee.match.runner import Clock
    from referee.match.sameseed import SAME_SEED, scenario_note
    from referee.runtime import logs

    logs.configure(args.log_level)
    if type(args.rounds) is not int or args.rounds < 1:
        raise UsageError(f"--rounds: {args.rounds} is not allowed; allowed: 1 or more")
    if args.strikes < 1:
        raise UsageError(f"--strikes: {args.strikes} is not allowed; allowed: 1 or more")
    if args.startup_ms < 0:
        raise UsageError(f"--startup-ms: {args.startup_ms} is not allowed; allowed: 1 or more")
    if args.jobs < 1:
        raise UsageError(f"--jobs: {args.jobs} is not allowed; allowed: 1 or more")
    if args.jobs > 1 and args.connect:
        raise UsageError("--jobs: a bot that dials in plays one scenario at a time; drop --jobs")
    if args.list:
        for s in scenarios(rounds=args.rounds, seats=2):
            note = " (for a bot file that declares seats)" if s.name == SEATS_SCENARIO else ""
            print(f"{s.name:<28} {s.about}{note}")
        print(scenario_note())
        return 0
    command = args.bot_command[1:] if args.bot_command[:1] == ["--"] else args.bot_command
    ways = sum((bool(command), bool(args.bot), args.connect))
    if ways != 1:
        raise UsageError("give exactly one of: -- COMMAND..., --bot FILE, --connect")
    token = ""
    grants, granted = grants_from_flags(args)
    try:
        if args.bot:
            bot = load_bot(args.bot, grants)
            if bot.external:
                raise UsageError(f"{args.bot}: the bot has no command; use --connect for it")
        elif args.connect:
            token = args.token or secrets.token_urlsafe(24)
            bot = BotSpec(name=args.name, token=token, source="--connect")
        else:
            bot = BotSpec(
                name=args.name,
                command=tuple(command),
                workdir=Path.cwd(),
                read=grants.read,
                source="--",
            )
    except BotConfigError as exc:
        raise UsageError(str(exc)) from None
    all_scenarios = scenarios(rounds=args.rounds, seats=bot.seats)
    names = [s.name for s in all_scenarios]
    unknown = [n for n in args.scenario or () if n not in (*names, SAME_SEED)]
    if unknown == [SEATS_SCENARIO]:
        raise UsageError(
            f"scenario {SEATS_SCENARIO!r} is for a bot file that declares seats (more than 1)"
        )
    if unknown:
        raise UsageError(
            f"unknown scenario {unknown[0]!r}; allowed: {', '.join((*names, SAME_SEED))}"
        )
    chosen = [s for s in all_scenarios if not args.scenario or s.name in args.scenario]
    probe = not args.scenario or SAME_SEED in args.scenario
    keep = args.out is not None
    out = Path(args.out) if keep else Path(tempfile.mkdtemp(prefix="check-bot-"))
    try:
        check_reads([bot], granted, out, not args.no_sandbox)
        sandbox = sandbox_for(
            "none" if args.no_sandbox else args.sandbox, [bot], bot_uids=args.bot_uids
        )
    except UsageError:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
        raise

    def ready(address: str) -> None:
        if args.connect:
            print(
                f"connect the bot to {address} with token {token}: one Referee.Play stream "
                f"per match ({len(chosen) + 2 * probe}), a new one after each stream ends "
                "with OK",
                file=sys.stderr,
                flush=True,
            )

    def show(outcome: Outcome) -> None:
        print("\n".join(outcome.lines()), flush=True)

    async def run() -> int:
        await preflight(
            args,
            [bot],
            sandbox,
            args.startup_ms or Clock().startup_ms,
            out / "logs",
            host=args.host,
        )
        outcomes = await check_bot(
            bot,
            chosen,
            seed=args.seed,
            out_dir=out,
            host=args.host,
            port=args.port,
            strike_limit=args.strikes,
            startup_ms=args.startup_ms or (60_000 if args.connect else None),
            on_ready=ready,
            on_outcome=show,
            sandbox=sandbox,
            same_seed=(lambda line: print(line, flush=True)) if probe else None,
            # Scenarios named on the command line are all played.
            skip_after_timeout=not args.scenario,
            jobs=args.jobs,
        )
        failed = [o.scenario.name for o in outcomes if not o.passed and not o.skipped]
        skipped = [o.scenario.name for o in outcomes if o.skipped]
        if failed:
            text = f"{len(failed)} of {len(outcomes)} scenarios FAILED: {', '.join(failed)}"
            if skipped:
                text += f"; {len(skipped)} not played after a timeout: {', '.join(skipped)}"
            print(text)
            print(f"match records and bot logs: {out}")
            return 1
        if outcomes:
            print(f"all {len(outcomes)} scenarios passed")
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
        return 0

    if keep:
        return run_until_done(run(), f"interrupted: bot stopped; records and logs in {out}")
    # An interrupted check leaves nothing behind in the temporary folder; --out keeps it.
    status = run_until_done(
        run(), "interrupted: bot stopped; nothing kept (--out FOLDER keeps the records and logs)"
    )
    if status == 130:
        shutil.rmtree(out, ignore_errors=True)
    return status
