"""Where a tournament's matches are played: in this process, or in referee worker processes.

One Python process moves gRPC messages on one core at a time. With ``parallel`` matches
at once on a machine with more than two cores, the tournament therefore starts referee
worker processes (``python -m referee.tournament.worker``), each with its own gRPC server, bot
pool and event loop, and lends every match to the least busy one. The tournament process
keeps everything that must be single: the schedule, the database, the live Elo, the
progress bar and the metrics endpoint. Workers send it, over their stdin/stdout pipes,
when a match starts (its record path), the match's metric events in small batches, and
the finished :class:`~referee.match.runner.MatchResult`.

A worker never outlives the tournament: it exits when its stdin closes (the tournament
process ended, even by SIGKILL) and is killed by the kernel when its parent dies
(``PR_SET_PDEATHSIG`` on Linux); its bots are killed with it. A worker that dies during a
match loses only that match, which the tournament plays again on a fresh worker.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import pickle
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from referee.jail.bots import BotSpec
from referee.jail.sandbox import DEFAULT_MODE, Sandbox
from referee.match.faults import FaultReason
from referee.match.pool import BotPool
from referee.match.runner import Clock, MatchResult, MatchRunner
from referee.match.server import RefereeServer
from referee.rules import RuleSet

if TYPE_CHECKING:
    # The tournament's process keeps the metrics; a worker only sends their events, and
    # need not import prometheus_client (its HTTP server, email parsing) to start.
    from referee.match.metrics import RefereeMetrics

log = structlog.get_logger("referee.tournament")

_FRAME = struct.Struct(">I")


@dataclass(frozen=True)
class MatchJob:
    """Everything a worker needs to play one scheduled match."""

    index: int
    bots: tuple[BotSpec, ...]
    rules: RuleSet
    seed: int
    match_id: str
    clock: Clock
    strike_limit: int
    out_dir: Path
    #: The deal number and the deal key's commitment, written in the record's header.
    deal: int | None = None
    deal_key_commitment: str = ""
    #: Why MatchEnd withholds the seed ("" reveals it): see MatchRunner.
    seed_withheld: str = ""
    #: ``MatchStart.bot_seed`` per seat (empty: fresh random seeds): see MatchRunner.
    bot_seeds: tuple[int, ...] = ()
    #: Flush every record line as it is written: the tournament's web page shows the
    #: running match card by card from the growing file (else it is flushed per round).
    live: bool = False
    #: Per seat, its bot's submission number and code hash (None: none), for the header.
    code: tuple[tuple[int, str] | None, ...] = ()


class WorkerDied(Exception):
    """A referee worker process ended while it was playing a match."""


class MatchPlayer(Protocol):
    """Plays matches; ``started`` is called with the record path once the match begins."""

    async def play(self, job: MatchJob, started: Callable[[Path], None]) -> MatchResult: ...
    async def close(self) -> None: ...
    def cpu_seconds(self) -> float: ...


async def start_player(
    count: int,
    metrics: RefereeMetrics,
    *,
    log_dir: Path,
    startup_s: float,
    pooled: bool,
    sandbox: str,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    single_use: bool = False,
) -> MatchPlayer:
    """What plays the matches, started: ``count`` referee worker processes, or (``count``
    1) this process, serving bots on ``host``:``port``. Bot logs go to ``log_dir``."""
    if count > 1:
        processes = WorkerProcesses(
            count,
            metrics,
            log_dir=log_dir,
            startup_s=startup_s,
            pooled=pooled,
            host=host,
            log_level=log_level,
            sandbox=sandbox,
            single_use=single_use,
        )
        await processes.start()
        return processes
    here = InProcess(metrics, log_dir, startup_s, pooled, sandbox, single_use)
    await here.start(host, port)
    return here


class InProcess:
    """Every match in this process, on one gRPC server (the only choice for external bots)."""

    def __init__(
        self,
        metrics: RefereeMetrics,
        log_dir: Path,
        startup_s: float,
        pooled: bool,
        sandbox: str = DEFAULT_MODE,
        single_use: bool = False,
    ) -> None:
        self.metrics = metrics
        self.single_use = single_use
        self.server = RefereeServer(observer=metrics, sandbox=Sandbox(sandbox))
        self.log_dir = log_dir
        self.startup_s = startup_s
        self.pooled = pooled
        self.pool: BotPool | None = None

    async def start(self, host: str, port: int) -> None:
        """Start the gRPC server (and the bot pool)."""
        await self.server.start(host, port)
        if self.pooled or self.single_use:
            self.pool = BotPool(
                self.server, self.log_dir, self.startup_s, single_use=self.single_use
            )

    async def play(self, job: MatchJob, started: Callable[[Path], None]) -> MatchResult:
        """Play ``job`` here."""
        runner = _runner(self.server, job, self.metrics, self.pool)
        started(runner.record_path)
        return await runner.run()

    async def close(self) -> None:
        """Stop the bots and the server."""
        if self.pool is not None:
            await self.pool.close()
        await self.server.stop(1.0)

    def cpu_seconds(self) -> float:
        """This process's CPU time."""
        return time.process_time()


