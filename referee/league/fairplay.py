"""The league's fair-play room: the fair-play test (docs/fairplay.md) kept up to date as
matches finish.

Each finished match's record is evaluated in a child process (the evaluation is CPU work
that would stall the event loop), one match at a time in finishing order; the running
test is a small JSON state (``fairplay-state.json`` in the league's ``out`` folder, with
the match ids already counted), so a restarted league goes on where it stopped and only
evaluates the matches it has not seen. After every match ``fairplay.json`` is written
beside it (what the web bot page shows) and ``sticheln_fairplay_flagged{bot}`` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

# First, so that structlog is imported without rich in the spawned evaluating
# process (which imports this module to unpickle its work), as in the ``referee`` command.
from referee.runtime import lean  # noqa: F401

# isort: split
import structlog

from referee.fairplay import FairPlay, Fit, MatchDecisions, Options
from referee.runtime.parent import die_with

log = structlog.get_logger()

STATE = "fairplay-state.json"
DOCUMENT = "fairplay.json"


def _die_with(parent: int) -> None:
    """In the evaluating child: end with the league, even when it is killed with SIGKILL
    (a child left behind would hold nothing of the league's, being spawned, but would live
    on and use a core)."""
    if not die_with(parent):  # the league was gone before the child was set up
        os._exit(1)


def _evaluate(path: str, options: Options) -> tuple[MatchDecisions, list[Fit]] | str:
    """A record's fits (in the child process), or why it cannot be judged."""
    from referee.fairplay import Evaluator, RecordSkipped, read_decisions
    from referee.match.record import ReplayError

    try:
        match = read_decisions(path)
    except RecordSkipped as exc:
        return f"skipped: {exc}"
    except (ReplayError, OSError) as exc:
        return f"unreadable: {exc}"
    evaluator = Evaluator(options.settings)
    fits = [evaluator.fit(d) for d in match.decisions]
    return MatchDecisions(match.match_id, match.seating, ()), fits


class FairPlayRoom:
    """Feeds finished matches to the fair-play test and publishes its figures."""

    def __init__(
        self,
        out: Path,
        flagged: Callable[[str, bool], None],
        options: Options | None = None,
    ) -> None:
        self.out = Path(out)
        self._flagged = flagged
        self.fairplay = self._load(options or Options())
        self._queue: asyncio.Queue[tuple[str, Path]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._pool: ProcessPoolExecutor | None = None
        #: Matches evaluated since start (for tests and logs).
        self.evaluated = 0

    def _load(self, options: Options) -> FairPlay:
        path = self.out / STATE
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            fp = FairPlay.from_state(state)
            if fp.options == options:
                return fp
            log.info("fairplay_settings_changed", note="the test starts again")
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("fairplay_state_unreadable", path=str(path), error=repr(exc))
        return FairPlay(options)

    def start(self) -> None:
        """Start the evaluating task (call from the event loop)."""
        for bot, m in self.fairplay.bots.items():
            self._flagged(bot, m.flagged)
        self._task = asyncio.ensure_future(self._run())

    def seen(self, match_id: str) -> bool:
        """Whether the match was already counted."""
        return match_id in self.fairplay.seen

    def add(self, match_id: str, record: Path) -> None:
        """A finished match to evaluate (ignored when already counted)."""
        if not self.seen(match_id):
            self._queue.put_nowait((match_id, record))

    async def idle(self) -> None:
        """Wait until every match added so far is evaluated."""
        await self._queue.join()

    async def stop(self) -> None:
        """Stop evaluating; what was counted is saved."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            match_id, record = await self._queue.get()
            try:
                if self.seen(match_id):
                    continue
                if self._pool is None:
                    # Spawned, not forked: a forked child would hold the league's
                    # descriptors (its SQLite database's lock, the jail watchdog's pipe),
                    # and a league killed and started again would find its database taken.
                    self._pool = ProcessPoolExecutor(
                        max_workers=1,
                        mp_context=multiprocessing.get_context("spawn"),
                        initializer=_die_with,
                        initargs=(os.getpid(),),
                    )
                result = await loop.run_in_executor(
                    self._pool, _evaluate, str(record), self.fairplay.options
                )
                if isinstance(result, str):
                    log.info("fairplay_not_judged", match_id=match_id, why=result)
                    self.fairplay.seen.add(match_id)
                else:
                    self.fairplay.add_fits(*result)
                    self.fairplay.seen.add(match_id)
                    self.evaluated += 1
                    for bot in result[0].seating:
                        m = self.fairplay.bots.get(bot)
                        if m is not None:
                            self._flagged(bot, m.flagged)
                await asyncio.to_thread(self._save)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broken child: log, and go on with the next
                log.error("fairplay_failed", match_id=match_id, error=repr(exc))
                self._pool = None
            finally:
                self._queue.task_done()

    def _save(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        for name, doc in ((STATE, self.fairplay.state()), (DOCUMENT, self.fairplay.document())):
            path = self.out / name
            tmp = path.with_name(f".{name}.tmp")
            # Compact: json's indenting encoder is pure Python, its closures a reference
            # cycle at every save, left for the collector (tests/test_league_memory.py).
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            os.replace(tmp, path)

    def document(self) -> dict[str, Any]:
        """The current ``fairplay.json`` document."""
        return self.fairplay.document()
