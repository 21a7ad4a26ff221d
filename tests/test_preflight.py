"""The start check: a bot that cannot start stops ``referee tournament``, ``match``,
``compare`` and ``check-bot`` before anything is dealt, in one line that says why (with
the end of the bot's own output); ``--no-preflight`` skips it; and a bot that starts but
forfeits every match is named at the end of a tournament (exit status 1).

Every run is the real command in a subprocess, with real bot processes in the sandbox.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bots.harness import (
    BOTS_DIR,
    READ_BOTS,
    assert_no_processes,
    bot_table,
    new_marker,
    toml_text,
)

from referee.jail.bots import BotSpec
from referee.match.preflight import distinct, output_tail

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
#: A command that does not exist, and the crash of a bot whose import fails at start.
BROKEN = {
    "missing": (
        ["no-such-bot-command"],
        # bubblewrap's words, or (a comparison's default, the gVisor tier) runsc's
        [
            "no-such-bot-command",
            ("No such file or directory", 'error finding executable "no-such-bot-command"'),
            ("status 127", "status 128"),
        ],
    ),
    "crash": (
        [
            sys.executable,
            "-c",
            "import sys; print('loading the model', file=sys.stderr); import no_such_module_xyz",
        ],
        ["ModuleNotFoundError: No module named 'no_such_module_xyz'", "status 1"],
    ),
}


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


def referee(*args: str | Path, timeout: float = 100) -> subprocess.CompletedProcess[str]:
    # The test bots' folder is outside the bot files' own: the organiser grants it.
    grants = READ_BOTS if args[0] in ("match", "check-bot", "compare") else ()
    return subprocess.run(
        [sys.executable, "-m", "referee.cli", *map(str, args), *grants],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def good(folder: Path, name: str, marker: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(toml_text(bot_table("lowest_bot.py", marker, name=name)))
    return path


def broken(folder: Path, kind: str, marker: str) -> Path:
    command, _ = BROKEN[kind]
    path = folder / f"{kind}.toml"
    table = {"name": kind, "command": [*command, f"--marker={marker}"], "workdir": str(BOTS_DIR)}
    path.write_text(toml_text(table))
    return path


def assert_one_line(ran: subprocess.CompletedProcess[str], command: str, kind: str) -> None:
    """One line on stderr (after the sandbox's and the bounds' descriptions) names the bot
    and the cause."""
    lines = [x for x in ran.stderr.splitlines() if not x.startswith(("sandbox: ", "bounds: "))]
    assert len(lines) == 1, ran.stderr
    (line,) = lines
    assert line.startswith(f"referee {command}: bot {kind!r} did not start: "), line
    for words in BROKEN[kind][1]:
        assert any(w in line for w in ((words,) if isinstance(words, str) else words)), line


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_bot_that_cannot_start_stops_a_match_before_the_deal(
    kind: str, tmp_path: Path, marker: str
) -> None:
    out = tmp_path / "out"
    bots = [
        good(tmp_path, "ann", marker),
        broken(tmp_path, kind, marker),
        good(tmp_path, "cy", marker),
    ]
    ran = referee("match", *(x for b in bots for x in ("--bot", b)), "--out", out)
    assert ran.returncode == 2, ran.stderr
    assert ran.stdout == ""
    assert_one_line(ran, "match", kind)
    assert not (out / "matches").exists()  # nothing was dealt, no record begun
    # The bot's log holds its whole output.
    log = (out / "logs" / "preflight" / f"{kind}.log").read_text()
    assert BROKEN[kind][1][0] in log
    if kind == "crash":
        assert "loading the model" in log and "Traceback" in log


def test_a_bot_killed_by_a_signal_as_it_starts_is_named_with_the_signal(
    tmp_path: Path, marker: str
) -> None:
    # Its own folder, apart from the output folder (which no bot may read).
    (tmp_path / "segv").mkdir()
    path = tmp_path / "segv" / "segv.toml"
    code = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    table = {"name": "segv", "command": [sys.executable, "-c", code, marker], "workdir": "."}
    path.write_text(toml_text(table))
    bots = [good(tmp_path, "ann", marker), path, good(tmp_path, "cy", marker)]
    ran = referee("match", *(x for b in bots for x in ("--bot", b)), "--out", tmp_path / "out")
    assert ran.returncode == 2, ran.stderr
    assert "referee match: bot 'segv' did not start: it was killed by SIGSEGV before its " in (
        ran.stderr
    )


def tournament_file(folder: Path, bots: list[Path], matches_per_table: int = 1) -> Path:
    path = folder / "t.toml"
    path.write_text(
        '[tournament]\nname = "t"\nseed = 2\ntable_size = 3\n'
        f'matches_per_table = {matches_per_table}\nparallel = 1\nout = "{folder / "out"}"\n'
        "[rules]\nrounds = 1\n[clock]\ndecision_ms = 10000\nstartup_ms = 20000\n"
        f'[sandbox]\nread = ["{BOTS_DIR}"]\n' + "".join(f'[[bots]]\nfile = "{b}"\n' for b in bots)
    )
    return path


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_bot_that_cannot_start_stops_a_tournament_before_the_first_match(
    kind: str, tmp_path: Path, marker: str
) -> None:
    bots = [good(tmp_path, n, marker) for n in ("ann", "ben", "cy")]
    path = tournament_file(tmp_path, [*bots, broken(tmp_path, kind, marker)])
    ran = referee("tournament", path, "--workers", "1")
    assert ran.returncode == 2, ran.stderr
    assert ran.stdout == ""
    assert_one_line(
        ran.__class__(ran.args, ran.returncode, ran.stdout, _no_json(ran.stderr)),
        "tournament",
        kind,
    )
    out = tmp_path / "out"
    assert not (out / "matches").exists()
    db = out / "tournament.db"
    if db.exists():
        with sqlite3.connect(db) as con:
            assert con.execute("SELECT COUNT(*) FROM results").fetchone() == (0,)


def _no_json(stderr: str) -> str:
    """stderr without the JSON log lines a tournament writes off a terminal."""
    return "\n".join(x for x in stderr.splitlines() if not x.startswith("{"))


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_bot_that_cannot_start_stops_check_bot_before_any_scenario(
    kind: str, tmp_path: Path, marker: str
) -> None:
    out = tmp_path / "check"
    ran = referee("check-bot", "--bot", broken(tmp_path, kind, marker), "--out", out)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stdout == ""  # no PASS or FAIL line: no scenario was played
    assert_one_line(ran, "check-bot", kind)
    assert not (out / "matches").exists()


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_bot_that_cannot_start_stops_a_comparison_before_any_match(
    kind: str, tmp_path: Path, marker: str
) -> None:
    out = tmp_path / "cmp"
    ran = referee(
        "compare",
        *("--candidate", broken(tmp_path, kind, marker)),
        *("--baseline", good(tmp_path, "ann", marker)),
        *("--opponent", good(tmp_path, "ben", marker)),
        *("--opponent", good(tmp_path, "cy", marker)),
        *("--out", out, "--matches", "4", "--rules", "amigo"),
    )
    # Refused before any match, as settings are: status 3 (2 is "undecided").
    assert ran.returncode == 3, ran.stderr
    assert_one_line(ran.__class__(ran.args, 2, ran.stdout, _no_json(ran.stderr)), "compare", kind)
    assert not (out / "matches").exists() or not list((out / "matches").iterdir())


def test_no_preflight_plays_and_the_broken_bot_forfeits_in_the_match(
    tmp_path: Path, marker: str
) -> None:
    out = tmp_path / "out"
    bots = [
        good(tmp_path, "ann", marker),
        broken(tmp_path, "missing", marker),
        good(tmp_path, "cy", marker),
    ]
    ran = referee("match", *(x for b in bots for x in ("--bot", b)), "--out", out, "--no-preflight")
    assert ran.returncode == 0, ran.stderr
    assert "forfeited" in ran.stdout
    assert not (out / "logs" / "preflight").exists()
    (record,) = (out / "matches").glob("*.jsonl")
    faults = [x for x in map(json.loads, record.read_text().splitlines()) if x["type"] == "fault"]
    assert [(f["bot"], f["reason"]) for f in faults] == [("missing", "handshake_failed")]


def test_a_tournament_names_a_bot_that_forfeited_every_match_and_exits_1(
    tmp_path: Path, marker: str
) -> None:
    # It greets (the start check passes), then dies at its first request, in every match.
    crash = tmp_path / "crashing.toml"
    crash.write_text(
        toml_text(bot_table("crash_bot.py", marker, name="crashing", env={"CRASH_AT": "1"}))
    )
    bots = [good(tmp_path, n, marker) for n in ("ann", "ben", "cy")]
    path = tournament_file(tmp_path, [*bots, crash])
    ran = referee("tournament", path, "--workers", "1")
    assert ran.returncode == 1, ran.stderr
    lines = ran.stdout.strip().splitlines()
    assert "4/4 matches finished" in ran.stdout
    assert lines[-3].startswith("bot 'crashing' forfeited every match it played (3): ")
    assert not any("'ann'" in x or "'ben'" in x or "'cy'" in x for x in lines)


def test_the_good_bots_pass_and_each_distinct_bot_is_started_once(
    tmp_path: Path, marker: str
) -> None:
    ann = good(tmp_path, "ann", marker)
    out = tmp_path / "out"
    ran = referee(
        "match", "--bot", ann, "--bot", ann, "--bot", good(tmp_path, "cy", marker), "--out", out
    )
    assert ran.returncode == 0, ran.stderr
    logs = sorted(p.name for p in (out / "logs" / "preflight").iterdir())
    assert logs == ["ann.log", "cy.log"]


def test_distinct_keeps_started_bots_once_in_order() -> None:
    a = BotSpec("a", command=("x",))
    b = BotSpec("b", command=("y",))
    external = BotSpec("e", token="t")
    assert distinct([a, external, b, BotSpec("a", command=("x",)), a]) == [a, b]


def test_the_output_tail_is_the_last_lines_written_since_the_offset(tmp_path: Path) -> None:
    log = tmp_path / "bot.log"
    log.write_text("an earlier run's last words\n")
    offset = log.stat().st_size
    assert output_tail(log, offset) == ""
    with log.open("a") as f:
        f.write('Traceback (most recent call last):\n\n  File "bot.py", line 3\n')
        f.write("    import x\nImportError: x\n")
    assert output_tail(log, offset) == 'File "bot.py", line 3 / import x / ImportError: x'
    with log.open("a") as f:
        f.write("y" * 1000 + "\n")
    tail = output_tail(log, offset)
    assert len(tail) == 300 and tail.startswith("…") and tail.endswith("y")


def test_the_output_tail_quotes_control_characters_as_text(tmp_path: Path) -> None:
    # A bot's last words reach the organiser's terminal: no escape sequence may act there
    # (clear a line and print a fake verdict, set the clipboard, reverse the text).
    log = tmp_path / "bot.log"
    log.write_bytes(b"\x1b[2K\rall bots passed\x1b]52;c;cm0gLXJmIH4=\x07 / \xe2\x80\xaeevil\n")
    tail = output_tail(log)
    assert tail == r"\x1b[2K\rall bots passed\x1b]52;c;cm0gLXJmIH4=\x07 / \u202eevil"
    assert tail.isprintable()


def test_the_output_tail_names_the_error_above_a_runtimes_last_words(tmp_path: Path) -> None:
    log = tmp_path / "node.log"
    log.write_text(
        "node:internal/modules/cjs/loader:1210\n  throw err;\n\n"
        "Error: Cannot find module '@grpc/grpc-js'\nRequire stack:\n- /bots/bot.js\n"
        "    at Module._load (node:internal/modules/cjs/loader:1038:27) {\n"
        "  code: 'MODULE_NOT_FOUND',\n  requireStack: [ '/bots/bot.js' ]\n}\n\n"
        "Node.js v20.20.2\n"
    )
    assert output_tail(log) == (
        "Error: Cannot find module '@grpc/grpc-js' … requireStack: [ '/bots/bot.js' ] / } / "
        "Node.js v20.20.2"
    )


def test_the_output_tail_quotes_a_go_panic_by_its_panic_line(tmp_path: Path) -> None:
    # A Go bot that panics on its first Send: the panic line says what went wrong, the
    # last lines (a goroutine's frames) only where; frames are tab-indented.
    log = tmp_path / "go.log"
    log.write_text(
        "panic: EOF\n\ngoroutine 1 [running]:\nmain.main()\n\t/home/ann/mybot/main.go:232 +0x5b4\n"
    )
    tail = output_tail(log)
    assert tail == (
        "panic: EOF … goroutine 1 [running]: / main.main() / /home/ann/mybot/main.go:232 +0x5b4"
    )
    assert "\\t" not in tail


def test_the_output_tail_shows_a_tab_inside_a_line_as_a_space(tmp_path: Path) -> None:
    log = tmp_path / "bot.log"
    log.write_text("fatal:\tno hand\n")
    assert output_tail(log) == "fatal: no hand"
