"""``referee tournament`` and ``referee merge``: run, resume or shard a tournament, and merge its shards."""

from __future__ import annotations

import argparse
import asyncio
import sys

from referee.cli.common import (
    Subparsers,
    UsageError,
    add_bot_uids,
    add_log_level,
    add_preflight_flag,
    add_web_flags,
    announce_reads,
    announce_sandbox,
    given_deal_key,
    linger,
    load_tournament,
    preflight,
    run_until_done,
    sandbox_for,
)


def add_parsers(sub: Subparsers) -> None:
    """Add this module's commands to the ``referee`` parser."""
    tour = sub.add_parser(
        "tournament",
        help="run or resume a tournament from its TOML file",
        description="Play every match of the tournament file's schedule that is not "
        "finished yet (a second run resumes), `parallel` at once, then print the standings "
        "and export ratings.json, ratings.csv, results.csv and report.html to its `out` "
        "folder. Exit status 1 when matches were aborted or a bot forfeited every match it "
        "played; 2 when a bot does not start.",
    )
    tour.add_argument("file", help="the tournament file, e.g. examples/league.toml")
    tour.add_argument(
        "--dry-run", action="store_true", help="print the schedule and its size; contact no bot"
    )
    add_bot_uids(tour)
    tour.add_argument(
        "--parallel", type=int, default=0, help="matches at once (overrides the file)"
    )
    add_web_flags(tour, "the web pages (standings, matches, live tables)")
    tour.add_argument(
        "--metrics-port", type=int, default=None, help="serve Prometheus metrics on this port"
    )
    tour.add_argument(
        "--metrics-addr", default="127.0.0.1", help="address for the metrics (default 127.0.0.1)"
    )
    tour.add_argument(
        "--metrics-linger",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="after the tournament, keep serving metrics (and, with --port, the gRPC health "
        "service) this long, e.g. for a last scrape; inf: until stopped (default 0)",
    )
    tour.add_argument(
        "--host", default="127.0.0.1", help="address to serve bots on (default 127.0.0.1)"
    )
    tour.add_argument(
        "--port",
        type=int,
        default=0,
        help="port for bots and the gRPC health service (default 0: any free port; a fixed "
        "port plays every match in this process)",
    )
    add_log_level(
        tour,
        None,
        said="default: warning, as text, with the progress (a bar on a terminal, a line per "
        "match elsewhere); given, off a terminal the log is JSON lines, progress included "
        "(at info)",
    )
    tour.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="referee processes for parallel matches (default: one per core, at most "
        "`parallel`; 1 plays every match in this process)",
    )
    tour.add_argument(
        "--shard",
        metavar="I/K",
        help="play only shard I of K (0 <= I < K): the scheduled matches whose index %% K == I; "
        "the K shards together play every match once (see docs/sharding.md)",
    )
    tour.add_argument(
        "--db",
        metavar="URL",
        help="the database, instead of the file's: a SQLite file path or "
        "postgresql://user:password@host:port/dbname (shared by shards)",
    )
    tour.add_argument(
        "--deal-key-file",
        metavar="FILE",
        help="the tournament's deal key (64 hex digits; default $STICHELN_DEAL_KEY): needed by "
        "shards with SQLite databases of their own, made by `referee deal-key`",
    )
    add_preflight_flag(tour)
    tour.set_defaults(func=tournament)

    mrg = sub.add_parser(
        "merge",
        help="merge shard databases into the tournament's and export the standings",
        description="Copy the finished matches of each SHARD_DB into the tournament's "
        "database (the file's, or --db) and, when every scheduled match is finished there, "
        "export the standings as an unsharded run would. With a shared PostgreSQL database "
        "give no SHARD_DB: the merge checks it is complete and exports. Exit status 1 names "
        "the matches still missing.",
    )
    mrg.add_argument("file", help="the tournament file the shards ran")
    mrg.add_argument(
        "shard_db", nargs="*", metavar="SHARD_DB", help="a shard's SQLite file or database URL"
    )
    mrg.add_argument(
        "--db", metavar="URL", help="the merged database, instead of the file's (path or URL)"
    )
    add_log_level(mrg, "warning")
    mrg.set_defaults(func=merge)


