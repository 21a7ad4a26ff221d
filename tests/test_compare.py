"""``referee compare`` end to end: settings, the paired schedule, real sample bots, the
store, resume after kill -9, and the exports."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from machine import stretched

from referee.compare.config import CompareConfigError, Overrides, load_compare, share_for_elo
from referee.compare.run import (
    CompareRefused,
    CompareStore,
    Pair,
    SeatRow,
    bot_seeds,
    exit_status,
    fixed_size_note,
    judge,
    min_pairs_note,
    pairs_from,
    pilot,
    pilot_text,
    plan_pair,
    progress_line,
    progress_record,
    report_text,
    run_compare,
    share_beaten,
    summary,
    unlike,
)
from referee.compare.sprt import H0, H1, first_verdict, simulate
from referee.match.dealkey import DealKey

ROOT = Path(__file__).parent.parent
SAMPLES = ROOT / "sample_bots"
RANDOM = str(SAMPLES / "random.toml")
HEURISTIC = str(SAMPLES / "heuristic.toml")
MINIMAL = str(SAMPLES / "minimal-python.toml")


def flags(tmp_path: Path, **kw: object) -> Overrides:
    base: dict[str, object] = {
        "candidate": HEURISTIC,
        "baseline": RANDOM,
        "opponents": [RANDOM, MINIMAL],
        "out": str(tmp_path / "out"),
        "decision_ms": 10_000,
        "startup_ms": 60_000,
        # A comparison's default tier (the fixed-size comparison below plays it unnamed).
        "sandbox": "bubblewrap",
    }
    base.update(kw)
    return Overrides(**base)  # type: ignore[arg-type]


# -- settings ----------------------------------------------------------------------------------


def test_flags_alone_make_a_comparison_with_the_default_test(tmp_path: Path) -> None:
    config = load_compare(None, flags(tmp_path))
    assert config.sprt is not None
    assert (config.sprt.lower, config.sprt.upper, config.sprt.alpha, config.sprt.beta) == (
        0.0,
        5.0,
        0.05,
        0.05,
    )
    assert config.table_size == 3
    assert config.matches == 2000
    # The baseline and an opponent share the file: the later one is renamed.
    assert [config.candidate.name, config.baseline.name] == ["heuristic", "random"]
    assert [b.name for b in config.opponents] == ["random-2", "minimal"]
    assert config.database == tmp_path / "out" / "compare.db"


def test_matches_alone_is_a_fixed_size_comparison_and_with_sprt_a_cap(tmp_path: Path) -> None:
    fixed = load_compare(None, flags(tmp_path, matches=40))
    assert fixed.sprt is None
    # Said in one line at the start: --matches alone turned the test off.
    assert fixed_size_note(fixed) == (
        "note: matches = 40 without a test (--sprt or [compare.sprt]): a fixed-size "
        "comparison of exactly 40 matches (20 deal pairs), no sequential test and no early "
        "stop; give --sprt to test with this cap"
    )
    capped = load_compare(None, flags(tmp_path, matches=40, sprt=["upper=10"]))
    assert capped.sprt is not None and capped.sprt.upper == 10.0 and capped.max_pairs == 20
    off = load_compare(None, flags(tmp_path, sprt=["off"], matches=10))
    assert off.sprt is None
    # Asked for in so many words, or a test kept: nothing to say.
    assert fixed_size_note(off) is None and fixed_size_note(capped) is None
    assert fixed_size_note(load_compare(None, flags(tmp_path))) is None
    path = tmp_path / "c.toml"
    path.write_text("[compare]\nmatches = 8\n")
    from_file = load_compare(path, flags(tmp_path, matches=None))
    assert from_file.sprt is None and fixed_size_note(from_file) is not None


def test_file_settings_and_flags_over_them(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        f'[compare]\nname = "mine"\ncandidate = "{HEURISTIC}"\nbaseline = "{RANDOM}"\n'
        f'opponents = ["{MINIMAL}", "{MINIMAL}", "{RANDOM}"]\ntable_size = 4\nseed = 9\n'
        'out = "o"\n[compare.sprt]\nlower = -1\nupper = 4\nalpha = 0.1\n'
        '[rules]\npreset = "amigo"\n[clock]\ndecision_ms = 300\n'
    )
    config = load_compare(path, Overrides(seed=10, sprt=["beta=0.2"]))
    assert config.name == "mine" and config.table_size == 4 and config.seed == 10
    assert config.sprt is not None
    assert (config.sprt.lower, config.sprt.upper, config.sprt.alpha, config.sprt.beta) == (
        -1.0,
        4.0,
        0.1,
        0.2,
    )
    assert config.rules.preset == "amigo" and config.clock.decision_ms == 300
    assert config.out == (tmp_path / "o").resolve()
    assert [b.name for b in config.opponents] == ["minimal", "minimal-2", "random-2"]


@pytest.mark.parametrize(
    ("kw", "text", "message"),
    [
        ({"candidate": None}, "", "no candidate; give --candidate FILE"),
        ({"opponents": []}, "", "no opponents; give --opponent FILE"),
        ({"table_size": 4}, "", "table_size = 4 needs 3 opponents at each table, but 2 are given"),
        ({"sprt": ["upper=x"]}, "", "--sprt: upper = 'x' is not a number"),
        ({"sprt": ["uper=3"]}, "", "--sprt: 'uper=3' is not allowed"),
        ({"sprt": ["upper=-1"]}, "", "upper = -1 is not above lower = 0"),
        ({"matches": 7}, "", "matches = 7 is not allowed; allowed: an even number"),
        ({"matches": 10, "sprt": ["upper=9"]}, "", "fewer than the test's 20 deal pairs"),
        ({"baseline": "/nonexistent.toml"}, "", "bot file not found"),
        ({}, "[compare]\nbogus = 1\n", "[compare] has unknown key 'bogus'"),
        ({}, "[compare.sprt]\nupper = 'five'\n", "[compare.sprt]"),
        ({}, "[compare]\nparallel = 0\n", "parallel = 0 is not allowed"),
        ({}, "[tournament]\n", "unknown table [tournament]"),
    ],
)
def test_bad_settings_are_refused_in_one_line(
    tmp_path: Path, kw: dict[str, object], text: str, message: str
) -> None:
    path = None
    if text:
        path = tmp_path / "c.toml"
        path.write_text(text)
    with pytest.raises(CompareConfigError) as info:
        load_compare(path, flags(tmp_path, **kw))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_cli_refuses_bad_settings_with_status_3(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "referee.cli", "compare", "--candidate", HEURISTIC],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3
    assert proc.stderr.strip() == (
        'referee compare: no baseline; give --baseline FILE or [compare] baseline = "FILE"'
    )


# -- the paired schedule ------------------------------------------------------------------------


def test_pairs_share_deal_seats_and_opponents_and_the_seat_rotates(tmp_path: Path) -> None:
    config = load_compare(None, flags(tmp_path, opponents=[RANDOM, MINIMAL, MINIMAL], table_size=3))
    key = DealKey.from_hex("ab" * 32)
    plans = [plan_pair(config, key, d) for d in range(30)]
    names = {b.name for b in config.opponents}
    for d, plan in enumerate(plans):
        assert plan.seed == key.match_seed(d)
        assert plan.seat == d % config.table_size
        c, b = plan.seating(config.candidate.name), plan.seating(config.baseline.name)
        assert c[plan.seat] == config.candidate.name and b[plan.seat] == config.baseline.name
        assert [x for i, x in enumerate(c) if i != plan.seat] == list(plan.opponents)
        assert [x for i, x in enumerate(b) if i != plan.seat] == list(plan.opponents)
        assert set(plan.opponents) <= names and len(set(plan.opponents)) == 2
    # Every opponent is drawn, in more than one seat order.
    assert {o for p in plans for o in p.opponents} == names
    assert len({p.opponents for p in plans}) > 3
    # The same seed and key give the same plans; another seed other opponents, same deals.
    assert [plan_pair(config, key, d) for d in range(30)] == plans
    other = load_compare(
        None, flags(tmp_path, opponents=[RANDOM, MINIMAL, MINIMAL], table_size=3, seed=2)
    )
    replans = [plan_pair(other, key, d) for d in range(30)]
    assert [p.seed for p in replans] == [p.seed for p in plans]
    assert [p.opponents for p in replans] != [p.opponents for p in plans]


def test_the_store_keeps_the_deal_key_and_refuses_changed_settings(tmp_path: Path) -> None:
    config = load_compare(None, flags(tmp_path))
    store = CompareStore(config.database)
    try:
        resumed, key = store.open_run(config)
        assert not resumed
        assert store.open_run(config) == (True, key)
        changed = load_compare(None, flags(tmp_path, sprt=["upper=7"]))
        with pytest.raises(CompareRefused, match=r"sprt\.upper: 5\.0 -> 7\.0"):
            store.open_run(changed)
    finally:
        store.close()
    assert config.database.stat().st_mode & 0o077 == 0  # it holds the secret key


# -- real bots -----------------------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_heuristic_against_random_accepts_h1_within_a_few_dozen_pairs(tmp_path: Path) -> None:
    config = load_compare(None, flags(tmp_path, parallel=2, sprt=["upper=20", "min_pairs=10"]))
    seen: list[int] = []
    outcome = asyncio.run(run_compare(config, on_progress=lambda v, m: seen.append(v.pairs)))
    assert outcome.verdict.decision == H1 and outcome.exit_status == 0
    # Each run deals from a new key: the betting test, whose stakes the rules' worst
    # difference caps, took 30-45 pairs here; a test that could not decide would run on
    # to the cap of 1000.
    assert 10 <= outcome.verdict.pairs <= 60
    assert seen == sorted(seen) and seen[-1] == outcome.verdict.pairs
    s = outcome.summary
    assert s["score_diff"]["mean"] > 5.0 and s["share_won"] > 0.5
    assert s["deals_won"] + s["deals_drawn"] + s["deals_lost"] == s["pairs"]
    for name in ("compare.json", "pairs.csv", "results.csv", "report.html"):
        assert outcome.exports[name].stat().st_size > 0
    assert json.loads((config.out / "compare.json").read_text()) == s
    records = sorted((config.out / "matches").glob("*.jsonl"))
    assert len(records) == s["matches"] >= 2 * s["pairs"]
    assert "H1 accepted" in (config.out / "report.html").read_text()
    # Started again, a decided comparison plays nothing and says the same.
    again = asyncio.run(run_compare(config))
    assert again.played_now == 0 and again.summary == s


@pytest.mark.timeout(180)
def test_random_against_a_copy_of_itself_accepts_h0(tmp_path: Path) -> None:
    config = load_compare(
        None,
        flags(
            tmp_path,
            candidate=RANDOM,
            baseline=RANDOM,
            opponents=[MINIMAL, MINIMAL],
            parallel=2,
            sprt=["lower=0", "upper=40", "min_pairs=10"],
        ),
    )
    assert config.baseline.name == "random-2"
    outcome = asyncio.run(run_compare(config))
    assert outcome.verdict.decision == H0 and exit_status(outcome.verdict) == 1
    assert abs(outcome.summary["score_diff"]["mean"]) < 40


#: A fixed-size comparison's exit status for each verdict.
FIXED_SIZE_STATUS = {"better": 0, "worse": 1, "no difference": 2}


@pytest.mark.timeout(120)
def test_a_fixed_size_comparison_plays_exactly_its_matches_and_streams_json_lines(
    tmp_path: Path,
) -> None:
    out = tmp_path / "fixed"
    proc = subprocess.run(
        [
            sys.executable, "-m", "referee.cli", "compare",
            "--candidate", HEURISTIC, "--baseline", RANDOM,
            "--opponent", MINIMAL, "--opponent", MINIMAL,
            "--matches", "6", "--parallel", "2", "--out", str(out),
            "--decision-ms", "10000", "--startup-ms", "60000",
            "--log-level", "warning",  # given, off a terminal: JSON lines
        ],
        capture_output=True,
        text=True,
        timeout=stretched(100),
    )  # fmt: skip
    assert proc.returncode in (0, 1, 2), proc.stderr
    records = [json.loads(x) for x in proc.stderr.splitlines() if x.startswith("{")]
    # Progress lines share stderr with the log's warnings (a seat that timed out, a match
    # played again), which a loaded machine may produce.
    lines = [x for x in records if x["event"] == "compare_progress"]
    # A line each time the count of finished pairs grows: pairs count in deal order, so
    # a later pair that ends before an earlier one is counted with it (1, 3).
    counts = [x["pairs"] for x in lines]
    assert counts == sorted(set(counts)) and counts[-1] == 3 and counts[0] >= 1, proc.stderr
    assert lines[-1]["verdict"] in ("better", "worse", "no difference")
    assert "llr" not in lines[-1]
    # First what each bot may read of the host and how large it is, a line each; then that
    # --matches alone made it a fixed-size comparison.
    reads = [x for x in proc.stderr.splitlines() if " reads runtime python3 (" in x]
    assert len(reads) >= 3 and all("its folder and read paths (" in x for x in reads)
    after = proc.stderr.splitlines()[len(reads)]
    assert after.startswith("note: matches = 6 without a test"), proc.stderr
    summary = json.loads((out / "compare.json").read_text())
    assert summary["pairs"] == 3 and summary["matches"] == 6 and summary["test"] is None
    assert proc.returncode == FIXED_SIZE_STATUS[summary["verdict"]]
    assert "score difference per match" in proc.stdout
    # A comparison runs in bubblewrap by default (one author's versions: no stranger).
    tiers = {_header(r)["sandbox"] for r in (out / "matches").glob("*.jsonl")}
    assert tiers == {"bubblewrap"}


@pytest.mark.timeout(240)
def test_kill_9_then_resume_keeps_finished_pairs_and_completes(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    cmd = [
        sys.executable, "-m", "referee.cli", "compare",
        "--candidate", RANDOM, "--baseline", RANDOM,
        "--opponent", MINIMAL, "--opponent", MINIMAL,
        "--matches", "16", "--parallel", "2", "--out", str(out),
        "--sandbox", "bubblewrap", "--decision-ms", "10000", "--startup-ms", "60000",
    ]  # fmt: skip
    db = out / "compare.db"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + stretched(120)
    while _finished(db) < 4:
        assert proc.poll() is None, "the comparison ended before it could be killed"
        assert time.monotonic() < deadline, "no match finished in time"
        time.sleep(0.05)  # polling the database for a condition, not waiting out a race
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    before = _finished_at(db)
    assert 4 <= len(before) < 16
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=stretched(200))
    after = _finished_at(db)
    assert all(after[i] == t for i, t in before.items()), "a finished match was played again"
    summary = json.loads((out / "compare.json").read_text())
    assert done.returncode == FIXED_SIZE_STATUS[summary["verdict"]], done.stderr
    # Exactly its 16 matches in all (a sequential test's state is its pairs, read back
    # from the database: a decided comparison started again, above, says the same).
    assert summary["test"] is None and summary["pairs"] == 8
    assert all(2 * d in after and 2 * d + 1 in after for d in range(summary["pairs"]))
    assert summary["matches"] == len(after)
    # --sandbox chose the tier of every match.
    assert {_header(r)["sandbox"] for r in (out / "matches").glob("*.jsonl")} == {"bubblewrap"}


@pytest.mark.timeout(120)
def test_a_piped_comparison_prints_the_terminals_line_once_a_pair(tmp_path: Path) -> None:
    # As referee tournament: at the default log level, off a terminal, what a terminal
    # shows, a line per pair with no terminal codes; JSON only with --log-level.
    proc = subprocess.run(
        [
            sys.executable, "-m", "referee.cli", "compare",
            "--candidate", HEURISTIC, "--baseline", RANDOM,
            "--opponent", MINIMAL, "--opponent", MINIMAL,
            "--matches", "4", "--parallel", "2", "--out", str(tmp_path / "piped"),
            "--decision-ms", "10000", "--startup-ms", "60000", "--sandbox", "bubblewrap",
        ],
        capture_output=True,
        text=True,
        timeout=stretched(100),
    )  # fmt: skip
    assert proc.returncode in (0, 1, 2), proc.stderr
    err = proc.stderr.splitlines()
    assert not [x for x in err if x.startswith("{")], proc.stderr
    assert "\r" not in proc.stderr and "\x1b" not in proc.stderr
    progress = [x for x in err if x.startswith("pairs ")]
    assert [int(x.split()[1]) for x in progress] == [1, 2], proc.stderr
    assert all(x.split()[2:4] == ["matches", str(2 * (i + 1))] for i, x in enumerate(progress))
    assert "diff " in progress[-1] and "pairs to go" in progress[-1]


def _header(record: Path) -> dict[str, Any]:
    with record.open() as f:
        return dict(json.loads(f.readline()))


def _finished(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as con:
        try:
            row = con.execute(
                "SELECT COUNT(*) FROM compare_matches WHERE status = 'finished'"
            ).fetchone()
        except sqlite3.OperationalError:  # the tables do not exist yet
            return 0
        return int(row[0])


def _finished_at(db: Path) -> dict[int, float]:
    with sqlite3.connect(db) as con:
        return dict(
            con.execute(
                "SELECT idx, finished_at FROM compare_matches WHERE status = 'finished'"
            ).fetchall()
        )


# -- bounds in Elo -------------------------------------------------------------------------------


def test_the_method_is_chosen_by_flag_or_file_and_a_resume_cannot_switch_it(
    tmp_path: Path,
) -> None:
    default = load_compare(None, flags(tmp_path))
    assert default.sprt is not None and default.sprt.method == "sprt"
    betting = load_compare(None, flags(tmp_path, sprt=["method=betting"]))
    assert betting.sprt is not None and betting.sprt.method == "betting"
    assert betting.sprt.accept_h1_at == pytest.approx(math.log(20))
    assert default.fingerprint_hash() != betting.fingerprint_hash()
    # A comparison begun when betting was the only test (no method in its fingerprint)
    # resumes with method=betting, and is refused under the default.
    assert "method" not in betting.fingerprint()["sprt"]
    assert default.fingerprint()["sprt"]["method"] == "sprt"
    settings = tmp_path / "compare.toml"
    settings.write_text('[compare.sprt]\nmethod = "betting"\n')
    from_file = load_compare(settings, flags(tmp_path))
    assert from_file.sprt is not None and from_file.sprt.method == "betting"
    with pytest.raises(CompareConfigError, match="method") as info:
        load_compare(None, flags(tmp_path, sprt=["method=wald"]))
    assert "\n" not in str(info.value)


def test_elo_bounds_test_the_share_of_opponents_beaten(tmp_path: Path) -> None:
    config = load_compare(None, flags(tmp_path, sprt=["elo0=0", "elo1=50", "min_pairs=5"]))
    assert config.metric == "share" and config.elo == (0.0, 50.0)
    assert config.sprt is not None and config.sprt.lower == 0.0
    assert config.sprt.upper == pytest.approx(1 / (1 + 10 ** (-50 / 400)) - 0.5)
    assert share_for_elo(-80.0) == pytest.approx(-share_for_elo(80.0))
    # Small differences: ln 10 / 1600 of a share per Elo point.
    assert share_for_elo(1.0) == pytest.approx(math.log(10) / 1600, rel=1e-3)
    for words, message in (
        (["elo0=0", "elo1=50", "upper=3"], "either as lower/upper"),
        (["elo1=50"], "give both elo0 and elo1"),
        (["elo0=0", "elo1=5000"], "elo1 = 5000.0 is not allowed"),
    ):
        with pytest.raises(CompareConfigError, match=message):
            load_compare(None, flags(tmp_path, sprt=words))
    # The candidate beats both opponents or one, the baseline one or none, in turn.
    strong = load_compare(None, flags(tmp_path, sprt=["elo0=0", "elo1=300", "min_pairs=5"]))
    finished: dict[int, list[SeatRow]] = {}
    for deal in range(40):
        for idx, bot, place in ((2 * deal, "heuristic", 1), (2 * deal + 1, "random", 3)):
            place = place + deal % 2 * (1 if place == 1 else -1)
            others = [p for p in (1, 2, 3) if p != place]
            finished[idx] = [
                SeatRow(idx, 0, bot, 0, place, False, 0),
                SeatRow(idx, 1, "random-2", 0, others[0], False, 0),
                SeatRow(idx, 2, "minimal", 0, others[1], False, 0),
            ]
    pairs = pairs_from(strong, finished)
    assert [p.share_diff for p in pairs] == [1.0, 0.0] * 20
    verdict = judge(strong, pairs)
    assert strong.sprt is not None
    assert (verdict.decision, verdict.pairs) == first_verdict(strong.sprt, [1.0, 0.0] * 20)
    assert verdict.decision == H1 and verdict.pairs < 40


def test_share_beaten_counts_shared_places_half_and_ties_forfeits() -> None:
    rows = [
        SeatRow(0, 0, "a", 0, 2, False, 0),
        SeatRow(0, 1, "b", 0, 2, False, 0),
        SeatRow(0, 2, "c", 0, 3, True, 0),
        SeatRow(0, 3, "d", 0, 4, True, 0),
    ]
    assert share_beaten(rows, "a") == pytest.approx((0.5 + 1 + 1) / 3)
    assert share_beaten(rows, "c") == pytest.approx(0.5 / 3)  # the forfeits tie


def test_an_unusable_store_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file where the folder should be")
    config = load_compare(None, flags(tmp_path))
    with pytest.raises(CompareRefused, match="cannot open the comparison's database") as info:
        CompareStore(config.database)
    assert "\n" not in str(info.value)


@pytest.mark.timeout(120)
def test_a_deterministic_bot_against_a_copy_of_itself_gets_identical_pairs(
    tmp_path: Path,
) -> None:
    # Heuristic and minimal bots play the same cards on the same deal in the same seat
    # against the same opponents: a pair that differs in anything but the bot shows.
    config = load_compare(
        None,
        flags(
            tmp_path,
            candidate=HEURISTIC,
            baseline=HEURISTIC,
            opponents=[MINIMAL, MINIMAL],
            matches=6,
            parallel=2,
        ),
    )
    outcome = asyncio.run(run_compare(config))
    rows = list(csv.DictReader((config.out / "pairs.csv").open()))
    assert len(rows) == 3
    for row in rows:
        assert row["candidate_total"] == row["baseline_total"] and row["score_diff"] == "0"
        assert row["candidate_place"] == row["baseline_place"]
    assert outcome.verdict.decision == "no difference" and outcome.exit_status == 2


def test_the_live_line_and_json_lines_say_pairs_mean_evidence_bounds_and_pairs_to_go(
    tmp_path: Path,
) -> None:
    config = load_compare(None, flags(tmp_path, sprt=["min_pairs=5"]))
    finished: dict[int, list[SeatRow]] = {}
    for deal, diff in enumerate([12, -3, 20, 7, 15, 9]):
        for idx, bot, total in ((2 * deal, "heuristic", diff), (2 * deal + 1, "random", 0)):
            finished[idx] = [
                SeatRow(idx, 0, bot, total, 1, False, 0),
                SeatRow(idx, 1, "random-2", -50, 2, False, 0),
                SeatRow(idx, 2, "minimal", -60, 3, False, 0),
            ]
    verdict = judge(config, pairs_from(config, finished))
    s = verdict.score
    line = progress_line(config, verdict, 12)
    assert line.startswith(
        f"pairs 6  matches 12  diff {s.mean:+.1f} ± {s.ci95:.1f}  "
        f"H1 {s.log_h1:.2f}/3.14  H0 {s.log_h0:.2f}/3.14  "  # ln(0.95/0.05) + 0.2
    )
    assert line.endswith(f"~{s.pairs_to_go} pairs to go") and s.pairs_to_go
    record = progress_record(config, verdict, 12)
    assert json.loads(json.dumps(record)) == {
        "event": "compare_progress",
        "pairs": 6,
        "matches": 12,
        "mean_diff": pytest.approx(10.0),  # (12 - 3 + 20 + 7 + 15 + 9) / 6
        "ci95": pytest.approx(s.ci95),
        "pairs_to_go": s.pairs_to_go,
        "log_h1": pytest.approx(s.log_h1),
        "log_h0": pytest.approx(s.log_h0),
        "bounds": [pytest.approx(math.log(19) + 0.2), pytest.approx(math.log(19) + 0.2)],
    }


# -- only real pairs count -------------------------------------------------------------------

FLAKY = '''\
"""Fails its first start (no handshake, exit status 3), then plays as the random bot."""
import os
import runpy
import sys

marker = os.environ["FLAKY_MARKER"]
if not os.path.exists(marker):
    open(marker, "w").close()
    sys.exit(3)
sys.path.insert(0, os.getcwd())
runpy.run_path(os.path.join(os.getcwd(), "random_bot.py"), run_name="__main__")
'''


@pytest.mark.timeout(240)
def test_a_void_match_is_played_again_and_every_count_agrees(tmp_path: Path) -> None:
    # The baseline fails its handshake the first time it is started: that match is void,
    # played again on the same deal, and never counted; the report, compare.json,
    # pairs.csv, matches/ and a resumed run all say the same numbers.
    (tmp_path / "flaky.py").write_text(FLAKY)
    marker = tmp_path / "started-once"
    (tmp_path / "flaky.toml").write_text(
        f'name = "flaky"\ncommand = ["{sys.executable}", "{tmp_path / "flaky.py"}"]\n'
        f'workdir = "{SAMPLES / "python"}"\nenv = {{ FLAKY_MARKER = "{marker}" }}\n'
    )
    (tmp_path / "c.toml").write_text('[sandbox]\nmode = "none"\n')
    config = load_compare(
        tmp_path / "c.toml",
        flags(
            tmp_path,
            baseline=str(tmp_path / "flaky.toml"),
            opponents=[MINIMAL, MINIMAL],
            matches=6,
            parallel=2,
            sandbox=None,  # the file's
        ),
    )
    outcome = asyncio.run(run_compare(config))
    assert marker.exists()
    s = outcome.summary
    assert s["matches_void"] == 1 and len(s["void"]) == 1
    void = s["void"][0]
    assert "handshake" in void["why"] and void["match_id"].endswith("-b")
    assert Path(void["record_path"]).exists()
    assert sorted(p.name for p in (config.out / "void").iterdir()) == [
        Path(void["record_path"]).name
    ]
    records = sorted((config.out / "matches").glob("*.jsonl"))
    assert s["matches"] == len(records) == 6 and s["pairs"] == s["pairs_finished"] == 3
    for record in records:
        lines = [json.loads(x) for x in record.read_text().splitlines()]
        assert not any(x.get("type") == "fault" for x in lines), record
        header = lines[0]
        assert header["deal"] == int(record.stem.split("-")[-2])
        assert header["deal_key_commitment"] == s["deal_key_commitment"] != ""
    rows = list(csv.DictReader((config.out / "pairs.csv").open()))
    assert len(rows) == s["pairs"] and all(r["counted"] == "true" for r in rows)
    assert {r["baseline_match"] for r in rows} | {r["candidate_match"] for r in rows} == {
        p.stem for p in records
    }
    assert "matches played: 6 (in matches/); void and played again: 1 (in void/)" in outcome.text
    assert json.loads((config.out / "compare.json").read_text()) == s
    # Resumed, the comparison recounts from its database and says the same.
    again = asyncio.run(run_compare(config))
    assert again.played_now == 0 and again.summary == s


CRASHER = '''\
"""The random bot, but the first process started exits in the middle of its match."""
import os
import sys

sys.path.insert(0, os.getcwd())
from random_bot import RandomBot  # noqa: E402
from sticheln_bot import run  # noqa: E402

try:
    os.close(os.open(os.environ["CRASH_MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    first = True
except FileExistsError:
    first = False


class Crasher(RandomBot):
    cards = 0

    def choose_card(self, view):
        self.cards += 1
        if first and self.cards == 3:
            os._exit(1)
        return super().choose_card(view)


run(Crasher())
'''


@pytest.mark.timeout(240)
def test_a_pair_whose_opponent_forfeited_in_one_match_only_is_played_again(
    tmp_path: Path,
) -> None:
    # An opponent crashes in the middle of one match; in the other match of the deal it
    # plays on. The two would not compare like with like (its forfeit moves every place
    # and takes its points away): the match it forfeited in is void and played again.
    (tmp_path / "crasher.py").write_text(CRASHER)
    marker = tmp_path / "crashed-once"
    (tmp_path / "crasher.toml").write_text(
        f'name = "crasher"\ncommand = ["{sys.executable}", "{tmp_path / "crasher.py"}"]\n'
        f'workdir = "{SAMPLES / "python"}"\nenv = {{ CRASH_MARKER = "{marker}" }}\n'
    )
    (tmp_path / "c.toml").write_text('[sandbox]\nmode = "none"\n')
    config = load_compare(
        tmp_path / "c.toml",
        flags(
            tmp_path,
            opponents=[str(tmp_path / "crasher.toml"), MINIMAL],
            matches=6,
            parallel=2,
            sandbox=None,  # the file's
        ),
    )
    outcome = asyncio.run(run_compare(config))
    assert marker.exists()
    s = outcome.summary
    assert s["matches_void"] == 1, s["void"]
    void = s["void"][0]
    assert "(crasher) forfeited here and not in the" in void["why"], void
    assert Path(void["record_path"]).exists()
    crashed = [json.loads(x) for x in Path(void["record_path"]).read_text().splitlines()]
    assert crashed[-1]["forfeited"] != []
    assert s["matches"] == 6 and s["pairs"] == s["pairs_finished"] == 3
    for record in (config.out / "matches").glob("*.jsonl"):
        end = json.loads(record.read_text().splitlines()[-1])
        assert end["forfeited"] == [], record
    assert "void and played again: 1 (in void/)" in outcome.text
    again = asyncio.run(run_compare(config))
    assert again.played_now == 0 and again.summary == s


def test_a_pair_is_like_with_like_when_opponents_forfeit_in_both_matches_or_neither(
    tmp_path: Path,
) -> None:
    config = load_compare(None, flags(tmp_path))
    names = ("heuristic", "random", "random-2", "minimal")

    def rows(bot: str, gone: set[int]) -> list[SeatRow]:
        seated = [bot, names[2], names[3]]
        return [SeatRow(0, k, b, 10, k + 1, k in gone, 0) for k, b in enumerate(seated)]

    c, b = rows("heuristic", set()), rows("random", set())
    assert unlike(config, c, b) == ("", "")
    # Both, or the compared bots' own forfeits: like with like.
    assert unlike(config, rows("heuristic", {1}), rows("random", {1})) == ("", "")
    assert unlike(config, rows("heuristic", {0}), rows("random", set())) == ("", "")
    why_c, why_b = unlike(config, rows("heuristic", {1}), rows("random", {2}))
    assert why_c == "seat 1 (random-2) forfeited here and not in the baseline's match of the deal"
    assert why_b == "seat 2 (minimal) forfeited here and not in the candidate's match of the deal"
    # Such a pair is not counted: it ends the pairs in deal order until it is played again.
    finished = {0: c, 1: b, 2: rows("heuristic", {2}), 3: rows("random", set()), 4: c, 5: b}
    assert len(pairs_from(config, finished)) == 1


# -- telling the user what they asked for -------------------------------------------------------


def _pairs(diffs: list[int]) -> list[Pair]:
    return [Pair(deal, d, 0, 1 if d > 0 else 2, 2 if d > 0 else 1) for deal, d in enumerate(diffs)]


def test_the_pilot_predicts_the_length_and_warns_when_the_cap_is_too_short(
    tmp_path: Path,
) -> None:
    close = [(-1) ** k * 40 + 2 for k in range(20)]  # mean +2, sd about 41
    config = load_compare(None, flags(tmp_path, matches=200, sprt=["upper=5"]))
    assert config.sprt is not None
    plan = pilot(config, _pairs(close))
    assert plan is not None and plan["pairs"] == 20 and plan["mean"] == pytest.approx(2.0)
    assert plan["expected_pairs"]["at_pilot_mean"] is None  # most tests reach the cap
    assert plan["likely_undecided"]
    assert "warning: the cap is likely to end this test undecided" in pilot_text(config, plan)
    # A clear difference and room enough: the number of pairs, and no warning.
    clear = [40 + (-1) ** k * 10 for k in range(20)]
    roomy = load_compare(None, flags(tmp_path, matches=4000, sprt=["upper=5"]))
    plan = pilot(roomy, _pairs(clear))
    assert plan is not None and not plan["likely_undecided"]
    text = pilot_text(roomy, plan)
    assert f"about {plan['expected_pairs']['at_pilot_mean']} at the pilot's mean" in text
    assert "warning" not in text and "note: min_pairs" not in text
    assert pilot(roomy, _pairs(clear[:19])) is None  # not before the pilot is complete
    # Fewer pairs before a decision than the default test was checked from: said at the
    # start (the test may decide at the pilot's last pair, before a pilot line).
    early = load_compare(None, flags(tmp_path, matches=4000, sprt=["upper=5", "min_pairs=8"]))
    note = min_pairs_note(early)
    assert note is not None and note.startswith("note: min_pairs = 8 is below the 20 pairs")
    sure = load_compare(
        None, flags(tmp_path, matches=4000, sprt=["upper=5", "min_pairs=8", "method=betting"])
    )
    assert min_pairs_note(sure) is None and min_pairs_note(roomy) is None


@pytest.mark.parametrize(
    "first",
    [[0] * 18 + [40, -30], [12] * 18 + [-150, 20]],
    ids=["nine-in-ten-zero", "rare-loss"],
)
def test_the_pilot_says_what_the_test_itself_takes_on_pairs_like_the_pilots(
    tmp_path: Path, first: list[int]
) -> None:
    # With nine pairs in ten 0 the test waits for 20 that are not, and a rare large loss
    # weighs through the raised variance and Hall's term: Wald's approximation without
    # them, which the pilot said before, was 2-5 times short of what the test then took.
    config = load_compare(None, flags(tmp_path, sprt=["upper=5"]))
    assert config.sprt is not None
    plan = pilot(config, _pairs(first))
    assert plan is not None
    sample = np.asarray(first, dtype=np.float64)
    for key, truth in (("at_lower", 0.0), ("at_upper", 5.0)):
        # The pilot's pairs drawn again, the ones that differ from 0 moved to the truth.
        nonzero = sample != 0
        moved = np.where(nonzero, sample + (truth - sample.mean()) * 20 / nonzero.sum(), 0.0)
        result = simulate(
            config.sprt,
            lambda rng, shape, moved=moved: rng.choice(moved, size=shape),
            tests=1000,
            max_pairs=config.max_pairs,
            seed=26,
        )
        assert plan["expected_pairs"][key] == pytest.approx(result.mean_pairs, rel=0.2), key


def test_the_pilot_notes_a_skewness_large_against_the_bounds(tmp_path: Path) -> None:
    # Nineteen small gains and one large loss: skewness about -4, bounds 0/30 about two
    # thirds of an sd apart: |g|·δ/s above 1, where the skew correction is held.
    rare = [10] * 19 + [-190]
    config = load_compare(None, flags(tmp_path, matches=4000, sprt=["upper=30"]))
    plan = pilot(config, _pairs(rare))
    assert plan is not None and plan["skewness"] == pytest.approx(-4.13, abs=0.01)
    assert plan["skew_beyond_checked"]
    text = pilot_text(config, plan)
    assert "note: the pilot's differences are skewed (-4.1) against bounds 0.67 sd apart" in text
    assert "(|skewness| × (upper − lower) / sd = 2.8, above 1)" in text
    # Close bounds on the same pairs, or the betting test: no note.
    close = load_compare(None, flags(tmp_path, matches=4000, sprt=["upper=5"]))
    assert not pilot(close, _pairs(rare))["skew_beyond_checked"]  # type: ignore[index]
    sure = load_compare(None, flags(tmp_path, matches=4000, sprt=["upper=30", "method=betting"]))
    plan = pilot(sure, _pairs(rare))
    assert plan is not None and not plan["skew_beyond_checked"]
    assert "skewed" not in pilot_text(sure, plan)


def test_the_report_says_which_bound_was_reached_and_the_mean_with_its_interval(
    tmp_path: Path,
) -> None:
    config = load_compare(None, flags(tmp_path, sprt=["upper=5", "min_pairs=5"]))
    pairs = _pairs([40 + (-1) ** k * 10 for k in range(40)])
    verdict = judge(config, pairs)
    assert verdict.decision == H1
    s = summary(config, verdict, pairs, 2 * len(pairs))
    assert s["test"]["bound_reached"] == "upper"
    text = report_text(s)
    assert f"H1 accepted after {verdict.pairs} pairs (the upper bound was reached)" in text
    mean, ci = s["score_diff"]["mean"], s["score_diff"]["ci95"]
    assert f"mean difference (candidate − baseline): {mean:+.1f} ± {ci:.1f}" in text
    # Every pair equal: a zero-width interval is marked, not passed off as certainty.
    same = _pairs([0] * 30)
    flat = summary(config, judge(config, same), same, 60)
    assert flat["score_diff"]["degenerate"] and flat["score_diff"]["ci95"] == 0.0
    assert "every pair equal" in report_text(flat)


def test_a_changed_bound_of_the_jail_refuses_a_resume_and_the_defaults_keep_old_ones(
    tmp_path: Path,
) -> None:
    config = load_compare(None, flags(tmp_path))
    before = config.fingerprint()
    # A bot that says nothing of the newer bounds has the fingerprint it always had.
    assert set(before["candidate"]["limits"]) == {"cpu_seconds", "memory_mb"}
    for key, value in (("processes", 16), ("cpus", 0.5), ("log_mb", 1)):
        bot = dataclasses.replace(
            config.candidate, limits=dataclasses.replace(config.candidate.limits, **{key: value})
        )
        changed = dataclasses.replace(config, candidate=bot)
        assert changed.fingerprint()["candidate"]["limits"][key] == value
        assert changed.fingerprint_hash() != config.fingerprint_hash()


def test_independent_seeds_give_the_baselines_match_seeds_of_its_own(tmp_path: Path) -> None:
    key = DealKey.new()
    shared = load_compare(None, flags(tmp_path))
    own = load_compare(None, flags(tmp_path, common_seeds=False))
    assert shared.common_seeds and not own.common_seeds
    assert shared.fingerprint_hash() != own.fingerprint_hash()  # a resume cannot mix them
    for deal in range(5):
        c = bot_seeds(shared, key, deal, "candidate")
        assert c == key.bot_seeds(deal, 3) == bot_seeds(shared, key, deal, "baseline")
        assert bot_seeds(own, key, deal, "candidate") == c
        theirs = bot_seeds(own, key, deal, "baseline")
        assert len(theirs) == 3 and not set(theirs) & set(c)


# -- bots started ahead -------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_single_use_pool_lends_each_process_once_and_has_the_next_one_started(
    tmp_path: Path,
) -> None:
    from referee.config.bots import load_bot
    from referee.jail.sandbox import Sandbox
    from referee.match.pool import BotPool, PooledBot
    from referee.match.server import RefereeServer

    spec = load_bot(SAMPLES / "heuristic.toml")  # declares seats = 8
    assert spec.seats > 1

    async def until(condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + stretched(60)
        while not condition():
            assert time.monotonic() < deadline, f"not in time: {what}"
            await asyncio.sleep(0.02)  # polling a condition, not waiting out a race

    async def scenario() -> None:
        server = RefereeServer(sandbox=Sandbox("none"))
        await server.start("127.0.0.1", 0)
        pool = BotPool(server, tmp_path, 30.0, single_use=True)
        try:
            first = await pool.acquire(spec, "m1")
            # Lending one started its replacement, with one stream however many seats
            # the bot file declares.
            assert pool.started == 2 and first.process.returncode is None

            def idle() -> list[PooledBot]:  # the pool's idle bots of this bot, by any key
                return [b for bots in pool._idle.values() for b in bots if b.spec.name == spec.name]

            await until(lambda: bool(idle()), "the replacement is ready")
            spare = idle()[0]
            assert spare.process is not first.process and spare.spec.seats == 1
            pool.release(first)
            await until(lambda: first.process.returncode is not None, "the used process ends")
            second = await pool.acquire(spec, "m2")
            assert second is spare  # ready and greeted before the match asked for it
            assert pool.started == 3
            pool.release(second)
        finally:
            await pool.close()
            await server.stop(0.5)

    asyncio.run(scenario())
