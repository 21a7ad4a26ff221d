"""Where the web pages' data comes from: a running league, a running tournament, or a
finished tournament's (or league's) output folder.

A source answers a few questions (standings, stored seat results, faults, bots, running
matches, progress, a finished match's record, a match's public feed); everything else is
computed from those answers by :mod:`referee.results.documents`. A source never hands out the
record of a match that is still running: :meth:`Source.record_lines` refuses it, and a
running match is only reachable through its public feed (:mod:`referee.league.feed`).

Nor does a source hand out anything of a duplicate deal before its last seating has ended
(:mod:`referee.results.embargo`): :meth:`Source.record_path` and :meth:`Source.feed`, the
two doors to a match's cards, refuse its seatings (:class:`Embargoed`), and their results
enter the documents (the matches list, bots' pages, head-to-head, standings) only once
the deal is over. Such a match is listed meanwhile by :meth:`Source.embargoed`.
"""

from __future__ import annotations

import array
import asyncio
import bisect
import collections
import contextlib
import dataclasses
import json
import math
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from referee.league.feed import MatchFeed, replay_feed
from referee.match.record import ReplayError, read_record
from referee.results import documents as data
from referee.results.embargo import DealSeatings, embargo_message, embargoed_records
from referee.results.store import Store, StoredResult, StoreError, open_store

log = structlog.get_logger("referee.web")
if TYPE_CHECKING:
    from referee.league.service import League
    from referee.tournament.config import TournamentConfig
    from sticheln.v1 import league_pb2

#: How often a running tournament's record files are read again for its spectators (a
#: watched tournament flushes every line: a card is on the live table within this).
TAIL_INTERVAL_S = 0.25
#: The window over which matches per second are measured.
RATE_WINDOW_S = 600.0
#: The documents of the finished matches are computed again at most this often (seconds):
#: in a busy league matches finish several times a second, and a page needs them fresh
#: to the second, not to the match.
SNAPSHOT_INTERVAL_S = 1.0
#: Finished matches read from the store at a time: a source that starts on a long history
#: (a league restarted after weeks) takes it in in batches, never all of its think times
#: at once.
READ_BATCH = 2000


class NotFound(LookupError):
    """No such bot or match; the message says which."""


class NotYours(PermissionError):
    """A bot's owner's document asked for without its token (``status``: 401 when no token
    came, 403 for another's); the message says what is needed."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class StillRunning(LookupError):
    """A running match's record was asked for; only its public feed may be watched."""


class Embargoed(LookupError):
    """A match of a deal still to be played in another seating was asked for: its record,
    viewer and live events are held until the deal's last seating has ended
    (:mod:`referee.results.embargo`). Refused (403) whether it runs or has finished, so
    that a page shows why instead of waiting for a live stream that will not come."""


