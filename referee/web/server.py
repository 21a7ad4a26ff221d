"""The referee's web server: read-only pages and one JSON API under ``/api/`` (docs/web.md).

It runs on the referee's own asyncio loop, beside the gRPC server, and serves what a
:class:`~referee.web.sources.Source` answers. Every route is GET (and HEAD); any other
method is 405. Every response carries a strict Content-Security-Policy: the pages load
only this server's own scripts and styles, nothing inline and nothing from another host,
and they put every text from the data into the page as text, never as markup.

A running match is reachable only through its public feed
(:mod:`referee.league.feed`, the one place that decides what a spectator may see), as
Server-Sent Events at ``/api/matches/{id}/live``; its record, with the hands, is
refused until it has finished.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gzip
import hashlib
import itertools
import json
import math
import re
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge

from referee.league.feed import MatchFeed, Spectator
from referee.results import documents as data
from referee.web import render
from referee.web.doors import DoorLimits, Doorman
from referee.web.live import RunningScores, event_json, event_text
from referee.web.pace import Pacer
from referee.web.sources import Embargoed, NotFound, NotYours, Source, StillRunning
from sticheln.v1 import league_pb2

log = structlog.get_logger("referee.web")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
#: The pages: path → file in ``referee/web/static``.
PAGES = {
    "/": "index.html",
    "/bot": "bot.html",
    "/head-to-head": "h2h.html",
    "/matches": "matches.html",
    "/match": "match.html",
    "/rules": "rules.html",
    "/compare": "compare.html",
}
#: A live stream sends a comment this often when nothing happens (proxies and browsers
#: then keep it open, and a closed one is noticed).
HEARTBEAT_S = 15.0
#: How often the standings' update stream looks for a change.
UPDATE_POLL_S = 0.25
#: The update stream sends at most one event this often (seconds): a busy league's
#: matches start and finish several times a second, and a page left open needs to hear of
#: them together, not one by one.
UPDATE_EVERY_S = 5.0
#: A matches list left open takes at most this many new matches in one event (it shows no
#: more: with more, they replace it).
LIST_ROWS = 100
#: A live table looks for new events this often (seconds) and writes them in one batch:
#: a viewer sees no difference, and a busy league is not interrupted for every card.
LIVE_BATCH_S = 0.25
#: Broadcasts of this many finished matches are kept for their next viewers.
KEPT_BROADCASTS = 64
#: At most this many matches per ``/api/matches`` page: the first page at its largest is
#: always in the snapshot's memory.
MAX_LIMIT = data.KEPT_MATCHES
#: Bodies at least this long are sent compressed to a client that accepts it; a shorter
#: one would gain less than its headers weigh.
COMPRESS_MIN = 512
#: Compressed bodies kept for their next asks, by ETag and coding (a finished match's
#: document is compressed once, not for every viewer).
KEPT_COMPRESSED = 128
#: The content types worth compressing (pictures other than SVG are compressed already).
COMPRESSIBLE = ("text/", "application/json", "application/jsonl", "image/svg+xml")
#: A versioned static file (``/static/app.css?v=…``, the version the server's own pages
#: link to) never changes under its address: a browser keeps it for a year unasked.
IMMUTABLE = "public, max-age=31536000, immutable"
STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}


class WebMetrics:
    """The web server's metrics, on the referee's registry (docs/metrics.md)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.clients = Gauge(
            "sticheln_web_clients",
            "Live viewers connected now, by stream (a match's table, or the standings' updates).",
            ["stream"],
            registry=registry,
        )
        self.requests = Counter(
            "sticheln_web_requests",
            "Web requests answered, by route and HTTP status code.",
            ["route", "code"],
            registry=registry,
        )


@dataclass(frozen=True)
class WebOptions:
    """Where to serve, how far behind a running match's spectators stay, and how many
    connections the server takes (:mod:`referee.web.doors`) and for how long a live
    stream."""

    host: str = "127.0.0.1"
    port: int = 0
    delay_rounds: int = 0
    doors: DoorLimits = field(default_factory=DoorLimits)
    #: A live stream ends after this many seconds; the browser reconnects by itself (a
    #: match's stream goes on from the last event it had, ``Last-Event-ID``).
    stream_s: float = 600.0
    #: The update stream sends at most one event this often (seconds).
    update_every_s: float = UPDATE_EVERY_S


class BadRequest(ValueError):
    """A request with a bad parameter; the message says which and what is allowed."""


