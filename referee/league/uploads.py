"""Uploads: a hosted entry's code arriving over ``League.Submit``.

An upload is one stream: a :class:`SubmitHeader` (format, size, hash, bot file), then
chunks. It is held in memory until it is checked, so nobody may hold the door: at most
one upload under way per entry, ``uploads_per_owner`` per owner, ``uploads_per_address``
per client address and ``uploads_at_once`` in all; each must keep an average of
``upload_min_kib_s`` once its first :data:`GRACE_S` are over and end within
``upload_timeout_s``; and every upload started counts against the entry's
``upload_attempts_per_day`` (:mod:`referee.league.allowances`), so that one reopened again
and again costs its sender, not the others. Stored submissions, and uploads refused at
once, count against ``submissions_per_day`` too. Every refusal names the limit and when it
frees. A checked upload is stored by hash and handed to validation
(:meth:`~referee.league.hosting.Hosting.validate_later`).

Its interface: :meth:`Uploads.receive`, which turns a stream into a stored submission or
raises :class:`~referee.match.server.Refused` with the one line the uploader sees.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import grpc
import structlog

from referee.league.allowances import UPLOAD, Allowance, when
from referee.league.archive import FORMATS as ARCHIVE_FORMATS
from referee.league.archive import ArchiveRefused
from referee.league.hosting import Hosting, Refusal
from referee.league.registry import BotEntry
from referee.league.submissions import Submission, Submissions
from referee.match.server import Refused
from sticheln.v1 import league_pb2

log = structlog.get_logger("referee.league")

#: An upload's first seconds, before its least average rate holds (the header, a slow
#: start of the connection).
GRACE_S = 10.0
#: Kept for the names other modules import: the default of ``uploads_at_once`` was 4.
MAX_UPLOADS = 4


def client_address(peer: str) -> str:
    """The client's address in a gRPC peer string (``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5``,
    ``unix:/path``): the host without its port."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return rest.rpartition("]")[0].lstrip("[") or rest
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    return peer


@dataclass
class _Upload:
    """An upload under way."""

    bot: str
    owner: str
    address: str
    #: When it must be over (the loop's clock).
    deadline: float


class Uploads:
    """The uploads under way, their limits and the entries' daily allowances."""

    def __init__(
        self,
        hosting: Hosting,
        submissions: Submissions,
        owner_of: Callable[[str], str] = lambda bot: bot,
    ) -> None:
        self.hosting = hosting
        self.submissions = submissions
        #: An entry's owner (an entry without one is its own).
        self._owner_of = owner_of
        limits = hosting.config
        self.attempts = Allowance(submissions.store, UPLOAD, limits.upload_attempts_per_day)
        #: The uploads under way.
        self._uploading: list[_Upload] = []
        #: When each entry's uploads were refused at once (for the daily quota).
        self._refused_uploads: dict[str, list[float]] = {}

    def _frees(self, held: list[_Upload]) -> str:
        """When the first of ``held`` ends at the latest, as a refusal says it."""
        first = min(u.deadline for u in held) - asyncio.get_running_loop().time()
        return f"one ends within {max(1, round(first))} s"

    def _admit(self, entry: BotEntry, address: str) -> _Upload:
        """Take a place for an upload of ``entry`` from ``address``, or refuse it naming
        the limit and when it frees; the attempt counts against the daily allowance."""
        limits = self.hosting.config
        owner = self._owner_of(entry.name)
        mine = [u for u in self._uploading if u.bot == entry.name]
        if mine:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"an upload of bot {entry.name!r} is under way; one at a time per entry "
                f"({self._frees(mine)})",
            )
        for held, limit, key, who in (
            ([u for u in self._uploading if u.owner == owner], limits.uploads_per_owner,
             "uploads_per_owner", f"owner {owner!r}"),
            ([u for u in self._uploading if u.address == address], limits.uploads_per_address,
             "uploads_per_address", f"address {address}"),
            (self._uploading, limits.uploads_at_once, "uploads_at_once", "the league"),
        ):  # fmt: skip
            if len(held) >= limit:
                raise Refused(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"{who} has {len(held)} uploads under way, this league's {key}; try "
                    f"again when {self._frees(held)}",
                )
        now = time.time()
        if self.attempts.left(entry.name, now) < 1:
            again = self.attempts.resets_at(entry.name, 1, now)
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"bot {entry.name!r} started {limits.upload_attempts_per_day} uploads in the "
                f"last 24 hours, this league's upload_attempts_per_day; the next may start "
                f"at {when(again)}",
            )
        self.attempts.charge(entry.name, 1, now)
        upload = _Upload(
            entry.name, owner, address,
            asyncio.get_running_loop().time() + limits.upload_timeout_s,
        )  # fmt: skip
        self._uploading.append(upload)
        return upload

    async def receive(
        self,
        requests: AsyncIterator[league_pb2.SubmitRequest],
        entry: BotEntry,
        address: str = "",
    ) -> Submission:
        """An upload of ``entry`` from ``address``, checked, stored and queued for
        validation."""
        upload = self._admit(entry, address)
        try:
            h, data = await self._paced(requests, entry, upload)
            return await self._store(entry, h, data)
        finally:
            self._uploading.remove(upload)

    async def _paced(
        self, requests: AsyncIterator[league_pb2.SubmitRequest], entry: BotEntry, upload: _Upload
    ) -> tuple[league_pb2.SubmitHeader, bytearray]:
        """The header and the archive, each message in time: by the whole upload's
        deadline, and by when the least average rate needs it."""
        limits = self.hosting.config
        loop = asyncio.get_running_loop()
        started = loop.time()
        rate = limits.upload_min_kib_s * 1024
        received = 0
        stream = aiter(requests)

        async def message() -> league_pb2.SubmitRequest | None:
            nonlocal received
            due = upload.deadline
            if rate > 0:
                due = min(due, started + GRACE_S + received / rate)
            try:
                async with asyncio.timeout_at(due):
                    msg = await anext(stream, None)
            except TimeoutError:
                if due < upload.deadline:
                    raise Refused(
                        grpc.StatusCode.DEADLINE_EXCEEDED,
                        f"the upload sent {received} bytes in {loop.time() - started:.0f} s, "
                        f"slower than this league's upload_min_kib_s = "
                        f"{limits.upload_min_kib_s:g}; nothing was stored (submit again)",
                    ) from None
                raise Refused(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"the upload took more than this league's upload_timeout_s = "
                    f"{limits.upload_timeout_s:g} s; nothing was stored (submit again)",
                ) from None
            if msg is not None:
                received += msg.ByteSize()
            return msg

        h = await self._header(await message(), entry)
        data = bytearray()
        while (msg := await message()) is not None:
            self._chunk(data, msg, h)
        return h, data

    async def _header(
        self, first: league_pb2.SubmitRequest | None, entry: BotEntry
    ) -> league_pb2.SubmitHeader:
        """An upload's header, checked against the league's limits and the quota."""
        limits = self.hosting.config
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
            times = sorted([s.submitted_at for s in self.submissions.history(entry.name)] + refused)
            times = [t for t in times if t > since]
            # The oldest that must run out for one more to fit.
            frees = times[len(times) - limits.submissions_per_day] + 86_400
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"bot {entry.name!r} made {made} submissions in the last 24 hours, this league's "
                f"submissions_per_day; the next may be made at {when(frees)}",
            )
        return h

    @staticmethod
    def _chunk(data: bytearray, msg: league_pb2.SubmitRequest, h: league_pb2.SubmitHeader) -> None:
        """Add a chunk of the archive: no more than the header declared."""
        if msg.WhichOneof("part") != "chunk":
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "only chunks follow the SubmitHeader")
        data.extend(msg.chunk)
        if len(data) > h.size:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the stream sent more than the {h.size} bytes its header declared",
            )

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
        await hosting.put_archive(digest, bytes(data))
        sub = self.submissions.add(entry.name, digest, h.format, bot_file)
        log.info("submission", bot=entry.name, submission=sub.number, sha256=digest, size=h.size)
        hosting.validate_later(sub)
        return sub
