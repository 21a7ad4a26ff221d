"""What the ``referee`` commands share: the usage error, the event loop they run on, the
sandbox they start bots in, the deal key they are given."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction

#: The deal key given in the environment (``$STICHELN_DEAL_KEY``), taken out of the
#: environment when the command starts (:func:`take_deal_key_from_environment`) so that no
#: bot process can inherit it.
_env_deal_key: str | None = None


def take_deal_key_from_environment() -> None:
    """Move ``$STICHELN_DEAL_KEY`` out of the environment, for :func:`given_deal_key`."""
    global _env_deal_key
    from referee.match.dealkey import KEY_ENV

    _env_deal_key = os.environ.pop(KEY_ENV, None)


class UsageError(Exception):
    """A user mistake: printed as one line (one per line of its text, each with the
    command's name), exit status 2."""


def u64(text: str) -> int:
    value = int(text)
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"{text} is not a seed; allowed: 0 to 2**64-1")
    return value


LOG_LEVELS = ("debug", "info", "warning", "error")
#: The sandbox tiers --sandbox chooses from (referee match, referee compare).
SANDBOX_TIERS = ("bubblewrap", "gvisor", "strongest")


def add_log_level(
    parser: argparse.ArgumentParser, default: str | None, who: str = "the referee", said: str = ""
) -> None:
    """``--log-level``: how much ``who`` logs on stderr (``said`` explains a default of None)."""
    parser.add_argument(
        "--log-level",
        default=default,
        choices=LOG_LEVELS,
        help=said or f"how much {who} logs on stderr (default {default})",
    )


def add_web_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """``--web-port`` and ``--web-host``: serve ``what`` (pages named in words) while the
    command runs."""
    parser.add_argument(
        "--web-port",
        type=int,
        default=None,
        help=f"serve {what} on this port while it runs (0: any free port)",
    )
    parser.add_argument(
        "--web-host", default="127.0.0.1", help="address of the web pages (default 127.0.0.1)"
    )


def add_bot_uids(parser: argparse.ArgumentParser) -> None:
    """The ``--bot-uids`` option of the commands that start bots."""
    parser.add_argument(
        "--bot-uids",
        metavar="FIRST-LAST",
        help="the uids bots run as when the referee is root, one of its own for each running "
        "bot process (default $STICHELN_BOT_UIDS, else 1879048192-1879113727)",
    )


def sandbox_for(
    mode: str,
    bots: Sequence[Any],
    say: bool = True,
    bot_uids: str | None = None,
    announce: bool = True,
) -> Any:
    """The sandbox for ``bots`` (a :class:`referee.jail.sandbox.Sandbox`), said on stderr
    (``say``); when some bot is to be started and no sandbox can be made here, a one-line
    refusal. ``bot_uids`` (``--bot-uids``) becomes ``$STICHELN_BOT_UIDS`` for this process
    and the workers it starts, so that every sandbox of the run leases from that range.
    With ``announce`` false nothing is said yet: :func:`announce_sandbox` says it once the
    command's other inputs are checked, so that a refusal is its one line."""
    from referee.jail.botusers import RANGE_ENV, parse_range
    from referee.jail.sandbox import Sandbox, SandboxUnavailable

    if bot_uids is not None:
        try:
            parse_range(bot_uids)
        except ValueError as exc:
            raise UsageError(f"--bot-uids: {exc}") from None
        os.environ[RANGE_ENV] = bot_uids
    try:
        sandbox = Sandbox(mode)
    except ValueError as exc:  # the bots' uid range the environment names
        raise UsageError(str(exc)) from None
    if any(not b.external for b in bots):
        try:
            if sandbox.enabled:
                sandbox.check()
        except SandboxUnavailable as exc:
            raise UsageError(str(exc)) from None
    if announce:
        announce_sandbox(sandbox, bots, say)
    return sandbox


def announce_sandbox(sandbox: Any, bots: Sequence[Any], say: bool) -> None:
    """Say how started bots are confined and bounded (see :func:`sandbox_for`)."""
    if any(not b.external for b in bots):
        if say:
            print(sandbox.describe(), file=sys.stderr)
        _say_bounds(say)