def _dumps(doc: Any) -> bytes:
    try:
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere: null in JSON
        text = json.dumps(data.finite(doc), ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8")


def _json(doc: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=_dumps(doc), status=status, content_type="application/json", charset="utf-8"
    )


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


#: A reference to a shipped file in a page, a script's import or a stylesheet.
_STATIC_REF = re.compile(rb"(?<=[\"'(])/static/([\w.-]+\.(?:js|css|svg))(?=[\"')])")


def _static_files() -> tuple[dict[str, tuple[bytes, str]], str]:
    """The shipped pages, scripts and styles, read once, and their version: every
    reference to ``/static/NAME`` in them carries ``?v=VERSION``, a digest of all of them,
    so that a browser may keep each for good and still gets the new ones after an
    upgrade (one version for the set: a script and the modules it imports change
    together)."""
    files: dict[str, tuple[bytes, str]] = {}
    folder = resources.files("referee.web") / "static"
    for entry in sorted(folder.iterdir(), key=lambda x: x.name):
        suffix = Path(entry.name).suffix
        if entry.is_file() and suffix in STATIC_TYPES:
            files[entry.name] = (entry.read_bytes(), STATIC_TYPES[suffix])
    digest = hashlib.blake2b(digest_size=6)
    for name, (body, _) in files.items():
        digest.update(name.encode() + b"\0" + body + b"\0")
    version = digest.hexdigest()
    versioned = f"?v={version}".encode()
    out = {
        name: (_STATIC_REF.sub(lambda m: m.group(0) + versioned, body), kind)
        for name, (body, kind) in files.items()
    }
    return out, version


def _etag(body: bytes) -> str:
    """A weak entity tag of a body: weak, as the same tag names its compressed forms."""
    return f'W/"{hashlib.blake2b(body, digest_size=12).hexdigest()}"'


def _short_tag(body: bytes) -> str:
    """A short tag of a document, for an update event to say whether it changed."""
    return hashlib.blake2b(body, digest_size=6).hexdigest()


def _matches_tag(header: str, etag: str) -> bool:
    """Whether an If-None-Match header names ``etag`` (compared weakly, as RFC 9110 asks)."""
    bare = etag.removeprefix("W/")
    return any(t.strip() == "*" or t.strip().removeprefix("W/") == bare for t in header.split(","))


def _coding(accept: str) -> str | None:
    """The compression a client accepts: gzip, else deflate, else none."""
    wanted: dict[str, float] = {}
    for part in accept.lower().split(","):
        name, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        wanted[name.strip()] = q
    for coding in ("gzip", "deflate"):
        if wanted.get(coding, wanted.get("*", 0.0)) > 0:
            return coding
    return None


def _compress(body: bytes, coding: str) -> bytes:
    if coding == "gzip":
        return gzip.compress(body, 6, mtime=0)
    return zlib.compress(body, 6)  # HTTP's "deflate" is the zlib format


class WebServer:
    """The pages and the API of one source, on this loop."""

    def __init__(
        self,
        source: Source,
        registry: CollectorRegistry,
        options: WebOptions | None = None,
    ) -> None:
        self.source = source
        self.options = options or WebOptions()
        self.metrics = WebMetrics(registry)
        self.static, self.static_version = _static_files()
        self._compressed: collections.OrderedDict[tuple[str, str], bytes] = (
            collections.OrderedDict()
        )
        self.app = web.Application(middlewares=[self._middleware])
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        #: The connections taken and refused (:mod:`referee.web.doors`), once listening.
        self.doorman: Doorman | None = None
        self._closing = asyncio.Event()
        #: The latest viewer documents asked for (a finished match's record does not change).
        self._documents: dict[str, tuple[Path, bytes]] = {}
        self._bodies: dict[str, tuple[data.Snapshot, bytes]] = {}
        self._standings: tuple[Any, bytes, str] = (None, b"", "")
        #: Bots' pages computed from the current snapshot, by bot.
        self._details: tuple[data.Snapshot | None, dict[str, dict[str, Any]]] = (None, {})
        self._broadcasts: collections.OrderedDict[str, Broadcast] = collections.OrderedDict()
        #: The live match streams, ended at once when the server stops.
        self._streams: set[asyncio.Task[Any]] = set()
        self._clock = Clock(LIVE_BATCH_S)
        self._changed = asyncio.Condition()
        self._watcher: asyncio.Task[None] | None = None
        self.address = ""
        self.port = 0
        r = self.app.router
        for path, name in PAGES.items():
            r.add_get(path, self._page(name))
        r.add_get("/static/{file}", self._static)
        api: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = {
            "/api/info": self.info,
            "/api/standings": self.standings,
            "/api/bots": self.bots,
            "/api/bot": self.bot,
            "/api/logs": self.logs,
            "/api/head-to-head": self.head_to_head,
            "/api/matches": self.matches,
            "/api/matches/{match_id}": self.match,
            "/api/matches/{match_id}/record.jsonl": self.record,
            "/api/matches/{match_id}/live": self.live,
            "/api/matches/{match_id}/state": self.match_state,
            "/api/updates": self.updates,
            "/api/compare": self.compare,
            "/api/seasons": self.seasons,
        }
        for path, handler in api.items():
            r.add_get(path, handler)

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> str:
        """Listen; returns ``http://host:port/``."""
        self._runner = web.AppRunner(
            # A viewer that leaves ends its live stream at once.
            self.app,
            access_log=None,
            shutdown_timeout=2.0,
            handler_cancellation=True,
            # A connection that sends no request holds a descriptor: not for long.
            keepalive_timeout=15.0,
        )
        await self._runner.setup()
        # Every connection passes the doorman before aiohttp reads a byte of it.
        self.doorman = Doorman(self.options.doors)
        handlers = self._runner.server
        assert handlers is not None  # made by setup()
        self._listener = await asyncio.get_running_loop().create_server(
            self.doorman.protocol(handlers),
            self.options.host,
            self.options.port,
            backlog=512,
        )
        sockets = self._listener.sockets
        self.port = int(sockets[0].getsockname()[1]) if sockets else self.options.port
        host = self.options.host
        shown = f"[{host}]" if ":" in host else host
        self.address = f"http://{shown}:{self.port}/"
        await self.source.refresh()
        self._watcher = asyncio.ensure_future(self._watch_versions())
        log.info("web_start", address=self.address)
        return self.address

    async def stop(self) -> None:
        """End every live stream, then stop listening."""
        self._closing.set()
        for task in list(self._streams):
            task.cancel()
        async with self._changed:
            self._changed.notify_all()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self._listener is not None:
            self._listener.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _watch_versions(self) -> None:
        """Compute the documents again and wake the update streams whenever the source's
        data changed."""
        last = None
        while True:
            try:
                await self.source.refresh()
                version = self._version()
            except Exception as exc:  # a busy database: try again next time
                log.warning("web_source_failed", error=repr(exc))
                version = last
            if version != last:
                last = version
                async with self._changed:
                    self._changed.notify_all()
            await asyncio.sleep(UPDATE_POLL_S)

    def _version(self) -> Any:
        """What the update streams watch: the source's data and the documents computed
        from it (which may follow a moment later)."""
        return (self.source.version(), self.source.snap.version)

    # -- every request ------------------------------------------------------------------------

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        resource = request.match_info.route.resource
        # The route's pattern, not the path: a label with a bounded set of values.
        route = resource.canonical if resource is not None else "other"
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            response = exc
        except BadRequest as exc:
            response = _error(400, str(exc))
        except Embargoed as exc:
            response = _error(403, str(exc))
        except StillRunning as exc:
            response = _error(409, str(exc))
        except NotFound as exc:
            response = _error(404, str(exc))
        except NotYours as exc:
            response = _error(exc.status, str(exc))
        except Exception as exc:
            log.exception("web_request_failed", path=request.path)
            response = _error(500, f"the server failed to answer: {type(exc).__name__}")
        if not response.prepared:
            self._secure(response)
            if isinstance(response, web.Response) and response.status == 200:
                response = await self._conditional(request, response)
        self.metrics.requests.labels(route, str(response.status)).inc()
        return response

    async def _conditional(self, request: web.Request, response: web.Response) -> web.Response:
        """Every whole answer carries an ETag: a client that has it already gets 304 and no
        body (the pages' scripts refetch through the browser's cache, so an unchanged
        document costs a few hundred bytes); a body worth it goes gzip- or
        deflate-compressed, each compressed form made once per ETag."""
        body = response.body
        if not isinstance(body, bytes):
            return response
        h = response.headers
        etag = h.get("ETag") or _etag(body)
        h["ETag"] = etag
        kind = h.get("Content-Type", "")
        compressible = len(body) >= COMPRESS_MIN and kind.startswith(COMPRESSIBLE)
        if compressible:
            h["Vary"] = "Accept-Encoding"
        if _matches_tag(request.headers.get("If-None-Match", ""), etag):
            kept = {k: h[k] for k in ("ETag", "Cache-Control", "Vary") if k in h}
            not_modified = web.Response(status=304, headers=kept)
            self._secure(not_modified)
            return not_modified
        coding = _coding(request.headers.get("Accept-Encoding", "")) if compressible else None
        if coding is not None:
            key = (etag, coding)
            packed = self._compressed.get(key)
            if packed is None:
                # A large body is compressed off the loop: the league does not wait for it.
                packed = (
                    await asyncio.to_thread(_compress, body, coding)
                    if len(body) > 65536
                    else _compress(body, coding)
                )
                self._compressed[key] = packed
                while len(self._compressed) > KEPT_COMPRESSED:
                    self._compressed.popitem(last=False)
            else:
                self._compressed.move_to_end(key)
            if len(packed) < len(body):
                response.body = packed
                h["Content-Encoding"] = coding
        return response

    @staticmethod
    def _secure(response: web.StreamResponse) -> None:
        h = response.headers
        h["Content-Security-Policy"] = CSP
        h["X-Content-Type-Options"] = "nosniff"
        h["Referrer-Policy"] = "no-referrer"
        h["Cross-Origin-Resource-Policy"] = "same-origin"
        h.setdefault("Cache-Control", "no-cache")

    def _page(self, name: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def page(request: web.Request) -> web.StreamResponse:
            if name == "index.html" and hasattr(self.source, "compare"):
                raise web.HTTPFound("/compare")  # a comparison's first page is its verdict
            body, kind = self.static[name]
            body = self._rendered(name, request, body)
            if hasattr(self.source, "compare"):  # a comparison's pages lead to its verdict
                path = request.path
                old, new = render.nav_links(path), render.nav_links(path, render.COMPARE_NAV)
                body = body.replace(old.encode(), new.encode(), 1)
            return web.Response(body=body, headers={"Content-Type": kind})

        return page

    async def _static(self, request: web.Request) -> web.StreamResponse:
        found = self.static.get(request.match_info["file"])
        if found is None:
            raise NotFound(f"no file {request.match_info['file']!r}")
        headers = {"Content-Type": found[1]}
        if request.query.get("v") == self.static_version:
            headers["Cache-Control"] = IMMUTABLE
        return web.Response(body=found[0], headers=headers)

    # -- the API --------------------------------------------------------------------------------

    async def info(self, request: web.Request) -> web.StreamResponse:
        return _json({**self.source.info(), "progress": self.source.progress()})

    def _standings_body(self) -> tuple[bytes, str]:
        """The standings serialized, and their ETag (serialized once per publication)."""
        doc = self.source.standings()
        if self._standings[0] is not doc:
            body = _dumps(doc)
            self._standings = (doc, body, _etag(body))
        return self._standings[1], self._standings[2]

    async def standings(self, request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=self._standings_body()[0], content_type="application/json", charset="utf-8"
        )

    async def compare(self, request: web.Request) -> web.StreamResponse:
        """A comparison's verdict and pairs (docs/web.md); 404 for any other source."""
        doc = getattr(self.source, "compare", None)
        if doc is None:
            raise NotFound("not a comparison: serve a `referee compare` folder")
        return _json(doc())

    async def seasons(self, request: web.Request) -> web.StreamResponse:
        """A league's seasons and their finals (docs/league.md); none for any other source."""
        doc = getattr(self.source, "seasons", None)
        return _json(doc() if doc is not None else {"current": None, "seasons": []})

    async def bots(self, request: web.Request) -> web.StreamResponse:
        return _json({"bots": self.source.bots()})

    async def bot(self, request: web.Request) -> web.StreamResponse:
        name = request.query.get("name", "")
        if not name:
            raise BadRequest("the query parameter 'name' (a bot's name) is missing")
        return _json(self._bot_document(name))

    async def logs(self, request: web.Request) -> web.StreamResponse:
        """A hosted bot's own logs, for its owner: the token comes in the Authorization
        header (never in the address, which logs and histories keep)."""
        name = request.query.get("name", "")
        if not name:
            raise BadRequest("the query parameter 'name' (a bot's name) is missing")
        auth = request.headers.get("Authorization", "")
        token = auth[7:].strip() if auth.startswith("Bearer ") else ""
        response = _json(self.source.logs(name, token))
        response.headers["Cache-Control"] = "no-store"
        return response

    def _bot_document(self, name: str) -> dict[str, Any]:
        """A bot's page document (NotFound for an unknown bot)."""
        snap = self.source.snap
        entries = {b["name"]: b for b in self.source.bots()}
        if name not in entries and name not in snap.bots:
            raise NotFound(f"no bot {name!r}")
        entry = entries.get(name, {"name": name})
        family = entry.get("family")
        versions = [b for b in entries.values() if family and b.get("family") == family]
        if self._details[0] is not snap:
            self._details = (snap, {})
        detail = self._details[1].get(name)
        if detail is None:
            detail = self._details[1][name] = data.bot_detail(name, snap, self.source.decision_ms)
        standing = next(
            (s for s in self.source.standings()["standings"] if s.get("bot") == name), None
        )
        return {
            **detail,
            "entry": entry,
            "versions": versions,
            "standing": standing,
            "submissions": self.source.submissions(name),
            "finals": self.source.bot_finals(name),
            "fairplay": self._fairplay(name),
        }

    def _fairplay(self, name: str) -> dict[str, Any] | None:
        """The bot's fair-play figures, its weightiest decisions only in matches every
        door may show (not a running or embargoed one)."""
        figures = self.source.fairplay(name)
        if figures is None:
            return None
        shown = []
        for d in figures.get("weighing_most") or []:
            try:
                self.source.record_path(str(d.get("match_id", "")))
            except LookupError:
                continue
            shown.append(d)
        return {**figures, "weighing_most": shown}

    def _snapshot_body(self, key: str, make: Callable[[data.Snapshot], Any]) -> web.Response:
        """A document of the current snapshot, serialized once per snapshot."""
        snap = self.source.snap
        found = self._bodies.get(key)
        if found is None or found[0] is not snap:
            found = self._bodies[key] = (snap, _dumps(make(snap)))
        return web.Response(body=found[1], content_type="application/json", charset="utf-8")

    async def head_to_head(self, request: web.Request) -> web.StreamResponse:
        return self._snapshot_body("h2h", lambda snap: snap.head_to_head)

    async def matches(self, request: web.Request) -> web.StreamResponse:
        text = request.query.get("limit", "50")
        try:
            limit = int(text)
        except ValueError:
            limit = -1
        if not 1 <= limit <= MAX_LIMIT:
            raise BadRequest(f"limit={text!r} is not allowed; allowed: 1 to {MAX_LIMIT}")
        before: int | None = None
        if "before" in request.query:
            text = request.query["before"]
            try:
                before = int(text)
            except ValueError:
                before = 0
            if before < 1:
                raise BadRequest(f"before={text!r} is not allowed; allowed: 1 or more")
        after = self._after(request)
        if after is not None and before is not None:
            raise BadRequest("after and before cannot be asked together")
        summaries = self.source.snap.summaries
        if after is not None:
            # A page left open asks only for what finished since the newest it shows.
            finished = list(
                itertools.islice(
                    itertools.takewhile(lambda m: m["finish_order"] > after, summaries), limit
                )
            )
        else:
            # The latest matches are in the snapshot; older pages are read from the store.
            found = self.source.snap.page(before, limit)
            if found is None:
                assert before is not None  # the snapshot keeps at least the first page
                found = self.source.older_matches(before, limit)
            finished = found
        doc = {
            "progress": self.source.progress(),
            "running": self.source.running(),
            "embargoed": self.source.embargoed(),
            "finished": finished,
            "next_before": finished[-1]["finish_order"] if len(finished) == limit else None,
            # A league's seasons' finals, on the newest page: their own matches, unrated.
            "finals": self.source.finals() if before is None else [],
        }
        if after is not None:
            doc["newest"] = summaries[0]["finish_order"] if summaries else 0
        return _json(doc)

    @staticmethod
    def _after(request: web.Request) -> int | None:
        if "after" not in request.query:
            return None
        text = request.query["after"]
        try:
            after = int(text)
        except ValueError:
            after = -1
        if after < 0:
            raise BadRequest(f"after={text!r} is not allowed; allowed: 0 or more")
        return after

    async def match(self, request: web.Request) -> web.StreamResponse:
        body = self._viewer_body(request.match_info["match_id"])
        return web.Response(body=body, content_type="application/json", charset="utf-8")

    def _viewer_body(self, match_id: str) -> bytes:
        """A finished match's viewer document, serialized (kept for the next asks)."""
        path = self.source.record_path(match_id)  # refuses a running match
        cached = self._documents.get(match_id)
        if cached is None or cached[0] != path:
            try:
                doc = data.viewer_document(self.source.record_lines(match_id))
            except data.RecordShapeError as exc:
                raise NotFound(f"the record of match {match_id!r} cannot be shown: {exc}") from None
            cached = self._documents[match_id] = (path, _dumps(doc))
            while len(self._documents) > KEPT_BROADCASTS:
                del self._documents[next(iter(self._documents))]
        return cached[1]

    def _match_state(self, match_id: str) -> str:
        """``finished`` (its record can be shown), ``running`` (only its live feed),
        ``unfinished`` (ended without a record to show) or ``missing``."""
        try:
            self.source.record_path(match_id)
        except StillRunning:
            running = any(m["match_id"] == match_id for m in self.source.running())
            return "running" if running else "unfinished"
        except NotFound:
            return "missing"
        return "finished"

    async def match_state(self, request: web.Request) -> web.StreamResponse:
        """Whether a match runs or has finished: asked by a page before it opens the
        replay or the live table, so that it never asks for a refused record."""
        match_id = request.match_info["match_id"]
        state = self._match_state(match_id)
        if state == "missing":
            raise NotFound(f"no match {match_id!r}")
        return _json({"match_id": match_id, "state": state})

    # -- pages written by the server -----------------------------------------------------------

    def _rendered(self, name: str, request: web.Request, shell: bytes) -> bytes:
        """The page with its main content written in (:mod:`referee.web.render`); the bare
        shell when the content cannot be had (the script then shows why)."""
        if render.PLACEHOLDER not in shell:
            return shell
        info = self.source.info()
        where = f"{info.get('kind', '')} {info.get('name', '')}"
        path = request.path
        try:
            if name == "index.html":
                bots = [b["name"] for b in self.source.bots()]
                main = render.standings(self.source.standings(), self.source.progress(), bots)
                return render.page(shell, path, where, main)
            if name == "matches.html":
                before = request.query.get("before")
                limit = 100
                before_n = int(before) if before and before.isdigit() and int(before) > 0 else None
                finished = self.source.snap.page(before_n, limit)
                if finished is None and before_n is not None:
                    finished = self.source.older_matches(before_n, limit)
                doc = {
                    "progress": self.source.progress(),
                    "running": self.source.running(),
                    "finished": finished or [],
                    "next_before": finished[-1]["finish_order"]
                    if finished and len(finished) == limit
                    else None,
                    "finals": self.source.finals() if not before else [],
                }
                return render.page(shell, path, where, render.matches(doc, before))
            if name == "h2h.html":
                main = render.head_to_head(self.source.snap.head_to_head)
                return render.page(shell, path, where, main)
            if name == "bot.html":
                bot = request.query.get("name", "")
                if bot:
                    detail = self._bot_document(bot)
                    return render.page(shell, path, where, render.bot(detail))
            if name == "compare.html":
                from referee.web.compare import render_compare

                comparison = getattr(self.source, "compare", None)
                if comparison is None:
                    raise NotFound("not a comparison")
                pair = request.query.get("pair", "")
                main = render_compare(comparison(), int(pair) if pair.isdigit() else None)
                return render.page(shell, path, where, main, {"pair": pair} if pair else {})
            if name == "match.html":
                match_id = request.query.get("id", "")
                if match_id:
                    state = self._match_state(match_id)
                    if state == "finished":
                        doc = json.loads(self._viewer_body(match_id))
                        main = render.match_head(
                            match_id, doc["seating"], False, doc["end"], doc.get("challenge") or ""
                        )
                        return render.page(shell, path, where, main, {"state": state})
                    if state == "running":
                        seating = next(
                            m["seating"] for m in self.source.running() if m["match_id"] == match_id
                        )
                        main = render.match_head(match_id, seating, True, None)
                        return render.page(shell, path, where, main, {"state": state})
        except (NotFound, StillRunning, StopIteration):
            pass
        except Exception:  # the page still loads; its script asks the API and shows the error
            log.exception("web_render_failed", page=name)
        return render.page(shell, path, where, '<p class="muted">Loading…</p>')

    async def record(self, request: web.Request) -> web.StreamResponse:
        match_id = request.match_info["match_id"]
        path = self.source.record_path(match_id)
        try:
            body = path.read_bytes()
        except OSError as exc:
            raise NotFound(f"the record of match {match_id!r} cannot be read: {exc}") from None
        return web.Response(
            body=body,
            headers={
                "Content-Type": "application/jsonl; charset=utf-8",
                "Content-Disposition": f'attachment; filename="{match_id}.jsonl"',
            },
        )

    # -- live streams ----------------------------------------------------------------------------

    async def _event_stream(
        self, request: web.Request, stream: str, headers: dict[str, str] | None = None
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "Vary": "Accept-Encoding",
                **(headers or {}),
            }
        )
        self._secure(response)
        await response.prepare(request)
        self.metrics.clients.labels(stream).inc()
        return response

    def _broadcast(self, match_id: str) -> Broadcast:
        """The match's broadcast, shared by its viewers; a finished match's is kept for
        the next viewers (the latest :data:`KEPT_BROADCASTS`), so that it is read from
        its record and filtered once."""
        found = self._broadcasts.get(match_id)
        # A league replays an interrupted match under the same id: a new broadcast then.
        if found is not None and (
            not found.done or all(m["match_id"] != match_id for m in self.source.running())
        ):
            self._broadcasts.move_to_end(match_id)
            return found
        b = Broadcast(self.source.feed(match_id), self.options.delay_rounds)
        self._broadcasts[match_id] = b
        excess = len(self._broadcasts) - KEPT_BROADCASTS
        if excess > 0:  # the oldest finished ones go; running matches' stay
            for key in [k for k, v in self._broadcasts.items() if v.done][:excess]:
                del self._broadcasts[key]
        return b

    async def live(self, request: web.Request) -> web.StreamResponse:
        match_id = request.match_info["match_id"]
        b = self._broadcast(match_id)
        response = await self._event_stream(request, "match")
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        try:
            await response.write(b"retry: 2000\n\n")
            # A browser reconnecting after the stream's time was up says what it has.
            sent = _last_event_id(request)
            quiet_since = time.monotonic()
            ends = quiet_since + self.options.stream_s
            while True:
                b.pump()
                if sent < len(b.chunks):
                    # Everything new in one write: a viewer joining late gets the match so
                    # far at once, and a busy stream is written once per batch. Viewers at
                    # the same point of the match share the bytes.
                    chunk, sent = b.since(sent)
                    await response.write(chunk)
                    quiet_since = time.monotonic()
                elif time.monotonic() - quiet_since >= HEARTBEAT_S:
                    await response.write(b": still here\n\n")
                    quiet_since = time.monotonic()
                if b.done and sent >= len(b.chunks):
                    break
                if time.monotonic() >= ends:
                    return response  # no close event: the browser reconnects
                await self._clock.tick()
            await response.write(b"event: close\ndata: {}\n\n")
        except ConnectionResetError:
            pass  # the viewer left
        except asyncio.CancelledError:
            if not self._closing.is_set():
                raise  # the viewer left (the request was cancelled)
        finally:
            self._streams.discard(task)
            self.metrics.clients.labels("match").dec()
        return response

    def _update_event(self, extra: dict[str, Any] | None = None, id_: int | None = None) -> bytes:
        """One event of the update stream: the progress, and what a page left open needs
        to know to ask only for what changed (``versions``): the standings' and the bots'
        tags (their documents' ETags: a page fetches the standings only when they were
        published again), the newest finished match the lists hold, and the running
        matches' tag."""
        progress = self.source.progress()
        summaries = self.source.snap.summaries
        running = self.source.running()
        versions = {
            # The ETags the two documents are served with: a page compares them with its own.
            "standings": self._standings_body()[1],
            "bots": _etag(_dumps({"bots": self.source.bots()})),
            "matches": summaries[0]["finish_order"] if summaries else 0,
            "running": _short_tag(_dumps(running)) if running else "",
            # A league's finals: a list shows a final's matches once it has ended.
            "finals": _short_tag(_dumps(tag)) if (tag := self.source.finals_tag()) else "",
        }
        doc = {**data.finite(progress), "versions": versions, **(extra or {})}
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        head = "" if id_ is None else f"id: {id_}\n"
        return f"{head}data: {text}\n\n".encode()

    async def _wait_change(self, timeout: float) -> None:
        """Until the source's data changes, the server stops, or ``timeout`` seconds."""
        if self._closing.is_set() or timeout <= 0:
            return
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)

    async def updates(self, request: web.Request) -> web.StreamResponse:
        """What changed, as Server-Sent Events: at once when a page connects, then at most
        once every :data:`UPDATE_EVERY_S` while anything changes (a busy league changes
        several times a second: a page left open is told in one event, not in one per
        match), a comment line every :data:`HEARTBEAT_S` when nothing does.

        With ``after=A`` (a matches list left open) each event also carries the matches
        finished since the last it carried (since the A-th at first; a browser
        reconnecting sends the last event's id, the newest it had), as compact rows, and
        the running matches when they changed: the list takes only what is new, and no
        request of its own. The stream is compressed (one gzip stream, each event flushed
        whole) for a client that accepts it: an event says much what the last said."""
        after = self._after(request)
        if after is not None and "Last-Event-ID" in request.headers:
            after = _last_event_id(request)
        gzipped = _coding(request.headers.get("Accept-Encoding", "")) == "gzip"
        packer = _Packer() if gzipped else None
        response = await self._event_stream(
            request, "updates", {"Content-Encoding": "gzip"} if packer else None
        )

        async def write(data: bytes) -> None:
            await response.write(packer.pack(data) if packer else data)

        try:
            await write(b"retry: 2000\n\n")
            last = None
            running_sent: Any = None
            sent_at = -math.inf
            quiet_since = time.monotonic()
            ends = quiet_since + self.options.stream_s
            while not self._closing.is_set():
                now = time.monotonic()
                if now >= ends:
                    break
                version = self._version()
                if version != last:
                    due = sent_at + self.options.update_every_s
                    if now < due:  # the change goes in the next event
                        await self._wait_change(min(due, ends) - now)
                        continue
                    last = version
                    extra: dict[str, Any] = {}
                    if after is not None:
                        extra, after, running_sent = self._list_delta(after, running_sent)
                    await write(self._update_event(extra, after))
                    sent_at = quiet_since = time.monotonic()
                    continue
                if now - quiet_since >= HEARTBEAT_S:
                    await write(b": still here\n\n")
                    quiet_since = now
                await self._wait_change(min(quiet_since + HEARTBEAT_S, ends) - now)
        except ConnectionResetError:
            pass  # the viewer left
        finally:
            self.metrics.clients.labels("updates").dec()
        return response

    def _list_delta(self, after: int, running_sent: Any) -> tuple[dict[str, Any], int, Any]:
        """What a matches list left open lacks: the matches finished since the
        ``after``-th (newest first, at most :data:`LIST_ROWS`: a list shows no more) as
        :func:`_row`, and the running matches unless they are the ones it was sent last.
        Returns them, the new cursor and the running matches sent."""
        summaries = self.source.snap.summaries
        newest = summaries[0]["finish_order"] if summaries else 0
        new = itertools.islice(
            itertools.takewhile(lambda m: m["finish_order"] > after, summaries), LIST_ROWS
        )
        extra: dict[str, Any] = {"new_matches": [_row(m) for m in new]}
        running = self.source.running()
        if running != running_sent:
            extra["running_matches"] = running
        # A source whose numbering went back (another folder) starts the cursor again.
        return extra, newest, running


