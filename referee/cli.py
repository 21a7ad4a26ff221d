"""The ``referee`` command."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import secrets
import signal
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from referee.rules import PRESETS, Round, RuleError, cards_str, preset


class UsageError(Exception):
    """A user mistake: printed as one line, exit status 2."""


#: The deal key given in the environment (``$STICHELN_DEAL_KEY``), taken out of the
#: environment when the command starts so that no bot process can inherit it.
_env_deal_key: str | None = None


def _demo(args: argparse.Namespace) -> int:
    """One seeded round of each preset between random players, printed trick by trick."""
    for name in PRESETS:
        rules = preset(name)
        lo, hi = rules.player_range()
        players = min(max(args.players, lo), hi)
        rnd = Round.deal(rules, players, seed=args.seed)
        rng = random.Random(args.seed)
        while not rnd.is_over:
            for seat in rnd.to_act():
                rnd.apply(seat, rng.choice(rnd.legal_actions(seat)))
        print(f"== {name}: {players} players, seed {args.seed}, dealer seat {rnd.dealer}")
        print(
            "   pain: "
            + ", ".join(f"seat {s} {cards_str(p or ())}" for s, p in enumerate(rnd.pain))
        )
        for i, trick in enumerate(rnd.tricks, 1):
            who = "nobody (set aside)" if trick.winner < 0 else f"seat {trick.winner}"
            print(
                f"   trick {i:2}: seat {trick.leader} leads {cards_str(trick.cards):<24} "
                f"-> {who} ({trick.reason.value}{', tie' if trick.tie else ''})"
            )
        print(
            "   scores: " + "  ".join(f"seat {s}: {v:+d}" for s, v in enumerate(rnd.scores or ()))
        )
        print()
    return 0


def _sandbox(mode: str, bots: Sequence[Any], say: bool = True) -> Any:
    """The sandbox for ``bots`` (a :class:`referee.sandbox.Sandbox`), said on stderr
    (``say``); when some bot is to be started and no sandbox can be made here, a one-line
    refusal."""
    from referee.sandbox import Sandbox, SandboxUnavailable

    sandbox = Sandbox(mode)
    if any(not b.external for b in bots):
        try:
            if sandbox.enabled:
                sandbox.check()
        except SandboxUnavailable as exc:
            raise UsageError(str(exc)) from None
        if say:
            print(sandbox.describe(), file=sys.stderr)
    return sandbox


def _match(args: argparse.Namespace) -> int:
    """Play one match between bots declared in TOML files and print the result table."""
    from referee import logs
    from referee.bots import BotConfigError, load_bot
    from referee.runner import Clock, MatchRunner
    from referee.server import RefereeServer, TlsConfig

    logs.configure(args.log_level)
    try:
        bots = [load_bot(p) for p in args.bot]
        rules = preset(args.rules)
        rules.check_players(len(bots))
        clock = Clock(
            decision_ms=args.decision_ms, time_bank_ms=args.time_bank_ms, startup_ms=args.startup_ms
        )
    except (BotConfigError, RuleError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    tls = TlsConfig(Path(args.tls_cert), Path(args.tls_key)) if args.tls_cert else None
    sandbox = _sandbox("none" if args.no_sandbox else "bubblewrap", bots)

    async def run() -> int:
        server = RefereeServer(sandbox=sandbox)
        await server.start(args.host, args.port, tls)
        for bot in bots:
            if bot.external:
                print(
                    f"waiting for external bot {bot.name!r} on {server.address} (its token from {bot.source})",
                    file=sys.stderr,
                )
        try:
            runner = MatchRunner(
                server,
                bots,
                rules,
                seed=args.seed,
                clock=clock,
                strike_limit=args.strikes,
                out_dir=Path(args.out),
            )
            result = await runner.run()
        finally:
            await server.stop(0.5)
        if result.aborted:
            return _print_aborted(result)
        print(
            f"match {result.match_id}  rules {rules.preset}  seed {result.seed}  {result.duration_s:.1f} s"
        )
        print(f"{'place':>5}  {'seat':>4}  {'bot':<16} {'total':>6}  {'faults':>6}")
        for s in sorted(result.seats, key=lambda s: (s.place, s.seat)):
            note = "  forfeited" if s.forfeited else ""
            print(f"{s.place:>5}  {s.seat:>4}  {s.bot:<16} {s.total:>+6}  {len(s.faults):>6}{note}")
        print(f"record: {result.record_path}")
        return 0

    return _run_until_done(run(), "interrupted: match abandoned, bots stopped")


def _print_aborted(result: Any) -> int:
    """``referee match``'s report of a match that was not played; exit status 1."""
    print(f"match {result.match_id} {result.reason}; it was not played", file=sys.stderr)
    for s in result.seats:
        for f in s.faults:
            print(f"  seat {s.seat} {s.bot}: {f.reason.value}: {f.detail}", file=sys.stderr)
    print(f"record: {result.record_path}", file=sys.stderr)
    return 1


