"""Uploads: a hosted entry's code arriving over ``League.Submit``.

An upload is one stream: a :class:`SubmitHeader` (format, size, hash, bot file), then
chunks. It is held in memory until it is checked, so the league bounds what uploads may
hold: one at a time per entry, a few in all, each within ``upload_timeout_s``; and the
entry's daily quota (``submissions_per_day``, uploads refused at once counted too). A
checked upload is stored by hash and handed to validation
(:meth:`~referee.league.hosting.Hosting.validate_later`).

Its interface: :meth:`Uploads.receive`, which turns a stream into a stored submission or
raises :class:`~referee.match.server.Refused` with the one line the uploader sees.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator

import grpc
import structlog

from referee.league.archive import FORMATS as ARCHIVE_FORMATS
from referee.league.archive import ArchiveRefused
from referee.league.hosting import Hosting, Refusal
from referee.league.registry import BotEntry
from referee.league.submissions import Submission, Submissions
from referee.match.server import Refused
from sticheln.v1 import league_pb2

log = structlog.get_logger("referee.league")

#: Uploads the league takes at once (each held in memory until it is checked).
MAX_UPLOADS = 4


class Uploads:
    """The uploads under way and the entries' daily quotas."""

    def __init__(self, hosting: Hosting, submissions: Submissions) -> None:
        self.hosting = hosting
        self.submissions = submissions
        #: The entries with an upload under way.
        self._uploading: set[str] = set()
        #: When each entry's uploads were refused at once (for the daily quota).
        self._refused_uploads: dict[str, list[float]] = {}

    async def receive(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], entry: BotEntry
    ) -> Submission:
        """An upload of ``entry``, checked, stored and queued for validation."""
        hosting = self.hosting
        # An upload is held in memory until it is checked: one at a time per entry, and
        # a few in all, each within upload_timeout_s.
        if entry.name in self._uploading:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"an upload of bot {entry.name!r} is under way; one at a time",
            )
        if len(self._uploading) >= MAX_UPLOADS:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the league takes {MAX_UPLOADS} uploads at once; try again shortly",
            )
        self._uploading.add(entry.name)
        try:
            try:
                async with asyncio.timeout(hosting.config.upload_timeout_s):
                    h = await self._header(requests, entry)
                    data = await self._chunks(requests, h)
            except TimeoutError:
                raise Refused(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"the upload took more than this league's upload_timeout_s = "
                    f"{hosting.config.upload_timeout_s:g} s; nothing was stored (submit again)",
                ) from None
            return await self._store(entry, h, data)
        finally:
            self._uploading.discard(entry.name)

    async def _header(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], entry: BotEntry
    ) -> league_pb2.SubmitHeader:
        """An upload's header, checked against the league's limits and the quota."""
        limits = self.hosting.config
        first = await anext(aiter(requests), None)
        if first is None or first.WhichOneof("part") != "header":
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT, "a Submit stream begins with its SubmitHeader"
            )
        h = first.header
        if h.bot and h.bot != entry.name:
            raise Refused(
                grpc.StatusCode.PERMISSION_DENIED,
                f"this token belongs to bot {entry.name!r}, not {h.bot!r}",
            )
        if h.format not in ARCHIVE_FORMATS:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"format {h.format!r} is not allowed; allowed: {', '.join(ARCHIVE_FORMATS)}",
            )
        most = limits.max_archive_mb << 20
        if h.size > most:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the archive is {h.size} bytes, more than this league's max_archive_mb = "
                f"{limits.max_archive_mb}",
            )
        if not h.bot_file:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "SubmitHeader.bot_file is empty")
        since = time.time() - 86_400
        # Uploads refused at once count too (kept here, not stored): each costs the
        # league its unpacking.
        refused = self._refused_uploads.setdefault(entry.name, [])
        refused[:] = [t for t in refused if t > since]
        made = self.submissions.count_since(entry.name, since) + len(refused)
        if made >= limits.submissions_per_day:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"bot {entry.name!r} made {made} submissions in the last 24 hours, this league's "
                f"submissions_per_day; try again later",
            )
        return h

    async def _chunks(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], h: league_pb2.SubmitHeader
    ) -> bytearray:
        """The archive's bytes, no more than the header declared."""
        data = bytearray()
        async for msg in requests:
            if msg.WhichOneof("part") != "chunk":
                raise Refused(
                    grpc.StatusCode.INVALID_ARGUMENT, "only chunks follow the SubmitHeader"
                )
            data.extend(msg.chunk)
            if len(data) > h.size:
                raise Refused(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"the stream sent more than the {h.size} bytes its header declared",
                )
        return data

    async def _store(
        self, entry: BotEntry, h: league_pb2.SubmitHeader, data: bytearray
    ) -> Submission:
        hosting = self.hosting
        if len(data) != h.size:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the stream ended after {len(data)} of the {h.size} bytes its header "
                "declared; nothing was stored (submit again)",
            )
        digest = hashlib.sha256(data).hexdigest()
        if h.sha256 and h.sha256.lower() != digest:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the archive's SHA-256 is {digest}, not the {h.sha256} its header declared",
            )
        try:
            bot_file = await asyncio.to_thread(
                hosting.precheck, digest, h.format, bytes(data), h.bot_file, entry.name
            )
        except (ArchiveRefused, Refusal) as exc:
            self._refused_uploads.setdefault(entry.name, []).append(time.time())
            log.warning("submission_refused", bot=entry.name, sha256=digest, why=str(exc))
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"refused: {exc}") from None
        self.submissions.put_archive(digest, bytes(data))
        sub = self.submissions.add(entry.name, digest, h.format, bot_file)
        log.info("submission", bot=entry.name, submission=sub.number, sha256=digest, size=h.size)
        hosting.validate_later(sub)
        return sub
