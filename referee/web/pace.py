"""When a delayed match's lines reach its web viewers: at the pace they were played.

With ``web_delay_rounds = d`` a round may be shown once the round ``d`` later has been
dealt (or the match is over). Letting the whole round out at that moment would show it
in one burst; the :class:`Pacer` instead lets each line out as long after that moment as
it was written after its round's deal, so that a delayed table plays like a live one,
``d`` rounds behind. Lines written before anyone watched have no time of their own and
are let out at once (a late viewer catches up).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any


class Pacer:
    """The times at which the lines of one match were first seen, and when each is due."""

    def __init__(self, delay_rounds: int, clock: Callable[[], float]) -> None:
        self.delay_rounds = delay_rounds
        self.clock = clock
        #: When each line was first seen (the clock's time).
        self.seen: list[float] = []
        #: The index of each round's first line.
        self.round_first: dict[int, int] = {}
        #: When the match was first seen over (None while it runs).
        self.over_at: float | None = None

    def observe(self, lines: Sequence[Mapping[str, Any]], over: bool) -> float:
        """Note the lines (and the end) not seen before; returns the clock's time now."""
        now = self.clock()
        if self.delay_rounds <= 0:
            return now  # nothing is held back: no times to keep
        for i in range(len(self.seen), len(lines)):
            self.seen.append(now)
            line = lines[i]
            if line.get("type") == "round_start":
                self.round_first.setdefault(int(line["round"]), i)
        if over and self.over_at is None:
            self.over_at = now
        return now

    def due(self, index: int, line: Mapping[str, Any], now: float) -> bool:
        """Whether line ``index`` may be shown at ``now``."""
        if self.delay_rounds <= 0 or "round" not in line or line.get("type") == "header":
            return True
        rnd = int(line["round"])
        later = self.round_first.get(rnd + self.delay_rounds)
        if later is not None:
            start = self.seen[later]
        elif self.over_at is not None:
            start = self.over_at
        else:
            return False
        first = self.round_first.get(rnd, index)
        return now >= start + (self.seen[index] - self.seen[min(first, index)])