def announce_reads(sandbox: Any, bots: Sequence[Any], write: Any = None) -> None:
    """What each bot the run starts may read of the host, and how large it is: a line per
    bot on stderr (or through ``write``), before the first match. Its runtime
    (:mod:`referee.jail.runtime`) and its own paths, counted; a runtime that cannot run
    here is said in its line (the bot's start then fails with the same words)."""
    from referee.jail import runtime
    from referee.match.pool import bot_reads

    if not sandbox.enabled:
        return
    say = write or (lambda text: print(text, file=sys.stderr, flush=True))
    for bot in bots:
        if bot.external:
            continue
        try:
            reads = bot_reads(bot).describe()
        except OSError as exc:
            say(f"{bot.name} reads nothing: {exc}")
            continue
        files, size = runtime.measure([bot.workdir, *bot.read])
        say(
            f"{bot.name} reads {reads}, its folder and read paths ({files:,} files, "
            f"{size / (1 << 20):,.1f} MiB) and a few files of /etc"
        )


def _say_bounds(say: bool) -> None:
    """How started bots are bounded, in one line: always when no cgroup per bot can be
    made here (the referee falls back to resource limits), else with ``say``."""
    from referee.jail import cgroups

    if say or not isinstance(cgroups.system(), cgroups.Cgroups):
        print(cgroups.describe(), file=sys.stderr)


def add_grant_flags(parser: argparse.ArgumentParser) -> None:
    """``--read`` and ``--max-limit``: the organiser's grants, for a command without an
    organiser's file (:mod:`referee.jail.policy`)."""
    parser.add_argument(
        "--read",
        action="append",
        default=[],
        metavar="PATH",
        help="let every started bot read PATH (read-only), and its bot file name paths in "
        "it (repeatable; never /proc, /sys, /dev, /run or the output folder)",
    )
    parser.add_argument(
        "--max-limit",
        action="append",
        default=[],
        metavar="KEY=N",
        help="the most a bot file's [limits] KEY may ask for (repeatable; default: "
        "cpu_seconds=600, memory_mb=4096, processes=256, cpus=0 (no quota), log_mb=4)",
    )


def grants_from_flags(args: argparse.Namespace) -> tuple[Any, list[tuple[str, Path]]]:
    """The grants of ``--read`` and ``--max-limit`` (a
    :class:`referee.jail.policy.Grants`), and each granted path with its flag; a
    one-line :class:`UsageError` for a path that does not exist or that no bot may read."""
    from referee.config.errors import ConfigFileError
    from referee.config.tables import MaxLimitsTable, granted_paths, validate

    maxima: dict[str, Any] = {}
    for word in args.max_limit:
        key, sep, value = word.partition("=")
        try:
            number = float(value) if "." in value else int(value)
        except ValueError:
            number = None
        if not sep or number is None:
            raise UsageError(
                f"--max-limit {word!r} is not allowed; allowed: KEY=N with KEY one of "
                f"{', '.join(MaxLimitsTable.model_fields)}, e.g. --max-limit memory_mb=8192"
            )
        maxima[key.strip()] = number
    try:
        table = validate(MaxLimitsTable, maxima, "--max-limit")
        granted: list[tuple[str, Path]] = []
        for path in args.read:
            granted += granted_paths([path], Path.cwd(), "--read", "", ConfigFileError)
    except ConfigFileError as exc:
        raise UsageError(str(exc)) from None
    from referee.jail.policy import Grants

    grants = Grants(
        read=tuple(p for _, p in granted),
        max_limits=table.max_limits(),
        source="--read",
        max_how="--max-limit KEY=N",
        sandboxed=not args.no_sandbox,
    )
    return grants, granted


def check_reads(
    bots: Sequence[Any], granted: list[tuple[str, Path]], out: Path, sandboxed: bool
) -> None:
    """Refuse in one line a ``--read`` or a bot's path that no bot may read with this
    output folder (:func:`referee.jail.policy.check_run`)."""
    from referee.jail.policy import check_run, never_readable

    check_run(bots, granted, never_readable(out), "", UsageError, sandboxed)


def add_preflight_flag(parser: argparse.ArgumentParser) -> None:
    """The ``--no-preflight`` flag of the commands that check their bots start first."""
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the start check: by default each bot is started once before the first "
        "match and must complete its handshake, or nothing is played",
    )


