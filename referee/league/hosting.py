"""Hosted bots: code uploaded to the league (``League.Submit``), built, validated and
played by the league itself, always in the jail (docs/hosting.md).

A submission goes ``validating`` → ``playing`` (the entry's previous playing submission
``retired``) or ``refused`` with a report. Several submissions validate at once, one per
owner, the owner waiting longest first (:mod:`referee.league.turns`), and their check-bot
families share ``validation_jobs`` places. Each:

1. the archive is unpacked from the store into the code folder, by hash
   (:mod:`referee.league.archive`: every hostile archive is refused there);
2. its bot file is read and held to the league's policy like any bot file
   (:func:`referee.config.bots.load_bot`: paths inside its folder only, limits within
   the maxima); a bot file without a ``command`` is refused;
3. the bot file's ``build`` runs once in the jail (:func:`run_build`): its folder
   read-only, a copy in the jail's private ``/tmp`` to build in, no network, the
   league's ``build_timeout_s`` and ``build_memory_mb``, and no more than what is left
   of its owner's ``build_seconds_per_day``; what it leaves there comes out as a tar
   stream, which is unpacked under the same rules and kept in the store by its hash, so
   that no worker builds it again;
4. the start check and the ``referee check-bot`` scenarios, jailed
   (:mod:`referee.match.preflight`, :mod:`referee.match.checkbot`).

Nothing an upload holds runs outside the jail, and a hosted bot's sandbox binds its own
folder only: no upload can read another's code.

Archives and build outputs run to hundreds of MiB: what is done with their bytes
(unpacking, compressing a build's output, hashing, reading and writing them in the
database) happens on a thread of its own with a database connection of its own
(``database``), never on the event loop, which answers the League service meanwhile.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import gzip
import io
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import structlog

from referee.config.bots import load_bot
from referee.config.errors import read_toml
from referee.jail import start as jail_start
from referee.jail.bots import BotConfigError, BotSpec, Limits
from referee.jail.sandbox import STRONGEST, Sandbox
from referee.league.allowances import BUILD, Allowance, when
from referee.league.archive import (
    ArchiveRefused,
    Bounds,
    bot_file_in,
    sha256_hex,
    unpack,
)
from referee.league.config import HostingConfig
from referee.league.retention import Retention, Swept
from referee.league.submissions import Submission, Submissions
from referee.league.turns import OwnerTurns
from referee.match.checkbot import Places, check_bot, scenarios
from referee.match.preflight import check_starts_on_own_server
from referee.match.runner import Clock
from referee.results.store import open_store
from referee.runtime.private import private_dir

log = structlog.get_logger("referee.hosting")
R = TypeVar("R")

#: What a build leaves in its jail comes out as a tar stream of /tmp/build.
#: It runs in a copy of the archive's folder, in the bot file's folder ($1) of that copy.
BUILD_SCRIPT = (
    'set -e; mkdir /tmp/build; cp -R . /tmp/build; cd "/tmp/build/$1"; shift; "$@" >&2; '
    "cd /tmp/build; exec tar -cf - --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner ."
)
#: How long a hosted bot has to start and greet in validation and in a match.
STARTUP_S = 10.0
#: The most lines of a report shown for one failure.
REPORT_TAIL = 20


def hosted_mode(mode: str) -> str:
    """The jail tier hosted code runs in, given the league's ``[sandbox] mode``: the
    strongest the machine has (gVisor where runsc runs, else bubblewrap) unless the league
    names a tier (``"gvisor"`` insists on gVisor, ``"bubblewrap"`` chooses the cheaper
    tier). Never none: a league hosting bots refuses ``mode = "none"``."""
    return mode if mode in ("gvisor", "bubblewrap") else STRONGEST


class Refusal(Exception):
    """A submission that fails validation; the message is its one-line refusal."""

    def __init__(self, line: str, report: list[str] | None = None) -> None:
        super().__init__(line)
        self.report = report or []


@dataclass
class BuildResult:
    """A build's output (a tar stream) or why it failed."""

    tar: bytes
    error: str
    log_path: Path


def read_build(bot_file: Path) -> list[str]:
    """The ``build`` command of a bot file, as an argument list ([] when it has none)."""
    data = read_toml(bot_file, "bot file", BotConfigError)
    build = data.get("build", [])
    if isinstance(build, str):
        return ["/bin/sh", "-c", build] if build.strip() else []
    return [str(x) for x in build]


