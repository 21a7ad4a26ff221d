"""The end of a tournament keeps the bot contract: every seat stream reads its last
``MatchEnd``, the stream ends with status OK, and the bot has time to exit by itself
before any signal (bot.proto, step 3; docs/bot-protocol.md, section 1)."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path

import pytest
from bots.harness import BOTS_DIR, assert_no_processes, collect_reports
from test_tournament import marker_of

from referee.tournament.config import load_config
from referee.tournament.run import run_tournament

pytestmark = pytest.mark.timeout(180)


def _tournament(tmp_path: Path, seats: int, parallel: int) -> Path:
    bots = ""
    for i in range(4):
        bots += (
            f'[[bots]]\nname = "ending{i}"\n'
            f'command = ["{sys.executable}", "ending_bot.py", "--marker={marker_of(tmp_path)}"]\n'
            f'workdir = "{BOTS_DIR}"\nseats = {seats}\n'
            f'env = {{ ENDINGS = "{tmp_path / "endings"}" }}\n'
        )
    path = tmp_path / "end.toml"
    path.write_text(
        '[tournament]\nname = "end"\nseed = 3\ntable_size = 3\nmatches_per_table = 2\n'
        f'parallel = {parallel}\nout = "{tmp_path / "out"}"\n'
        "[clock]\ndecision_ms = 10000\nstartup_ms = 30000\n" + bots
    )
    return path


@pytest.mark.parametrize(("seats", "parallel", "workers"), [(1, 2, 1), (2, 2, 1), (2, 3, 2)])
def test_every_pooled_stream_reads_its_last_match_end_ends_ok_and_exits_by_itself(
    tmp_path: Path, seats: int, parallel: int, workers: int
) -> None:
    config = load_config(_tournament(tmp_path, seats, parallel))
    outcome = asyncio.run(run_tournament(config, progress=False, workers=workers))
    assert outcome.finished == outcome.planned == 8
    collect_reports(tmp_path)
    # A process's log holds that process's lines alone, also when the pools of several
    # worker processes start bots into the one log folder.
    for log in (tmp_path / "out" / "logs").glob("*.log"):
        told = [x.split() for x in log.read_text().splitlines() if x.startswith("@a ")]
        assert len({words[2] for words in told}) <= 1, (log.name, told)
    lines = [line.split() for line in (tmp_path / "endings").read_text().splitlines()]
    by_pid: dict[str, list[list[str]]] = {}
    for line in lines:
        by_pid.setdefault(line[0], []).append(line[2:])
    # Every seat of every match read its MatchEnd: three seats per match.
    ends = Counter(words[1] for words in (line[2:] for line in lines) if words[0] == "end")
    assert sorted(ends.values()) == [3] * 8, ends
    for pid, notes in by_pid.items():
        kinds = [n[0] for n in notes]
        assert "sigterm" not in kinds, (pid, notes)
        statuses = [n[1] for n in notes if n[0] == "status"]
        assert statuses == ["OK"] * seats, (pid, notes)
        assert kinds[-1] == "exit", (pid, notes)
    assert_no_processes(marker_of(tmp_path))
