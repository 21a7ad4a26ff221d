"""The league's bot entries and their tokens, in the league's database (SQLite or PostgreSQL).

Table ``league_bots``: one row per bot entry (name, owner, description, the family it
belongs to and the entry it succeeds, its version number, the SHA-256 of its token and
whether the token was revoked). A token is shown once, when it is issued; only its hash
is stored, so a copy of the database opens no seat.

The table lives in the league's :class:`~referee.results.store.Store`, next to the
match tables (``matches``, ``results``, ``faults``), and is read and written through it:
one connection, one SQL text for both databases, every write committed at once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets
import time
from dataclasses import dataclass

from referee.results.store import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS league_bots (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    description TEXT NOT NULL,
    family TEXT NOT NULL,
    previous TEXT NOT NULL,
    version INTEGER NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE,
    active INTEGER NOT NULL,
    registered_at {real} NOT NULL
);
"""

NAME = re.compile(r"^[A-Za-z0-9._@-]{1,40}$")
#: Bot tokens start with this, so a leaked one is easy to recognise (and to grep for).
TOKEN_PREFIX = "stb_"


class RegistryError(ValueError):
    """A registration that cannot be made; the message says why in one line.

    ``kind`` is "invalid" (a name not allowed), "exists" or "not_found".
    """

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class BotEntry:
    """A registered bot entry."""

    name: str
    owner: str
    description: str
    family: str
    previous: str
    version: int
    token_sha256: str
    active: bool
    registered_at: float


def token_hash(token: str) -> str:
    """The stored form of a token: its SHA-256, in hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh bot token (256 random bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class BotRegistry:
    """Bot entries, cached in memory and written through to the league's store (which
    stays the caller's to close)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.create_tables(_SCHEMA)
        self._by_name: dict[str, BotEntry] = {}
        self._by_hash: dict[str, BotEntry] = {}
        for row in store.execute(
            "SELECT name, owner, description, family, previous, version, token_sha256, active, "
            "registered_at FROM league_bots ORDER BY registered_at, name"
        ):
            name, owner, description, family, previous, version, digest, active, at = row
            entry = BotEntry(
                name, owner, description, family, previous, version, digest, bool(active), at
            )
            self._remember(entry)

    def _remember(self, entry: BotEntry) -> None:
        self._by_name[entry.name] = entry
        self._by_hash[entry.token_sha256] = entry

    def _insert(self, entry: BotEntry) -> None:
        cur = self.store.execute(
            "INSERT INTO league_bots VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                entry.name,
                entry.owner,
                entry.description,
                entry.family,
                entry.previous,
                entry.version,
                entry.token_sha256,
                int(entry.active),
                entry.registered_at,
            ),
        )
        if cur.rowcount != 1:
            # Nothing inserted: the store ran the insert again after a commit whose
            # acknowledgement was lost, and finds its own row (the new token's hash), or
            # another process registered the name first.
            row = self.store.execute(
                "SELECT token_sha256 FROM league_bots WHERE name = ?", (entry.name,)
            ).fetchone()
            if row is None or row[0] != entry.token_sha256:
                raise RegistryError(f"a bot named {entry.name!r} is already registered", "exists")
        self._remember(entry)

    def _check_name(self, name: str) -> None:
        if not NAME.match(name):
            raise RegistryError(
                f"bot name {name!r} is not allowed; allowed: 1 to 40 letters, digits, '.', '_', '-', '@'"
            )
        if name in self._by_name:
            raise RegistryError(f"a bot named {name!r} is already registered", "exists")

    def register(self, name: str, owner: str, description: str) -> tuple[BotEntry, str]:
        """A new family's first entry and its token."""
        self._check_name(name)
        token = new_token()
        entry = BotEntry(
            name, owner, description, name, "", 1, token_hash(token), True, time.time()
        )
        self._insert(entry)
        return entry, token

    def register_version(
        self, previous: str, name: str = "", description: str = ""
    ) -> tuple[BotEntry, str]:
        """A new entry succeeding ``previous`` (rated separately) and its token."""
        old = self._by_name.get(previous)
        if old is None:
            raise RegistryError(f"no bot named {previous!r} is registered", "not_found")
        version = 1 + max(e.version for e in self._by_name.values() if e.family == old.family)
        name = name or f"{old.family}@v{version}"
        self._check_name(name)
        token = new_token()
        entry = BotEntry(
            name,
            old.owner,
            description or old.description,
            old.family,
            old.name,
            version,
            token_hash(token),
            True,
            time.time(),
        )
        self._insert(entry)
        return entry, token

    def revoke(self, name: str) -> BotEntry:
        """Revoke ``name``'s token (for good: register a new version for a new token)."""
        entry = self._by_name.get(name)
        if entry is None:
            raise RegistryError(f"no bot named {name!r} is registered", "not_found")
        self.store.execute("UPDATE league_bots SET active = 0 WHERE name = ?", (name,))
        revoked = dataclasses.replace(entry, active=False)
        self._remember(revoked)
        return revoked

    def by_token(self, token: str) -> BotEntry | None:
        """The entry ``token`` belongs to (active or revoked), if any."""
        if not token:
            return None
        return self._by_hash.get(token_hash(token))

    def get(self, name: str) -> BotEntry | None:
        """The entry named ``name``, if any."""
        return self._by_name.get(name)

    def entries(self) -> list[BotEntry]:
        """Every entry, in registration order."""
        return sorted(self._by_name.values(), key=lambda e: (e.registered_at, e.name))
