"""Test helpers for matches with real bot processes on a real loopback server.

Not a bot: the tests import it as ``bots.harness``. Every bot command carries a marker
argument unique to its test, so :func:`processes_with` finds any process a test left.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import sys
import time
import uuid
from collections.abc import Coroutine, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from referee.config.bots import bot_from_table
from referee.jail import launch
from referee.jail.bots import BotSpec
from referee.match.faults import fallback_action
from referee.match.record import replay
from referee.match.runner import Clock, MatchResult, MatchRunner
from referee.match.server import RefereeServer
from referee.rules import Match, Phase, RuleSet, from_table, parse_card, preset
from referee.runtime import eventloop

BOTS_DIR = Path(__file__).resolve().parent
T = TypeVar("T")

#: The clock of a match whose subject is not the clock: ten times and more what an honest
#: seat needs on a loaded machine. A test bot answers in about a millisecond, but a
#: machine at a load average of 20 on two cores holds a process back for up to a second,
#: and a bot's start (a Python interpreter loading gRPC) takes seconds there. An honest
#: bot answers at once all the same, so the room costs a test no time.
ROOMY = Clock(decision_ms=10_000, time_bank_ms=0, startup_ms=60_000)


def new_marker() -> str:
    """A unique string for one test's bot command lines."""
    return f"sticheln-test-{uuid.uuid4().hex}"


#: ``referee match`` / ``check-bot``'s grant of the test bots' folder: a bot file written
#: elsewhere whose ``workdir`` is that folder runs only with the organiser's leave.
READ_BOTS = ("--read", str(BOTS_DIR))