def _runner(
    server: RefereeServer, job: MatchJob, observer: Any, pool: BotPool | None
) -> MatchRunner:
    runner = MatchRunner(
        server,
        list(job.bots),
        job.rules,
        seed=job.seed,
        match_id=job.match_id,
        clock=job.clock,
        strike_limit=job.strike_limit,
        out_dir=job.out_dir,
        observer=observer,
        pool=pool,
        seed_withheld=job.seed_withheld,
        deal=job.deal,
        deal_key_commitment=job.deal_key_commitment,
        bot_seeds=job.bot_seeds,
        code=job.code,
    )
    if job.live:
        runner.on_record = _flush_each_line(runner)
    return runner


def _flush_each_line(runner: MatchRunner) -> Callable[[dict[str, Any]], None]:
    """A record hook that pushes each line to the file as soon as it is written."""

    def flush(line: dict[str, Any]) -> None:
        if runner._record is not None:
            runner._record.flush()

    return flush


# -- the tournament's side of the pipes -------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    proc: asyncio.subprocess.Process
    reader: asyncio.Task[None] | None = None
    pending: dict[int, tuple[asyncio.Future[MatchResult], Callable[[Path], None]]] = field(
        default_factory=dict
    )
    ready: asyncio.Future[str] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    cpu_s: asyncio.Future[float] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    dead: bool = False
    #: Copies the worker's stderr (its log lines) to this process's.
    echo: asyncio.Task[None] | None = None