def _tournament(args: argparse.Namespace) -> int:
    """Run (or resume) a tournament, or one shard of it, from its file; print the standings."""
    from referee import logs
    from referee.dealkey import KEY_ENV
    from referee.metrics import RefereeMetrics
    from referee.tournament.run import Shard, run_tournament
    from referee.tournament.schedule import make_schedule, pair_counts, seat_balance
    from referee.tournament.storage import ResumeRefused, StoreError, is_url

    level = args.log_level or ("warning" if sys.stderr.isatty() else "info")
    logs.configure(level)
    config = _load_tournament(args)
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
    deal_key = _given_deal_key(args)
    schedule = Shard.select(shard, make_schedule(config))
    if deal_key is None and shard is not None and not is_url(config.database) and not args.dry_run:
        raise UsageError(
            f"--shard {shard} with a SQLite database needs the tournament's deal key, the "
            "same for every shard: make one with `referee deal-key --out deal.key`, then give "
            f"every shard --deal-key-file deal.key (or ${KEY_ENV}); see docs/sharding.md"
        )
    if args.dry_run:
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
    # In the tournament_start log line and the report; on a terminal, said here too.
    _sandbox(config.sandbox, config.bots, say=sys.stderr.isatty())
    metrics = RefereeMetrics()
    metrics.planned.set(len(schedule))  # known before the first scrape
    if args.metrics_port is not None:
        port = metrics.serve(args.metrics_port, args.metrics_addr)
        print(f"metrics on http://{args.metrics_addr}:{port}/metrics", file=sys.stderr)

    async def run() -> int:
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
        )
        if shard is not None:
            print(
                f"shard {shard}: {outcome.shard_finished}/{outcome.shard_planned} of its matches finished",
                flush=True,
            )
        if outcome.aborted:
            shown = ", ".join(outcome.aborted[:10])
            more = f" and {len(outcome.aborted) - 10} more" if len(outcome.aborted) > 10 else ""
            print(
                f"{outcome.finished}/{outcome.planned} matches finished; {len(outcome.aborted)} "
                f"aborted, each played twice with fewer than two bots connected: {shown}{more}. "
                f"No standings until they are played: see the bot logs in {config.out / 'logs'}, "
                "fix the bots and run the same command again",
                flush=True,
            )
        elif outcome.complete:
            print(outcome.table, flush=True)
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
        if args.metrics_linger:
            await _linger(args.metrics_linger, args.host, args.port)
        return status

    try:
        return _run_until_done(
            run(), "interrupted: finished matches are kept; run the same command again to resume"
        )
    except (ResumeRefused, StoreError) as exc:
        raise UsageError(str(exc)) from None


