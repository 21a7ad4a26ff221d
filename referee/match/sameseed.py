"""check-bot's same-seed probe: does the bot play the same cards given the same seed twice?

``MatchStart.bot_seed`` is there for the bot's own random choices (docs/bot-protocol.md,
6.1). A bot that draws all its randomness from it plays a match again card for card when
the cards and the seed are the same, which makes a comparison's pairs less noisy and a
match replayable for debugging. The probe plays one match twice, the same deal and the
same bot seeds, against the house bots (which play the same cards whatever happens), and
compares the bot's pain picks and plays. The answer is information, never a failure: a
bot may draw its randomness elsewhere, or think for as long as its clock allows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.jail.bots import BotSpec
from referee.match.record import read_record
from referee.rules import preset

if TYPE_CHECKING:
    from referee.match.checkbot import Outcome, _TappingRegistry
    from referee.match.server import RefereeServer

#: The name the probe's line carries in the report.
SAME_SEED = "same-seed"
PLAYERS = 4
SEAT = 1


def probe_bot_seeds(seed: int) -> list[int]:
    """The bot seeds of the probe's two matches: from check-bot's seed, so a run repeats."""
    return [
        int.from_bytes(
            hashlib.sha256(
                b"sticheln/check-bot/same-seed/v1" + bytes([s]) + seed.to_bytes(8, "big")
            ).digest()[:8],
            "big",
        )
        for s in range(PLAYERS)
    ]


def moves(record: Path, seat: int) -> list[tuple[int, str, Any]]:
    """The seat's pain picks and plays in a match record: (round, kind, cards)."""
    return [
        (line["round"], line["type"], line.get("card", line.get("cards")))
        for line in read_record(record)
        if line.get("type") in ("pain", "play") and line.get("seat") == seat
    ]


def verdict(first: Sequence[tuple[int, str, Any]], second: Sequence[tuple[int, str, Any]]) -> str:
    """The probe's report line from the bot's moves in the two matches."""
    for i, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            what = "pain pick" if a[1] == "pain" else "play"
            return (
                f"INFO {SAME_SEED}: given the same cards and the same MatchStart.bot_seed "
                f"twice, the bot played differently from decision {i + 1} on (round "
                f"{a[0] + 1}, {what}: {a[2]} the first time, {b[2]} the second); a bot "
                "that draws its random choices from bot_seed replays a match exactly "
                "(docs/bot-protocol.md, 6.1). Not a failure."
            )
    if len(first) != len(second):
        return f"INFO {SAME_SEED}: the two matches differ in length ({len(first)} and {len(second)} decisions)"
    return (
        f"INFO {SAME_SEED}: given the same cards and the same MatchStart.bot_seed twice, "
        f"the bot played the same {len(first)} decisions both times"
    )


async def check_same_seed(
    server: RefereeServer,
    registry: _TappingRegistry,
    bot: BotSpec,
    *,
    seed: int,
    out_dir: Path,
    strike_limit: int = 3,
    startup_ms: int | None = None,
) -> str:
    """Play the probe's match twice and say, in one report line, whether the bot played
    the same cards both times."""
    from referee.match.checkbot import Scenario, run_scenario

    scenario = Scenario(
        SAME_SEED,
        f"the same deal and bot seeds twice, {PLAYERS} players",
        preset("sticheln", rounds=2),
        PLAYERS,
        SEAT,
    )
    seeds = probe_bot_seeds(seed)
    played: list[Outcome] = []
    for _ in range(2):
        played.append(
            await run_scenario(
                server,
                registry,
                bot,
                scenario,
                seed=seed,
                out_dir=out_dir,
                strike_limit=strike_limit,
                startup_ms=startup_ms,
                bot_seeds=seeds,
            )
        )
    broken = [o for o in played if not o.passed or o.record_path is None]
    if broken:
        return (
            f"INFO {SAME_SEED}: not judged: the probe's match did not play cleanly "
            f"({broken[0].error or f'{len(broken[0].findings)} findings'})"
        )
    first, second = (moves(o.record_path, SEAT) for o in played if o.record_path is not None)
    return verdict(first, second)


def scenario_note() -> str:
    """The probe's line in ``check-bot --list``."""
    return f"{SAME_SEED:<28} the same deal and bot seeds twice: does the bot play the same cards (information)"