class WorkerProcesses:
    """Matches spread over ``count`` referee worker processes."""

    def __init__(
        self,
        count: int,
        metrics: RefereeMetrics,
        *,
        log_dir: Path,
        startup_s: float,
        pooled: bool,
        host: str = "127.0.0.1",
        log_level: str = "info",
        sandbox: str = DEFAULT_MODE,
        single_use: bool = False,
    ) -> None:
        self.count = count
        self.metrics = metrics
        self.args = (
            [
                "--sandbox",
                sandbox,
                "--log-dir",
                str(log_dir),
                "--startup-s",
                repr(startup_s),
                "--host",
                host,
                "--log-level",
                log_level,
            ]
            + (["--pooled"] if pooled else [])
            + (["--single-use"] if single_use else [])
        )
        self.workers: list[_Worker] = []
        self._cpu_done = 0.0
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Start every worker and wait until each serves."""
        await asyncio.gather(*(self._spawn() for _ in range(self.count)))

    async def _spawn(self) -> _Worker:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "referee.tournament.worker",
            *self.args,
            f"--parent-pid={os.getpid()}",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            # Its log lines reach the terminal through this process's sys.stderr, where a
            # live progress line keeps them on lines of their own.
            stderr=asyncio.subprocess.PIPE,
            # Out of the terminal's process group: a Ctrl-C is this process's to act on,
            # and cannot interrupt a worker that is still starting.
            start_new_session=True,
        )
        worker = _Worker(proc)
        worker.reader = asyncio.ensure_future(self._read(worker))
        worker.echo = asyncio.ensure_future(_echo(proc.stderr))
        self.workers.append(worker)
        address = await worker.ready
        log.debug("worker_ready", pid=proc.pid, address=address)
        return worker

    async def play(self, job: MatchJob, started: Callable[[Path], None]) -> MatchResult:
        """Lend ``job`` to the least busy worker; a fresh worker replaces one that died."""
        async with self._lock:
            # A worker whose pipe is closing has died, though its reader may not have
            # seen the end of its output yet.
            live = [w for w in self.workers if not w.dead and not _closing(w)]
            worker = min(live, key=lambda w: len(w.pending)) if live else await self._spawn()
        future: asyncio.Future[MatchResult] = asyncio.get_running_loop().create_future()
        worker.pending[job.index] = (future, started)
        try:
            _send(worker, ("match", job))
        except (RuntimeError, OSError) as exc:  # its pipe closed under the write
            worker.dead = True
            worker.pending.pop(job.index, None)
            raise WorkerDied(
                f"the referee worker given match {job.index} had died ({exc})"
            ) from None
        return await future

    async def _read(self, worker: _Worker) -> None:
        stdout = worker.proc.stdout
        assert stdout is not None
        why = "it exited"
        try:
            while True:
                try:
                    head = await stdout.readexactly(_FRAME.size)
                    body = await stdout.readexactly(_FRAME.unpack(head)[0])
                except asyncio.IncompleteReadError:
                    break
                self._handle(worker, pickle.loads(body))
        except Exception as exc:  # a broken pipe or a bad frame: treat the worker as dead
            why = f"its pipe broke: {exc}"
        worker.dead = True
        code = await worker.proc.wait()
        if not worker.ready.done():
            worker.ready.set_exception(
                WorkerDied(f"a referee worker process did not start ({why}, exit status {code})")
            )
        if not worker.cpu_s.done():
            worker.cpu_s.set_result(0.0)
        for index, (future, _) in worker.pending.items():
            if not future.done():
                future.set_exception(
                    WorkerDied(
                        f"the referee worker playing match {index} died ({why}, exit status {code})"
                    )
                )
        worker.pending.clear()

    def _handle(self, worker: _Worker, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "metrics":
            _apply(self.metrics, message[1])
        elif kind == "started":
            entry = worker.pending.get(message[1])
            if entry is not None:
                entry[1](message[2])
        elif kind == "done":
            done = worker.pending.pop(message[1], None)
            if done is not None and not done[0].done():
                done[0].set_result(message[2])
        elif kind == "failed":
            failed = worker.pending.pop(message[1], None)
            if failed is not None and not failed[0].done():
                failed[0].set_exception(RuntimeError(message[2]))
        elif kind == "ready":
            worker.ready.set_result(message[1])
        elif kind == "cpu":
            worker.cpu_s.set_result(message[1])

    async def close(self) -> None:
        """Ask every worker to stop its bots and exit; kill one that does not."""
        for worker in self.workers:
            if not worker.dead:
                with contextlib.suppress(Exception):
                    _send(worker, ("stop",))
                    assert worker.proc.stdin is not None
                    worker.proc.stdin.close()
        for worker in self.workers:
            try:
                await asyncio.wait_for(asyncio.shield(worker.proc.wait()), 10.0)
            except TimeoutError:
                worker.proc.kill()
                await worker.proc.wait()
            if worker.reader is not None:
                await worker.reader
            if worker.echo is not None:
                await worker.echo
            self._cpu_done += await worker.cpu_s
        self.workers.clear()

    def cpu_seconds(self) -> float:
        """This process's CPU time plus that of the workers that have stopped."""
        return time.process_time() + self._cpu_done


async def _echo(stream: asyncio.StreamReader | None) -> None:
    """Write every line of a worker's stderr to this process's, until it ends."""
    if stream is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    # Read in chunks, not lines: no line is too long to pass (the worker must never block
    # on a full pipe); a line cut in two is joined again by whatever stderr is.
    with contextlib.suppress(Exception):
        while chunk := await stream.read(1 << 16):
            sys.stderr.write(decoder.decode(chunk))
            sys.stderr.flush()


def _closing(worker: _Worker) -> bool:
    stdin = worker.proc.stdin
    return stdin is None or stdin.is_closing()


def _send(worker: _Worker, message: tuple[Any, ...]) -> None:
    stdin = worker.proc.stdin
    assert stdin is not None
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stdin.write(_FRAME.pack(len(body)) + body)


