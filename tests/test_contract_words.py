"""What the referee tells a bot, and what the contract says, agree: a pooled stream's
``Welcome`` names no seat before any seating; the league's bot-name rule is the same in
league.proto, docs/league.md and the registry."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from bots.harness import BOTS_DIR, assert_no_processes, new_marker, read_capture, run

from referee.jail.bots import BotSpec
from referee.league.registry import NAME, BotRegistry, RegistryError
from referee.match.pool import POOLED_WELCOME, BotPool
from referee.match.server import RefereeServer
from referee.results.store import open_store

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(60)


def test_a_pooled_stream_is_welcomed_without_a_seat_or_a_match(tmp_path: Path) -> None:
    marker = new_marker()
    capture = tmp_path / "capture"
    spec = BotSpec(
        name="recorder",
        command=(sys.executable, "recording_bot.py", f"--marker={marker}"),
        workdir=BOTS_DIR,
        env={"CAPTURE": str(capture)},
        seats=2,
    )

    async def lend() -> None:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        pool = BotPool(server, tmp_path / "logs", startup_s=10)
        try:
            await pool.acquire(spec, "m1")
        finally:
            await pool.close()
            await server.stop(0.2)

    run(lend())
    # The bot tells what it received through its log (it can write nowhere else).
    welcomes = [m.welcome.message for m in read_capture(capture) if m.HasField("welcome")]
    assert welcomes == [POOLED_WELCOME, POOLED_WELCOME]
    assert "seat" not in POOLED_WELCOME.split(":")[0] and "match pool" not in POOLED_WELCOME
    assert_no_processes(marker)


def _quoted_symbols(text: str) -> set[str]:
    return set(re.findall(r"[`'](.)[`']", text))


def test_the_bot_name_rule_is_the_same_everywhere(tmp_path: Path) -> None:
    allowed = set("._-@")
    proto = (ROOT / "proto" / "sticheln" / "v1" / "league.proto").read_text()
    rule = next(line for line in proto.splitlines() if "1 to 40 letters" in line)
    assert _quoted_symbols(rule) == allowed
    doc = (ROOT / "docs" / "league.md").read_text()
    rule = next(p for p in doc.split("\n\n") if p.startswith("Bot names are 1 to 40"))
    assert _quoted_symbols(rule) == allowed
    assert all(NAME.match(f"a{c}b") for c in allowed)
    registry = BotRegistry(open_store(tmp_path / "league.db"))
    registry.register("alpha@v2", "", "")
    with pytest.raises(RegistryError) as refused:
        registry.register("alpha/v2", "", "")
    assert _quoted_symbols(str(refused.value).split("allowed:")[1]) == allowed