def _given_deal_key(args: argparse.Namespace) -> Any:
    """The deal key of ``--deal-key-file`` or ``$STICHELN_DEAL_KEY``, or None."""
    from referee.dealkey import KEY_ENV, DealKey

    if args.deal_key_file:
        try:
            text = Path(args.deal_key_file).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"--deal-key-file {args.deal_key_file}: cannot be read: {exc}"
            ) from None
        where = f"--deal-key-file {args.deal_key_file}"
    elif _env_deal_key is not None:
        text, where = _env_deal_key, f"${KEY_ENV}"
    else:
        return None
    try:
        return DealKey.from_hex(text)
    except ValueError as exc:
        raise UsageError(
            f"{where}: {exc}; make one with `referee deal-key --out deal.key`"
        ) from None


def _deal_key(args: argparse.Namespace) -> int:
    """Print a fresh deal key (for the shards of a tournament with SQLite databases)."""
    from referee.dealkey import DealKey
    from referee.private import open_private

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


def _verify(args: argparse.Namespace) -> int:
    """Audit a finished tournament's output folder: deals, records, results."""
    from referee.verify import verify_tournament

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


def _compare(args: argparse.Namespace) -> int:
    """Compare a candidate bot with a baseline on paired deals until the test decides.

    Exit status 0: the candidate is better (H1), 1: it is not (H0), 2: undecided at the
    match cap, 3: the settings were refused, 130: interrupted (resume with the same command).
    """
    import json

    from referee import logs
    from referee.compare.config import CompareConfigError, Overrides, load_compare
    from referee.compare.run import (
        CompareRefused,
        Verdict,
        progress_line,
        progress_record,
        run_compare,
    )

    logs.configure(args.log_level)
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
        out=args.out,
        sprt=args.sprt,
        decision_ms=args.decision_ms,
        time_bank_ms=args.time_bank_ms,
        startup_ms=args.startup_ms,
    )
    try:
        config = load_compare(args.file, flags)
    except CompareConfigError as exc:
        print(f"referee compare: {exc}", file=sys.stderr)
        return 3
    tty = sys.stderr.isatty()

    def show(verdict: Verdict, matches: int) -> None:
        if tty:
            end = "\n" if verdict.finished else ""
            sys.stderr.write(f"\r\x1b[K{progress_line(config, verdict, matches)}{end}")
        else:
            sys.stderr.write(json.dumps(progress_record(config, verdict, matches)) + "\n")
        sys.stderr.flush()

    async def run() -> int:
        outcome = await run_compare(config, on_progress=show, log_level=args.log_level)
        print(outcome.text, flush=True)
        print(f"report, pairs and match records in {config.out}", flush=True)
        return outcome.exit_status

    try:
        return _run_until_done(
            run(), "interrupted: finished matches are kept; run the same command again to resume"
        )
    except CompareRefused as exc:
        print(f"referee compare: {exc}", file=sys.stderr)
        return 3


def _load_tournament(args: argparse.Namespace) -> Any:
    """The tournament file, with ``--db`` in place of its database."""
    import dataclasses

    from referee.tournament.config import ConfigError, load_config
    from referee.tournament.storage import is_url

    try:
        config = load_config(args.file)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.db:
        target = args.db if is_url(args.db) else str(Path(args.db).resolve())
        config = dataclasses.replace(config, database=target)
    return config


