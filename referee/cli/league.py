"""``referee serve`` and ``referee league``: run a league, and administer a running one."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

from referee.cli.common import (
    Subparsers,
    UsageError,
    add_bot_uids,
    add_log_level,
)


def add_parsers(sub: Subparsers) -> None:
    """Add this module's commands to the ``referee`` parser."""
    srv = sub.add_parser(
        "serve",
        help="run a league: bots join over the network with their tokens and play continuously",
        description="Run a league from its file until SIGTERM or Ctrl-C: registered bots "
        "connect whenever they like with their tokens, the league seats the connected bots in "
        "matches and rates them as it goes, and a League gRPC service on the same port "
        "registers bots and serves standings, match records and live matches (docs/league.md).",
    )
    srv.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help="the league file, e.g. examples/league-service.toml",
    )
    srv.add_argument("--host", default=None, help="address to serve on (overrides the file)")
    srv.add_argument(
        "--port", type=int, default=None, help="port (overrides the file; 0: any free port)"
    )
    add_log_level(srv, "info", who="the league")
    srv.set_defaults(func=serve)

    lg = sub.add_parser(
        "league",
        help="administer a running league: register, version, revoke, bots, standings",
        description="Call a running league's League service. register, version and revoke "
        "need the admin token in $STICHELN_ADMIN_TOKEN; a new token is printed on stdout.",
    )
    lg_sub = lg.add_subparsers(dest="action", required=True)

    def league_action(name: str, help: str) -> argparse.ArgumentParser:
        p = lg_sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")
        p.add_argument(
            "--address", default="127.0.0.1:50051", help="the league (default 127.0.0.1:50051)"
        )
        p.add_argument("--timeout", type=float, default=10.0, help="seconds per call (default 10)")
        p.set_defaults(func=league)
        return p

    reg = league_action("register", "register a bot; prints its token")
    reg.add_argument("name", help="the bot's name")
    reg.add_argument("--owner", default="", help="who runs it")
    reg.add_argument("--description", default="", help="what it is")
    ver = league_action("version", "register a new version of a bot; prints its token")
    ver.add_argument("name", help="the entry the new version succeeds")
    ver.add_argument("--new-name", default="", help="the new entry's name (default NAME@vN)")
    ver.add_argument("--description", default="", help="what changed")
    rev = league_action("revoke", "revoke a bot's token")
    rev.add_argument("name", help="the bot's name")
    bots = league_action("bots", "list the bot entries")
    bots.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per line per entry (name, hosted, status, submission, sha256, "
        "matches, refusal, ...)",
    )
    league_action("standings", "print the published standings")
    sbm = league_action(
        "submit",
        "upload a hosted bot's code (a folder, .tar.gz or .zip) with the entry's token in "
        "$STICHELN_BOT_TOKEN",
    )
    sbm.add_argument("path", help="the bot's folder, or a .tar.gz or .zip of it")
    sbm.add_argument(
        "--bot-file",
        required=True,
        metavar="FILE",
        help="the bot file, relative to the folder (or its path inside the archive)",
    )
    sbm.add_argument("--name", default="", help="the entry (checked against the token's)")
    st = league_action(
        "status",
        "print an entry's latest submission and its validation report ($STICHELN_BOT_TOKEN "
        "or $STICHELN_ADMIN_TOKEN)",
    )
    st.add_argument("name", help="the entry")
    st.add_argument(
        "--history",
        action="store_true",
        help="every submission, newest first, with its own rating, interval and matches",
    )
    st.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per line per submission (submission, sha256, status, rating, "
        "interval, matches, ...); the latest only without --history",
    )
    act = league_action(
        "activate",
        "make an earlier submission that passed validation play again, without building it "
        "again (a rollback; not an upload) ($STICHELN_BOT_TOKEN or $STICHELN_ADMIN_TOKEN)",
    )
    act.add_argument("name", help="the entry")
    act.add_argument("submission", type=int, help="the submission's number")
    lgs = league_action(
        "logs",
        "print a hosted entry's own logs: its bot's stderr in each ranked match kept, and its "
        "validation reports ($STICHELN_BOT_TOKEN or $STICHELN_ADMIN_TOKEN)",
    )
    lgs.add_argument("name", help="the entry")
    lgs.add_argument("--match", default="", metavar="ID", help="one match's log only")
    lgs.add_argument(
        "--submission", type=int, default=0, metavar="N", help="one submission's logs only"
    )
    from referee.cli import season

    season.add_parser(league_action)
    chl = league_action(
        "challenge",
        "play a few unrated matches of your entry against opponents you name, as soon as they "
        "can sit ($STICHELN_BOT_TOKEN); prints where to watch them",
    )
    chl.add_argument("name", help="your entry")
    chl.add_argument("opponents", nargs="+", metavar="OPPONENT", help="the entries to meet")
    chl.add_argument(
        "--matches",
        type=int,
        default=1,
        metavar="N",
        help="how many matches, the seating turning by one seat each (default 1, at most 5)",
    )
    wk = lg_sub.add_parser(
        "worker",
        help="play a league's queued matches of hosted bots, from its database",
        description="Take queued matches of hosted bots from a league's database (SELECT ... "
        "FOR UPDATE SKIP LOCKED on PostgreSQL), play them jailed, and write results and "
        "records back; run as many as the machines allow (docs/hosting.md).",
    )
    wk.add_argument(
        "--database",
        default="",
        help="the league's database: a postgresql:// URL or a SQLite file "
        "(default: $STICHELN_DATABASE)",
    )
    wk.add_argument("--league", default="", help="the league's name (default: the only one)")
    wk.add_argument("--name", default="", help="this worker's name (default: HOST-PID)")
    wk.add_argument(
        "--code-dir",
        default="",
        help="where hosted code is unpacked, by hash (default: a folder in /tmp)",
    )
    wk.add_argument(
        "--out", default="", help="match records and bot logs (default: a folder in /tmp)"
    )
    wk.add_argument(
        "--lease-s", type=float, default=30.0, help="the lease on a match, renewed (default 30)"
    )
    wk.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve this worker's Prometheus metrics on this port (0: a free one; default off)",
    )
    wk.add_argument(
        "--metrics-addr", default="127.0.0.1", help="the metrics address (default 127.0.0.1)"
    )
    wk.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="matches this worker plays at once (default 1; the league's own parallel "
        "bounds the matches queued and played by all workers)",
    )
    wk.add_argument(
        "--max-bots",
        type=int,
        default=64,
        help="bot processes kept warm between matches, at most (default 64; the least "
        "recently used idle ones stop first)",
    )
    wk.add_argument(
        "--max-bot-memory-mb",
        type=int,
        default=4096,
        help="their memory together (their cgroups'), at most, in MiB (default 4096)",
    )
    wk.add_argument(
        "--bot-idle-s",
        type=float,
        default=None,
        help="a bot process without a match for this long stops (default: 60 in the gVisor "
        "tier, where an idle sandbox costs CPU, 600 in bubblewrap)",
    )
    wk.add_argument(
        "--live-interval-s",
        type=float,
        default=0.5,
        help="how often the running match's record lines go to the database for the "
        "league's spectators (default 0.5; 0: not at all)",
    )
    wk.add_argument(
        "--sandbox",
        choices=("strongest", "gvisor", "bubblewrap"),
        default="strongest",
        help="the jail tier of the hosted code it plays (default: the strongest this "
        "machine has; give the league file's [sandbox] mode when it names one)",
    )
    add_bot_uids(wk)
    add_log_level(wk, "info", who="the worker")
    wk.set_defaults(func=worker)