def _row(m: dict[str, Any]) -> list[Any]:
    """A finished match as the update stream sends it to a matches list: ``[match_id,
    finish_order, seating, places, totals, faults]`` (the fields of ``/api/matches``)."""
    return [m["match_id"], m["finish_order"], m["seating"], m["places"], m["totals"], m["faults"]]


class _Packer:
    """One gzip stream over a connection's events, each flushed whole as it is written,
    so that the browser reads it at once; the next event is compressed against the ones
    before (their keys, names and tags), so that an event costs what is new in it."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: the gzip format

    def pack(self, data: bytes) -> bytes:
        return self._z.compress(data) + self._z.flush(zlib.Z_SYNC_FLUSH)


class Clock:
    """One shared beat for the live streams: every :data:`LIVE_BATCH_S` all of them wake
    together and write what is new. The league's loop is then interrupted for the web
    once per beat, however many viewers there are, and their writes go out in one burst;
    the beat's timer runs only while some stream waits for it."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._beat: asyncio.Future[None] | None = None

    async def tick(self) -> None:
        """Wait for the next beat."""
        if self._beat is None:
            loop = asyncio.get_running_loop()
            beat = self._beat = loop.create_future()
            loop.call_later(self.interval, self._ring, beat)
        # Shielded: a viewer that leaves must not cancel the others' beat.
        await asyncio.shield(self._beat)

    def _ring(self, beat: asyncio.Future[None]) -> None:
        if self._beat is beat:
            self._beat = None
        if not beat.done():
            beat.set_result(None)


