"""Errors the command line reports in one line, with their cause, and no traceback:
a closed stdout, a bot refused at its handshake (recorded with the refusal's reason)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bots.harness import BOTS_DIR, READ_BOTS, assert_no_processes, bot_table, new_marker, toml_text

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


def referee(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "referee.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def _a_record(tmp_path: Path, marker: str) -> Path:
    bots = []
    for name in ("ann", "ben", "cy"):
        path = tmp_path / f"{name}.toml"
        path.write_text(toml_text(bot_table("lowest_bot.py", marker, name=name)))
        bots.append(path)
    played = referee(
        "match",
        *(x for b in bots for x in ("--bot", b)),
        *READ_BOTS,
        *("--seed", "3", "--out", tmp_path / "out"),
    )
    assert played.returncode == 0, played.stderr
    return next((tmp_path / "out" / "matches").glob("*.jsonl"))


def test_replay_into_a_closed_pipe_ends_quietly(tmp_path: Path, marker: str) -> None:
    record = _a_record(tmp_path, marker)
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee.cli", "replay", str(record)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line (``| head -0``)
    err = proc.stderr.read().decode()
    assert proc.wait(30) == 141  # 128 + SIGPIPE, as for a program killed by the signal
    assert err == ""


def _check_bot(
    mode: str, tmp_path: Path, marker: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return referee(
        "check-bot",
        "--scenario",
        "players-3",
        "--startup-ms",
        "30000",  # a refused bot exits at once: this is only the limit for a loaded machine
        "--no-preflight",  # the refusal is to be reported by the scenario itself
        "--out",
        tmp_path / "check",
        "--",
        # A started bot gets only an allowlisted environment: its own variables go on its
        # command line.
        "env",
        *(f"{k}={v}" for k, v in {"MODE": mode, **env}.items()),
        sys.executable,
        str(BOTS_DIR / "handshake_bot.py"),
        f"--marker={marker}",
    )


def test_check_bot_with_protocol_version_0_reports_it_without_asyncio_noise(
    tmp_path: Path, marker: str
) -> None:
    checked = _check_bot("version", tmp_path, marker, VERSION="0")
    assert checked.returncode == 1
    assert "protocol version 0 is not supported" in checked.stdout
    assert "Task was destroyed" not in checked.stderr
    assert "Traceback" not in checked.stderr


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("nohello", "refused with INVALID_ARGUMENT: the first message on a stream must be a Hello"),
        ("token", "refused with UNAUTHENTICATED: the token is not valid"),
    ],
)
def test_a_refused_stream_is_recorded_with_the_reason_it_was_refused(
    mode: str, words: str, tmp_path: Path, marker: str
) -> None:
    checked = _check_bot(mode, tmp_path, marker)
    assert checked.returncode == 1
    assert words in checked.stdout
    assert "no valid handshake" not in checked.stdout
    assert "Traceback" not in checked.stderr
    faults = [
        line
        for path in (tmp_path / "check" / "matches").glob("*.jsonl")
        for line in map(json.loads, path.read_text().splitlines())
        if line["type"] == "fault"
    ]
    assert [f["reason"] for f in faults] == ["handshake_failed"]
    assert words in faults[0]["detail"]