def _merge(args: argparse.Namespace) -> int:
    """Merge shard databases into the tournament's; export the standings when complete."""
    from referee import logs
    from referee.tournament.run import MergeRefused, merge_shards
    from referee.tournament.storage import ResumeRefused, StoreError, redact

    logs.configure(args.log_level)
    config = _load_tournament(args)
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
        shown = ", ".join(merged.missing[:10])
        more = f" and {len(merged.missing) - 10} more" if len(merged.missing) > 10 else ""
        print(
            f"referee merge: {len(merged.missing)} scheduled match(es) are not finished: "
            f"{shown}{more}; run (or resume) their shards, then merge again",
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


async def _linger(seconds: float, host: str, port: int) -> None:
    """After the tournament: keep the process up for ``seconds`` (or until SIGTERM/SIGINT),
    so that the metrics endpoint answers a last scrape with the final values. On a fixed
    ``port`` the gRPC health service answers too: the server SERVING (the process is
    healthy), ``sticheln.v1.Referee`` NOT_SERVING (no more matches)."""
    from referee.server import SERVICE_NAME, RefereeServer

    server: RefereeServer | None = None
    if port:
        server = RefereeServer()
        await server.start(host, port)
        await server.set_serving(SERVICE_NAME, False)
    until = "until stopped" if math.isinf(seconds) else f"for {seconds:g} s"
    print(f"tournament over; serving metrics {until}", file=sys.stderr, flush=True)
    try:
        if math.isinf(seconds):
            await asyncio.Event().wait()
        else:
            await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        pass  # SIGTERM or SIGINT ends the linger early; the tournament's result stands
    finally:
        if server is not None:
            await server.stop(0)


def _run_until_done(main: Coroutine[Any, Any, int], interrupted: str) -> int:
    """Run ``main`` on a new event loop; SIGINT or SIGTERM cancels it, prints
    ``interrupted`` and returns 130. Every bot process is killed on the way out."""
    from referee import eventloop
    from referee.bots import kill_all_bots

    loop = eventloop.new_event_loop()
    main_task = loop.create_task(main)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, main_task.cancel)
    try:
        return loop.run_until_complete(main_task)
    except asyncio.CancelledError:
        print(interrupted, file=sys.stderr)
        return 130
    finally:
        kill_all_bots()
        loop.close()


def _serve(args: argparse.Namespace) -> int:
    """Run a league until SIGTERM or SIGINT; exit 0 after a graceful stop."""
    import dataclasses

    from referee import eventloop, logs
    from referee.league.config import load_league_config
    from referee.league.service import League
    from referee.metrics import RefereeMetrics
    from referee.tournament.config import ConfigError
    from referee.tournament.storage import ResumeRefused

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
        league = League(config, metrics)
        try:
            await league.start()
        except ResumeRefused as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot serve on {config.host}:{config.port}: {exc}") from None
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # The first line on stdout is the address (port 0 picks a free one).
        print(f"league {config.name} serving on {league.server.address}", flush=True)
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
            print(f"web on {web.address}", flush=True)
        await stop.wait()
        print("stopping: running matches get the grace period to finish", file=sys.stderr)
        if web is not None:
            await web.stop()
        await league.stop()
        return 0

    return eventloop.run(run())


def _league(args: argparse.Namespace) -> int:
    """Administer a running league over its League service; one line per error."""
    import math
    import os

    import grpc

    from sticheln.v1 import league_pb2, league_pb2_grpc

    metadata: list[tuple[str, str]] = []
    if args.action in ("register", "revoke", "version"):
        token = os.environ.get("STICHELN_ADMIN_TOKEN", "")
        if not token:
            raise UsageError("set STICHELN_ADMIN_TOKEN to the league's admin token")
        metadata = [("authorization", f"Bearer {token}")]
    with grpc.insecure_channel(args.address) as channel:
        stub = league_pb2_grpc.LeagueStub(channel)  # type: ignore[no-untyped-call]
        try:
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
            elif args.action == "bots":
                bots = stub.ListBots(league_pb2.ListBotsRequest(), timeout=args.timeout).bots
                print(f"{'bot':24} {'version':>7} {'active':>6} {'streams':>7}  previous  owner")
                for b in bots:
                    print(
                        f"{b.name:24} {b.version:>7} {'yes' if b.active else 'no':>6} "
                        f"{b.connected_streams:>7}  {b.previous_version or '-':8}  {b.owner}"
                    )
            else:
                from referee.report import interval_text

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
                        else interval_text(x.ci_low, x.ci_high, x.ci_low_open, x.ci_high_open)
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