class Broadcast:
    """A match's public events, filtered and encoded once for all its web viewers.

    ``chunks`` holds one Server-Sent Event per public message of the feed released so far
    (with the server's delay, by the feed's :class:`~referee.league.feed.Spectator`, the
    rule gRPC ``WatchMatch`` follows too); :meth:`pump` takes in what the feed released
    since, in one go, when a viewer looks: a busy match costs one pass per batch, not a
    task switch per card.
    """

    def __init__(
        self, feed: MatchFeed, delay_rounds: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.feed = feed
        self.pacer = Pacer(delay_rounds, clock)
        self.running = RunningScores()
        self._now = 0.0
        self.spectator = Spectator(
            feed, delay_rounds, lambda i, line: self.pacer.due(i, line, self._now)
        )
        self.chunks: list[bytes] = []
        self.done = False
        self._joined: tuple[int, int, bytes] = (0, 0, b"")

    def pump(self) -> None:
        """Encode the messages the feed released since the last call: the feed's
        :class:`~referee.league.feed.Spectator` lets each line out once its delay is over,
        and the :class:`~referee.web.pace.Pacer` at the pace it was played, so that a
        delayed round does not arrive in one burst."""
        self._now = self.pacer.observe(self.feed.lines, self.feed.over)
        for msg in self.spectator.take():
            self._add(msg)
        self.done = self.spectator.done

    def since(self, sent: int) -> tuple[bytes, int]:
        """The events from ``sent`` on as one block, and the new count sent; the block is
        joined once for all viewers that are at the same point."""
        start, end, block = self._joined
        if start != sent or end != len(self.chunks):
            end = len(self.chunks)
            block = b"".join(self.chunks[sent:end])
            self._joined = (sent, end, block)
        return block, end

    def _add(self, msg: league_pb2.WatchMatchResponse) -> None:
        if msg.WhichOneof("kind") == "event" and msg.event.WhichOneof("kind") == "card_played":
            text = event_text(msg)  # most events: written directly
        else:
            text = json.dumps(self.running.add(event_json(msg)), separators=(",", ":"))
        # The event's number: a reconnecting browser sends the last it had.
        self.chunks.append(f"id: {len(self.chunks) + 1}\ndata: {text}\n\n".encode())


def _last_event_id(request: web.Request) -> int:
    """The number of the last event a reconnecting browser had (0: none)."""
    text = request.headers.get("Last-Event-ID", "")
    return int(text) if text.isdigit() and len(text) < 10 else 0