def _standings_rows(response: league_pb2.StandingsResponse) -> list[dict[str, Any]]:
    from google.protobuf.json_format import MessageToDict

    rows = []
    for s in response.standings:
        row = MessageToDict(
            s, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        # Floats straight from the message: MessageToDict writes NaN as a string.
        for field, value in s.ListFields():
            if isinstance(value, float):
                row[field.name] = value
        rows.append(row)
    return data.finite(rows)  # type: ignore[no-any-return]


class Source(ABC):
    """What the web server asks; subclasses answer from where their data lives."""

    kind = "source"

    def __init__(self, name: str, decision_ms: float) -> None:
        self.name = name
        self.decision_ms = decision_ms
        #: The documents of the finished matches, as of the last :meth:`refresh`.
        self.snap = data.Snapshot()
        self._snapped_at = -math.inf
        #: When matches finished (monotonic seconds, ascending), for matches per second.
        self._finish_times: collections.deque[float] = collections.deque(maxlen=10_000)
        self._started = time.monotonic()
        #: The finishing position of the last match read (see :meth:`_read_new`).
        self._read_upto = 0
        #: ``fairplay.json`` as last read: its modification time and content.
        self._fairplay: tuple[int, Any] = (-1, None)

    # -- answered by each source ------------------------------------------------------------

    @abstractmethod
    def version(self) -> Any:
        """A value that changes whenever a match starts or finishes or standings change."""

    @abstractmethod
    def standings(self) -> dict[str, Any]:
        """``{"matches": n, "published_at": t, "standings": [row, ...]}``."""

    @abstractmethod
    def load(self, limit: int) -> tuple[list[StoredResult], dict[str, dict[str, int]]]:
        """The seat rows of the matches finished since the last call (in finishing order,
        of at most ``limit`` matches) and the faults by bot and reason."""

    @abstractmethod
    def older_matches(self, before: int, limit: int) -> list[dict[str, Any]]:
        """The summaries of the latest ``limit`` matches that finished before the
        ``before``-th, newest first: the pages of the matches list older than what the
        snapshot keeps."""

    @abstractmethod
    def running(self) -> list[dict[str, Any]]:
        """The running matches: ``match_id`` and ``seating``."""

    @abstractmethod
    def finished(self) -> int:
        """How many matches have finished."""

    @abstractmethod
    def planned(self) -> int | None:
        """How many matches are planned in all (None: a league has no end)."""

    @abstractmethod
    def record_path(self, match_id: str) -> Path:
        """The record file of a finished match; NotFound or StillRunning otherwise."""

    @abstractmethod
    def feed(self, match_id: str) -> MatchFeed:
        """The public feed of a running match, or of a finished one from its record."""

    def embargoed(self) -> list[dict[str, Any]]:
        """The finished matches held by the duplicate embargo: ``match_id``, ``seating``
        and ``embargo`` (why, in one line); their results are not in the documents yet."""
        return []

    def bots(self) -> list[dict[str, Any]]:
        """Every bot: name, and where known description, owner, versions, connection."""
        names = set(self.snap.bots) | {b for m in self.running() for b in m["seating"]}
        return [{"name": n} for n in sorted(names)]

    def submissions(self, name: str) -> list[dict[str, Any]]:
        """A hosted bot's submissions, newest first (none but a league's)."""
        return []

    def finals(self) -> list[dict[str, Any]]:
        """A league's seasons' finals for the matches list, the newest first (none but a
        league's): ``season``, ``final``, ``status``, ``finished``, ``planned`` and
        ``matches``, its finished matches once the final has ended (as ``finished``
        rows, each with its ``season``); none while it is played."""
        return []

    def finals_tag(self) -> Any:
        """A value that changes whenever a final starts or ends."""
        return None

    def bot_finals(self, name: str) -> list[dict[str, Any]]:
        """Bot ``name``'s matches in the finals that have ended, each with its ``season``."""
        return [m for f in self.finals() for m in f["matches"] if name in m["seating"]]

    def logs(self, name: str, token: str) -> dict[str, Any]:
        """A hosted bot's own logs, for the holder of its token (a league's only)."""
        raise NotFound("only a league that hosts bots keeps their logs")

    def info(self) -> dict[str, Any]:
        """What is being served: its kind, name and clock."""
        return {"kind": self.kind, "name": self.name, "decision_ms": self.decision_ms}

    def fairplay_path(self) -> Path | None:
        """Where this source's ``fairplay.json`` lies (``referee fairplay``, or a league's
        own as matches arrive; docs/fairplay.md), if anywhere."""
        return None

    def fairplay(self, name: str) -> dict[str, Any] | None:
        """The fair-play figures of bot ``name`` from ``fairplay.json``, with the test's
        settings as ``test``; None when there is no such file or no line for the bot."""
        path = self.fairplay_path()
        if path is None:
            return None
        try:
            stamp = path.stat().st_mtime_ns
            if self._fairplay[0] != stamp:
                self._fairplay = (stamp, json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None
        doc = self._fairplay[1]
        if not isinstance(doc, dict):
            return None
        entry = next((b for b in doc.get("bots", []) if b.get("name") == name), None)
        if entry is None:
            return None
        return {**entry, "matches": doc.get("matches"), "test": doc.get("test", {})}

    def _read_new(
        self, store: Store, name: str, limit: int
    ) -> tuple[list[StoredResult], dict[str, dict[str, int]]]:
        """The seat rows of the (at most ``limit``) matches finished since the last call,
        read from ``store``, and the faults by bot and reason."""
        faults = store.faults_by_reason(name)
        new, self._read_upto = store.results_since(name, self._read_upto, limit=limit)
        return new, faults

    @staticmethod
    def _summaries(results: list[StoredResult]) -> list[dict[str, Any]]:
        """Seat rows (finishing order) as match summaries, newest first."""
        return [data.match_summary(rows) for rows in reversed(data.by_match(results).values())]

    # -- computed ---------------------------------------------------------------------------

    async def refresh(self) -> None:
        """Compute the documents again, in a worker thread, when matches finished since the
        last time (at most every :data:`SNAPSHOT_INTERVAL_S`); the snapshot's version is the
        number of finished matches it holds."""
        finished = self.finished()
        if finished == self.snap.version:
            return
        now = time.monotonic()
        if now - self._snapped_at < SNAPSHOT_INTERVAL_S:
            return
        self._snapped_at = now
        while True:
            new, faults = self.load(READ_BATCH)
            more = len({r.idx for r in new}) >= READ_BATCH
            # The previous snapshot's documents, with the matches finished since added; one
            # with more to read has no version yet, so that the next refresh goes on.
            version = None if more else finished
            self.snap = await asyncio.to_thread(data.snapshot, version, new, faults, self.snap)
            if not more:
                return

    def record_lines(self, match_id: str) -> list[dict[str, Any]]:
        """A finished match's record lines."""
        path = self.record_path(match_id)
        try:
            lines = list(read_record(path))
        except (OSError, ReplayError) as exc:
            raise NotFound(f"the record of match {match_id!r} cannot be read: {exc}") from None
        for line in lines:
            line.pop("_line", None)
        return lines

    def progress(self) -> dict[str, Any]:
        """Matches done and planned, running now, matches per second, the time left."""
        done = self.finished()
        planned = self.planned()
        now = time.monotonic()
        window = min(RATE_WINDOW_S, max(now - self._started, 1e-9))
        times = self._finish_times
        recent = len(times) - bisect.bisect_left(times, now - window)
        # Four figures say it (a page shows matches a minute); more only weigh on the wire.
        rate = float(f"{recent / window:.4g}") if recent else None
        eta = (planned - done) / rate if rate and planned is not None else None
        return {
            "finished": done,
            "planned": planned,
            "running": len(self.running()),
            "matches_per_s": rate,
            "eta_s": 0.0 if planned is not None and done >= planned else eta,
        }

    def _finished_now(self, count: int) -> None:
        """``count`` more matches finished since the last look (for matches per second)."""
        now = time.monotonic()
        self._finish_times.extend([now] * count)


class LeagueSource(Source):
    """A league served by this process: its published standings, database and feeds."""

    kind = "league"

    def __init__(self, league: League) -> None:
        super().__init__(league.config.name, league.config.clock.decision_ms)
        self.league = league
        self._seen = league.finished_count()
        self._standings: tuple[Any, dict[str, Any]] = (None, {})

    def fairplay_path(self) -> Path | None:
        if not self.league.config.fairplay:  # switched off: an old file is not current
            return None
        return Path(self.league.config.out) / "fairplay.json"

    def version(self) -> Any:
        finished = self.league.finished_count()
        if finished > self._seen:
            self._finished_now(finished - self._seen)
            self._seen = finished
        return (
            finished,
            tuple(sorted(self.league.running_seating())),
            self.league.standings().matches,
            self.finals_tag(),
        )

    def standings(self) -> dict[str, Any]:
        response = self.league.standings()
        if self._standings[0] is not response:  # converted once per publication
            self._standings = (
                response,
                {
                    "matches": response.matches,
                    "published_at": response.published_at or None,
                    "standings": data.ranked(_standings_rows(response)),
                },
            )
        return self._standings[1]

    def load(self, limit: int) -> tuple[list[StoredResult], dict[str, dict[str, int]]]:
        return self._read_new(self.league.store, self.league.config.name, limit)

    def older_matches(self, before: int, limit: int) -> list[dict[str, Any]]:
        rows = self.league.store.results_before(self.league.config.name, before, limit)
        return self._summaries(rows)

    def running(self) -> list[dict[str, Any]]:
        return [
            {"match_id": mid, "seating": list(seating)}
            for mid, seating in sorted(self.league.running_seating().items())
        ]

    def finished(self) -> int:
        return self.league.finished_count()

    def planned(self) -> int | None:
        return None

    def bots(self) -> list[dict[str, Any]]:
        out = []
        latest = self.league.submissions.latest_by_bot()
        for e in self.league.registry.entries():
            b = self.league.bot_message(e, latest)
            out.append(
                {
                    "hosted": b.hosted,
                    "status": b.status,
                    "submission": b.submission,
                    "sha256": b.sha256,
                    "refusal": b.refusal,
                    "playing_submission": b.playing_submission,
                    # The owner (an e-mail address) stays private: not on public pages.
                    "name": e.name,
                    "description": e.description,
                    "family": e.family,
                    "previous_version": e.previous,
                    "version": e.version,
                    "active": e.active,
                    "connected_streams": self.league.connected(e.name),
                    "registered_at": e.registered_at,
                }
            )
        return out

    def seasons(self) -> dict[str, Any]:
        """The current season and every ended one with its final (``/api/seasons``)."""
        reply = self.league.seasons.response()
        return {
            "current": reply.current,
            "current_since": reply.current_since,
            "seasons": [
                {
                    "season": s.number,
                    "status": s.status,
                    "started_at": s.started_at,
                    "ended_at": s.ended_at,
                    "final": s.final,
                    "deals": s.deals,
                    "table_size": s.table_size,
                    "planned": s.planned,
                    "finished": s.finished,
                    "finished_at": s.finished_at or None,
                    "deal_key_commitment": s.deal_key_commitment,
                    "deal_key": s.deal_key or None,
                    "finalists": [
                        {"bot": f.bot, "submission": f.submission, "sha256": f.sha256}
                        for f in s.finalists
                    ],
                    "standings": data.ranked(_standings_rows(s.standings)),
                    "matches": [
                        {
                            "match_id": m.match_id,
                            "seating": list(m.seating),
                            "totals": list(m.totals),
                            "places": list(m.places),
                        }
                        for m in s.matches
                    ],
                }
                for s in reply.seasons
            ],
        }

    def finals(self) -> list[dict[str, Any]]:
        try:
            lists = self.league.seasons.final_lists()
        except StoreError as exc:  # the database away: the ladder's list is still shown
            log.warning("web_source_failed", doing="read the finals", error=str(exc))
            return []
        return [
            {
                "season": s.number,
                "final": s.final,
                "status": s.status,
                "finished": finished,
                "planned": planned,
                "matches": [{**data.match_summary(rows), "season": s.number} for rows in matches],
            }
            for s, finished, planned, matches in lists
        ]

    def finals_tag(self) -> Any:
        try:
            return tuple((s.number, s.status) for s in self.league.seasons.known())
        except StoreError:
            return None

    def logs(self, name: str, token: str) -> dict[str, Any]:
        # The owner's part: its token (or the admin token), never anyone else.
        import secrets

        league = self.league
        if not token:
            raise NotYours(f"the logs of {name!r} need its bot token", 401)
        admin = league.config.admin_token
        entry = league.registry.by_token(token)
        if not secrets.compare_digest(token.encode(), admin.encode()) and (
            entry is None or entry.name != name
        ):
            raise NotYours(f"the logs of {name!r} need its own bot token", 403)
        if league.registry.get(name) is None:
            raise NotFound(f"no bot {name!r}")
        return {
            "bot": name,
            "retention_days": league.config.hosting.log_retention_days,
            "matches": [
                {
                    "match_id": kept.match_id,
                    "submission": kept.submission,
                    "seats": list(kept.seats),
                    "text": kept.text,
                    "truncated": kept.truncated,
                    "written_at": kept.written_at,
                }
                for kept in league.dispatch.bot_logs.of(name)
            ],
            "validation": [
                {"submission": s.number, "status": s.status, "report": s.report or s.refusal}
                for s in league.submissions.history(name)
            ],
        }

    def submissions(self, name: str) -> list[dict[str, Any]]:
        # The public part: the validation report is its owner's (League.SubmissionStatus).
        # Each submission's own rating, from its matches alone, as last published.
        out = []
        for s in self.league.submissions.history(name):
            m = self.league.submission_message(s)
            rated = not math.isnan(m.rating)
            out.append(
                {
                    "number": s.number,
                    "sha256": s.sha256,
                    "status": s.status,
                    "refusal": s.refusal,
                    "submitted_at": s.submitted_at,
                    "decided_at": s.decided_at,
                    "built": bool(s.build_sha256),
                    "rating": m.rating if rated else None,
                    "ci_low": m.ci_low if rated and math.isfinite(m.ci_low) else None,
                    "ci_high": m.ci_high if rated and math.isfinite(m.ci_high) else None,
                    "matches": m.matches,
                }
            )
        return out

    def info(self) -> dict[str, Any]:
        c = self.league.config
        return {
            **super().info(),
            "table_size": c.table_size,
            "rules": c.rules.to_table(),
            "delay_rounds": c.web_delay_rounds,
            "waiting": self.league.waiting or None,
            "queued_matches": self.league.queued if self.league.hosting is not None else None,
        }

    def record_path(self, match_id: str) -> Path:
        from referee.match.server import Refused

        if match_id in self.league.running_seating():
            raise StillRunning(f"match {match_id!r} is still running; watch it live")
        try:
            return self.league.record_path(match_id)
        except Refused as exc:
            raise NotFound(exc.message) from None

    def feed(self, match_id: str) -> MatchFeed:
        from referee.match.server import Refused

        try:
            return self.league.feed(match_id)
        except Refused as exc:
            raise NotFound(exc.message) from None


class _Tail:
    """A running match's record file, read as it grows into a public feed."""

    def __init__(self, match_id: str, path: Path) -> None:
        self.feed = MatchFeed(match_id)
        self.path = path
        self.offset = 0
        self.partial = ""

    def read(self) -> None:
        """Append the complete lines written since the last read."""
        try:
            with open(self.path, encoding="utf-8") as f:
                f.seek(self.offset)
                text = f.read()
                self.offset = f.tell()
        except OSError:
            return
        text = self.partial + text
        complete, _, self.partial = text.rpartition("\n")
        for raw in complete.split("\n"):
            if raw.strip():
                with contextlib.suppress(ValueError):
                    line = json.loads(raw)
                    if isinstance(line, dict):
                        self.feed.append(line)


class TournamentSource(Source):
    """A tournament being run by this process, read from its database and record files.

    The standings are published as a league publishes them: fitted again (in a thread)
    as soon as a match has finished, one fit at a time, and at most every
    ``publish_interval_s`` or twice as long as the last fit took, whichever is longer (so
    that fitting a large tournament takes at most a third of the time). A running match's
    spectators read its record file as it grows, through the same public filter as a
    league's.
    """

    kind = "tournament"

    def __init__(self, config: TournamentConfig, publish_interval_s: float = 1.0) -> None:
        super().__init__(config.name, config.clock.decision_ms)
        self.config = config
        self.store = open_store(config.database)
        self.publish_interval_s = publish_interval_s
        self._rows: list[dict[str, Any]] = []
        self._rows_at = -math.inf
        self._published: dict[str, Any] = {"matches": 0, "published_at": None, "standings": []}
        self._fitting: asyncio.Task[None] | None = None
        self._fit_timer: asyncio.TimerHandle | None = None
        self._last_fit = -math.inf
        self._fit_s = 0.0
        #: Finished matches the latest fit was started with.
        self._fitted = 0
        self._tails: dict[str, _Tail] = {}
        self._seen = -1
        from referee.tournament.run import match_id_of
        from referee.tournament.schedule import make_schedule

        schedule = make_schedule(config)
        #: The duplicate embargo: the seatings of each deal played more than once.
        self.deals = DealSeatings.of((m.index, m.deal) for m in schedule)
        self._match_ids = {m.index: match_id_of(config, m) for m in schedule}
        self._finished_of: tuple[list[dict[str, Any]] | None, set[int]] = (None, set())

    def fairplay_path(self) -> Path | None:
        return Path(self.config.out) / "fairplay.json"

    def close(self) -> None:
        """Stop publishing and close the database connection."""
        if self._fit_timer is not None:
            self._fit_timer.cancel()
            self._fit_timer = None
        if self._fitting is not None:
            self._fitting.cancel()
        self.store.close()

    def _match_rows(self) -> list[dict[str, Any]]:
        # Read at most every 100 ms however many requests come in.
        now = time.monotonic()
        if now - self._rows_at > 0.1:
            self._rows = self.store.match_rows(self.config.name)
            self._rows_at = now
        return self._rows

    def version(self) -> Any:
        rows = self._match_rows()
        finished = sum(1 for r in rows if r["status"] == "finished")
        if self._seen >= 0 and finished > self._seen:
            self._finished_now(finished - self._seen)
        self._seen = finished
        if finished > self._fitted:
            self._request_fit()
        running = tuple(r["match_id"] for r in rows if r["status"] == "running")
        return (finished, running, self._published["matches"])

    def standings(self) -> dict[str, Any]:
        self.version()  # a match finished since the last look: a fit is on its way
        return self._published

    def _request_fit(self) -> None:
        """Fit the standings now, or once the pause after the last fit is over."""
        if self._fitting is not None or self._fit_timer is not None:
            return
        pause = max(self.publish_interval_s, 2 * self._fit_s)
        wait = self._last_fit + pause - time.monotonic()
        if wait <= 0:
            self._fitting = asyncio.ensure_future(self._fit())
        else:
            self._fit_timer = asyncio.get_running_loop().call_later(wait, self._fit_due)

    def _fit_due(self) -> None:
        self._fit_timer = None
        self._request_fit()

    async def _fit(self) -> None:
        from referee.league.standings import compute_standings

        started = time.monotonic()
        try:
            self._fitted = self._seen
            # What has finished, read before the results: a match finishing in between
            # only holds its deal back longer (and is fitted next time).
            self._rows_at = -math.inf
            finished = self._finished_indices(self._match_rows())
            # Only what the fit needs (no think times), read when it starts.
            results = self.store.results(self.config.name, think=False)
            held = self._shown(results, finished)
            if held is not None:
                results = results[:held]
            response = await asyncio.to_thread(compute_standings, results, 100)
        except Exception as exc:  # a busy database or a failed fit: the next match tries again
            log.warning("web_standings_failed", error=repr(exc))
        else:
            self._published = {
                "matches": response.matches,
                "published_at": response.published_at,
                "standings": data.ranked(_standings_rows(response)),
            }
        finally:
            self._fitting = None
            self._last_fit = time.monotonic()
            self._fit_s = self._last_fit - started
        if self._seen > self._fitted:  # matches finished while fitting
            self._request_fit()

    # -- the duplicate embargo ---------------------------------------------------------------

    def _finished_indices(self, rows: list[dict[str, Any]]) -> set[int]:
        """The indices of the finished matches of ``rows`` (computed once per read of the
        rows; empty when no deal is played twice, where nothing is ever held)."""
        if not self.deals.deal_of:
            return set()
        if self._finished_of[0] is not rows:
            self._finished_of = (rows, {int(r["idx"]) for r in rows if r["status"] == "finished"})
        return self._finished_of[1]

    def _embargo(self, idx: int, finished: set[int]) -> str | None:
        """Why match ``idx`` is held (another seating of its deal has not finished), or
        None when it may be shown."""
        pending = self.deals.pending(idx, finished)
        if not pending:
            return None
        return embargo_message(self._match_ids[idx], [self._match_ids[i] for i in pending])

    def _check_embargo(self, row: dict[str, Any]) -> None:
        why = self._embargo(int(row["idx"]), self._finished_indices(self._match_rows()))
        if why is not None:
            raise Embargoed(why)

    def _shown(self, results: list[StoredResult], finished: set[int]) -> int | None:
        """How many of ``results`` (seat rows in finishing order) may be shown: all up to
        the first embargoed match's (None: all of them). The later ones wait for it, so
        that what is shown stays a prefix of the finishing order."""
        return self.deals.first_held([r.idx for r in results], finished)

    def load(self, limit: int) -> tuple[list[StoredResult], dict[str, dict[str, int]]]:
        finished = self._finished_indices(self._match_rows())
        new, upto = self.store.results_since(self.config.name, self._read_upto, limit=limit)
        held = self._shown(new, finished)
        if held is not None:
            upto = new[held].finish_order - 1
            new = new[:held]
        self._read_upto = upto
        return new, self.store.faults_by_reason(self.config.name, upto=upto)

    def older_matches(self, before: int, limit: int) -> list[dict[str, Any]]:
        # Never past what the snapshot has taken in: the matches after it may be embargoed.
        before = min(before, self._read_upto + 1)
        return self._summaries(self.store.results_before(self.config.name, before, limit))

    def running(self) -> list[dict[str, Any]]:
        rows = self._match_rows()
        finished = self._finished_indices(rows)
        out = []
        for r in rows:
            if r["status"] == "running":
                entry = {"match_id": r["match_id"], "seating": json.loads(r["seating"])}
                why = self._embargo(int(r["idx"]), finished)
                if why is not None:
                    entry["embargo"] = why
                out.append(entry)
        return out

    def embargoed(self) -> list[dict[str, Any]]:
        rows = self._match_rows()
        finished = self._finished_indices(rows)
        out = []
        for r in rows:
            if r["status"] == "finished":
                why = self._embargo(int(r["idx"]), finished)
                if why is not None:
                    out.append(
                        {
                            "match_id": r["match_id"],
                            "seating": json.loads(r["seating"]),
                            "embargo": why,
                        }
                    )
        return out

    def finished(self) -> int:
        return int(self.version()[0])

    def planned(self) -> int | None:
        return len(self._match_rows())

    def bots(self) -> list[dict[str, Any]]:
        return [{"name": b.name} for b in self.config.bots]

    def info(self) -> dict[str, Any]:
        c = self.config
        return {**super().info(), "table_size": c.table_size, "rules": c.rules.to_table()}

    def _row(self, match_id: str) -> dict[str, Any]:
        row = next((r for r in self._match_rows() if r["match_id"] == match_id), None)
        if row is None:
            raise NotFound(f"no match {match_id!r} in tournament {self.name!r}")
        return row

    def record_path(self, match_id: str) -> Path:
        row = self._row(match_id)
        self._check_embargo(row)
        if row["status"] != "finished":
            raise StillRunning(f"match {match_id!r} is not finished; watch it live")
        if not row["record_path"]:
            raise NotFound(f"match {match_id!r} has no record")
        return Path(row["record_path"])

    def feed(self, match_id: str) -> MatchFeed:
        row = self._row(match_id)
        # A running seating too: its plays are the other seatings' hands.
        self._check_embargo(row)
        if row["status"] == "finished":
            return replay_feed(match_id, self.record_lines(match_id))
        if row["status"] != "running" or not row["record_path"]:
            raise NotFound(f"match {match_id!r} has not started")
        tail = self._tails.get(match_id)
        if tail is None:
            tail = self._tails[match_id] = _Tail(match_id, Path(row["record_path"]))
            tail.read()
        return tail.feed

    async def follow(self) -> None:
        """Read the running matches' records as they grow, for their spectators (runs
        until cancelled)."""
        while True:
            await asyncio.sleep(TAIL_INTERVAL_S)
            self._rows_at = -math.inf
            status = {r["match_id"]: r["status"] for r in self._match_rows()}
            for match_id, tail in list(self._tails.items()):
                tail.read()
                if status.get(match_id) != "running":
                    if status.get(match_id) == "finished":
                        tail.read()
                        tail.feed.finish()
                    else:
                        tail.feed.interrupt()
                    del self._tails[match_id]


class FolderSource(Source):
    """A finished tournament's (or league's) output folder: its match records, and its
    ``ratings.json`` where there is one (else standings fitted from the records)."""

    kind = "folder"
    #: Whether the duplicate embargo holds deals back (a comparison's pairs are not held).
    embargo = True

    def __init__(self, folder: Path, decision_ms: float | None = None) -> None:
        folder = Path(folder)
        matches = folder / "matches"
        if not matches.is_dir():
            raise NotFound(f"{folder}: no matches/ folder here; give a tournament's output folder")
        super().__init__(folder.resolve().name, 0.0)
        self.folder = folder
        self._paths: dict[str, Path] = {}
        self._unfinished: set[str] = set()
        #: Every finished match's seat rows without think times, in finishing order (the
        #: folder's order): the older pages of the matches list.
        self._matches: list[list[StoredResult]] = []
        #: Seat rows with their think times, until :meth:`load` has handed them over.
        self._pending: list[StoredResult] = []
        self._faults: dict[str, dict[str, int]] = {}
        #: Matches of a deal still to be played (:mod:`referee.results.embargo`): their
        #: seating, and the other seatings of their deal.
        self._embargoed: dict[str, tuple[list[str], list[str]]] = {}
        clock_ms: float | None = None
        read: list[tuple[str, Path, list[StoredResult], dict[str, dict[str, int]]]] = []
        ends: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
        for path in sorted(matches.glob("*.jsonl")):
            try:
                lines = list(read_record(path))
            except (OSError, ReplayError):
                continue
            if not lines or lines[0].get("type") != "header":
                continue
            match_id = str(lines[0].get("match_id") or path.stem)
            if not self._include(match_id):
                continue
            end = next((x for x in reversed(lines) if x.get("type") == "end"), None)
            ends[match_id] = (lines[0], end)
            rows = data.results_from_record(lines, len(read))
            if not rows:
                self._unfinished.add(match_id)
                continue
            faults: dict[str, dict[str, int]] = {}
            data.faults_from_record(lines, faults)
            clock = lines[0].get("clock") or {}
            if clock_ms is None and isinstance(clock, dict) and "decision_ms" in clock:
                clock_ms = float(clock["decision_ms"])
            read.append((match_id, path, rows, faults))
        # A deal whose last seating has not revealed its seed is shown by no door, result
        # included: nothing of it enters the pages until the tournament has played it out.
        held = embargoed_records(ends, (folder / "deal-key.txt").is_file()) if self.embargo else {}
        loaded: list[tuple[str, list[StoredResult]]] = []
        for match_id, path, rows, faults in read:
            if match_id in held:
                self._embargoed[match_id] = ([r.bot for r in rows], held[match_id])
                continue
            self._paths[match_id] = path
            for bot, reasons in faults.items():
                mine = self._faults.setdefault(bot, {})
                for reason, count in reasons.items():
                    mine[reason] = mine.get(reason, 0) + count
            loaded.append((match_id, rows))
        for match_id in self._unfinished & held.keys():
            self._embargoed[match_id] = (list(ends[match_id][0].get("seating", [])), held[match_id])
        no_think: array.array[int] = array.array("I")
        for position, (_, rows) in enumerate(loaded, 1):
            rows = [dataclasses.replace(r, finish_order=position) for r in rows]
            self._pending.extend(rows)
            self._matches.append([dataclasses.replace(r, think_us=no_think) for r in rows])
        self.decision_ms = decision_ms if decision_ms is not None else (clock_ms or 0.0)
        # A tournament's or league's match ids are "<name>-<number>": its name.
        prefixes = {m.rsplit("-", 1)[0] for m in [*self._paths, *self._unfinished] if "-" in m}
        if len(prefixes) == 1:
            self.name = prefixes.pop()
        self._standings = self._read_standings()

    def fairplay_path(self) -> Path | None:
        return self.folder / "fairplay.json"

    def _include(self, match_id: str) -> bool:
        """Whether the record of ``match_id`` is read (a subclass may leave some out)."""
        return True

    def _read_standings(self) -> dict[str, Any]:
        path = self.folder / "ratings.json"
        if path.is_file():
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
                rows = [dict(r) for r in doc["standings"]]
                meta = doc.get("meta", {})
                return {
                    "matches": len(self._paths),
                    "published_at": path.stat().st_mtime,
                    "standings": data.ranked(data.finite(rows)),
                    "meta": meta,
                }
            except (OSError, ValueError, KeyError, TypeError):
                pass
        from referee.league.standings import compute_standings

        # A match with one bot in several seats (``referee match``) cannot be rated.
        rated = [
            r for rows in self._matches if len({x.bot for x in rows}) == len(rows) for r in rows
        ]
        response = compute_standings(rated, 100)
        return {
            "matches": response.matches,
            "published_at": response.published_at,
            "standings": data.ranked(_standings_rows(response)),
        }

    def version(self) -> Any:
        return 0

    def standings(self) -> dict[str, Any]:
        return self._standings

    def load(self, limit: int) -> tuple[list[StoredResult], dict[str, dict[str, int]]]:
        if not self._pending:
            return [], self._faults
        upto = self._pending[0].finish_order + limit
        end = next((i for i, r in enumerate(self._pending) if r.finish_order >= upto), None)
        new = self._pending[:end]
        self._pending = [] if end is None else self._pending[end:]
        return new, self._faults

    def older_matches(self, before: int, limit: int) -> list[dict[str, Any]]:
        # The match at finishing position p is self._matches[p - 1].
        end = max(0, min(before - 1, len(self._matches)))
        page = self._matches[max(0, end - limit) : end]
        return [data.match_summary(rows) for rows in reversed(page)]

    def running(self) -> list[dict[str, Any]]:
        return []

    def finished(self) -> int:
        return len(self._paths)

    def planned(self) -> int | None:
        return len(self._paths) + len(self._unfinished)

    def embargoed(self) -> list[dict[str, Any]]:
        return [
            {"match_id": m, "seating": seating, "embargo": embargo_message(m, pending)}
            for m, (seating, pending) in sorted(self._embargoed.items())
        ]

    def record_path(self, match_id: str) -> Path:
        if match_id in self._embargoed:
            raise Embargoed(embargo_message(match_id, self._embargoed[match_id][1]))
        if match_id in self._unfinished:
            raise StillRunning(f"match {match_id!r} did not finish; its record is not shown")
        path = self._paths.get(match_id)
        if path is None:
            raise NotFound(f"no finished match {match_id!r} in {self.folder}")
        return path

    def feed(self, match_id: str) -> MatchFeed:
        return replay_feed(match_id, self.record_lines(match_id))