def tournament(args: argparse.Namespace) -> int:
    """Run (or resume) a tournament, or one shard of it, from its file; print the standings."""
    from referee.match.dealkey import KEY_ENV
    from referee.match.metrics import RefereeMetrics
    from referee.results.store import ResumeRefused, StoreError, is_url
    from referee.runtime import logs
    from referee.tournament.lineup import shared_authors
    from referee.tournament.run import Shard, run_tournament
    from referee.tournament.schedule import make_schedule, pair_counts, seat_balance

    # At the default level a piped run (scripts/demo.sh | tee) prints what a terminal
    # shows: the progress a line per match, warnings as text, the standings. JSON log
    # lines (the progress among them) come with an explicit --log-level off a terminal.
    tty = sys.stderr.isatty()
    plain = not tty and args.log_level is None
    level = args.log_level or "warning"
    logs.configure(level, json=False if plain else None)
    config = load_tournament(args)
    if args.parallel:
        import dataclasses

        config = dataclasses.replace(config, parallel=args.parallel)
    shard = None
    if args.shard is not None:
        try:
            shard = Shard.parse(args.shard)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: {args.workers} is not allowed; allowed: 1 or more")
    if args.web_port is not None and not 0 <= args.web_port <= 65535:
        raise UsageError(f"--web-port {args.web_port} is not allowed; allowed: 0 to 65535")
    if not args.metrics_linger >= 0:  # also refuses nan
        raise UsageError(
            f"--metrics-linger: {args.metrics_linger} is not allowed; allowed: 0 or more seconds, or inf"
        )
    deal_key = given_deal_key(args)
    schedule = Shard.select(shard, make_schedule(config))
    if deal_key is None and shard is not None and not is_url(config.database) and not args.dry_run:
        raise UsageError(
            f"--shard {shard} with a SQLite database needs the tournament's deal key, the "
            "same for every shard: make one with `referee deal-key --out deal.key`, then give "
            f"every shard --deal-key-file deal.key (or ${KEY_ENV}); see docs/sharding.md"
        )
    shared = shared_authors(config.bots, pair_counts(schedule))
    if args.dry_run:
        for line in shared:
            print(line, file=sys.stderr)
        tables = len({m.table for m in schedule})
        part = "" if shard is None else f" (shard {shard})"
        print(
            f"tournament {config.name}{part}: {len(schedule)} matches, {tables} tables of {config.table_size}, mode {config.mode}, rules {config.rules.preset}"
        )
        pairs = pair_counts(schedule)
        if pairs:
            print(
                f"pairs sharing a table: {min(pairs.values())} to {max(pairs.values())} matches per pair"
            )
        balance = seat_balance(schedule)
        print(
            "seat positions per bot: " + "; ".join(f"{b} {c}" for b, c in sorted(balance.items()))
        )
        for m in schedule:
            print(f"{m.index:5d}  deal {m.deal:4d}  {' '.join(m.seating)}")
        return 0
    # In the tournament_start log line and the report; on a terminal, said too, once the
    # database has taken the run: a refused database, shard or deal key is one line.
    sandbox = sandbox_for(
        config.sandbox, config.bots, say=tty or plain, bot_uids=args.bot_uids, announce=False
    )
    metrics = RefereeMetrics()
    metrics.planned.set(len(schedule))  # known before the first scrape
    if args.metrics_port is not None:
        port = metrics.serve(args.metrics_port, args.metrics_addr)
        print(f"metrics on http://{args.metrics_addr}:{port}/metrics", file=sys.stderr)

    async def run() -> int:
        seated = {name for m in schedule for name in m.seating}
        await preflight(
            args,
            [b for b in config.bots if b.name in seated],
            sandbox,
            config.clock.startup_ms,
            config.out / "logs",
            host=args.host,
        )
        web = follow = source = None
        if args.web_port is not None:
            from referee.web import TournamentSource, WebOptions, WebServer

            source = TournamentSource(config)
            web = WebServer(source, metrics.registry, WebOptions(args.web_host, args.web_port))
            try:
                await web.start()
            except OSError as exc:
                source.close()
                raise UsageError(
                    f"--web-port: cannot serve on {args.web_host}:{args.web_port}: {exc}"
                ) from None
            follow = asyncio.ensure_future(source.follow())
            print(f"web on {web.address}", file=sys.stderr, flush=True)
        try:
            return await run_tournament_and_report()
        finally:
            if web is not None and follow is not None:
                follow.cancel()
                await web.stop()
            if source is not None:
                source.close()

    def opened() -> None:
        """The database took the run: say what a refusal would have hidden."""
        for line in shared:
            print(line, file=sys.stderr)
        announce_sandbox(sandbox, config.bots, tty or plain)
        announce_reads(sandbox, config.bots)

    async def run_tournament_and_report() -> int:
        outcome = await run_tournament(
            config,
            metrics=metrics,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=level,
            shard=shard,
            deal_key=deal_key,
            live_records=args.web_port is not None,
            plain_progress=plain,
            on_open=opened,
        )
        if shard is not None:
            print(
                f"shard {shard}: {outcome.shard_finished}/{outcome.shard_planned} of its matches finished",
                flush=True,
            )
        # A bot that never played a match through is named below the standings.
        forfeits = [
            f"bot {bot!r} forfeited every match it played ({n}): see its logs in "
            f"{config.out / 'logs'} and the faults in its match records"
            for bot, n in outcome.always_forfeited.items()
        ]
        if outcome.complete and not outcome.aborted:
            print(outcome.table, flush=True)
        for line in forfeits:
            print(line, flush=True)
        if outcome.aborted:
            print(
                f"{outcome.finished}/{outcome.planned} matches finished; {len(outcome.aborted)} "
                f"aborted, each played twice with fewer than two bots connected: {_listed(outcome.aborted)}. "
                f"No standings until they are played: see the bot logs in {config.out / 'logs'}, "
                "fix the bots and run the same command again",
                flush=True,
            )
        elif outcome.complete:
            if "deal-key.txt" in outcome.exports:
                print(
                    f"the tournament is over: its deal key is in {outcome.exports['deal-key.txt']}; "
                    f"`referee verify {config.out}` re-checks every deal and result",
                    flush=True,
                )
            print(
                f"{outcome.finished}/{outcome.planned} matches finished; exports in {config.out}",
                flush=True,
            )
        else:
            print(
                f"{outcome.finished}/{outcome.planned} matches of the tournament finished; the "
                "standings are exported once the other shards are done (or by referee merge)",
                flush=True,
            )
        if shard is None:
            status = 0 if outcome.complete else 1
        else:
            status = 0 if outcome.shard_finished == outcome.shard_planned else 1
        if outcome.always_forfeited:
            status = 1
        if args.metrics_linger:
            await linger(args.metrics_linger, args.host, args.port)
        return status

    try:
        return run_until_done(
            run(), "interrupted: finished matches are kept; run the same command again to resume"
        )
    except (ResumeRefused, StoreError) as exc:
        raise UsageError(str(exc)) from None