def serve(args: argparse.Namespace) -> int:
    """Run a league until SIGTERM or SIGINT; exit 0 after a graceful stop."""
    import dataclasses

    from referee.league.config import load_league_config
    from referee.league.service import League
    from referee.match.metrics import RefereeMetrics
    from referee.results.store import ResumeRefused, StoreError
    from referee.runtime import eventloop, logs
    from referee.tournament.config import ConfigError

    logs.configure(args.log_level)
    try:
        config = load_league_config(args.config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.host is not None:
        config = dataclasses.replace(config, host=args.host)
    if args.port is not None:
        config = dataclasses.replace(config, port=args.port)
    metrics = RefereeMetrics()
    if config.metrics_port is not None:
        port = metrics.serve(config.metrics_port, config.metrics_host)
        print(f"metrics on http://{config.metrics_host}:{port}/metrics", file=sys.stderr)

    async def run() -> int:
        try:
            league = League(config, metrics)
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        if league.hosting is not None:
            league.hosting.on_built.append(metrics.build.observe)
        try:
            await league.start()
        except (ResumeRefused, StoreError) as exc:
            league.store.close()
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot serve on {config.host}:{config.port}: {exc}") from None
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # The first line on stdout is the address (port 0 picks a free one).
        print(f"league {config.name} serving on {league.server.address}", flush=True)
        if league.hosting is not None:  # the tier hosted code runs in, in one line
            print(f"hosted code: {league.hosting.sandbox.describe()}", file=sys.stderr)
        web = None
        if config.web_port is not None:
            from referee.web import LeagueSource, WebOptions, WebServer

            options = WebOptions(config.web_host, config.web_port, config.web_delay_rounds)
            web = WebServer(LeagueSource(league), metrics.registry, options)
            try:
                await web.start()
            except OSError as exc:
                await league.stop()
                raise UsageError(
                    f"cannot serve the web pages on {config.web_host}:{config.web_port}: {exc}"
                ) from None
            league.web_address = web.address
            print(f"web on {web.address}", flush=True)
        await stop.wait()
        print("stopping: running matches get the grace period to finish", file=sys.stderr)
        if web is not None:
            await web.stop()
        await league.stop()
        return 0

    return eventloop.run(run())


def league(args: argparse.Namespace) -> int:
    """Administer a running league over its League service; one line per error."""

    import grpc

    from sticheln.v1 import league_pb2, league_pb2_grpc

    metadata: list[tuple[str, str]] = []
    if args.action in ("register", "revoke", "version"):
        token = os.environ.get("STICHELN_ADMIN_TOKEN", "")
        if not token:
            raise UsageError("set STICHELN_ADMIN_TOKEN to the league's admin token")
        metadata = [("authorization", f"Bearer {token}")]
    if args.action == "submit":
        return submit(args)
    if args.action == "challenge":
        token = os.environ.get("STICHELN_BOT_TOKEN", "")
        if not token:
            raise UsageError("set STICHELN_BOT_TOKEN to your entry's token")
        metadata = [("authorization", f"Bearer {token}")]
        if args.matches < 1:
            raise UsageError(f"--matches: {args.matches} is not allowed; allowed: 1 to 5")
    if args.action in ("status", "activate", "logs"):
        token = os.environ.get("STICHELN_BOT_TOKEN", "") or os.environ.get(
            "STICHELN_ADMIN_TOKEN", ""
        )
        if not token:
            raise UsageError("set STICHELN_BOT_TOKEN to the entry's token (or the admin token)")
        metadata = [("authorization", f"Bearer {token}")]
    with grpc.insecure_channel(args.address) as channel:
        stub = league_pb2_grpc.LeagueStub(channel)  # type: ignore[no-untyped-call]
        try:
            if args.action == "season":
                from referee.cli import season

                return season.season(args, stub)
            if args.action == "status":
                subs = stub.SubmissionStatus(
                    league_pb2.SubmissionStatusRequest(name=args.name),
                    metadata=metadata,
                    timeout=args.timeout,
                ).submissions
                if args.json:
                    for s in subs if args.history else subs[:1]:
                        print(json.dumps(submission_json(s)))
                    return 0
                if not subs:
                    print(f"{args.name}: no submission")
                    return 0
                if args.history:
                    print_history(subs)
                    return 0
                s = subs[0]
                print(f"{s.bot}: submission {s.number}, sha256 {s.sha256}, {s.status}")
                if s.refusal:
                    print(f"refused: {s.refusal}")
                if s.report:
                    print(s.report)
                return 0
            if args.action == "challenge":
                made = stub.Challenge(
                    league_pb2.ChallengeRequest(
                        name=args.name, opponents=args.opponents, matches=args.matches
                    ),
                    metadata=metadata,
                    timeout=args.timeout,
                )
                for i, match_id in enumerate(made.match_ids):
                    watch = made.watch[i] if i < len(made.watch) else ""
                    print(f"{match_id}  {watch or '(the league serves no web pages)'}")
                print(
                    f"{made.left} challenge matches left; the allowance is whole again at "
                    f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(made.resets_at))}",
                    file=sys.stderr,
                )
                return 0
            if args.action == "logs":
                got = stub.GetLogs(
                    league_pb2.GetLogsRequest(
                        name=args.name, match_id=args.match, submission=max(args.submission, 0)
                    ),
                    metadata=metadata,
                    timeout=args.timeout,
                )
                if not got.logs:
                    print(f"{args.name}: no log (match logs are kept {got.retention_days} days)")
                for entry in got.logs:
                    print_log(entry)
                return 0
            if args.action == "activate":
                if args.submission < 1:
                    raise UsageError(f"submission: {args.submission} is not a submission number")
                made = stub.ActivateSubmission(
                    league_pb2.ActivateSubmissionRequest(
                        name=args.name, submission=args.submission
                    ),
                    metadata=metadata,
                    timeout=args.timeout,
                ).submission
                print(f"{made.bot}: submission {made.number}, sha256 {made.sha256}, {made.status}")
                return 0
            if args.action == "register":
                reply = stub.RegisterBot(
                    league_pb2.RegisterBotRequest(
                        name=args.name, owner=args.owner, description=args.description
                    ),
                    metadata=metadata,
                    timeout=args.timeout,
                )
                print(f"registered {reply.bot.name}; its token (shown only now):", file=sys.stderr)
                print(reply.token)
            elif args.action == "version":
                reply = stub.RegisterVersion(
                    league_pb2.RegisterVersionRequest(
                        previous_version=args.name, name=args.new_name, description=args.description
                    ),
                    metadata=metadata,
                    timeout=args.timeout,
                )
                print(
                    f"registered {reply.bot.name} (version {reply.bot.version}, succeeds "
                    f"{reply.bot.previous_version}); its token (shown only now):",
                    file=sys.stderr,
                )
                print(reply.token)
            elif args.action == "revoke":
                revoked = stub.RevokeToken(
                    league_pb2.RevokeTokenRequest(name=args.name),
                    metadata=metadata,
                    timeout=args.timeout,
                )
                print(f"revoked the token of {revoked.bot.name}")
            elif args.action == "bots" and args.json:
                for b in stub.ListBots(league_pb2.ListBotsRequest(), timeout=args.timeout).bots:
                    print(
                        json.dumps(
                            {
                                "name": b.name,
                                "hosted": b.hosted,
                                "status": b.status,
                                "submission": b.submission,
                                "sha256": b.sha256,
                                "matches": b.matches,
                                "refusal": b.refusal,
                                "playing_submission": b.playing_submission,
                                "version": b.version,
                                "active": b.active,
                                "connected_streams": b.connected_streams,
                            }
                        )
                    )
            elif args.action == "bots":
                bots = stub.ListBots(league_pb2.ListBotsRequest(), timeout=args.timeout).bots
                print(
                    f"{'bot':24} {'version':>7} {'active':>6} {'streams':>7}  previous  "
                    f"{'hosted':24}  owner"
                )
                for b in bots:
                    hosted = (
                        f"{b.status} (#{b.submission}, plays #{b.playing_submission or '-'})"
                        if b.hosted
                        else "-"
                    )
                    print(
                        f"{b.name:24} {b.version:>7} {'yes' if b.active else 'no':>6} "
                        f"{b.connected_streams:>7}  {b.previous_version or '-':8}  {hosted:24}  "
                        f"{b.owner}"
                    )
            else:
                from referee.results.report import interval_text

                st = stub.Standings(league_pb2.StandingsRequest(), timeout=args.timeout)
                for warning in st.warnings:
                    print(f"warning: {warning}")
                print(f"{st.matches} matches")
                print(
                    f"{'#':>2} {'bot':24} {'rating':>7} {'95% interval':>15} {'elo':>6} {'matches':>7}"
                )
                rank = 0
                for x in st.standings:
                    ci = (
                        ""
                        if math.isnan(x.ci_low)
                        else interval_text(
                            x.ci_low,
                            x.ci_high,
                            x.ci_low_open,
                            x.ci_high_open,
                            anchor=x.anchor,
                            unidentified=x.unidentified,
                        )
                    )
                    rank += not x.provisional
                    shown = "-" if x.provisional else str(rank)
                    note = "  provisional" if x.provisional else ""
                    note += f"  group {x.group + 1}" if x.group else ""
                    print(
                        f"{shown:>2} {x.bot:24} {x.rating:>7.0f} {ci:>15} {x.live_elo:>6.0f} "
                        f"{x.matches:>7}{note}"
                    )
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            print(
                f"referee league {args.action}: {code.name}: {exc.details()}",  # type: ignore[attr-defined]
                file=sys.stderr,
            )
            return 1
    return 0


