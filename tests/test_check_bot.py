"""``referee check-bot``: the sample bots pass every scenario; a bot that plays a card it
does not hold fails, and the report names the scenario, the card and the legal set.

Every run is the real command in a subprocess: a real server on loopback, real bot
processes, the referee's house bots on the other seats.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bots.harness import collect_reports

from referee.match.checkbot import lowest_cards, scenarios
from referee.match.runner import Clock
from referee.rules import PRESETS, parse_card

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_BOTS = ROOT / "sample_bots"
TEST_BOTS = ROOT / "tests" / "bots"
ALL = len(scenarios())


def _env(**extra: str) -> dict[str, str]:
    # The bot files say "python3": this interpreter's folder first on PATH, as in a venv.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, **extra}


def bot_file(folder: Path, script: str, **env: str) -> str:
    """A bot file for ``tests/bots/<script>`` with ``env`` (a started bot gets no other
    environment than its file's, besides what the referee sets)."""
    path = folder / f"{Path(script).stem}.toml"
    lines = [
        f'name = "{Path(script).stem}"',
        f"command = {json.dumps([sys.executable, script])}",
        f"workdir = {json.dumps(str(TEST_BOTS))}",
        "[env]",
        *(f"{k} = {json.dumps(v)}" for k, v in env.items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def check_bot(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    # Bot files written here run in the test or sample bots' folder: given leave to read it.
    grants = ("--read", str(TEST_BOTS), "--read", str(SAMPLE_BOTS))
    return subprocess.run(
        [sys.executable, "-m", "referee.cli", "check-bot", *grants, *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=timeout,
        cwd=ROOT,
    )


def test_the_scenarios_cover_what_a_bot_must_handle() -> None:
    chosen = scenarios()
    rules = [s.rules for s in chosen]
    assert {r.preset for r in rules} >= set(PRESETS)
    assert {s.players for s in chosen} >= {3, 8}
    assert any(r.pain_visibility == "secret" for r in rules)
    assert any(r.pain_cards_per_player == 2 for r in rules)
    assert any(r.pain_card == "kept_in_hand" for r in rules)
    assert any(s.clock.decision_ms < Clock().decision_ms for s in chosen)
    assert len({s.name for s in chosen}) == len(chosen)
    for s in chosen:
        s.rules.check_players(s.players)
        assert 0 <= s.seat < s.players


def test_house_bots_play_the_fallbacks_choice() -> None:
    hand = [parse_card(t) for t in ["H3", "C5", "C2", "S9"]]
    assert lowest_cards(hand, 1) == [parse_card("C2")]
    assert lowest_cards(hand, 2) == [parse_card("C2"), parse_card("S9")]
    one_suit = [parse_card(t) for t in ["C7", "C1", "C4"]]
    assert lowest_cards(one_suit, 2) == [parse_card("C1"), parse_card("C4")]


@pytest.mark.timeout(150)
@pytest.mark.parametrize("name", ["random", "heuristic", "montecarlo"])
def test_the_python_sample_bots_pass_every_scenario(name: str, tmp_path: Path) -> None:
    # The sample bot file, run from its folder, with the Monte Carlo bot's thinking capped.
    text = (SAMPLE_BOTS / f"{name}.toml").read_text()
    bot = tmp_path / f"{name}.toml"
    bot.write_text(
        f'{text}\nworkdir = {json.dumps(str(SAMPLE_BOTS))}\n[env]\nMONTECARLO_CAP_MS = "5"\n'
    )
    # The heuristic bot plays three families side by side, as a league validates it: the
    # report is the same, in the same order.
    jobs = "3" if name == "heuristic" else "1"
    done = check_bot("--bot", str(bot), "--jobs", jobs)
    assert done.returncode == 0, done.stdout + done.stderr
    passes = [line for line in done.stdout.splitlines() if line.startswith("PASS ")]
    # random and heuristic declare seats = 8: they also play the seats scenario.
    want = ALL + (name != "montecarlo")
    assert len(passes) == want, done.stdout
    names = [s.name for s in scenarios(seats=8 if name != "montecarlo" else 1)]
    assert [line.split()[1] for line in passes] == names, done.stdout
    assert ("PASS seats (" in done.stdout) == (name != "montecarlo")
    assert "FAIL" not in done.stdout
    assert done.stdout.strip().endswith(f"all {want} scenarios passed")


@pytest.fixture
def busy_machine() -> Iterator[int]:
    """Spinning processes at the referee's own priority: a load of 15 per core (30 on
    two), for as long as the test runs."""
    count = min(120, 15 * len(os.sched_getaffinity(0)))
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield count
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


@pytest.mark.timeout(280)
@pytest.mark.serial
def test_house_seats_never_fail_a_good_bot_on_a_busy_machine(
    busy_machine: int, tmp_path: Path
) -> None:
    # The scenarios with the most house seats. The bot under test starts within a minute
    # (a safety bound for its interpreter's start on this machine), and then has the
    # scenarios' own clock: its answers take a millisecond.
    picked = ["preset-amigo", "players-8", "secret-pain"]
    bot = tmp_path / "random.toml"
    bot.write_text(
        (SAMPLE_BOTS / "random.toml").read_text() + f"\nworkdir = {json.dumps(str(SAMPLE_BOTS))}\n"
    )
    done = check_bot(
        *(arg for name in picked for arg in ("--scenario", name)),
        *("--startup-ms", "60000", "--bot", str(bot)),
        timeout=260,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "house seat" not in done.stdout
    assert done.stdout.strip().endswith("all 3 scenarios passed")


@pytest.mark.timeout(150)
def test_the_node_bot_passes_every_scenario() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    assert (SAMPLE_BOTS / "node" / "node_modules").is_dir(), "run npm ci in sample_bots/node"
    done = check_bot("--bot", str(SAMPLE_BOTS / "node.toml"))
    assert done.returncode == 0, done.stdout + done.stderr
    passes = [line for line in done.stdout.splitlines() if line.startswith("PASS ")]
    assert len(passes) == ALL, done.stdout


@pytest.mark.timeout(200)
@pytest.mark.parametrize("kit", ["random", "node", "cpp"])
def test_each_kit_passes_check_bot_in_the_gvisor_tier(kit: str) -> None:
    """A league's hosted bots run in gVisor: each kit's bot starts there on its runtime
    (its read set) and plays. The scenarios themselves are the same in every tier and run
    in full in bubblewrap above (and tests/test_cpp_bot.py): one scenario each here."""
    from referee.jail import gvisor

    if why := gvisor.missing():
        pytest.skip(f"gvisor: {why}")
    if kit == "node" and not (SAMPLE_BOTS / "node" / "node_modules").is_dir():
        pytest.skip("run npm ci in sample_bots/node")
    if kit == "cpp" and not (SAMPLE_BOTS / "cpp" / "build" / "sticheln-bot").is_file():
        pytest.skip("the C++ sample bot is not built (scripts/test.sh builds it)")
    done = check_bot(
        *("--bot", str(SAMPLE_BOTS / f"{kit}.toml"), "--sandbox", "gvisor"),
        *("--scenario", "players-3", "--rounds", "1", "--startup-ms", "60000"),
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("all 1 scenarios passed"), done.stdout


FINDING = re.compile(
    r"round \d+, (?:trick \d+, (?:leading it|playing its \d+(?:st|nd|rd|th) card)|"
    r"choosing the pain cards?): illegal_card_not_in_hand: .*; sent \[(?P<sent>[^\]]*)\]; "
    r"expected 1 (?:card to play|pain card) from the hand (?P<hand>[A-Z0-9 ]+) \(any of them\)"
)


@pytest.mark.timeout(120)
def test_a_bot_playing_a_card_it_does_not_hold_fails_with_a_useful_report(
    tmp_path: Path,
) -> None:
    picked = ["preset-sticheln", "players-8", "pain-kept-in-hand"]
    done = check_bot(
        *(arg for name in picked for arg in ("--scenario", name)),
        "--out",
        str(tmp_path),
        "--bot",
        # Only its second answer is illegal: one finding per scenario.
        bot_file(tmp_path, "illegal_bot.py", ILLEGAL="not_in_hand", ILLEGAL_AT="2"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.splitlines()
    for name in picked:
        (head,) = [line for line in out if line.startswith(f"FAIL {name} (")]
        finding = out[out.index(head) + 1]
        match = FINDING.search(finding)
        assert match is not None, finding
        # The card it sent, named and coded, is not in the legal set the report lists.
        sent = match["sent"]
        name_part, code = re.fullmatch(r"(\w+) \(code (\d+)\)", sent).groups()  # type: ignore[union-attr]
        assert parse_card(name_part) == int(code)
        assert name_part not in match["hand"].split()
        assert f"played card {sent}" in finding or f"chose pain card {sent}" in finding
        assert "forfeited" not in finding
        # Words a person can find in the record, not the stream's internal request id.
        assert not re.search(r"\d{5,}", finding), finding
    assert out[-2] == f"3 of 3 scenarios FAILED: {', '.join(picked)}"
    assert out[-1] == f"match records and bot logs: {tmp_path}"
    assert len(list((tmp_path / "matches").glob("check-*.jsonl"))) == 3


@pytest.mark.timeout(60)
def test_a_bot_that_always_cheats_is_forfeited_and_every_scenario_fails(tmp_path: Path) -> None:
    done = check_bot(
        *("--out", str(tmp_path)),
        "--scenario",
        "two-pain-cards",
        "--scenario",
        "short-clock",
        "--bot",
        bot_file(tmp_path, "illegal_bot.py", ILLEGAL="wrong_count"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "FAIL two-pain-cards" in out and "FAIL short-clock" in out
    # A pain choice of three cards where two are asked, reported with all three sent.
    assert re.search(
        r"sent 3 pain cards; expected 2; sent \[\w+ \(code \d+\)(, \w+ \(code \d+\)){2}\]", out
    ), out
    assert "expected 2 different cards of two suits from the hand" in out
    assert out.count("(seat forfeited)") == 2  # the third strike, once per scenario


@pytest.mark.timeout(60)
def test_a_bot_that_thinks_a_fixed_300_ms_fails_only_the_short_clock(tmp_path: Path) -> None:
    # Eight answers 150 ms or more over the short clock's 150 ms drain its 1 s bank
    # whatever the machine's load; the preset's 1000 ms leave 700 ms for a loaded machine
    # to hold the bot back (check-bot's clocks are the subject: they are not stretched).
    done = check_bot(
        *("--out", str(tmp_path)),
        *("--scenario", "preset-sticheln", "--scenario", "short-clock"),
        "--bot",
        bot_file(tmp_path, "slow_bot.py", SLOW="3,4,5,6,7,8,9,10", SLOW_MS="300"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("PASS preset-sticheln")
    assert out[1].startswith("FAIL short-clock")
    assert re.match(
        r"    round 1, trick \d+, (leading it|playing its \d+(st|nd|rd|th) card): timeout: "
        r"no answer within \d+ ms; sent nothing in time; expected 1 card to play from the hand",
        out[2],
    ), out[2]


@pytest.mark.timeout(60)
def test_connect_mode_prints_the_address_and_token_and_checks_a_bot_that_dials_in() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            *("-m", "referee.cli", "check-bot", "--connect", "--startup-ms", "20000"),
            *("--scenario", "players-3", "--scenario", "two-pain-cards"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"connect the bot to (\S+) with token (\S+):", line)
        assert found is not None, line
        address, token = found.groups()
        bot_env = _env(STICHELN_REFEREE=address, STICHELN_TOKEN=token)
        # One stream per scenario: dial again after each stream ends, until it is done.
        deadline = time.monotonic() + 40
        runs = 0
        while proc.poll() is None and time.monotonic() < deadline:
            bot = subprocess.run(
                [sys.executable, str(SAMPLE_BOTS / "python" / "heuristic_bot.py")],
                env=bot_env,
                capture_output=True,
                timeout=30,
            )
            runs += 1 if bot.returncode == 0 else 0
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err
    assert runs >= 2
    assert "PASS players-3" in out and "PASS two-pain-cards" in out
    assert "connect the bot to" not in err  # the connect line is printed once, first


def test_usage_errors_are_one_line_and_status_2() -> None:
    for args, want in [
        ((), "give exactly one of"),
        (("--scenario", "nope", "--connect"), "unknown scenario 'nope'"),
        (("--bot", "missing.toml"), "bot file not found"),
        (("--rounds", "0", "--connect"), "--rounds: 0 is not allowed"),
        (("--strikes", "0", "--connect"), "--strikes: 0 is not allowed"),
        (("--jobs", "0", "--connect"), "--jobs: 0 is not allowed"),
        (("--jobs", "2", "--connect"), "a bot that dials in plays one scenario at a time"),
    ]:
        done = check_bot(*args, timeout=30)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and want in lines[0], done.stderr


def _bot_file(folder: Path, name: str, script: str, seats: int = 1, **env: str) -> Path:
    """A bot file starting one of the test bots with this interpreter."""
    path = folder / f"{name}.toml"
    table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
    path.write_text(
        f"name = {json.dumps(name)}\n"
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(TEST_BOTS / script))}]\n"
        # The bot's folder is the one its sandbox may read.
        f"workdir = {json.dumps(str(TEST_BOTS))}\n"
        f"seats = {seats}\nenv = {{ {table} }}\n"
    )
    return path


@pytest.mark.timeout(120)
def test_a_bot_that_lingers_after_its_stream_ended_fails_with_the_reason(tmp_path: Path) -> None:
    bot = _bot_file(tmp_path, "lingering", "lingering_bot.py", seats=2)
    # The bot lingers 60 s after each of its two scenarios; the referee must stop it (the
    # report says so) rather than wait, or this test runs past its timeout.
    done = check_bot(
        *("--bot", str(bot), "--scenario", "players-3", "--scenario", "seats"),
        *("--out", str(tmp_path / "out")),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.splitlines()
    want = (
        "    the bot process was still running 5 s after the referee ended its stream with "
        "status OK (it was stopped with SIGTERM): a bot should exit by itself when the "
        "referee ends its last stream"
    )
    # Every answer was right: the only complaint, in both scenarios, is the lingering.
    for name in ("players-3", "seats"):
        (head,) = [line for line in out if line.startswith(f"FAIL {name} (")]
        assert out[out.index(head) + 1] == want, done.stdout
    assert out[-2] == "2 of 2 scenarios FAILED: players-3, seats"


@pytest.mark.timeout(60)
def test_a_bot_exiting_with_a_failure_after_its_stream_ended_fails(tmp_path: Path) -> None:
    bot = _bot_file(tmp_path, "failing", "lingering_bot.py", LINGER_S="0", EXIT_STATUS="3")
    done = check_bot("--bot", str(bot), "--scenario", "players-3")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[1] == (
        "    the bot process exited with status 3 after the referee ended its stream with "
        "status OK; expected exit status 0"
    )


@pytest.mark.timeout(60)
def test_a_bot_file_with_seats_is_played_two_matches_at_once_on_one_process(
    tmp_path: Path,
) -> None:
    matches = tmp_path / "matches.txt"
    bot = _bot_file(tmp_path, "seated", "lowest_bot.py", seats=3, MATCHES=str(matches))
    out = tmp_path / "out"
    done = check_bot(
        *("--bot", str(bot), "--scenario", "seats", "--scenario", "players-3"),
        *("--out", str(out)),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.match(
        r"PASS seats \(two matches at once on two of the 3 streams of one process "
        r"\(STICHELN_SEATS=3\), 4 players; seat 1\): 60 decisions",
        done.stdout.splitlines()[1],
    ), done.stdout
    collect_reports(out / "logs")  # "<process> <match id as sent>" for every MatchStart
    # A bot is sent a random id per match; each record's header names both.
    headers = [
        json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        for path in (out / "matches").glob("*.jsonl")
    ]
    real = {h["bot_match_id"]: h["match_id"] for h in headers}
    sent = [line.split() for line in matches.read_text().splitlines()]
    assert not {m for _, m in sent} & set(real.values())
    seen = [(pid, real[m]) for pid, m in sent]
    seats_matches = [(pid, m) for pid, m in seen if m.startswith("check-seats-")]
    assert len(seats_matches) == 2 and seats_matches[0][1] != seats_matches[1][1]
    assert seats_matches[0][0] == seats_matches[1][0]  # one process played both
    other = [pid for pid, m in seen if m.startswith("check-players-3-")]
    assert other and other[0] != seats_matches[0][0]  # the single-seat scenario: its own


@pytest.mark.timeout(100)
def test_a_bot_opening_fewer_streams_than_its_seats_fails_the_seats_scenario(
    tmp_path: Path,
) -> None:
    bot = _bot_file(tmp_path, "short", "lowest_bot.py", seats=3, OPEN_SEATS="2")
    # Time enough for the two streams it opens, even on a busy machine: the third never comes.
    done = check_bot("--bot", str(bot), "--scenario", "seats", "--startup-ms", "20000")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[1].startswith(
        "    2 of the 3 streams the bot file declares (seats = 3) completed the handshake: "
        "no valid handshake within 20 s"
    ), done.stdout


def test_the_seats_scenario_needs_a_bot_file_with_seats(tmp_path: Path) -> None:
    bot = _bot_file(tmp_path, "single", "lowest_bot.py")
    done = check_bot("--bot", str(bot), "--scenario", "seats", timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "referee check-bot: scenario 'seats' is for a bot file that declares seats (more than 1)"
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("jobs", ["1", "3"])
def test_a_bot_that_times_out_everywhere_plays_one_scenario_per_family(
    tmp_path: Path, jobs: str
) -> None:
    # Every answer comes after the 1 s decision limit: one timeout per family proves it,
    # whether the families are played one after another or side by side.
    bot = _bot_file(tmp_path, "sleepy", "lowest_bot.py", SLEEP_MS="1500")
    done = check_bot("--bot", str(bot), "--rounds", "1", "--strikes", "1", "--jobs", jobs)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.splitlines()
    heads = [line.split()[:2] for line in out if line.split()[:1] in (["FAIL"], ["SKIP"], ["PASS"])]
    played = [name for verdict, name in heads if verdict != "SKIP"]
    families: dict[str, list[str]] = {}
    for s in scenarios(rounds=1):
        families.setdefault(s.family, []).append(s.name)
    # The first scenario of each family fails with a timeout; the rest are not played.
    assert played == [names[0] for names in families.values()], done.stdout
    assert all(verdict == "FAIL" for verdict, name in heads if name in played)
    for family, names in families.items():
        for name in names[1:]:
            (line,) = [x for x in out if x.startswith(f"SKIP {name} ")]
            assert line.endswith(
                f"not played: the bot timed out in {names[0]}, of the same family ({family})"
            )
    assert f"SKIP same-seed: not played: the bot timed out in {played[0]}" in out
    assert "timeout" in done.stdout
    total = len(scenarios(rounds=1))
    assert out[-2].startswith(f"{len(played)} of {total} scenarios FAILED: {', '.join(played)}; ")


def test_the_report_lists_a_scenarios_timeouts_before_the_exit_they_led_to() -> None:
    # A late answer can meet the stream's end and make a bot exit with a failure: the
    # timeout is the finding, the exit follows from it and is listed after it.
    from referee.match.checkbot import Finding, Outcome
    from referee.match.faults import Fault, FaultReason

    scenario = next(s for s in scenarios() if s.name == "short-clock")
    late = Fault(scenario.seat, FaultReason.TIMEOUT, "no answer within 50 ms", 0, 9, 1, False)
    exited = (
        "the bot process exited with status 1 after the referee ended its stream with "
        "status OK; expected exit status 0"
    )
    lines = Outcome(scenario, [Finding(late, "nothing in time", "1 card")], error=exited).lines()
    assert lines[0].startswith("FAIL short-clock")
    assert lines[1:] == [
        # The report never names the stream's internal request id (the record has it).
        "    round 1: timeout: no answer within 50 ms; sent nothing in time; expected 1 card",
        f"    {exited}",
    ]