async def run_build(
    sandbox: Sandbox,
    folder: Path,
    where: str,
    command: list[str],
    *,
    timeout_s: float,
    memory_mb: int,
    max_output: int,
    log_path: Path,
) -> BuildResult:
    """Run ``command`` in the folder ``where`` of a copy of ``folder`` in the jail (the
    folder read-only, a private /tmp of ``max_output`` bytes, no network, ``memory_mb`` for
    all of it, ``timeout_s``): the tar of what it leaves, or why it failed (stderr and the
    command's output go to ``log_path``)."""
    sandbox.check()
    limits = Limits(
        cpu_seconds=max(1, int(timeout_s)), memory_mb=memory_mb, processes=256, log_mb=1
    )
    jail = dataclasses.replace(sandbox, tmp_size_mb=max(1, max_output >> 20))
    user = jail.lease_user()
    try:
        policy = jail.policy(folder, (), None, user.ids if user else None)
        spec = BotSpec(
            name="build",
            command=("/bin/sh", "-c", BUILD_SCRIPT, "build", where, *command),
            workdir=folder,
            limits=limits,
        )
        # The jail's one way in, the build's stdout (its tar) piped back here.
        process = await jail_start(spec, "", "", log_path, policy=policy, stdout_pipe=True)
        proc = process.proc
        out = bytearray()
        error = ""

        async def read() -> None:
            nonlocal error
            assert proc.stdout is not None
            while True:
                chunk = await proc.stdout.read(1 << 16)
                if not chunk:
                    return
                out.extend(chunk)
                if len(out) > max_output + (1 << 20):
                    error = f"the build left more than {max_output >> 20} MiB (max_unpacked_mb)"
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    return

        try:
            await asyncio.wait_for(asyncio.gather(read(), proc.wait()), timeout_s)
        except TimeoutError:
            error = f"the build ran past build_timeout_s = {timeout_s:g} s and was stopped"
        await process.stop(0.5)
        if not error and proc.returncode != 0:
            error = f"the build failed ({process.describe_exit()})"
        return BuildResult(bytes(out), error, log_path)
    finally:
        if user is not None:
            user.release()


def _gzip(tar: bytes) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as gz:
        gz.write(tar)
    return buffer.getvalue()


def _tail(path: Path, lines: int = REPORT_TAIL) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    from referee.match.preflight import printable

    return ["    | " + printable(line) for line in text.splitlines()[-lines:]]


