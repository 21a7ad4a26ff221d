"""The ``referee match`` and ``referee replay`` commands, run as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bots.harness import (
    READ_BOTS,
    assert_no_processes,
    bot_table,
    new_marker,
    processes_with,
    toml_text,
)
from machine import stretched

pytestmark = pytest.mark.timeout(60)


def referee(*args: str | Path, timeout: float = 40) -> subprocess.CompletedProcess[str]:
    # The bot files here run in the test bots' folder: ``match`` is given leave to read it.
    grant = READ_BOTS if args[:1] == ("match",) else ()
    return subprocess.run(
        [sys.executable, "-m", "referee.cli", *map(str, args), *grant],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


def bot_file(folder: Path, name: str, marker: str, env: dict[str, str] | None = None) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(toml_text(bot_table("lowest_bot.py", marker, name=name, env=env)))
    return path


def one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("referee match: ")
    for word in words:
        assert word in lines[0]


def test_a_match_prints_the_result_table_and_a_record_that_replays(
    tmp_path: Path, marker: str
) -> None:
    bots = [bot_file(tmp_path, name, marker) for name in ("ann", "ben", "cy")]
    out = tmp_path / "results"
    played = referee(
        "match",
        *(x for b in bots for x in ("--bot", b)),
        "--seed",
        "42",
        # Room to spare: no strike is expected, and the machine may be loaded.
        "--decision-ms",
        "2000",
        "--startup-ms",
        "30000",
        "--out",
        out,
    )
    assert played.returncode == 0, played.stderr
    # What each bot may read of the host, a line each on the organiser's terminal.
    reads = [x for x in played.stderr.splitlines() if " reads runtime python3 (" in x]
    assert sorted(x.split()[0] for x in reads) == ["ann", "ben", "cy"], played.stderr
    assert all(re.search(r"MiB\), its folder and read paths \([\d,]+ files", x) for x in reads)
    lines = played.stdout.splitlines()
    assert "seed 42" in lines[0] and "rules sticheln" in lines[0]
    assert lines[1].split() == ["place", "seat", "bot", "total", "strikes"]
    table = [line.split() for line in lines[2:5]]
    assert sorted(row[2] for row in table) == ["ann", "ben", "cy"]
    assert all(row[4] == "0" for row in table)
    assert [int(row[0]) for row in table] == sorted(int(row[0]) for row in table)
    assert lines[5].startswith("record: ")
    record = Path(lines[5].removeprefix("record: "))
    assert record.is_file() and record.is_relative_to(out)

    account = referee("replay", record)
    assert account.returncode == 0, account.stderr
    assert "seed 42" in account.stdout
    assert "trick  1:" in account.stdout
    assert "result:" in account.stdout


def test_a_tampered_record_fails_replay_naming_the_line(tmp_path: Path, marker: str) -> None:
    bots = [bot_file(tmp_path, name, marker) for name in ("ann", "ben", "cy")]
    played = referee(
        "match", *(x for b in bots for x in ("--bot", b)), "--seed", "9", "--out", tmp_path / "o"
    )
    assert played.returncode == 0, played.stderr
    record = Path(played.stdout.splitlines()[-1].removeprefix("record: "))
    lines = record.read_text().splitlines()
    number, trick = next(
        (n, json.loads(x)) for n, x in enumerate(lines, 1) if json.loads(x)["type"] == "trick"
    )
    trick["winner"] = (trick["winner"] + 1) % 3
    lines[number - 1] = json.dumps(trick)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")

    checked = referee("replay", tampered)
    assert checked.returncode == 1
    assert f"line {number}:" in checked.stderr
    assert "trick 1" in checked.stderr


def test_replay_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    checked = referee("replay", tmp_path / "none.jsonl")
    assert checked.returncode == 2
    assert "no such record file" in checked.stderr


def test_an_unknown_bot_file_is_a_one_line_error(tmp_path: Path, marker: str) -> None:
    good = bot_file(tmp_path, "ann", marker)
    result = referee("match", "--bot", good, "--bot", good, "--bot", tmp_path / "nobody.toml")
    one_line_error(result, "nobody.toml", "not found")


def test_a_malformed_bot_file_is_a_one_line_error(tmp_path: Path, marker: str) -> None:
    good = bot_file(tmp_path, "ann", marker)
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad\ncommand = [1, 2\n')
    result = referee("match", "--bot", good, "--bot", bad, "--bot", good)
    one_line_error(result, "bad.toml", "not valid TOML")


def test_an_unknown_preset_is_a_one_line_error(tmp_path: Path, marker: str) -> None:
    good = bot_file(tmp_path, "ann", marker)
    result = referee("match", "--bot", good, "--bot", good, "--bot", good, "--rules", "poker")
    one_line_error(result, "'poker'", "allowed", "sticheln")


def test_a_player_count_outside_the_preset_is_a_one_line_error(tmp_path: Path, marker: str) -> None:
    good = bot_file(tmp_path, "ann", marker)
    result = referee("match", "--bot", good, "--bot", good, "--bot", good, "--rules", "french-2-14")
    one_line_error(result, "players: 3", "french-2-14", "allowed: 4 to 4")


def test_a_negative_decision_time_is_a_one_line_error(tmp_path: Path, marker: str) -> None:
    good = bot_file(tmp_path, "ann", marker)
    result = referee("match", "--bot", good, "--bot", good, "--bot", good, "--decision-ms", "-5")
    one_line_error(result, "decision_ms", "-5")


def test_ctrl_c_stops_the_match_and_leaves_no_bot_process(tmp_path: Path, marker: str) -> None:
    bots = [bot_file(tmp_path, n, marker, env={"SLEEP_MS": "20"}) for n in ("ann", "ben", "cy")]
    out = tmp_path / "results"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "referee.cli",
            "match",
            *(str(x) for b in bots for x in ("--bot", b)),
            *READ_BOTS,
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Wait until the bots are playing: the record holds a play line (flushed at the
        # end of the first round; the whole match takes several seconds).
        deadline = time.monotonic() + 30
        record = None
        while record is None and time.monotonic() < deadline and proc.poll() is None:
            for path in (out / "matches").glob("*.jsonl") if (out / "matches").exists() else ():
                if '"type":"play"' in path.read_text():
                    record = path
            time.sleep(0.02)
        assert record is not None, "the match never started playing"
        assert len(processes_with(marker, bots_only=True)) == 3
        os.kill(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert "interrupted" in stderr
    assert_no_processes(marker)
    # The record is recognisably unfinished.
    checked = referee("replay", record)
    assert checked.returncode == 1
    assert "no end line" in checked.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_tournament_says_one_line_while_bots_are_still_connecting(
    tmp_path: Path, marker: str, sig: signal.Signals
) -> None:
    """Stopped while every seat still waits for its handshake: the user reads the one
    line that says what was kept, not asyncio's reports of the tasks left pending."""
    silent = [sys.executable, "-c", "import time; time.sleep(120)", marker]
    bots = "".join(f'[[bots]]\nname = "{n}"\ncommand = {json.dumps(silent)}\n' for n in "abc")
    config = tmp_path / "t.toml"
    config.write_text(
        '[tournament]\nname = "t"\nseed = 1\ntable_size = 3\nmatches_per_table = 2\n'
        'out = "out"\n[sandbox]\nmode = "none"\n[clock]\nstartup_ms = 60000\n' + bots
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee.cli", "tournament", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + stretched(30)
        while len(processes_with(marker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)  # polling /proc until the bots run, not waiting out a race
        assert len(processes_with(marker)) == 3, "the bots never started"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    said = [
        line
        for line in stderr.splitlines()
        if not line.startswith(("{", "sandbox: ", "bounds: "))  # JSON logs, the start's lines
    ]
    assert said == [
        "interrupted: finished matches are kept; run the same command again to resume"
    ], stderr
    assert_no_processes(marker)