def _check_bot(args: argparse.Namespace) -> int:
    """Play one bot through the scripted scenarios; print PASS/FAIL per scenario."""
    import shutil
    import tempfile

    from referee import logs
    from referee.bots import BotConfigError, BotSpec, load_bot
    from referee.checkbot import SEATS_SCENARIO, Outcome, check_bot, scenarios

    logs.configure(args.log_level)
    if type(args.rounds) is not int or args.rounds < 1:
        raise UsageError(f"--rounds: {args.rounds} is not allowed; allowed: 1 or more")
    if args.strikes < 1:
        raise UsageError(f"--strikes: {args.strikes} is not allowed; allowed: 1 or more")
    if args.startup_ms < 0:
        raise UsageError(f"--startup-ms: {args.startup_ms} is not allowed; allowed: 1 or more")
    if args.list:
        for s in scenarios(rounds=args.rounds, seats=2):
            note = " (for a bot file that declares seats)" if s.name == SEATS_SCENARIO else ""
            print(f"{s.name:<28} {s.about}{note}")
        return 0
    command = args.bot_command[1:] if args.bot_command[:1] == ["--"] else args.bot_command
    ways = sum((bool(command), bool(args.bot), args.connect))
    if ways != 1:
        raise UsageError("give exactly one of: -- COMMAND..., --bot FILE, --connect")
    token = ""
    try:
        if args.bot:
            bot = load_bot(args.bot)
            if bot.external:
                raise UsageError(f"{args.bot}: the bot has no command; use --connect for it")
        elif args.connect:
            token = args.token or secrets.token_urlsafe(24)
            bot = BotSpec(name=args.name, token=token, source="--connect")
        else:
            bot = BotSpec(name=args.name, command=tuple(command), workdir=Path.cwd())
    except BotConfigError as exc:
        raise UsageError(str(exc)) from None
    all_scenarios = scenarios(rounds=args.rounds, seats=bot.seats)
    names = [s.name for s in all_scenarios]
    unknown = [n for n in args.scenario or () if n not in names]
    if unknown == [SEATS_SCENARIO]:
        raise UsageError(
            f"scenario {SEATS_SCENARIO!r} is for a bot file that declares seats (more than 1)"
        )
    if unknown:
        raise UsageError(f"unknown scenario {unknown[0]!r}; allowed: {', '.join(names)}")
    chosen = [s for s in all_scenarios if not args.scenario or s.name in args.scenario]
    sandbox = _sandbox("none" if args.no_sandbox else "bubblewrap", [bot])
    keep = args.out is not None
    out = Path(args.out) if keep else Path(tempfile.mkdtemp(prefix="check-bot-"))

    def ready(address: str) -> None:
        if args.connect:
            print(
                f"connect the bot to {address} with token {token}: one Referee.Play stream "
                f"per scenario ({len(chosen)}), a new one after each stream ends with OK",
                file=sys.stderr,
                flush=True,
            )

    def show(outcome: Outcome) -> None:
        print("\n".join(outcome.lines()), flush=True)

    async def run() -> int:
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
        )
        failed = [o.scenario.name for o in outcomes if not o.passed]
        if failed:
            print(f"{len(failed)} of {len(outcomes)} scenarios FAILED: {', '.join(failed)}")
            print(f"match records and bot logs: {out}")
            return 1
        print(f"all {len(outcomes)} scenarios passed")
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
        return 0

    return _run_until_done(run(), f"interrupted: bot stopped; records and logs in {out}")


def _web(args: argparse.Namespace) -> int:
    """Serve a finished tournament's folder as web pages until SIGTERM or Ctrl-C."""
    from referee import eventloop, logs
    from referee.web import NotFound, serve_folder

    logs.configure("warning")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not allowed; allowed: 0 to 65535")
    try:
        return eventloop.run(serve_folder(Path(args.folder), args.host, args.port))
    except NotFound as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot serve on {args.host}:{args.port}: {exc}") from None