class Hosting:
    """The league's hosted code: the submissions in its store, the code folder, and
    validation (several at once, fair between owners)."""

    def __init__(
        self,
        config: HostingConfig,
        submissions: Submissions,
        sandbox: Sandbox,
        logs: Path,
        startup_s: float = STARTUP_S,
        *,
        clock: Clock | None = None,
        database: Path | str | None = None,
        owner_of: Callable[[str], str] = lambda bot: bot,
    ) -> None:
        self.config = config
        #: The league's clock (decision time and time bank), which validation plays under.
        self.clock = clock or Clock()
        self.submissions = submissions
        self.sandbox = sandbox
        self.logs = logs
        self.startup_s = startup_s
        self.bounds = Bounds(config.max_files, config.max_unpacked_mb << 20)
        #: An entry's owner (validation turns and build budgets are an owner's).
        self.owner_of = owner_of
        self.turns = OwnerTurns(config.validation_jobs)
        #: The check-bot families and start checks of every validation under way share
        #: these places (a scenario that must play alone takes them all).
        self._jobs = Places(config.validation_jobs)
        self._builds: Allowance | None = None
        #: The database of the thread that handles archives' bytes (None: everything on
        #: the caller's thread, with ``submissions``).
        self._database = database
        self._io = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hosting-io")
        self._io_submissions: Submissions | None = None
        #: Called with each sweep of the store (:mod:`referee.league.retention`).
        self.on_swept: list[Callable[[Swept], None]] = []
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: Hosted entries' playing specs, by (bot, submission number).
        self._specs: dict[tuple[str, int], BotSpec] = {}
        #: The latest validation time of each entry, in seconds (for the metrics).
        self.validation_s: dict[str, float] = {}
        self.on_decided: list[Any] = []
        #: Called with each build's wall time in seconds, failed builds too (the metrics).
        self.on_built: list[Any] = []
        # Readable by the bots' uids (the referee runs with umask 077).
        config.code_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(config.code_dir, 0o755)

    # -- the code folder ---------------------------------------------------------------

    @property
    def builds(self) -> Allowance:
        """Each owner's daily build budget (its table made at first use)."""
        if self._builds is None:
            self._builds = Allowance(
                self.submissions.store, BUILD, self.config.build_seconds_per_day
            )
        return self._builds

    def _io_store(self) -> Submissions:
        """The submissions as the archives' thread reads them (its own connection)."""
        if self._database is None:
            return self.submissions
        if self._io_submissions is None:
            self._io_submissions = Submissions(open_store(self._database))
        return self._io_submissions

    async def _in_io(self, fn: Callable[..., R], *args: Any) -> R:
        """``fn(*args)`` on the archives' thread (on this one without a database)."""
        if self._database is None:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self._io, fn, *args)

    async def put_archive(self, sha256: str, data: bytes) -> None:
        """Keep ``data`` in the store under its hash, off the event loop."""
        await self._in_io(lambda: self._io_store().put_archive(sha256, data))

    async def folder_async(self, sha256: str, fmt: str) -> Path:
        """:meth:`folder`, off the event loop."""
        target = self.config.code_dir / sha256
        if target.is_dir():
            return target
        return await self._in_io(self._folder_from, self._io_store, sha256, fmt)

    def _keep_build(self, tar: bytes) -> str:
        """A build's tar stream, compressed and kept in the store: its hash."""
        data = _gzip(tar)
        build_sha = sha256_hex(data)
        self._io_store().put_archive(build_sha, data)
        return build_sha

    def folder(self, sha256: str, fmt: str) -> Path:
        """The unpacked archive ``sha256`` (from the store, unpacked once per machine)."""
        return self._folder_from(lambda: self.submissions, sha256, fmt)

    def _folder_from(self, store: Callable[[], Submissions], sha256: str, fmt: str) -> Path:
        target = self.config.code_dir / sha256
        if target.is_dir():
            return target
        data = store().archive(sha256)
        if data is None:
            raise ArchiveRefused(f"archive {sha256} is not in the league's store")
        return self.unpack_cached(sha256, fmt, data)

    def unpack_cached(self, sha256: str, fmt: str, data: bytes) -> Path:
        """``data`` unpacked into the code folder under its hash (checked), once."""
        target = self.config.code_dir / sha256
        if target.is_dir():
            return target
        if sha256_hex(data) != sha256:
            raise ArchiveRefused(f"archive {sha256} does not match its hash")
        staging = Path(tempfile.mkdtemp(prefix=f".{sha256[:12]}-", dir=self.config.code_dir))
        try:
            os.chmod(staging, 0o755)
            unpack(data, fmt, staging / "code", self.bounds)
            with contextlib.suppress(OSError):  # another worker unpacked it meanwhile
                os.rename(staging / "code", target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target

    def precheck(self, sha256: str, fmt: str, data: bytes, bot_file: str, bot: str) -> str:
        """What an upload is refused for at once, before anything is stored: an archive
        the rules refuse, a bot file that is not in it or cannot be used. The bot file's
        normalised path; :class:`ArchiveRefused` or :class:`Refusal` in one line."""
        fresh = not (self.config.code_dir / sha256).is_dir()
        folder = self.unpack_cached(sha256, fmt, data)
        try:
            name = bot_file_in(_members(folder), bot_file)
            self._load(folder / name, bot, name)
        except BaseException:
            if fresh:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        return name

    async def prepare(self, s: Submission) -> BotSpec:
        """:meth:`spec`, its folder unpacked off the event loop."""
        await self.folder_async(s.code_sha256, s.code_format)
        return self.spec(s)

    def spec(self, s: Submission) -> BotSpec:
        """The bot a playing submission starts (its folder unpacked here if needed)."""
        key = (s.bot, s.number)
        found = self._specs.get(key)
        if found is not None and found.workdir.exists():
            return found
        folder = self.folder(s.code_sha256, s.code_format)
        spec = dataclasses.replace(load_bot(folder / s.bot_file), name=s.bot)
        self._specs[key] = spec
        return spec

    # -- validation -----------------------------------------------------------------------

    def validate_later(self, s: Submission) -> None:
        """Validate ``s`` in the background, when its owner's turn comes."""
        task = asyncio.ensure_future(self._validate(s, time.monotonic()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- retention ----------------------------------------------------------------------

    def sweep(self) -> Swept:
        """Remove the archives and folders past their retention (on the archives' thread)."""
        store = self._io_store().store
        return Retention(store, self.config.code_dir, self.config.retention_days).sweep()

    def start_sweeping(self) -> None:
        """Sweep now, then every hour (more often with a retention under four hours)."""
        self._sweeper = asyncio.ensure_future(self._sweep_loop())

    async def _sweep_loop(self) -> None:
        every = min(3600.0, max(1.0, self.config.retention_days * 86_400 / 4))
        while True:
            try:
                swept = await self._in_io(self.sweep)
            except Exception as exc:  # the database away: tried again at the next sweep
                log.error("store_sweep_failed", error=repr(exc))
            else:
                if swept.archives or swept.folders:
                    log.info(
                        "store_swept",
                        archives=swept.archives,
                        folders=swept.folders,
                        database_bytes=swept.database_bytes,
                        code_dir_bytes=swept.code_dir_bytes,
                    )
                for callback in self.on_swept:
                    callback(swept)
            await asyncio.sleep(every)

    async def stop(self) -> None:
        """Stop validating (a stopped one is validated again at the next start)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

        def close() -> None:
            if self._io_submissions is not None:
                self._io_submissions.store.close()

        if self._database is not None:
            await self._in_io(close)
        self._io.shutdown(wait=False)

    async def _validate(self, s: Submission, queued: float) -> None:
        owner = self.owner_of(s.bot)
        async with self.turns.turn(owner):
            started = time.monotonic()
            log.info(
                "validation_started",
                bot=s.bot,
                submission=s.number,
                owner=owner,
                waited_s=round(started - queued, 3),
                validating=sorted(self.turns.busy),
            )
            build_sha = ""
            try:
                report, build_sha = await self.check(s)
            except Refusal as exc:
                line = str(exc)
                report = [f"REFUSED: {line}", *exc.report]
                self.submissions.refuse(s, line, "\n".join(report), build_sha)
                log.warning("submission_refused", bot=s.bot, submission=s.number, why=line)
            except Exception as exc:  # the league's own failure: said, and refused
                line = f"the league could not validate it: {exc!r}"
                self.submissions.refuse(s, line, line)
                log.error("submission_failed", bot=s.bot, submission=s.number, error=repr(exc))
            else:
                self.submissions.accept(s, "\n".join(report), build_sha)
                log.info("submission_playing", bot=s.bot, submission=s.number, sha256=s.sha256)
            self.validation_s[s.bot] = time.monotonic() - started
            for callback in self.on_decided:
                callback(s.bot, self.validation_s[s.bot])

    async def check(self, s: Submission) -> tuple[list[str], str]:
        """Validate ``s``: its report lines and its build's hash (""), or :class:`Refusal`."""
        report: list[str] = []
        try:
            folder = await self.folder_async(s.sha256, s.format)
            bot_file = bot_file_in(await self._in_io(_members, folder), s.bot_file)
        except ArchiveRefused as exc:
            raise Refusal(f"archive refused: {exc}") from None
        report.append(f"archive {s.sha256}: unpacked")
        spec, build = self._load(folder / bot_file, s.bot, s.bot_file)
        build_sha = ""
        logs = private_dir(self.logs / f"{s.bot}-{s.number}")
        reused = self.submissions.build_of(s.sha256, bot_file) if build else ""
        if reused:
            # The same code and bot file were built before: never twice (docs/hosting.md).
            build_sha = reused
            try:
                built = await self.folder_async(build_sha, "tar.gz")
            except ArchiveRefused as exc:
                raise Refusal(f"the build's output was refused: {exc}") from None
            report.append(f"build: the same code was built before, output {build_sha}")
            spec, _ = self._load(built / bot_file, s.bot, s.bot_file)
        elif build:
            owner = self.owner_of(s.bot)
            left = self.builds.left(owner)
            if left < 1:
                again = self.builds.resets_at(owner, 1)
                raise Refusal(
                    f"the builds of owner {owner!r} ran {self.builds.used(owner):.0f} s in the "
                    f"last 24 hours, this league's build_seconds_per_day; builds may run "
                    f"again at {when(again)}"
                )
            timeout_s = min(self.config.build_timeout_s, left)
            built_at = time.monotonic()
            try:
                result = await run_build(
                    self.sandbox,
                    folder,
                    Path(bot_file).parent.as_posix(),
                    build,
                    timeout_s=timeout_s,
                    memory_mb=self.config.build_memory_mb,
                    max_output=self.config.max_unpacked_mb << 20,
                    log_path=logs / "build.log",
                )
            finally:
                took = time.monotonic() - built_at
                # Every second of it counts, cut short or not.
                self.builds.charge(owner, took)
            for callback in self.on_built:
                callback(took)
            if result.error:
                error = result.error
                if timeout_s < self.config.build_timeout_s and "build_timeout_s" in error:
                    error = (
                        f"the build ran past what was left of owner {owner!r}'s "
                        f"build_seconds_per_day ({timeout_s:.0f} s) and was stopped"
                    )
                raise Refusal(error, ["build output (last lines):", *_tail(result.log_path)])
            build_sha = await self._in_io(self._keep_build, result.tar)
            try:
                built = await self.folder_async(build_sha, "tar.gz")
            except ArchiveRefused as exc:
                raise Refusal(f"the build's output was refused: {exc}") from None
            self.submissions.put_build(s.sha256, bot_file, build_sha)
            report.append(f"build: done, output {build_sha}")
            # The build's copy of the archive's folder is the bot's folder from now on.
            spec, _ = self._load(built / bot_file, s.bot, s.bot_file)
        async with self._jobs.one():
            failures = await check_starts_on_own_server([spec], self.sandbox, self.startup_s, logs)
        if failures:
            f = failures[0]
            raise Refusal(
                # The line is public (ListBots); what the bot printed is its owner's.
                f"start check: {f.what}",
                ["its output (last lines):", *_tail(f.log_path)],
            )
        report.append("start check: started and greeted")
        # Every scenario under the league's own clock, the one the bot is held to in its
        # matches. check-bot's scenarios with a clock of their own (short-clock: a bot's
        # use of 150 ms and a 1 s bank) test what no match of this league asks of it.
        chosen = [
            dataclasses.replace(s, clock=self.clock)
            for s in scenarios(rounds=self.config.validation_rounds, seats=spec.seats)
            if s.clock == Clock()
        ]
        outcomes = await check_bot(
            spec,
            chosen,
            out_dir=logs / "check-bot",
            sandbox=self.sandbox,
            # The league's start-up time holds in every scenario, as in the start check.
            startup_ms=round(self.startup_s * 1000),
            jobs=self.config.validation_jobs,
            turns=self._jobs,
            # Validation only has to decide: a bot that timed out is not played further.
            stop_after_timeout=True,
        )
        for o in outcomes:
            report.extend(o.lines())
        failed = [o for o in outcomes if not o.passed and not o.skipped]
        if failed:
            first = failed[0]
            why = first.error or (first.findings[0].line() if first.findings else "failed")
            skipped = sum(1 for o in outcomes if o.skipped)
            raise Refusal(
                f"check-bot: {len(failed)} of {len(outcomes)} scenarios failed"
                + (f", {skipped} not played" if skipped else "")
                + f"; first {first.scenario.name}: {why}",
                report,
            )
        return report, build_sha

    def _load(self, bot_file: Path, bot: str, shown: str) -> tuple[BotSpec, list[str]]:
        try:
            spec = load_bot(bot_file)
            build = read_build(bot_file)
        except BotConfigError as exc:
            raise Refusal(f"bot file: {_relative(str(exc), self.config.code_dir)}") from None
        if spec.external:
            raise Refusal(f"bot file {shown}: no 'command'; a hosted bot is started by the league")
        return dataclasses.replace(spec, name=bot), build

    def resume(self) -> int:
        """At a start: validate again what was being validated when the league stopped."""
        pending = self.submissions.validating()
        for s in pending:
            self.validate_later(s)
        return len(pending)


def _members(folder: Path) -> list[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            out.append((Path(root) / name).relative_to(folder).as_posix())
    return out


def _relative(text: str, code_dir: Path) -> str:
    """A message without the league's code folder in it (the author knows the archive)."""
    return text.replace(f"{code_dir}/", "")