def bot_table(
    script: str,
    marker: str,
    name: str | None = None,
    env: dict[str, str] | None = None,
    limits: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A bot file's table for ``tests/bots/<script>``, started with this interpreter."""
    table: dict[str, Any] = {
        "name": name or script.removesuffix(".py").removesuffix("_bot"),
        "command": [sys.executable, script, f"--marker={marker}"],
        "workdir": str(BOTS_DIR),
        "env": dict(env or {}),
    }
    if limits:
        table["limits"] = dict(limits)
    return table


def bot(script: str, marker: str, **kwargs: Any) -> BotSpec:
    """A command bot from ``tests/bots/``, through the bot-file loader."""
    return bot_from_table(bot_table(script, marker, **kwargs), source=script)


def toml_text(table: dict[str, Any]) -> str:
    """A bot file's text (enough TOML for what :func:`bot_table` produces)."""
    lines = []
    for key, value in table.items():
        if not isinstance(value, dict):
            lines.append(f"{key} = {json.dumps(value)}")
    for key, value in table.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            lines.extend(f"{k} = {json.dumps(v)}" for k, v in value.items())
    return "\n".join(lines) + "\n"


def collect_reports(folder: Path) -> None:
    """Write the files the test bots told of in their logs under ``folder`` (``@a PATH
    TEXT`` appends a line, ``@w PATH TEXT`` replaces the file; see ``botlib.tell``)."""
    files: dict[str, list[str]] = {}
    for log in sorted(folder.rglob("*.log")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            kind, _, rest = line.partition(" ")
            if kind not in ("@a", "@w"):
                continue
            path, _, text = rest.partition(" ")
            if kind == "@w":
                files[path] = []
            files.setdefault(path, []).append(text)
    for path, lines in files.items():
        Path(path).write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")


def processes_with(marker: str, bots_only: bool = False) -> list[int]:
    """Live processes whose command line contains ``marker`` (``bots_only``: the bots
    themselves, as :func:`bot_commands` tells them)."""
    if bots_only:
        return list(bot_commands(marker))
    return list(_commands_with(marker))


def bot_commands(marker: str) -> dict[int, list[str]]:
    """The command line of each live bot process whose command line contains ``marker``:
    not the bubblewrap processes around a sandboxed bot, nor the jail's launcher while it
    starts one (``launch.command()``), whose command lines hold the bot's after their own."""
    launcher = launch.command()[1:4]  # -I -S -c
    found = {}
    for pid, argv in _commands_with(marker).items():
        if Path(argv[0]).name == "bwrap" or argv[1:4] == launcher:
            continue
        found[pid] = argv
    return found


def _commands_with(marker: str) -> dict[int, list[str]]:
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found[int(entry.name)] = cmdline.rstrip(b"\0").decode(errors="replace").split("\0")
    return found


def assert_no_processes(marker: str, within: float = 3.0) -> None:
    """Every process with ``marker`` is gone (a killed one may take a moment to vanish)."""
    deadline = time.monotonic() + within
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not left, f"bot processes left behind: {left}"


async def play_match(
    bots: Sequence[BotSpec],
    rules: RuleSet | None = None,
    *,
    out_dir: Path,
    seed: int = 7,
    clock: Clock = ROOMY,
    strike_limit: int = 3,
    server: RefereeServer | None = None,
    bot_seeds: Sequence[int] = (),
    untimed: Sequence[int] = (),
) -> MatchResult:
    """One match on a fresh loopback server (or ``server``); ``bot_seeds`` are the seats'
    ``MatchStart.bot_seed`` (default: fresh random ones). The seats in ``untimed`` are
    never late (as check-bot's house seats): a test of the clock times the late bot alone
    and never relies on an honest bot being fast."""
    own = server is None
    if server is None:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
    try:
        runner = MatchRunner(
            server,
            bots,
            rules or preset("sticheln"),
            seed=seed,
            clock=clock,
            strike_limit=strike_limit,
            out_dir=out_dir,
            bot_seeds=bot_seeds,
            untimed=untimed,
        )
        async with asyncio.timeout(300):
            return await runner.run()
    finally:
        if own:
            await server.stop(0.5)


# One event loop for every test: grpc.aio binds itself to a loop, and moving it from loop
# to loop (a new one per test) is where grpc is least robust (grpc/grpc#31441).
_RUNNER = asyncio.Runner(loop_factory=eventloop.new_event_loop)
atexit.register(_RUNNER.close)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on the tests' shared event loop."""
    return _RUNNER.run(coroutine)


def run_match(bots: Sequence[BotSpec], rules: RuleSet | None = None, **kwargs: Any) -> MatchResult:
    """:func:`play_match` on the tests' event loop."""
    return run(play_match(bots, rules, **kwargs))


def record_lines(path: Path) -> list[dict[str, Any]]:
    """A match record's lines."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def record_faults(lines: Iterable[dict[str, Any]], seat: int) -> list[dict[str, Any]]:
    """The record's fault lines of one seat."""
    return [x for x in lines if x["type"] == "fault" and x["seat"] == seat]


def check_finished(result: MatchResult) -> list[dict[str, Any]]:
    """The match completed: an end line that replay accepts, and the record's faults are
    the result's. Returns the record's lines."""
    lines = record_lines(result.record_path)
    assert lines[-1]["type"] == "end"
    assert lines[-1]["reason"] == "completed"
    account = replay(result.record_path)
    assert account.finished
    assert account.totals == result.totals
    assert account.places == result.places
    for seat in result.seats:
        recorded = record_faults(lines, seat.seat)
        assert [(f["reason"], f["request_id"], f["strikes"]) for f in recorded] == [
            (f.reason.value, f.request_id, f.strikes) for f in seat.faults
        ]
    return lines


def check_decisions(
    lines: Sequence[dict[str, Any]], lowest_seats: Iterable[int]
) -> list[tuple[int, Any, Any]]:
    """Replay the record's decisions through the engine and check them.

    Every fallback decision is the documented fallback, and every decision of a seat in
    ``lowest_seats`` (a lowest-card bot) is its own, equal to the fallback's choice. Returns
    the other seats' own (non-fallback) decisions as (seat, action, fallback action).
    """
    lowest = set(lowest_seats)
    header = lines[0]
    seed = int(next(x for x in lines if x["type"] == "end")["seed"])  # sealed until the end
    match = Match(from_table(header["rules"]), header["players"], seed)
    others = []
    for line in lines:
        if line["type"] not in ("pain", "play"):
            continue
        rnd = match.round
        seat = line["seat"]
        expected = fallback_action(rnd, seat)
        if line["type"] == "pain":
            action: Any = tuple(parse_card(c) for c in line["cards"])
            assert rnd.phase is Phase.PAIN
        else:
            action = parse_card(line["card"])
        if line["fallback"] or seat in lowest:
            assert action == expected, line
        else:
            others.append((seat, action, expected))
        if seat in lowest:
            assert not line["fallback"], line
        if line["type"] == "pain":
            rnd.apply(seat, action)
        else:
            match.apply(seat, action)
    assert match.is_over
    return others


def read_capture(path: Path) -> list[Any]:
    """The messages a bot captured (``CAPTURE``), in the order it received them."""
    import base64

    from sticheln.v1 import bot_pb2

    collect_reports(path.parent)
    if not path.exists():
        return []
    return [
        bot_pb2.RefereeMessage.FromString(base64.b64decode(line))
        for line in path.read_text(encoding="ascii").split()
    ]


def requests_in(messages: Iterable[Any]) -> list[Any]:
    """The decision requests among captured messages."""
    return [m.request for m in messages if m.HasField("request")]


async def cancel_twice(work: Coroutine[Any, Any, T], steps: int) -> tuple[bool, T | None]:
    """Run ``work`` for ``steps`` turns of the event loop, cancel it, and cancel it again a
    turn later (SIGTERM, then Ctrl-C, while it winds down). Whether it finished all the
    same, and its result then (None when it was cancelled)."""
    task = asyncio.ensure_future(work)
    for _ in range(steps):
        await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()
    try:
        return True, await task
    except asyncio.CancelledError:
        return False, None
