"""``MatchStart.bot_seed``: common random numbers for the bots that use them.

The seed belongs to the deal and the seat: both matches of a comparison pair hand it to
whoever sits in the seat (so a random opponent plays with the same luck against the
candidate and the baseline), it differs between seats and deals, and it tells nothing
about any deal. A sample bot given the same cards and the same seed twice plays the same
cards (the Python bots here; the Node and C++ bots in their own test files, through
:func:`seeded_plays`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bots import harness

from referee.compare.config import Overrides, load_compare
from referee.compare.run import run_compare
from referee.config.bots import load_bot
from referee.jail.bots import BotSpec
from referee.match.dealkey import BOT_SEED_DOMAIN, DEAL_DOMAIN, DealKey
from referee.match.sameseed import verdict
from referee.rules import RuleSet, deal, preset

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
KEY = DealKey(bytes(range(32)))


# -- the derivation ----------------------------------------------------------------------------


def test_bot_seed_is_hmac_of_its_own_domain_the_deal_and_the_seat() -> None:
    message = b"sticheln/bot-seed/v1" + (5).to_bytes(8, "big") + (2).to_bytes(4, "big")
    expected = hmac.new(bytes(range(32)), message, hashlib.sha256).digest()
    assert KEY.bot_seed(5, 2) == int.from_bytes(expected[:8], "big")
    assert KEY.bot_seeds(5, 4)[2] == KEY.bot_seed(5, 2)
    # Its own domain, and messages of another length than a deal's: no bot-seed input is
    # ever a match-seed input, whatever the numbers.
    assert BOT_SEED_DOMAIN != DEAL_DOMAIN and not BOT_SEED_DOMAIN.startswith(DEAL_DOMAIN)
    assert len(BOT_SEED_DOMAIN) + 12 != len(DEAL_DOMAIN) + 8


def test_bot_seeds_differ_between_seats_and_deals_and_from_every_match_seed() -> None:
    seeds = [KEY.bot_seed(d, s) for d in range(200) for s in range(8)]
    match_seeds = {KEY.match_seed(d) for d in range(200)}
    assert len(set(seeds)) == len(seeds)
    assert not match_seeds & set(seeds)
    # Another key, other seeds: they come from the secret key, not from public numbers.
    assert DealKey(bytes(32)).bot_seeds(0, 8) != KEY.bot_seeds(0, 8)


@pytest.mark.parametrize("bad", [(-1, 0), (1 << 64, 0), (0, -1), (0, 1 << 32)])
def test_out_of_range_deal_or_seat_is_refused(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="out of range"):
        KEY.bot_seed(*bad)


#: Every way a bot author might try to get a match seed from its bot seed and public data
#: (the deal number, its seat, the domain tags of docs/deal.md).
PREDICTORS: dict[str, Callable[[int, int, int], int]] = {
    "the bot seed itself": lambda b, d, s: b,
    "bot seed xor seat": lambda b, d, s: b ^ s,
    "bot seed minus seat": lambda b, d, s: (b - s) % (1 << 64),
    "bot seed xor deal": lambda b, d, s: b ^ d,
    "HMAC keyed with the bot seed": lambda b, d, s: int.from_bytes(
        hmac.digest(b.to_bytes(8, "big"), DEAL_DOMAIN + d.to_bytes(8, "big"), "sha256")[:8],
        "big",
    ),
    "SHA-256 of the bot seed": lambda b, d, s: int.from_bytes(
        hashlib.sha256(DEAL_DOMAIN + b.to_bytes(8, "big")).digest()[:8], "big"
    ),
}


@pytest.mark.parametrize("name", list(PREDICTORS))
def test_no_function_of_the_bot_seed_and_public_data_predicts_a_card(name: str) -> None:
    predict = PREDICTORS[name]
    rules = preset("sticheln")
    players, hits, cards = 4, 0, 0
    for d in range(100):
        seat = d % players
        actual = deal(rules, players, KEY.match_seed(d), 0, 0)[0][seat]
        guess = predict(KEY.bot_seed(d, seat), d, seat)
        assert guess != KEY.match_seed(d)
        predicted = deal(rules, players, guess, 0, 0)[0][seat]
        hits += len(set(actual) & set(predicted))
        cards += len(actual)
    # A guessed hand shares a quarter of its cards with the real one by chance (15 of 60
    # cards); 1500 cards give a standard deviation of about 17 around 375.
    assert abs(hits - cards / players) < 6 * 17, (hits, cards)


# -- common random numbers in a comparison ----------------------------------------------------


def _python_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The sample bot files say "python3": this interpreter's folder first on PATH.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.timeout(180)
def test_both_matches_of_a_compare_pair_hand_every_seat_the_same_bot_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _python_on_path(monkeypatch)
    random_bot, minimal = str(SAMPLES / "random.toml"), str(SAMPLES / "minimal-python.toml")
    config = load_compare(
        None,
        Overrides(
            candidate=random_bot,
            baseline=random_bot,
            opponents=[random_bot, minimal],
            out=str(tmp_path / "out"),
            sprt=["off"],
            matches=4,
            decision_ms=10_000,
            startup_ms=60_000,
            sandbox="bubblewrap",
        ),
    )
    asyncio.run(run_compare(config))
    with sqlite3.connect(config.database) as db:
        (key_hex,) = db.execute("SELECT deal_key FROM compare_runs").fetchone()
    key = DealKey.from_hex(key_hex)
    records = sorted((config.out / "matches").glob("*.jsonl"))
    assert len(records) == 4
    by_deal: dict[int, list[list[dict[str, Any]]]] = {}
    for path in records:
        deal_number = int(path.stem.split("-")[-2])
        by_deal.setdefault(deal_number, []).append(_lines(path))
    assert sorted(by_deal) == [0, 1]
    for d, (one, other) in by_deal.items():
        seeds = [str(s) for s in key.bot_seeds(d, 3)]
        assert one[-1]["bot_seeds"] == other[-1]["bot_seeds"] == seeds
        # The same program in the same seat with the same seed, among opponents that
        # draw from the same seeds: the two matches are one match played twice.
        moves = [[x for x in m if x["type"] in ("pain", "play")] for m in (one, other)]
        assert [(x["seat"], x.get("card"), x.get("cards")) for x in moves[0]] == [
            (x["seat"], x.get("card"), x.get("cards")) for x in moves[1]
        ]
    assert by_deal[0][0][-1]["bot_seeds"] != by_deal[1][0][-1]["bot_seeds"]


# -- a sample bot given the same seed twice plays the same cards ------------------------------


def seeded_plays(
    bot: BotSpec,
    opponent: BotSpec,
    out_dir: Path,
    bot_seeds: tuple[int, int, int],
    rules: RuleSet | None = None,
) -> list[tuple[str, int, Any]]:
    """Seat 0's pain picks and plays in a match of ``bot`` against two ``opponent`` seats
    (a deterministic bot), on deal seed 11 with the given bot seeds."""
    result = harness.run_match(
        [bot, opponent, opponent],
        rules or preset("sticheln", rounds=2),
        out_dir=out_dir,
        seed=11,
        clock=harness.ROOMY,
        bot_seeds=bot_seeds,
    )
    lines = harness.record_lines(result.record_path)
    assert lines[-1]["reason"] == "completed" and lines[-1]["forfeited"] == [], lines[-1]
    assert lines[-1]["bot_seeds"] == [str(s) for s in bot_seeds]
    moves = [x for x in lines if x["type"] in ("pain", "play") and x["seat"] == 0]
    assert moves and not any(x["fallback"] for x in moves)
    return [(x["type"], x["round"], x.get("card", x.get("cards"))) for x in moves]


def assert_same_seed_same_cards(bot: BotSpec, opponent: BotSpec, tmp_path: Path) -> None:
    """Twice the same seed: the same cards; another seed for the bot's seat: other cards."""
    first = seeded_plays(bot, opponent, tmp_path / "a", (101, 202, 303))
    again = seeded_plays(bot, opponent, tmp_path / "b", (101, 202, 303))
    other = seeded_plays(bot, opponent, tmp_path / "c", (999, 202, 303))
    assert first == again
    assert first != other


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["random", "montecarlo"])
def test_a_python_sample_bot_given_the_same_seed_twice_plays_the_same_cards(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _python_on_path(monkeypatch)
    bot = load_bot(SAMPLES / f"{name}.toml")
    if name == "montecarlo":
        # Only the sampling is seeded; the number of samples follows the clock. With one
        # sample per decision the clock has no say.
        bot = dataclasses.replace(bot, env={**bot.env, "MONTECARLO_CAP_MS": "0"})
    assert_same_seed_same_cards(bot, load_bot(SAMPLES / "minimal-python.toml"), tmp_path)


# -- check-bot says whether a bot replays a match from its seed -------------------------------


def _check_same_seed(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "referee.cli",
            "check-bot",
            "--scenario",
            "same-seed",
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        cwd=cwd,
        timeout=100,
    )


@pytest.mark.timeout(120)
def test_check_bot_reports_a_bot_that_replays_from_its_seed_and_one_that_does_not() -> None:
    seeded = _check_same_seed(["python3", "python/random_bot.py"], SAMPLES)
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    assert (
        "INFO same-seed: given the same cards and the same MatchStart.bot_seed twice, the bot played the same 30 decisions both times"
        in seeded.stdout
    )
    unseeded = _check_same_seed(["python3", "unseeded_random_bot.py"], ROOT / "tests" / "bots")
    # Information, not a failure: the exit status stays 0.
    assert unseeded.returncode == 0, unseeded.stdout + unseeded.stderr
    (line,) = [x for x in unseeded.stdout.splitlines() if x.startswith("INFO same-seed")]
    assert "the bot played differently from decision" in line and "Not a failure." in line


def test_the_same_seed_verdict_names_the_first_decision_that_differs() -> None:
    first = [(0, "pain", [17]), (0, "play", 18), (1, "play", 40)]
    assert "the same 3 decisions both times" in verdict(first, list(first))
    line = verdict(first, [(0, "pain", [17]), (0, "play", 19), (1, "play", 40)])
    assert "from decision 2 on (round 1, play: 18 the first time, 19 the second)" in line


# -- referee match --bot-seeds: a match's luck, replayed ----------------------------------------


def _referee_match(*args: str) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        [sys.executable, "-m", "referee.cli", "match", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        timeout=100,
    )


@pytest.mark.timeout(120)
def test_referee_match_replays_a_match_from_its_seed_and_bot_seeds(tmp_path: Path) -> None:
    bots = ["--bot", str(SAMPLES / "random.toml")] * 2 + ["--bot", str(SAMPLES / "random.toml")]
    played = []
    for run in ("a", "b", "c"):
        seeds = "7,8,9" if run != "c" else "7,8,10"
        done = _referee_match(
            *bots, "--seed", "4", "--bot-seeds", seeds, "--out", str(tmp_path / run)
        )
        assert done.returncode == 0, done.stdout + done.stderr
        (record,) = (tmp_path / run / "matches").glob("*.jsonl")
        lines = _lines(record)
        assert lines[-1]["bot_seeds"] == seeds.split(",")
        played.append(
            [
                (x["seat"], x.get("card"), x.get("cards"))
                for x in lines
                if x["type"] in ("pain", "play")
            ]
        )
    assert played[0] == played[1]
    assert played[0] != played[2]  # seat 2's other seed: other cards


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1,2", "--bot-seeds: 2 seeds for 3 seats; give one per seat"),
        ("1,x,3", "--bot-seeds: '1,x,3' is not a list of numbers"),
        ("1,2,18446744073709551616", "allowed: 0 to 2**64-1 each"),
    ],
)
def test_referee_match_refuses_bad_bot_seeds_in_one_line(value: str, message: str) -> None:
    done = _referee_match(*["--bot", str(SAMPLES / "random.toml")] * 3, "--bot-seeds", value)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("referee match: --bot-seeds: ") and message in line


@pytest.mark.timeout(120)
def test_referee_match_without_bot_seeds_draws_fresh_ones_for_every_seat(tmp_path: Path) -> None:
    seen = []
    for run in ("a", "b"):
        done = _referee_match(
            *["--bot", str(SAMPLES / "minimal-python.toml")] * 3, "--out", str(tmp_path / run)
        )
        assert done.returncode == 0, done.stdout + done.stderr
        (record,) = (tmp_path / run / "matches").glob("*.jsonl")
        seeds = _lines(record)[-1]["bot_seeds"]
        assert len(set(seeds)) == 3 and all(0 <= int(s) < 1 << 64 for s in seeds)
        seen.append(seeds)
    assert not set(seen[0]) & set(seen[1])