def _apply(metrics: RefereeMetrics, events: list[tuple[Any, ...]]) -> None:
    for event in events:
        kind = event[0]
        if kind == "d":
            metrics.decision(event[1], event[2], event[3])
        elif kind == "f":
            metrics.fault(event[1], FaultReason(event[2]))
        elif kind == "t":
            metrics.trick()
        elif kind == "r":
            metrics.round()
        elif kind == "+":
            metrics.stream_attached()
        elif kind == "-":
            metrics.stream_closed()


# -- the worker's side -------------------------------------------------------------------------


class _Batch:
    """The match runner's observer in a worker: metric events, sent in small batches."""

    def __init__(self, out: Callable[[tuple[Any, ...]], None], every_s: float = 0.25) -> None:
        self.out = out
        self.every_s = every_s
        self.events: list[tuple[Any, ...]] = []
        self._timer: asyncio.TimerHandle | None = None

    def _add(self, event: tuple[Any, ...]) -> None:
        self.events.append(event)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.every_s, self.flush)

    def flush(self) -> None:
        """Send what has gathered."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.events:
            events, self.events = self.events, []
            self.out(("metrics", events))

    def decision(self, bot: str, phase: str, think_s: float) -> None:
        self._add(("d", bot, phase, think_s))

    def fault(self, bot: str, reason: FaultReason) -> None:
        self._add(("f", bot, reason.value))

    def trick(self) -> None:
        self._add(("t",))

    def round(self) -> None:
        self._add(("r",))

    def stream_attached(self) -> None:
        self._add(("+",))

    def stream_closed(self) -> None:
        self._add(("-",))


async def serve_worker(
    host: str,
    log_dir: Path,
    startup_s: float,
    pooled: bool,
    inbox: Any,
    outbox: Any,
    sandbox: str = DEFAULT_MODE,
    single_use: bool = False,
) -> None:
    """A worker's life: serve gRPC, play the matches the tournament sends, stop on "stop"
    or when the tournament's end of the pipe closes."""
    write = outbox.write
    flush = outbox.flush

    def out(message: tuple[Any, ...]) -> None:
        body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        write(_FRAME.pack(len(body)) + body)
        flush()

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), inbox)
    batch = _Batch(out)
    server = RefereeServer(observer=batch, sandbox=Sandbox(sandbox))
    await server.start(host, 0)
    pool = (
        # This worker's own log names: its processes are numbered from 1, as every other
        # worker's are, in the tournament's one log folder.
        BotPool(server, log_dir, startup_s, single_use=single_use, process_tag=f"w{os.getpid()}-")
        if pooled or single_use
        else None
    )
    matches: set[asyncio.Task[None]] = set()

    async def play(job: MatchJob) -> None:
        runner = _runner(server, job, batch, pool)
        out(("started", job.index, runner.record_path))
        try:
            result = await runner.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            batch.flush()
            out(("failed", job.index, f"match {job.match_id} failed in the referee: {exc!r}"))
            return
        batch.flush()
        out(("done", job.index, result))

    out(("ready", server.address))
    try:
        while True:
            try:
                head = await reader.readexactly(_FRAME.size)
                message = pickle.loads(await reader.readexactly(_FRAME.unpack(head)[0]))
            except asyncio.IncompleteReadError:
                break
            if message[0] == "stop":
                break
            task = asyncio.ensure_future(play(message[1]))
            matches.add(task)
            task.add_done_callback(matches.discard)
        if matches:
            # Stopped while matches run: the tournament is ending (interrupted).
            for task in list(matches):
                task.cancel()
            await asyncio.gather(*matches, return_exceptions=True)
    finally:
        if pool is not None:
            await pool.close()
        await server.stop(0.5)
        batch.flush()
        with contextlib.suppress(OSError):
            out(("cpu", time.process_time()))


def default_workers(parallel: int, cores: int | None = None) -> int:
    """Referee processes for ``parallel`` matches at once: one per core but one, at most one
    per match, at least one (this process alone: no worker processes).

    One core is left to the bots, which answer every decision the referee sends. Matches
    that share a referee process also share its gRPC poller, which then hands over several
    messages per wake-up: on two cores, four matches at once in one process took about a
    fifth less referee CPU per decision, and finished more matches per second, than in two
    worker processes (``benchmarks/tournament.py``, docs/performance.md).
    """
    if cores is None:
        cores = (
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        ) or 1
    return max(1, min(parallel, cores - 1))
