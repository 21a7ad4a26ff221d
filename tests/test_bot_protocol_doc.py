"""docs/bot-protocol.md: its code is real.

The minimal bots on the page are the files under sample_bots/, byte for byte; the match
command on the page plays them through the real referee without a fault; the deal check
snippet passes on that match's record; the bot file example loads.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from referee.config.bots import bot_from_table
from referee.rules import from_table, parse_card

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "bot-protocol.md").read_text(encoding="utf-8")


def block(heading: str, lang: str) -> str:
    """The first ``lang`` code block after ``heading``."""
    start = DOC.index(f"\n{heading}\n")
    found = re.compile(rf"```{lang}\n(.*?)```", re.S).search(DOC, start)
    assert found is not None, f"no {lang} block after {heading}"
    return found.group(1)


def test_the_minimal_bots_on_the_page_are_the_sample_files() -> None:
    python = block("### In Python", "python")
    node = block("### In Node.js", "js")
    assert python == (ROOT / "sample_bots" / "python" / "minimal_bot.py").read_text()
    assert node == (ROOT / "sample_bots" / "node" / "minimal_bot.js").read_text()


def test_the_bot_file_example_loads() -> None:
    spec = bot_from_table(tomllib.loads(block("### A bot the referee starts", "toml")))
    assert spec.name == "mine" and spec.command == ("node", "node/bot.js")


@pytest.mark.timeout(120)
def test_the_pages_match_command_plays_both_minimal_bots_without_a_fault(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    script = block("Run either against a real referee:", "sh").replace("\\\n", " ")
    (command,) = [line for line in script.splitlines() if line.startswith("referee match")]
    argv = shlex.split(command)
    argv[argv.index("--out") + 1] = str(tmp_path)
    bot_files = [argv[i + 1] for i, a in enumerate(argv) if a == "--bot"]
    assert "sample_bots/minimal-python.toml" in bot_files
    assert "sample_bots/minimal-node.toml" in bot_files
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    played = subprocess.run(
        [sys.executable, "-m", "referee.cli", *argv[1:]],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        cwd=ROOT,
        timeout=100,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    (record,) = (tmp_path / "matches").glob("*.jsonl")
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [x for x in lines if x["type"] == "fault"] == []
    assert lines[-1]["type"] == "end" and lines[-1]["reason"] == "completed"
    assert not any(x.get("fallback") for x in lines)
    for log in (tmp_path / "logs").glob("*minimal*.log"):
        # Silent but for the referee's documented line of what the bot reads: the seed
        # matched its commitment.
        said = log.read_text().splitlines()
        assert [x for x in said if not x.startswith("referee: reads runtime ")] == [], log

    # The deal check of section 6, on this match's record, for every seat and round.
    header = lines[0]
    snippet = block("## 6. The seed commitment and checking the deal", "python")
    for start in (x for x in lines if x["type"] == "round_start"):
        for seat, hand_text in enumerate(start["hands"]):
            exec(
                snippet,
                {
                    "rules": from_table(header["rules"]),
                    "players": header["players"],
                    "seed": int(lines[-1]["seed"]),  # sealed: in the end line
                    "round_index": start["round"],
                    "my_seat": seat,
                    "round_start_hand": [parse_card(t) for t in hand_text],
                },
            )