def _replay(args: argparse.Namespace) -> int:
    """Re-check a match record with the engine and print a trick-by-trick account."""
    from referee.record import ReplayError, replay

    try:
        result = replay(args.file)
    except FileNotFoundError:
        raise UsageError(f"{args.file}: no such record file") from None
    except ReplayError as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 1
    print("\n".join(result.lines))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="referee", description="Tournament referee for the card game Sticheln."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="play one seeded round of each preset between random players"
    )
    demo.add_argument("--seed", type=int, default=1, help="deal seed (default 1)")
    demo.add_argument("--players", type=int, default=4, help="players per table (default 4)")
    demo.set_defaults(func=_demo)

    match = sub.add_parser("match", help="play one match between bots and print the result")
    match.add_argument(
        "--bot",
        action="append",
        required=True,
        metavar="FILE",
        help="a bot file (TOML); once per seat, in seat order",
    )
    match.add_argument(
        "--rules", default="sticheln", help=f"preset: {', '.join(PRESETS)} (default sticheln)"
    )
    match.add_argument(
        "--seed", type=_u64, default=None, help="match seed, 0..2**64-1 (default: random)"
    )
    match.add_argument(
        "--out", default="results", help="folder for match records and bot logs (default results)"
    )
    match.add_argument(
        "--decision-ms", type=int, default=1000, help="per-decision time limit (default 1000)"
    )
    match.add_argument(
        "--time-bank-ms", type=int, default=0, help="match time bank per seat (default 0: none)"
    )
    match.add_argument(
        "--startup-ms", type=int, default=10_000, help="time a bot has to connect (default 10000)"
    )
    match.add_argument(
        "--strikes", type=int, default=3, help="faults before a seat forfeits (default 3)"
    )
    match.add_argument(
        "--host", default="127.0.0.1", help="address to serve bots on (default 127.0.0.1)"
    )
    match.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    match.add_argument(
        "--no-sandbox",
        action="store_true",
        help="start the bots without a sandbox, as this user and with the network (trusted "
        "bots only)",
    )
    match.add_argument("--tls-cert", help="serve TLS with this certificate (PEM)")
    match.add_argument("--tls-key", help="the certificate's private key (PEM)")
    match.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"]
    )
    match.set_defaults(func=_match)

    tour = sub.add_parser("tournament", help="run or resume a tournament from its TOML file")
    tour.add_argument("file", help="the tournament file, e.g. examples/league.toml")
    tour.add_argument(
        "--dry-run", action="store_true", help="print the schedule and its size; contact no bot"
    )
    tour.add_argument(
        "--parallel", type=int, default=0, help="matches at once (overrides the file)"
    )
    tour.add_argument(
        "--web-port",
        type=int,
        default=None,
        help="serve the web pages (standings, matches, live tables) on this port while it runs",
    )
    tour.add_argument(
        "--web-host", default="127.0.0.1", help="address of the web pages (default 127.0.0.1)"
    )
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
    tour.add_argument(
        "--log-level",
        default=None,
        choices=["debug", "info", "warning", "error"],
        help="default: warning on a terminal (the progress bar shows), info elsewhere "
        "(JSON lines, progress included)",
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
    tour.set_defaults(func=_tournament)

    dk = sub.add_parser(
        "deal-key",
        help="print a fresh secret deal key (for shards with SQLite databases)",
        description="Print 64 hex digits of fresh random deal key on stdout (or write them to "
        "--out, mode 0600) and its commitment on stderr. Give the same key to every shard "
        "of one tournament with --deal-key-file or $STICHELN_DEAL_KEY (docs/sharding.md).",
    )
    dk.add_argument("--out", metavar="FILE", help="write the key to FILE (mode 0600)")
    dk.set_defaults(func=_deal_key)

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
    vf.set_defaults(func=_verify)

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
    cmp.add_argument("--parallel", type=int, help="matches at once (default 1)")
    cmp.add_argument("--seed", type=_u64, help="draws the opponents of each deal (default 1)")
    cmp.add_argument("--name", help="the comparison's name (default compare)")
    cmp.add_argument(
        "--out",
        help="folder for the store, the report and the match records (default results/NAME)",
    )
    cmp.add_argument("--decision-ms", type=int, help="per-decision time limit (default 1000)")
    cmp.add_argument("--time-bank-ms", type=int, help="match time bank per seat (default 0)")
    cmp.add_argument("--startup-ms", type=int, help="time a bot has to connect (default 10000)")
    cmp.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"]
    )
    cmp.set_defaults(func=_compare)

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
    mrg.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"]
    )
    mrg.set_defaults(func=_merge)

    srv = sub.add_parser(
        "serve",
        help="run a league: bots join over the network with their tokens and play continuously",
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
    srv.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    srv.set_defaults(func=_serve)

    lg = sub.add_parser(
        "league",
        help="administer a running league: register, version, revoke, bots, standings",
        description="Call a running league's League service. register, version and revoke "
        "need the admin token in $STICHELN_ADMIN_TOKEN; a new token is printed on stdout.",
    )
    lg_sub = lg.add_subparsers(dest="action", required=True)

    def league_action(name: str, help: str) -> argparse.ArgumentParser:
        p = lg_sub.add_parser(name, help=help)
        p.add_argument(
            "--address", default="127.0.0.1:50051", help="the league (default 127.0.0.1:50051)"
        )
        p.add_argument("--timeout", type=float, default=10.0, help="seconds per call (default 10)")
        p.set_defaults(func=_league)
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
    league_action("bots", "list the bot entries")
    league_action("standings", "print the published standings")

    chk = sub.add_parser(
        "check-bot",
        help="play a bot through scripted scenarios and report every non-conforming answer",
        description="Play a bot through scripted scenarios (every preset, 3 and 8 players, "
        "secret pain suits, two pain cards, a pain card kept in the hand, a short clock) "
        "against the referee's house bots; report each non-conforming answer with what the "
        "bot sent and what was expected. Exit status 1 when any scenario fails.",
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
    chk.add_argument("--seed", type=_u64, default=1, help="seed of the first scenario (default 1)")
    chk.add_argument(
        "--strikes", type=int, default=3, help="faults before the seat forfeits (default 3)"
    )
    chk.add_argument(
        "--startup-ms",
        type=int,
        default=0,
        help="time the bot has to connect (default 10000; 60000 with --connect)",
    )
    chk.add_argument("--out", help="keep match records and bot logs here (default: a temp folder)")
    chk.add_argument(
        "--host", default="127.0.0.1", help="address to serve bots on (default 127.0.0.1)"
    )
    chk.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    chk.add_argument(
        "--no-sandbox",
        action="store_true",
        help="start the bot without a sandbox, as this user and with the network",
    )
    chk.add_argument("--log-level", default="error", choices=["debug", "info", "warning", "error"])
    chk.set_defaults(func=_check_bot)

    wb = sub.add_parser("web", help="browse a finished tournament's output folder in a web browser")
    wb.add_argument("folder", help="the tournament's output folder (its `out`, with matches/)")
    wb.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    wb.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: any free port)")
    wb.set_defaults(func=_web)

    rp = sub.add_parser("replay", help="re-check a match record and print it trick by trick")
    rp.add_argument("file", help="a match record (.jsonl)")
    rp.set_defaults(func=_replay)
    return parser


def _u64(text: str) -> int:
    value = int(text)
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"{text} is not a seed; allowed: 0 to 2**64-1")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``referee`` console script."""
    global _env_deal_key
    from referee.dealkey import KEY_ENV

    # Records, bot logs and databases are the organiser's alone (0600 in 0700 folders),
    # whoever creates them; and the deal key never reaches a child process.
    os.umask(0o077)
    _env_deal_key = os.environ.pop(KEY_ENV, None)
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "tls_cert", None) and not getattr(args, "tls_key", None):
        parser.error("--tls-cert needs --tls-key")
    try:
        result: int = args.func(args)
        sys.stdout.flush()
    except UsageError as exc:
        print(f"referee {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of stdout went away (``referee replay ... | head``): stop quietly, as
        # a program killed by SIGPIPE would, and keep the interpreter's last flush from
        # failing too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return result


if __name__ == "__main__":
    sys.exit(main())
