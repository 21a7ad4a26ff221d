"""Validation turns, fair between owners.

Validation is the league's scarce work (a build, then a dozen jailed matches), and one
owner's slow build must not hold everyone else's submissions. :class:`OwnerTurns` gives
``slots`` turns at once, at most one per owner, and the owner who has waited longest gets
the next free one. An owner's wait is counted from when its submission came or from the
end of its previous turn, whichever is later: an owner with ten submissions queued takes
one turn, then waits behind those who came meanwhile.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass(order=True)
class _Waiter:
    since: float
    seq: int
    owner: str = field(compare=False)
    granted: asyncio.Future[None] = field(compare=False)


class OwnerTurns:
    """``slots`` turns at once, one per owner, the longest-waiting owner first."""

    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        #: The owners holding a turn now.
        self.busy: set[str] = set()
        self._waiting: list[_Waiter] = []
        self._seq = itertools.count()

    def waiting(self) -> list[str]:
        """The owners waiting, in the order their turns would come."""
        return [w.owner for w in sorted(self._waiting)]

    @asynccontextmanager
    async def turn(self, owner: str) -> AsyncIterator[None]:
        """Hold one of the turns for ``owner`` for the block."""
        loop = asyncio.get_running_loop()
        waiter = _Waiter(loop.time(), next(self._seq), owner, loop.create_future())
        self._waiting.append(waiter)
        self._grant()
        try:
            await waiter.granted
        except BaseException:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            elif waiter.granted.done() and not waiter.granted.cancelled():
                self._release(owner)  # granted as it was cancelled: pass the turn on
            raise
        try:
            yield
        finally:
            self._release(owner)

    def _release(self, owner: str) -> None:
        self.busy.discard(owner)
        now = asyncio.get_running_loop().time()
        for w in self._waiting:
            if w.owner == owner:
                # Its next submission waits from now on, behind those who came meanwhile.
                w.since = max(w.since, now)
        self._grant()

    def _grant(self) -> None:
        while len(self.busy) < self.slots:
            ready = sorted(w for w in self._waiting if w.owner not in self.busy)
            if not ready:
                return
            w = ready[0]
            self._waiting.remove(w)
            self.busy.add(w.owner)
            w.granted.set_result(None)