def _finite(x: float) -> float | None:
    return None if math.isnan(x) or math.isinf(x) else round(x, 1)


def submission_json(s: Any) -> dict[str, Any]:
    """A ``Submission`` message as ``referee league status --json`` prints it."""
    return {
        "bot": s.bot,
        "submission": s.number,
        "sha256": s.sha256,
        "status": s.status,
        "rating": _finite(s.rating),
        "interval": None if math.isnan(s.ci_low) else [_finite(s.ci_low), _finite(s.ci_high)],
        "matches": s.matches,
        "refusal": s.refusal,
        "build_sha256": s.build_sha256,
        "bot_file": s.bot_file,
        "submitted_at": s.submitted_at,
        "decided_at": s.decided_at or None,
    }


def print_log(entry: Any) -> None:
    """One kept log: a header line, then its text."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(entry.written_at))
    if entry.kind == "match":
        seats = ", ".join(map(str, entry.seats))
        cut = ", its beginning cut at the league's log_kb" if entry.truncated else ""
        print(
            f"== match {entry.match_id}, submission {entry.submission}, seat {seats}, "
            f"{when} UTC{cut}"
        )
    else:
        print(f"== validation of submission {entry.submission}, {when} UTC")
    text = entry.text
    print(text if text.endswith("\n") or not text else text + "\n", end="")


def print_history(subs: Any) -> None:
    """Every submission, newest first: status, its own rating and interval, matches."""
    print(f"{subs[0].bot}: {len(subs)} submissions")
    print(f"{'#':>3} {'status':10} {'rating':>7} {'95% interval':>15} {'matches':>7}  sha256")
    for s in subs:
        rated = not math.isnan(s.rating)
        rating = f"{s.rating:.0f}" if rated else "-"
        ci = f"{s.ci_low:.0f} to {s.ci_high:.0f}" if rated and not math.isnan(s.ci_low) else "-"
        print(f"{s.number:>3} {s.status:10} {rating:>7} {ci:>15} {s.matches:>7}  {s.sha256[:16]}")


#: The size of one chunk of an upload (the league's port takes no message over 64 KiB).
CHUNK = 32 << 10


def submit(args: argparse.Namespace) -> int:
    """Upload a folder or archive over League.Submit; print the submission it made."""
    from pathlib import Path

    import grpc

    from referee.league.archive import ArchiveRefused, format_of, pack_folder, sha256_hex
    from sticheln.v1 import league_pb2, league_pb2_grpc

    token = os.environ.get("STICHELN_BOT_TOKEN", "")
    if not token:
        raise UsageError("set STICHELN_BOT_TOKEN to the entry's bot token")
    path = Path(args.path)
    try:
        if path.is_dir():
            folder = path.resolve()
            bot_file = (folder / args.bot_file).resolve()
            if not bot_file.is_relative_to(folder) or bot_file == folder:
                raise UsageError(f"--bot-file {args.bot_file}: outside the folder {path}")
            if not bot_file.is_file():
                raise UsageError(f"--bot-file {args.bot_file}: no such file in {path}")
            inside = bot_file.relative_to(folder).as_posix()
            fmt, data = "tar.gz", pack_folder(folder)
        elif path.is_file():
            fmt, data, inside = format_of(path), path.read_bytes(), args.bot_file
        else:
            raise UsageError(f"{path}: no such folder or archive")
    except ArchiveRefused as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    digest = sha256_hex(data)
    header = league_pb2.SubmitHeader(
        bot=args.name, format=fmt, size=len(data), sha256=digest, bot_file=inside
    )

    def requests() -> Iterator[league_pb2.SubmitRequest]:
        yield league_pb2.SubmitRequest(header=header)
        for start in range(0, len(data), CHUNK):
            yield league_pb2.SubmitRequest(chunk=data[start : start + CHUNK])

    with grpc.insecure_channel(args.address) as channel:
        stub = league_pb2_grpc.LeagueStub(channel)  # type: ignore[no-untyped-call]
        try:
            reply = stub.Submit(
                requests(),
                metadata=[("authorization", f"Bearer {token}")],
                timeout=max(args.timeout, 60.0),
            )
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            print(
                f"referee league submit: {code.name}: {exc.details()}",  # type: ignore[attr-defined]
                file=sys.stderr,
            )
            return 1
    s = reply.submission
    print(f"{s.bot}: submission {s.number}, sha256 {s.sha256}, {s.status}")
    return 0


def worker(args: argparse.Namespace) -> int:
    """Play queued matches of hosted bots until SIGTERM or SIGINT."""
    import tempfile
    from pathlib import Path

    from referee.cli.common import sandbox_for
    from referee.jail.sandbox import SandboxUnavailable
    from referee.league.hosting import hosted_mode
    from referee.league.worker import Worker, leagues
    from referee.match.pool import Bounds, default_idle_s
    from referee.results.store import StoreError, open_store
    from referee.runtime import eventloop, logs

    logs.configure(args.log_level)
    target = args.database or os.environ.get("STICHELN_DATABASE", "")
    if not target:
        raise UsageError("give --database URL (or set $STICHELN_DATABASE)")
    if args.lease_s < 3:
        raise UsageError(f"--lease-s: {args.lease_s} is not allowed; allowed: 3 or more")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise UsageError(f"--metrics-port: {args.metrics_port} is not allowed; allowed: 0-65535")
    for flag, value, least in (
        ("--parallel", args.parallel, 1),
        ("--max-bots", args.max_bots, 1),
        ("--max-bot-memory-mb", args.max_bot_memory_mb, 64),
        ("--bot-idle-s", args.bot_idle_s, 1),
    ):
        if value is not None and not value >= least:
            raise UsageError(f"{flag}: {value:g} is not allowed; allowed: {least} or more")
    if not 0 <= args.live_interval_s <= 60:
        raise UsageError(
            f"--live-interval-s: {args.live_interval_s:g} is not allowed; allowed: 0-60"
        )

    def folder(given: str, prefix: str) -> Path:
        if given:
            return Path(given)
        made = Path(tempfile.mkdtemp(prefix=prefix))
        made.chmod(0o755)  # the code folder is read by the bots' uids
        return made

    try:
        store = open_store(target)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        found = leagues(store)
        name = args.league or (found[0] if len(found) == 1 else "")
        if not name:
            raise UsageError(
                f"give --league NAME; the database holds {len(found)} leagues"
                + (f": {', '.join(found)}" if found else "")
            )
        sandbox = sandbox_for(hosted_mode(args.sandbox), [], say=False, bot_uids=args.bot_uids)
        try:
            sandbox.check()  # hosted code never runs unconfined
        except SandboxUnavailable as exc:
            raise UsageError(str(exc)) from None
        print(f"hosted code: {sandbox.describe()}", file=sys.stderr)
        w = Worker(
            store,
            name,
            folder(args.code_dir, "sticheln-worker-code-"),
            folder(args.out, "sticheln-worker-out-"),
            args.name,
            args.lease_s,
            sandbox,
            bounds=Bounds(
                args.max_bots,
                args.max_bot_memory_mb,
                args.bot_idle_s or default_idle_s(sandbox.mode),
            ),
            live_interval_s=args.live_interval_s,
            parallel=args.parallel,
        )
    except (StoreError, UsageError) as exc:
        store.close()
        raise UsageError(str(exc)) from None

    if args.metrics_port is not None:
        # The matches it played, their decisions, faults and think times, its warm pool:
        # one scrape target per worker (queue depth and voids are the league's).
        w.metrics.watch_worker(w.name, lambda: w.played)
        w.metrics.watch_pool(lambda: w.pool)
        port = w.metrics.serve(args.metrics_port, args.metrics_addr)
        print(f"metrics on http://{args.metrics_addr}:{port}/metrics", file=sys.stderr)

    async def run() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print(f"worker {w.name} playing league {name}", flush=True)
        try:
            await w.run(stop)
        finally:
            store.close()
        return 0

    return eventloop.run(run())