def merge(args: argparse.Namespace) -> int:
    """Merge shard databases into the tournament's; export the standings when complete."""
    from referee.results.store import ResumeRefused, StoreError, redact
    from referee.runtime import logs
    from referee.tournament.run import MergeRefused, merge_shards

    logs.configure(args.log_level)
    config = load_tournament(args)
    try:
        merged = merge_shards(config, args.shard_db)
    except (MergeRefused, ResumeRefused, StoreError) as exc:
        raise UsageError(str(exc)) from None
    if args.shard_db:
        print(
            f"merged {len(args.shard_db)} shard database(s) into {redact(config.database)}: "
            f"{merged.copied} matches copied, {merged.already} already there",
            flush=True,
        )
    if merged.missing:
        print(
            f"referee merge: {len(merged.missing)} scheduled match(es) are not finished: "
            f"{_listed(merged.missing)}; run (or resume) their shards, then merge again",
            file=sys.stderr,
        )
        return 1
    assert merged.outcome is not None
    print(merged.outcome.table, flush=True)
    if "deal-key.txt" in merged.outcome.exports:
        print(f"deal key published in {merged.outcome.exports['deal-key.txt']}", flush=True)
    print(
        f"{merged.outcome.finished}/{merged.outcome.planned} matches finished; exports in {config.out}",
        flush=True,
    )
    return 0


def _listed(match_ids: list[str], most: int = 10) -> str:
    """The first ``most`` match ids, and how many more there are."""
    more = f" and {len(match_ids) - most} more" if len(match_ids) > most else ""
    return ", ".join(match_ids[:most]) + more