async def preflight(
    args: argparse.Namespace,
    bots: Sequence[Any],
    sandbox: Any,
    startup_ms: int,
    log_dir: Path,
    *,
    server: Any = None,
    host: str = "127.0.0.1",
    tls: Any = None,
) -> None:
    """Unless ``--no-preflight``: start each bot once (:mod:`referee.match.preflight`) on
    ``server`` (or a server of its own on ``host``); a bot that does not complete its
    handshake stops the command with one line per such bot (:class:`UsageError`)."""
    if getattr(args, "no_preflight", False):
        return
    from referee.jail.sandbox import SandboxUnavailable
    from referee.match.preflight import check_starts, check_starts_on_own_server

    try:
        if server is not None:
            failures = await check_starts(server, bots, startup_ms / 1000, log_dir)
        else:
            failures = await check_starts_on_own_server(
                bots, sandbox, startup_ms / 1000, log_dir, host, tls
            )
    except SandboxUnavailable as exc:
        raise UsageError(str(exc)) from None
    if failures:
        raise UsageError("\n".join(f.line() for f in failures))


def print_aborted(result: Any) -> int:
    """``referee match``'s report of a match that was not played; exit status 1."""
    print(f"match {result.match_id} {result.reason}; it was not played", file=sys.stderr)
    for s in result.seats:
        for f in s.faults:
            print(f"  seat {s.seat} {s.bot}: {f.reason.value}: {f.detail}", file=sys.stderr)
    print(f"record: {result.record_path}", file=sys.stderr)
    return 1


def given_deal_key(args: argparse.Namespace) -> Any:
    """The deal key of ``--deal-key-file`` or ``$STICHELN_DEAL_KEY``, or None."""
    from referee.match.dealkey import KEY_ENV, DealKey

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


def load_tournament(args: argparse.Namespace) -> Any:
    """The tournament file, with ``--db`` in place of its database."""
    import dataclasses

    from referee.results.store import is_url
    from referee.tournament.config import ConfigError, load_config

    try:
        config = load_config(args.file)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.db:
        target = args.db if is_url(args.db) else str(Path(args.db).resolve())
        config = dataclasses.replace(config, database=target)
    # What no bot may read is known only now: the database of --db, the deal key file.
    key_file = getattr(args, "deal_key_file", None)
    try:
        config.check_reads(Path(key_file) if key_file else None)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return config


async def linger(seconds: float, host: str, port: int) -> None:
    """After the tournament: keep the process up for ``seconds`` (or until SIGTERM/SIGINT),
    so that the metrics endpoint answers a last scrape with the final values. On a fixed
    ``port`` the gRPC health service answers too: the server SERVING (the process is
    healthy), ``sticheln.v1.Referee`` NOT_SERVING (no more matches)."""
    from referee.match.server import SERVICE_NAME, RefereeServer

    server: RefereeServer | None = None
    try:
        if port:
            server = RefereeServer()
            await server.start(host, port)
            await server.set_serving(SERVICE_NAME, False)
        until = "until stopped" if math.isinf(seconds) else f"for {seconds:g} s"
        print(f"tournament over; serving metrics {until}", file=sys.stderr, flush=True)
        if math.isinf(seconds):
            await asyncio.Event().wait()
        else:
            await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        pass  # SIGTERM or SIGINT ends the linger early; the tournament's result stands
    finally:
        if server is not None:
            await server.stop(0)


def run_until_done(main: Coroutine[Any, Any, int], interrupted: str) -> int:
    """Run ``main`` on a new event loop; SIGINT or SIGTERM cancels it, prints
    ``interrupted`` and returns 130. Every bot process is killed on the way out."""
    from referee.jail.process import kill_all_bots
    from referee.runtime import eventloop

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
        _wind_down(loop)
        loop.close()


def _wind_down(loop: asyncio.AbstractEventLoop, within: float = 2.0) -> None:
    """Cancel what still runs on ``loop`` once the command's work is over (an interrupted
    match leaves streams and timers behind), and keep asyncio's reports of the tasks and
    futures that ended with it ("Task was destroyed but it is pending!", "exception was
    never retrieved") off the user's terminal: they are a debug log line."""
    import structlog

    log = structlog.get_logger("referee.cli")

    def quiet(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        log.debug("after_exit", message=context.get("message"), error=repr(exc) if exc else None)

    loop.set_exception_handler(quiet)
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    # The bots were just killed: reap them, so that no process transport outlives the loop.
    from referee.jail.process import live_bots

    reaped = [loop.create_task(bot.proc.wait()) for bot in live_bots()]
    if tasks or reaped:
        loop.run_until_complete(asyncio.wait({*tasks, *reaped}, timeout=within))
    loop.run_until_complete(loop.shutdown_asyncgens())
