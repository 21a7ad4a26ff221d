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


def sandbox_for(mode: str, bots: Sequence[Any], say: bool = True) -> Any:
    """The sandbox for ``bots`` (a :class:`referee.match.sandbox.Sandbox`), said on stderr
    (``say``); when some bot is to be started and no sandbox can be made here, a one-line
    refusal."""
    from referee.match.sandbox import Sandbox, SandboxUnavailable

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
    from referee.match.preflight import check_starts, check_starts_on_own_server
    from referee.match.sandbox import SandboxUnavailable

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
    return config


async def linger(seconds: float, host: str, port: int) -> None:
    """After the tournament: keep the process up for ``seconds`` (or until SIGTERM/SIGINT),
    so that the metrics endpoint answers a last scrape with the final values. On a fixed
    ``port`` the gRPC health service answers too: the server SERVING (the process is
    healthy), ``sticheln.v1.Referee`` NOT_SERVING (no more matches)."""
    from referee.match.server import SERVICE_NAME, RefereeServer

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


def run_until_done(main: Coroutine[Any, Any, int], interrupted: str) -> int:
    """Run ``main`` on a new event loop; SIGINT or SIGTERM cancels it, prints
    ``interrupted`` and returns 130. Every bot process is killed on the way out."""
    from referee.match.bots import kill_all_bots
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
    from referee.match.bots import live_bots

    reaped = [loop.create_task(bot.proc.wait()) for bot in live_bots()]
    if tasks or reaped:
        loop.run_until_complete(asyncio.wait({*tasks, *reaped}, timeout=within))
    loop.run_until_complete(loop.shutdown_asyncgens())
